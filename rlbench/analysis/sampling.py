"""Why sampling is slow, and how far a configuration is from what its env and learner allow here.

The sampler's side of a configuration (docs/ANALYSIS.md, "Why sampling is slow"), beside the learner's
(:func:`rlbench.analysis.findings.learner_verdicts`). An env runner's ``sample()`` splits into the env, the forward
pass and RLlib's other per-step work (connectors, episode bookkeeping); the driver's ``sample_s`` adds its wait for the
slowest runner and the episodes' transfer; the runner's CPU time says whether it worked or waited through its call.
Per configuration row (the medians of docs/SCHEMA.md's ``runner_*_s`` and ``sample_wait_s`` columns), when sampling
limits the iteration:

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
from typing import Any

from rlbench.analysis.findings import (
    ALL_BUSY_FRAC,
    BOUND_FRAC,
    CEILING_CLOSE_FRAC,
    ENV_CEILING_CLOSE_FRAC,
    RUNNER_BUSY_FRAC,
    RUNNER_ENV_FRAC,
    SAMPLE_WAIT_FRAC,
    SHARED_WORK_FRAC,
    Verdict,
    limiting_sides,
    num,
)
from rlbench.analysis.knobs import Knob, facts
from rlbench.analysis.labels import Kind


def room(knob: str, row: dict[str, Any]) -> float:
    """The largest value of a CPU knob (one with a role, :data:`~rlbench.analysis.knobs.KNOBS`) the trial's cores
    hold, the other roles' allocations kept (the plan would skip a point past it): its ``cpus`` less what every other
    role is given, per one of its role (``per``), in env runners of ``num_cpus_per_env_runner`` for the runners'."""
    cpus = num(row.get("cpus")) or 1.0
    role, count = facts(knob).role, facts(knob).per
    given = {r: num(row.get(f"{r}_cpus_allocated")) for r in ("driver", "learner", "env_runner", "aggregator")}
    others = sum(v for r, v in given.items() if r != role and v is not None)
    free = max(0.0, cpus - others)
    if role == "env_runner":
        per = num(row.get("num_cpus_per_env_runner")) or 0.0
        return math.floor(free / per + 1e-9) if per > 0 else cpus
    return free / max(1.0, num(row.get(count)) or 1.0) if count else free


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _procs(row: dict[str, Any]) -> int:
    """Processes that sample (RLlib: its env runners, or the driver's local runner)."""
    return max(1, int(num(row.get("num_env_runners")) or 0))


def _ceiling_words(row: dict[str, Any]) -> str:
    """``sampling ran at 1,838 env steps/s, 29% of the env's own rate in 12 processes (6,417/s)``, or why not."""
    rate, ceiling, eff = (
        num(row.get(c)) for c in ("sample_steps_per_s", "env_ceiling_steps_per_s", "sampling_efficiency")
    )
    if rate is None:
        return ""
    n = _procs(row)
    if ceiling is None or eff is None:
        return f"; sampling ran at {rate:,.0f} env steps/s (no env ceiling measured to hold it against)"
    return (
        f"; sampling ran at {rate:,.0f} env steps/s, {eff:.0%} of the env's own rate in {n} process"
        f"{'es' if n != 1 else ''} ({ceiling:,.0f}/s, rlbench's env ceiling)"
    )


def sampler_verdicts(row: dict[str, Any]) -> list[Verdict]:
    """Why the sampling of one configuration row is slow, when it limits the iteration (docs/ANALYSIS.md, "Why
    sampling is slow"); empty when it does not, or without the runners' own figures (a framework that measures
    none, a folder from before them)."""
    if num(row.get("env_steps_per_s")) is None or not limiting_sides(row)[1]:
        return []
    busy_s = num(row.get("runner_sample_s"))
    if not busy_s or busy_s <= 0:
        return []
    env, inference = num(row.get("runner_env_s")) or 0.0, num(row.get("runner_inference_s")) or 0.0
    other = num(row.get("runner_other_s"))
    other = busy_s - env - inference if other is None else other
    cpu = num(row.get("runner_sample_cpu_s"))
    split = (
        f"a runner's sample() took {_g(busy_s)} s an iteration"
        + (f" ({_g(cpu)} s of it on a CPU)" if cpu is not None else "")
        + f": the env {_g(env)} s, the forward pass {_g(inference)} s, RLlib's other per-step work (connectors, "
        f"episode bookkeeping) {_g(other)} s"
    )
    out: list[Verdict] = []
    waiting = _waiting(row, busy_s)
    if waiting is not None:
        out.append(waiting)
    if cpu is not None and cpu < RUNNER_BUSY_FRAC * busy_s:
        idle = _idle(row, busy_s, cpu, env, split)
        out.append(idle)
        if idle.kind is Kind.ENV_WAITS:  # its wall time in the env is waiting: the split below would misread it
            return out
    if env < RUNNER_ENV_FRAC * busy_s:
        out += _outside_env(row, busy_s, env, inference, other, split)
    else:
        out += _in_env(row, env / busy_s, split)
    return out


def _waiting(row: dict[str, Any], busy_s: float) -> Verdict | None:
    """Runners idle while the driver waits: on a straggler (the straggler rule names one; the driver's wait on it
    after the others were done, as a share of its sampling), or, without one, on the slowest runner and the
    episodes' transfer when that wait is at least :data:`SAMPLE_WAIT_FRAC` of its sampling (synchronous algorithms:
    an asynchronous driver does not wait for a batch)."""
    wait = num(row.get("sample_wait_s"))
    if wait is None:
        return None
    sampling = busy_s + wait  # the driver's sample_s
    runner, on_it = num(row.get("straggler_env_runner")), num(row.get("straggler_wait_s"))
    if runner is not None and on_it is not None and on_it > 0:
        step, cpu = num(row.get("straggler_step_ratio")), num(row.get("straggler_cpu_ratio"))
        ratios = ", ".join(
            text
            for text in (
                f"{step:.1f}x the others' time per env step" if step is not None else "",
                f"{cpu:.1f}x their CPU" if cpu is not None else "",
            )
            if text
        )
        return Verdict(
            Kind.WAITS_ON_STRAGGLER,
            f"env runners idle while the driver samples: it waited {_g(on_it)} s an iteration on a straggler, env "
            f"runner {int(runner)}{f' ({ratios})' if ratios else ''}, after the others were done: "
            f"{on_it / sampling:.0%} of its sampling time; a slower env instance or a core it shares, which no knob "
            "of the spec changes (the straggler finding says which)",
            None,
        )
    if wait < SAMPLE_WAIT_FRAC * sampling:
        return None
    return Verdict(
        Kind.WAITS_ON_TRANSFER,
        f"env runners idle while the driver samples: it waited {_g(wait)} s an iteration beyond a runner's own "
        f"sample() ({_g(busy_s)} s), {wait / sampling:.0%} of its sampling time, on the slowest runner and the "
        "episodes' transfer to the driver (no runner is a straggler by the straggler rule): no knob of the spec is "
        "known to shorten it",
        None,
    )


def _idle(row: dict[str, Any], busy_s: float, cpu: float, env: float, split: str) -> Verdict:
    """Runners off their CPU inside ``sample()``. The env waits (a sleep, I/O, a simulator elsewhere) when its own
    steps are off the CPU while the rest of the call is on it (``runner_env_cpu_s``): more runners overlap its waits
    while they fit. Else the runners wait for a core, as every part of the call does alike: the trial's own roles
    hold its cores, or processes outside it do (a busy machine); the split's shares then still say where a runner's
    work goes, and its verdict follows this one."""
    cpus, used, env_cpu = num(row.get("cpus")) or 0.0, num(row.get("cpus_used")), num(row.get("runner_env_cpu_s"))
    head = f"env runners idle inside sample(): on a CPU {cpu / busy_s:.0%} of it"
    rest_busy = (cpu - env_cpu) / (busy_s - env) if env_cpu is not None and busy_s > env else None
    if env_cpu is not None and env > 0 and rest_busy is not None:
        if env_cpu < RUNNER_BUSY_FRAC * env and rest_busy >= RUNNER_BUSY_FRAC:
            runners, fits = num(row.get("num_env_runners")) or 0.0, room(Knob.NUM_ENV_RUNNERS, row)
            head = (
                f"{head} ({split}): the env waits (a sleep, I/O, a simulator elsewhere): on a CPU {env_cpu / env:.0%} "
                f"of its steps, the rest of the call {rest_busy:.0%}"
            )
            if fits > runners:
                return Verdict(
                    Kind.ENV_WAITS,
                    f"{head}; more env runners (num_env_runners, now {runners:g}; up to {fits:g} fit beside the other "
                    "roles) overlap its waits",
                    Knob.NUM_ENV_RUNNERS,
                )
            return Verdict(
                Kind.ENV_WAITS,
                f"{head}; no more env runners than {runners:g} fit beside the other roles' CPUs (a smaller "
                "num_cpus_per_env_runner would let more share the idle cores)",
                None,
            )
    if cpus and used is not None and used >= ALL_BUSY_FRAC * cpus:
        whose = f"the trial's own roles kept {used:.2f} of its {cpus:g} cores busy"
    elif cpus and used is not None:
        whose = (
            f"the trial's own roles kept only {used:.2f} of its {cpus:g} cores busy: processes outside it took them "
            "(a busy machine: these figures say as much about the machine as about the configuration)"
        )
    else:
        whose = "whoever held the cores"
    return Verdict(Kind.WAITS_FOR_CORE, f"{head}, the env and the rest alike: they wait for a core; {whose}", None)


def _outside_env(
    row: dict[str, Any], busy_s: float, env: float, inference: float, other: float, split: str
) -> list[Verdict]:
    """Busy runners mostly outside their env: the forward pass and RLlib's per-step work, paid once per step of all
    of a runner's envs together; more envs per runner share them. With a GPU, the forward pass there is a sweep to
    measure, proposed in words."""
    envs = num(row.get("num_envs_per_env_runner")) or 1.0
    out = [
        Verdict(
            Kind.INFERENCE_BOUND if inference >= other else Kind.PER_STEP_BOUND,
            f"env runners mostly outside the env: {split}; {1 - env / busy_s:.0%} of a runner's time is not "
            f"the env{_ceiling_words(row)}: more envs per runner (num_envs_per_env_runner, now {envs:g}) share one "
            "forward pass and one round of bookkeeping a step",
            Knob.NUM_ENVS_PER_ENV_RUNNER,
        )
    ]
    gpus = num(row.get("learner_gpus")) or 0.0
    if gpus > 0 and inference >= BOUND_FRAC * busy_s and not (num(row.get("num_gpus_per_env_runner")) or 0.0):
        out.append(
            Verdict(
                Kind.FORWARD_ON_CPU,
                f"the forward pass is {inference / busy_s:.0%} of a runner's sample() on the CPU, and the learner has "
                f"{gpus:g} GPU{'s' if gpus != 1 else ''}: whether env runners on a GPU would be faster is a measured "
                "question (the copies to the device can cost more than the pass saves); a sweep of "
                "num_gpus_per_env_runner over 0 and a share of a GPU that fits beside the learner answers it, which "
                "rlbench does not write for you (it cannot tell what fits the GPU)",
                None,
            )
        )
    return out


def _in_env(row: dict[str, Any], in_env: float, split: str) -> list[Verdict]:
    """Busy runners in their env: more runners while they fit and the env has not reached its own ceiling with a
    runner on every core; else this machine's cores are the limit, after more envs per runner where at least
    :data:`SHARED_WORK_FRAC` of a runner's ``sample()`` is the work they share (the forward pass, RLlib's per-step
    work): that verdict comes first, so a walk races it, and "the cores are the limit" stands once it showed no gain."""
    runners, fits, cpus = num(row.get("num_env_runners")) or 0.0, room(Knob.NUM_ENV_RUNNERS, row), num(row.get("cpus"))
    eff = num(row.get("sampling_efficiency"))
    head = f"env runners mostly in the env: {in_env:.0%} of a runner's sample() ({split}){_ceiling_words(row)}"
    at_ceiling = eff is not None and eff >= ENV_CEILING_CLOSE_FRAC and cpus is not None and _procs(row) >= cpus
    used = num(row.get("cpus_used"))
    all_busy = cpus is not None and used is not None and used >= ALL_BUSY_FRAC * cpus
    if fits > runners and not at_ceiling and not all_busy:
        return [
            Verdict(
                Kind.ENV_BOUND,
                f"{head}: more env runners (num_env_runners, now {runners:g}; up to {fits:g} fit the trial's "
                f"{cpus or 0:g} cores beside the other roles) step more envs at once",
                Knob.NUM_ENV_RUNNERS,
            )
        ]
    if at_ceiling:
        why = f"with a runner on each of the trial's {cpus or 0:g} cores"
    elif all_busy:
        why = (
            f"and the trial's own roles keep {used:.2f} of its {cpus or 0:g} cores busy: more runners would share them"
        )
    else:
        why = f"and no more env runners than {runners:g} fit the trial's {cpus or 0:g} cores beside the other roles"
    out = []
    if 1.0 - in_env >= SHARED_WORK_FRAC:
        envs = num(row.get("num_envs_per_env_runner")) or 1.0
        out.append(
            Verdict(
                Kind.SHARED_WORK,
                f"{head}, {why}; but {1.0 - in_env:.0%} of it is the forward pass and RLlib's per-step work, which "
                f"more envs per runner (num_envs_per_env_runner, now {envs:g}) share: one pass and one round of "
                "bookkeeping a step for all of them",
                Knob.NUM_ENVS_PER_ENV_RUNNER,
            )
        )
    out.append(
        Verdict(
            Kind.CORES_LIMIT,
            f"{head}, {why}: this machine's cores are the limit; a cheaper env, or more cores, is what moves it",
            None,
        )
    )
    return out


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


def ceiling_text(row: dict[str, Any]) -> str | None:
    """``runs at 31% of what its env and learner allow here (...); the lever is sampling, at 29% of the env's own
    rate`` for one configuration row; says so where no env ceiling was measured; None without a throughput."""
    rate = num(row.get("env_steps_per_s"))
    if rate is None:
        return None
    ceiling, env = num(row.get("ceiling_env_steps_per_s")), num(row.get("env_ceiling_steps_per_s"))
    if ceiling is None or env is None:
        return (
            "no env ceiling measured (env_ceiling_s: 0, a trial on a cluster, or the env failed alone): what its env "
            "and learner allow here is not known, and rlbench does not guess it"
        )
    learner, asynchronous, n = num(row.get("learner_steps_per_s")), bool(row.get("asynchronous")), _procs(row)
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
    sampled, eff = num(row.get("sample_steps_per_s")), num(row.get("sampling_efficiency"))
    sampling_over = 1.0 / sampled - 1.0 / env if sampled else 0.0  # seconds an env step's sampling costs beyond the env
    rest = ((num(row.get("sync_frac")) or 0.0) + (num(row.get("other_frac")) or 0.0)) / rate
    if sampled and eff is not None and sampling_over >= rest:
        return text + f"; the lever is sampling, at {eff:.0%} of the env's own rate"
    return text + (
        f"; the lever is the rest of the iteration: weight sync {num(row.get('sync_frac')) or 0.0:.0%} and the "
        f"driver's other work {num(row.get('other_frac')) or 0.0:.0%} of it"
    )
