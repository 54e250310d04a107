"""Why sampling is slow, and how far a configuration is from what its env and learner allow here.

The sampler's side of a configuration (docs/ANALYSIS.md, "Why sampling is slow"), beside the learner's
(:func:`rlbench.analysis.findings.learner_verdicts`). An env runner's ``sample()`` splits into the env, the forward
pass and RLlib's other per-step work (connectors, episode bookkeeping); the driver's ``sample_s`` adds its wait for the
slowest runner and the episodes' transfer; the runner's CPU time says whether it worked or waited through its call.
Per configuration row (the medians of docs/SCHEMA.md's ``runner_*_s`` and ``sample_wait_s`` columns), when sampling
limits the iteration, in the order of :data:`SAMPLER_RULES` (one rule a verdict, :mod:`rlbench.analysis.rules`):

- the driver waits on the runners (a straggler, the transfer): said, with what it waits on; no knob;
- the runners idle inside ``sample()``: waiting for a core (the machine's cores are the limit) or for their env;
- busy, mostly outside the env: more envs per runner (``num_envs_per_env_runner``: one forward pass and one round of
  bookkeeping serve them all); with a GPU, env runners on it as a sweep to measure, never a claim;
- busy in the env: more env runners while they fit beside the other roles, else the cores are the limit.

The ceiling (:func:`compose_ceiling`): the env alone in as many processes (rlbench's env ceiling) and the learner's
rate (env steps over learn time), one after the other for a synchronous algorithm, the slower of the two for an
asynchronous one. Standard library only, as :mod:`rlbench.analysis.findings`, whose thresholds these are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from rlbench.analysis.config_row import ConfigRow
from rlbench.analysis.findings import (
    BOUND_FRAC,
    CEILING_CLOSE_FRAC,
    ENV_CEILING_CLOSE_FRAC,
    RUNNER_BUSY_FRAC,
    RUNNER_ENV_FRAC,
    SAMPLE_WAIT_FRAC,
    SHARED_WORK_FRAC,
    Verdict,
    all_cores_busy,
    limiting_sides,
)
from rlbench.analysis.knobs import Knob, facts
from rlbench.analysis.labels import Kind
from rlbench.analysis.rules import Rule, evaluate


def room(knob: str, row: ConfigRow) -> float:
    """The largest value of a CPU knob (one with a role, :data:`~rlbench.analysis.knobs.KNOBS`) the trial's cores
    hold, the other roles' allocations kept (the plan would skip a point past it): its ``cpus`` less what every other
    role is given, per one of its role (``per``), in env runners of ``num_cpus_per_env_runner`` for the runners'."""
    cpus, role, count = row.cpus or 1.0, facts(knob).role, facts(knob).per
    given = {r: row.cpus_of(r)[0] for r in ("driver", "learner", "env_runner", "aggregator")}
    free = max(0.0, cpus - sum(v for r, v in given.items() if r != role and v is not None))
    if role == "env_runner":
        per = row.num_cpus_per_env_runner or 0.0
        return math.floor(free / per + 1e-9) if per > 0 else cpus
    return free / max(1.0, getattr(row, count) or 1.0) if count else free


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _procs(row: ConfigRow) -> int:
    """Processes that sample (RLlib: its env runners, or the driver's local runner)."""
    return max(1, int(row.num_env_runners or 0))


def _ceiling_words(row: ConfigRow) -> str:
    """``sampling ran at 1,838 env steps/s, 29% of the env's own rate in 12 processes (6,417/s)``, or why not."""
    rate, ceiling, eff = row.sample_steps_per_s, row.env_ceiling_steps_per_s, row.sampling_efficiency
    if rate is None:
        return ""
    n = _procs(row)
    if ceiling is None or eff is None:
        return f"; sampling ran at {rate:,.0f} env steps/s (no env ceiling measured to hold it against)"
    return (
        f"; sampling ran at {rate:,.0f} env steps/s, {eff:.0%} of the env's own rate in {n} process"
        f"{'es' if n != 1 else ''} ({ceiling:,.0f}/s, rlbench's env ceiling)"
    )


def sampler_verdicts(config: Mapping[str, Any] | ConfigRow, bound: float = BOUND_FRAC) -> list[Verdict]:
    """Why the sampling of one configuration row is slow, :data:`SAMPLER_RULES`' verdicts, when it limits the
    iteration (at least ``bound`` of it, :func:`~rlbench.analysis.findings.limiting_sides`; docs/ANALYSIS.md, "Why
    sampling is slow"); empty when it does not, or without the runners' own figures (a framework that measures none, a
    folder from before them)."""
    row = ConfigRow.of(config)
    busy_s = row.runner_sample_s
    if row.env_steps_per_s is None or not limiting_sides(row, bound)[1] or not busy_s or busy_s <= 0:
        return []
    return evaluate(SAMPLER_RULES, row, bound)


class _Split(NamedTuple):
    """A runner's ``sample()`` an iteration (s), its parts, and all of it in words."""

    busy_s: float
    env: float
    inference: float
    other: float
    words: str


def _split(row: ConfigRow) -> _Split:
    busy_s, env, inference = row.runner_sample_s or 0.0, row.runner_env_s or 0.0, row.runner_inference_s or 0.0
    other, cpu = busy_s - env - inference if row.runner_other_s is None else row.runner_other_s, row.runner_sample_cpu_s
    words = (
        f"a runner's sample() took {_g(busy_s)} s an iteration"
        + (f" ({_g(cpu)} s of it on a CPU)" if cpu is not None else "")
        + f": the env {_g(env)} s, the forward pass {_g(inference)} s, RLlib's other per-step work (connectors, "
        f"episode bookkeeping) {_g(other)} s"
    )
    return _Split(busy_s, env, inference, other, words)


def _straggler(row: ConfigRow, bound: float) -> Verdict | None:
    """Runners idle while the driver waits on a straggler (the straggler rule names one): its wait on it after the
    others were done, as a share of its sampling."""
    wait, runner, on_it = row.sample_wait_s, row.straggler_env_runner, row.straggler_wait_s
    if wait is None or runner is None or on_it is None or on_it <= 0:
        return None
    step, cpu = row.straggler_step_ratio, row.straggler_cpu_ratio
    ratios = [f"{step:.1f}x the others' time per env step"] if step is not None else []
    ratios += [f"{cpu:.1f}x their CPU"] if cpu is not None else []
    named = f" ({', '.join(ratios)})" if ratios else ""
    return Verdict(
        Kind.WAITS_ON_STRAGGLER,
        f"env runners idle while the driver samples: it waited {_g(on_it)} s an iteration on a straggler, env "
        f"runner {int(runner)}{named}, after the others were done: "
        f"{on_it / ((row.runner_sample_s or 0.0) + wait):.0%} of its sampling time; a slower env instance or a core it "
        "shares, which no knob of the spec changes (the straggler finding says which)",
        None,
    )


def _transfer(row: ConfigRow, bound: float) -> Verdict | None:
    """Without a straggler, runners idle while the driver waits on the slowest runner and the episodes' transfer at
    least :data:`SAMPLE_WAIT_FRAC` of its sampling (synchronous algorithms: an asynchronous driver does not wait for a
    batch)."""
    busy_s, wait = row.runner_sample_s or 0.0, row.sample_wait_s
    if wait is None or wait < SAMPLE_WAIT_FRAC * (busy_s + wait):  # busy_s + wait: the driver's sample_s
        return None
    return Verdict(
        Kind.WAITS_ON_TRANSFER,
        f"env runners idle while the driver samples: it waited {_g(wait)} s an iteration beyond a runner's own "
        f"sample() ({_g(busy_s)} s), {wait / (busy_s + wait):.0%} of its sampling time, on the slowest runner and the "
        "episodes' transfer to the driver (no runner is a straggler by the straggler rule): no knob of the spec is "
        "known to shorten it",
        None,
    )


def _idle(row: ConfigRow) -> str | None:
    """``env runners idle inside sample(): on a CPU 19% of it``, of runners off their CPU inside ``sample()``; None for
    busy ones."""
    busy_s, cpu = row.runner_sample_s or 0.0, row.runner_sample_cpu_s
    if cpu is None or cpu >= RUNNER_BUSY_FRAC * busy_s:
        return None
    return f"env runners idle inside sample(): on a CPU {cpu / busy_s:.0%} of it"


def _env_waits(row: ConfigRow, bound: float) -> Verdict | None:
    """Idle runners whose env waits (a sleep, I/O, a simulator elsewhere): its own steps off the CPU while the rest of
    the call is on it (``runner_env_cpu_s``); more runners overlap its waits while they fit. The split's shares are
    waiting then: no verdict follows."""
    idle, s, env_cpu, cpu = _idle(row), _split(row), row.runner_env_cpu_s, row.runner_sample_cpu_s or 0.0
    if idle is None or env_cpu is None or s.env <= 0 or s.busy_s <= s.env:
        return None
    rest_busy = (cpu - env_cpu) / (s.busy_s - s.env)
    if env_cpu >= RUNNER_BUSY_FRAC * s.env or rest_busy < RUNNER_BUSY_FRAC:
        return None
    runners, fits = row.num_env_runners or 0.0, room(Knob.NUM_ENV_RUNNERS, row)
    head = (
        f"{idle} ({s.words}): the env waits (a sleep, I/O, a simulator elsewhere): on a CPU {env_cpu / s.env:.0%} "
        f"of its steps, the rest of the call {rest_busy:.0%}"
    )
    more = (
        f"; more env runners (num_env_runners, now {runners:g}; up to {fits:g} fit beside the other roles) overlap its "
        "waits"
        if fits > runners
        else f"; no more env runners than {runners:g} fit beside the other roles' CPUs (a smaller "
        "num_cpus_per_env_runner would let more share the idle cores)"
    )
    return Verdict(Kind.ENV_WAITS, head + more, Knob.NUM_ENV_RUNNERS if fits > runners else None)


def _waits_for_core(row: ConfigRow, bound: float) -> Verdict | None:
    """Idle runners whose env does not wait: they wait for a core, as every part of the call does alike: the trial's
    own roles hold its cores, or processes outside it do (a busy machine); the split's shares then still say where a
    runner's work goes, and its verdict follows this one."""
    idle, cpus, used = _idle(row), row.cpus or 0.0, row.cpus_used
    if idle is None:
        return None
    if all_cores_busy(row):
        whose = f"the trial's own roles kept {used:.2f} of its {cpus:g} cores busy"
    elif cpus and used is not None:
        whose = (
            f"the trial's own roles kept only {used:.2f} of its {cpus:g} cores busy: processes outside it took them "
            "(a busy machine: these figures say as much about the machine as about the configuration)"
        )
    else:
        whose = "whoever held the cores"
    return Verdict(Kind.WAITS_FOR_CORE, f"{idle}, the env and the rest alike: they wait for a core; {whose}", None)


def _outside(row: ConfigRow) -> tuple[_Split, Kind] | None:
    """(the split, the kind: the forward pass or RLlib's per-step work, whichever is larger) of runners mostly outside
    their env; None for runners mostly in it."""
    s = _split(row)
    if s.env >= RUNNER_ENV_FRAC * s.busy_s:
        return None
    return s, Kind.INFERENCE_BOUND if s.inference >= s.other else Kind.PER_STEP_BOUND


def _more_envs(row: ConfigRow, bound: float) -> Verdict | None:
    """Runners mostly outside their env: the forward pass and RLlib's per-step work, paid once per step of all of a
    runner's envs together; more envs per runner share them."""
    if (outside := _outside(row)) is None:
        return None
    (s, kind), envs = outside, row.num_envs_per_env_runner or 1.0
    return Verdict(
        kind,
        f"env runners mostly outside the env: {s.words}; {1 - s.env / s.busy_s:.0%} of a runner's time is not "
        f"the env{_ceiling_words(row)}: more envs per runner (num_envs_per_env_runner, now {envs:g}) share one "
        "forward pass and one round of bookkeeping a step",
        Knob.NUM_ENVS_PER_ENV_RUNNER,
    )


def _more_runners(row: ConfigRow, bound: float) -> Verdict | None:
    """Runners mostly outside their env, more of them fitting and some cores idle: followed once more envs stop paying
    (issue 57: inference_wide's best had 2 runners, not 1)."""
    outside, runners, fits = _outside(row), row.num_env_runners or 0.0, room(Knob.NUM_ENV_RUNNERS, row)
    if outside is None or fits <= runners or all_cores_busy(row):
        return None
    (s, kind), cpus, used = outside, row.cpus or 0.0, row.cpus_used
    idle = f", {cpus - used:.2f} of the trial's {cpus:g} cores idle" if used is not None else ""
    return Verdict(
        kind,
        f"env runners mostly outside the env ({1 - s.env / s.busy_s:.0%} of a runner's time){idle}: more env "
        f"runners (num_env_runners, now {runners:g}; up to {fits:g} fit beside the other roles) run the "
        "forward pass and RLlib's per-step work for more envs at once",
        Knob.NUM_ENV_RUNNERS,
    )


def _forward_on_cpu(row: ConfigRow, bound: float) -> Verdict | None:
    """Runners mostly outside their env, at least :data:`BOUND_FRAC` of it the forward pass on a CPU, beside a GPU
    learner: the forward pass there is a sweep to measure, proposed in words."""
    outside, gpus = _outside(row), row.learner_gpus or 0.0
    if outside is None or gpus <= 0 or (row.num_gpus_per_env_runner or 0.0):
        return None
    if (s := outside[0]).inference < BOUND_FRAC * s.busy_s:
        return None
    return Verdict(
        Kind.FORWARD_ON_CPU,
        f"the forward pass is {s.inference / s.busy_s:.0%} of a runner's sample() on the CPU, and the learner has "
        f"{gpus:g} GPU{'s' if gpus != 1 else ''}: whether env runners on a GPU would be faster is a measured "
        "question (the copies to the device can cost more than the pass saves); a sweep of "
        "num_gpus_per_env_runner over 0 and a share of a GPU that fits beside the learner answers it, which "
        "rlbench does not write for you (it cannot tell what fits the GPU)",
        None,
    )


def _in_env(row: ConfigRow) -> tuple[float, str] | None:
    """(the env's share of a runner's ``sample()``, ``env runners mostly in the env: ...``) of runners mostly in their
    env; None for runners mostly outside it."""
    s = _split(row)
    if s.env < RUNNER_ENV_FRAC * s.busy_s:
        return None
    share = s.env / s.busy_s
    return share, f"env runners mostly in the env: {share:.0%} of a runner's sample() ({s.words}){_ceiling_words(row)}"


def _at_ceiling(row: ConfigRow) -> bool:
    """Sampling at least :data:`ENV_CEILING_CLOSE_FRAC` of the env's own rate with a runner on every core."""
    eff, cpus = row.sampling_efficiency, row.cpus
    return eff is not None and eff >= ENV_CEILING_CLOSE_FRAC and cpus is not None and _procs(row) >= cpus


def _env_bound(row: ConfigRow, bound: float) -> Verdict | None:
    """Runners busy in their env: more of them while they fit and the env has not reached its own ceiling with a
    runner on every core, nor the trial's roles every core (else the cores are the limit: no verdict follows)."""
    in_env, runners, fits = _in_env(row), row.num_env_runners or 0.0, room(Knob.NUM_ENV_RUNNERS, row)
    if in_env is None or fits <= runners or _at_ceiling(row) or all_cores_busy(row):
        return None
    return Verdict(
        Kind.ENV_BOUND,
        f"{in_env[1]}: more env runners (num_env_runners, now {runners:g}; up to {fits:g} fit the trial's "
        f"{row.cpus or 0:g} cores beside the other roles) step more envs at once",
        Knob.NUM_ENV_RUNNERS,
    )


def _no_more_runners(row: ConfigRow) -> str:
    """Why no more env runners help: the env at its ceiling, every core busy, or no room for one."""
    runners, cpus, used = row.num_env_runners or 0.0, row.cpus or 0, row.cpus_used
    if _at_ceiling(row):
        return f"with a runner on each of the trial's {cpus:g} cores"
    if all_cores_busy(row):
        return f"and the trial's own roles keep {used:.2f} of its {cpus:g} cores busy: more runners would share them"
    return f"and no more env runners than {runners:g} fit the trial's {cpus:g} cores beside the other roles"


def _shared_text(row: ConfigRow, in_env_frac: float) -> str:
    """The work more envs per runner share, in words: both shared-work verdicts end with it."""
    envs = row.num_envs_per_env_runner or 1.0
    return (
        f"{1.0 - in_env_frac:.0%} of it is the forward pass and RLlib's per-step work, which more envs per runner "
        f"(num_envs_per_env_runner, now {envs:g}) share: one pass and one round of bookkeeping a step for all of them"
    )


def _in_env_sharing(row: ConfigRow) -> tuple[float, str] | None:
    """:func:`_in_env` where at least :data:`SHARED_WORK_FRAC` of a runner's ``sample()`` is outside its env (the work
    more envs per runner share); else None. Both shared-work verdicts ask it."""
    in_env = _in_env(row)
    return None if in_env is None or 1.0 - in_env[0] < SHARED_WORK_FRAC else in_env


def _shared_work_too(row: ConfigRow, bound: float) -> Verdict | None:
    """Runners in their env, busy in it with room for more of them (the env-bound verdict, said first) or idle on an
    env that waits (said first, with or without room), at least :data:`SHARED_WORK_FRAC` of their ``sample()`` the
    work more envs per runner share: the next knob, where more runners do not pay or do not fit (issue 57's env_bound
    workload on 2 cores: 2 runners x 1 env, 32% of ``sample()`` outside a 1 ms env; a third runner read 0.92x and the
    walk stopped at 83% of the grid's best, 2 runners x 4 envs, 1.21x). Asked after an env that waits stops the rest."""
    in_env = _in_env_sharing(row)
    if in_env is None:
        return None
    waits = _env_waits(row, bound)
    first = waits if waits is not None else _env_bound(row, bound)
    if first is None:
        return None
    head = "and where more runners do not pay: " if first.knob is not None else "but "
    return Verdict(Kind.SHARED_WORK_TOO, head + _shared_text(row, in_env[0]), Knob.NUM_ENVS_PER_ENV_RUNNER)


def _shared_work(row: ConfigRow, bound: float) -> Verdict | None:
    """Runners in their env with no room for another, at least :data:`SHARED_WORK_FRAC` of their ``sample()`` the work
    more envs per runner share (the forward pass, RLlib's per-step work): said before the cores' limit, so a walk races
    it, and the limit stands once it showed no gain."""
    in_env = _in_env_sharing(row)
    if in_env is None or _env_bound(row, bound) is not None:
        return None
    return Verdict(
        Kind.SHARED_WORK,
        f"{in_env[1]}, {_no_more_runners(row)}; but {_shared_text(row, in_env[0])}",
        Knob.NUM_ENVS_PER_ENV_RUNNER,
    )


def _cores_limit(row: ConfigRow, bound: float) -> Verdict | None:
    """Runners in their env with no room for another: this machine's cores are the limit, or, where the trial's roles
    keep under :data:`ALL_BUSY_FRAC` of its cores busy, its reservation is (issue 57's env_waits_wide said "the cores"
    with its runners on a CPU 19% of their ``sample()``)."""
    if (in_env := _in_env(row)) is None or _env_bound(row, bound) is not None:
        return None
    used, limit = row.cpus_used, "this machine's cores are the limit; a cheaper env, or more cores, is what moves it"
    if not _at_ceiling(row) and not all_cores_busy(row) and used is not None:
        limit = (
            f"the trial's reservation is the limit, not its cores' work (its roles kept {used:.2f} of its "
            f"{row.cpus or 0:g} cores busy); a smaller num_cpus_per_env_runner (now "
            f"{row.num_cpus_per_env_runner or 0:g}) lets more runners in, or more cpus"
        )
    return Verdict(Kind.CORES_LIMIT, f"{in_env[1]}, {_no_more_runners(row)}: {limit}", None)


_OUTSIDE, _RUNNERS = (Kind.INFERENCE_BOUND, Kind.PER_STEP_BOUND), (Knob.NUM_ENV_RUNNERS,)
#: The sampler's verdicts in the order the report says them (before the learner's,
#: :data:`~rlbench.analysis.findings.LEARNER_RULES`): what the driver waits on (a straggler, else the transfer); runners
#: idle inside ``sample()`` (their env waits: the last verdict, else they wait for a core); runners mostly outside their
#: env (more envs per runner, more runners, the forward pass on a GPU); runners in it (more of them, then more envs per
#: runner where the work they share is large; where no more fit, more envs per runner where that work is large, and
#: the cores' limit).
SAMPLER_RULES = (
    Rule((Kind.WAITS_ON_STRAGGLER,), _straggler, group="wait"),
    Rule((Kind.WAITS_ON_TRANSFER,), _transfer, group="wait"),
    Rule((Kind.ENV_WAITS,), _env_waits, (*_RUNNERS, None), stops=True),
    Rule((Kind.WAITS_FOR_CORE,), _waits_for_core),
    Rule(_OUTSIDE, _more_envs, (Knob.NUM_ENVS_PER_ENV_RUNNER,)),
    Rule(_OUTSIDE, _more_runners, _RUNNERS),
    Rule((Kind.FORWARD_ON_CPU,), _forward_on_cpu),
    Rule((Kind.ENV_BOUND,), _env_bound, _RUNNERS),
    Rule((Kind.SHARED_WORK_TOO,), _shared_work_too, (Knob.NUM_ENVS_PER_ENV_RUNNER,), after_stop=True),
    Rule((Kind.SHARED_WORK,), _shared_work, (Knob.NUM_ENVS_PER_ENV_RUNNER,)),
    Rule((Kind.CORES_LIMIT,), _cores_limit),
)


def compose_ceiling(
    env_steps_per_s: float | None, learner_steps_per_s: float | None, asynchronous: bool
) -> float | None:
    """What an env and a learner allow together, in env steps/s: one after the other for a synchronous algorithm
    (``1 / (1 / env + 1 / learner)``: PPO samples a batch, then learns on it), the slower of the two for an
    asynchronous one (APPO, IMPALA: they overlap). None without the env's rate; the env's alone without a learner's
    (a trial that learns nothing)."""
    if env_steps_per_s is None or env_steps_per_s <= 0:
        return None
    if learner_steps_per_s is None or learner_steps_per_s <= 0:
        return env_steps_per_s
    if asynchronous:
        return min(env_steps_per_s, learner_steps_per_s)
    return 1.0 / (1.0 / env_steps_per_s + 1.0 / learner_steps_per_s)


def ceiling_text(config: Mapping[str, Any] | ConfigRow) -> str | None:
    """``runs at 31% of what its env and learner allow here (...); the lever is sampling, at 29% of the env's own
    rate`` for one configuration row; says so where no env ceiling was measured; None without a throughput."""
    row = ConfigRow.of(config)
    rate, ceiling, env = row.env_steps_per_s, row.ceiling_env_steps_per_s, row.env_ceiling_steps_per_s
    if rate is None:
        return None
    if ceiling is None or env is None:
        return (
            "no env ceiling measured (env_ceiling_s: 0, a trial on a cluster, or the env failed alone): what its env "
            "and learner allow here is not known, and rlbench does not guess it"
        )
    learner, asynchronous, n = row.learner_steps_per_s, row.asynchronous, _procs(row)
    parts = f"the env alone {env:,.0f}/s in {n} process{'es' if n != 1 else ''}" + (
        f", the learner {learner:,.0f}/s, {'the slower of the two' if asynchronous else 'one after the other'}"
        if learner
        else "; it learns nothing"
    )
    text = f"runs at {rate / ceiling:.0%} of what its env and learner allow here ({ceiling:,.0f} env steps/s: {parts})"
    if rate >= CEILING_CLOSE_FRAC * ceiling:
        return text + "; close to it: a faster env or learner, or more cores, is what moves it further"
    if asynchronous:
        if learner and learner < env:
            return (
                text
                + f"; the learner's own rate is the lever (sampling runs beside it at {rate / env:.0%} of the env's "
                "own rate)"
            )
        return text + f"; the lever is sampling, at {rate / env:.0%} of the env's own rate"
    sampled, eff = row.sample_steps_per_s, row.sampling_efficiency
    sync, other = row.sync_frac or 0.0, row.other_frac or 0.0
    sampling_over = 1.0 / sampled - 1.0 / env if sampled else 0.0  # seconds an env step's sampling costs beyond the env
    rest = (sync + other) / rate
    if sampled and eff is not None and sampling_over >= rest:
        return text + f"; the lever is sampling, at {eff:.0%} of the env's own rate"
    return text + (
        f"; the lever is the rest of the iteration: weight sync {sync:.0%} and the driver's other work {other:.0%} "
        "of it"
    )
