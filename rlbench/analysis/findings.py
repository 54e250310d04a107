"""Findings: every threshold of the analysis, and the words for one configuration.

Every number from which something is called something is a named constant here (docs/ANALYSIS.md), the evidence rules'
too: how significant, how many repeats or rounds, how large a change. The rules that turn a configuration's numbers into
sentences are here as well (its verdict from :mod:`~rlbench.analysis.configs`' row, its straggler from
:mod:`~rlbench.analysis.runners`', why its learner is slow: :data:`LEARNER_RULES`), but for why its sampling is slow
(:mod:`rlbench.analysis.sampling`, from this module's thresholds) and a role's dominant function
(:mod:`rlbench.analysis.profiles`); the words of comparisons, with the evidence each has, are
:mod:`rlbench.analysis.evidence`'. Nothing here computes a statistic or reads a table, and nothing here imports more
than the standard library: a command's help states these defaults (``--threshold``, the confidence level) without
importing numpy or scipy, and the statistics (:mod:`rlbench.analysis.stats`) read the level from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlbench.analysis.config_row import ConfigRow
from rlbench.analysis.knobs import Knob
from rlbench.analysis.labels import Kind
from rlbench.analysis.rules import Rule, Verdict, evaluate

#: Confidence level of every interval (the bootstrap engine's, :func:`rlbench.analysis.stats.interval`); every
#: text that names the level is made from it.
CONFIDENCE = 0.95

#: A configuration whose coefficient of variation is above this is "too noisy to rank".
NOISY_CV = 0.10
#: The knee is the smallest setting whose throughput is within this fraction of the best.
KNEE_MARGIN = 0.05
#: In an asynchronous algorithm, env runners or learners busy at least this share of the iteration
#: are saturated: that side limits the pipeline.
SATURATED_FRAC = 0.8
#: A phase taking at least this share of an iteration makes the configuration bound by it.
BOUND_FRAC = 0.5
#: Where no phase is bound (a synchronous iteration about half sampling, half learning), a side taking at least this
#: share is still worth shortening: halving it shortens the iteration by a sixth or more. The walk and next.yaml read
#: such a side's verdicts (issue 57: inference_wide's walk stopped at 1 runner x 8 envs, sampling 40-58% of it,
#: "no verdict names a knob", where 2 x 16 ran 1.5x faster).
SHARE_WORTH_FRAC = 1 / 3
#: Where one side limits a synchronous iteration (:data:`BOUND_FRAC`), the other side taking at least this share has its
#: verdicts read after the limiting side's, for the walk and ``next.yaml`` to take when every one of those is blocked
#: (no value fits, or its race showed no gain): halving it shortens the iteration by an eighth, 2.5 times the walk's 5%
#: tolerance. Issue 57: learner_wide's start (learning 71%, sampling 28%; the learner's one knob, the driver's CPUs,
#: not a move the walk makes) stopped `no_fit` at 65% of the grid's best, 2 runners x 16 envs (2026-11-30).
OTHER_SIDE_FRAC = 0.25
#: Weight sync taking at least this share is called out.
SYNC_HEAVY_FRAC = 0.2
#: An off-policy iteration's replay buffer (storing, drawing, re-prioritizing; inside ``other``) taking at least
#: this share is called out, as weight sync is.
REPLAY_HEAVY_FRAC = 0.2
#: A role using at least this share of its allocated CPUs is at its allocation (CPU-starved).
STARVED_FRAC = 0.85
#: All roles together using at least this share of the trial's cpus: every core is busy.
ALL_BUSY_FRAC = 0.9
#: A role given >= 1 CPU and using less than this share of it leaves its allocation idle.
IDLE_FRAC = 0.5
#: A learner GPU below this mean utilization (%) in steady state is idle.
GPU_IDLE_PCT = 20.0
#: A repeat during which the hypervisor took at least this share of the machine's CPU time (steal,
#: %) is called out: 13% was read on an idle VM here, where one configuration's throughput moved
#: from 700 to 1,000 env steps/s between runs (docs/MEASUREMENT.md 7).
HOST_STEAL_PCT = 5.0
#: A repeat during which processes neither the trial's nor Ray's own used at least this share of the trial's
#: CPUs on its nodes (``foreign_cpu_pct``: another job's actor, a stray process) is called out, as steal is: a
#: node sampler's own reading of a 1-CPU busy loop beside a 2-CPU trial is 50% (docs/CLUSTER.md, "Isolation
#: measured"); a few % of Ray's own pool and agents is normal and not foreign.
FOREIGN_CPU_PCT = 5.0
#: A runner at least this many times the others' median time (or CPU) per env step is a straggler.
STRAGGLER_RATIO = 1.5
#: A function taking at least this share of a role's samples in its own code dominates the role.
DOMINANT_SELF_FRAC = 0.4
#: Learning speeding up by less than this share of the thread increase is "sub-linear".
SUBLINEAR_FRAC = 0.5
#: A comparison between configurations is a finding only at this one-sided significance level (an
#: exact rank test on their repeats; docs/ANALYSIS.md).
SIGNIFICANCE = 0.05
#: Repeats a side with which a rank test can reach SIGNIFICANCE: every one below every other gives
#: p = 1 / C(6, 3) = 0.05; 2 a side can give no less than 1/6, 1 a side 1/2.
REPEATS_FOR_EVIDENCE = 3
#: Rounds a Wilcoxon test of variant pairs needs to reach SIGNIFICANCE: all one way gives p = 2 / 2**n (6: 0.031).
ROUNDS_FOR_EVIDENCE = 6
#: A race's looks after its first (autoconfig's decide.verdict): an entrant is different from the leader there only
#: at this level. A race looks once a round up to its cap, and the leader is whichever median is higher, so at
#: SIGNIFICANCE every look 2 identical configurations were called different in 10-17% of simulated races
#: (docs/MEASUREMENT.md 10, 2026-11-29).
SEQUENTIAL_SIGNIFICANCE = 0.01
#: On a race's first look (3 readings a side: the rank test's p can be no lower than SIGNIFICANCE there), an entrant
#: is different only when every interval of the ratio is beyond this many times the tolerance: at once the
#: tolerance, 4.0% of identical pairs at a noise CV of 15% fell all apart by it; twice it, 1.4% (a 1.6x: 84% and
#: 75% found at that look, the rest later).
FIRST_LOOK_MARGIN = 2.0
#: Repeats a side from which an unpaired comparison's interval resamples the repeats; with fewer, compare
#: resamples the runs' steady iterations (within-run noise only: no verdict rests on it).
REPEATS_FOR_INTERVAL = 2
#: The relative change that counts when it has evidence (``--threshold``'s default in compare, history
#: and bisect): a ratio at or below 1 - it is a regression, at or above 1 + it an improvement.
CHANGE_THRESHOLD = 0.05
#: A history's change-point fit (:func:`~rlbench.analysis.stats.change_points`) keeps a break when it lowers the
#: squared error of the release levels by more than this many times the variance of a level, times log(releases):
#: BIC's 2 with a margin, so that a flat series of noisy medians gives no candidate (each candidate is then held
#: to the one change rule anyway; the fit only says where to look).
CHANGE_POINT_PENALTY = 4.0
#: Below the best return at equal env steps: a median lower by at least this share of the best
#: median's size; "clearly" only when a rank test shows it too (docs/ANALYSIS.md).
CLEARLY_BELOW_FRAC = 0.10
#: Extra learner CPUs "bought nothing worth having" only when their throughput ratio's interval stays
#: under this factor (and the ratio itself does): a gain under 10% is not worth CPUs another role could use.
GAIN_WORTH_HAVING = 1.1
#: A learner whose train-batch building (the learner connector: GAE, the copy to a GPU) takes at least this share of
#: its own work (building + minibatch updates) is fed too slowly by the CPU: a GPU waits meanwhile, and the
#: building is CPU work however fast the device is.
BATCH_BOUND_FRAC = 0.5
#: A GPU learner whose device is busy (NVML, over the learn window) less than this share while the minibatch updates
#: dominate its work is launch- or sync-bound: each small step pays kernel launches and a host sync the device
#: waits through. Measured 2026-11-27 on an H100 (issue 43): configs/ppo_gpu.yaml's GPU learner 3% busy, Pong with
#: RLlib's Atari CNN at minibatch 128 12% busy, and 2.6x the throughput at minibatch 1024.
DEVICE_BUSY_LOW_PCT = 50.0
#: An env runner whose sampling thread is on a CPU less than this share of its ``sample()`` calls
#: (``sample_cpu_s / sample_s``) is idle inside them: it waits for a core, or its env waits (docs/ANALYSIS.md, "Why
#: sampling is slow"). The issue-49 Breakout runners on an H200: 1.89 s of CPU in 1.89 s of ``sample()``.
RUNNER_BUSY_FRAC = 0.8
#: A busy env runner inside its env less than this share of its ``sample()`` time is bound by what RLlib does around
#: each step (the forward pass, connectors, episode bookkeeping): one call of each serves all of its envs at once, so
#: more envs per runner (``num_envs_per_env_runner``) is the knob; from this share on the env is (the issue-49
#: runners: 0.76 s of 1.89 s in the env, 40%).
RUNNER_ENV_FRAC = 0.5
#: A busy env runner with no room for another, its ``sample()`` at least this share the forward pass and RLlib's
#: other per-step work, is told more envs per runner before "the cores are the limit" (issue 57): one forward pass and
#: one round of bookkeeping serve all of a runner's envs. Issue 57's case on 2 cores: a 1.5 ms env, 1 runner, 35% of
#: its 2.43 s sample() outside the env, told "the cores are the limit"; 4 envs a runner gave 1.31x there (397 -> 520
#: env steps/s, 2 repeats a side, every repeat above). A quarter until 2026-11-30: on that day's quieter machine the
#: same workload's start read 22% outside the env and the walk stopped there (its earlier walks: 1 -> 16 envs, 1.9x),
#: and env_waits_wide's 4 runners x 1 env read 24% (4 x 8: 1.8x by its exhaustive grid). A fifth: halving it shortens
#: the call by a tenth, twice the walk's tolerance; the race decides the move.
SHARED_WORK_FRAC = 0.2
#: The driver waiting at least this share of its ``sample_s`` beyond a runner's own ``sample()`` (the slowest runner,
#: the transfer of the episodes) leaves the runners idle: what they wait on is named.
SAMPLE_WAIT_FRAC = 0.25
#: Sampling at least this share of the env's own rate in as many processes (``sampling_efficiency``), with a runner on
#: every core of the trial, is the env's ceiling here: more runners only share the cores.
ENV_CEILING_CLOSE_FRAC = 0.8
#: A configuration at least this share of what its env and learner allow (``ceiling_frac``) is close to its ceiling:
#: a faster env, a faster learner or more cores is what moves it further, not a knob of the sampling.
CEILING_CLOSE_FRAC = 0.9
#: Functions on at least this share of a role's stacks ...
TRUNK_FRAC = 0.95
#: ... with under this share of its samples in their own code are its trunk (the worker's main loop, the
#: trial's entry): the flame graph shows them, the top-total table skips them.
TRUNK_SELF_FRAC = 0.01


def verdict(config: Mapping[str, Any] | ConfigRow, sampler: Sequence[Verdict] = ()) -> tuple[str, list[str]]:
    """(short bottleneck label, plain-words findings) for one configuration row; ``sampler``: why its sampling is
    slow (:func:`rlbench.analysis.sampling.sampler_verdicts`, which imports this module), said before the learner's."""
    row = ConfigRow.of(config)
    if row.env_steps_per_s is None:
        return "no data", [
            f"no steady-state measurement ({row.statuses or 'no trials'})"
            + (f": {row.reason[:200]}" if row.reason else "")
        ]
    findings: list[str] = []
    sample, learn, sync = row.sample_frac or 0.0, row.learn_frac or 0.0, row.sync_frac or 0.0
    if row.asynchronous and row.sampler_busy_frac is not None and row.learner_busy_frac is not None:
        label, one_side = _overlapping_verdict(row, row.sampler_busy_frac, row.learner_busy_frac, findings)
    elif sample >= BOUND_FRAC:
        label, one_side = "sampling-bound", True
        findings.append(f"sampling-bound: {sample:.0%} of each iteration collects samples ({learn:.0%} learning)")
    elif learn >= BOUND_FRAC:
        label, one_side = "learning-bound", True
        findings.append(f"learning-bound: {learn:.0%} of each iteration is the learner update ({sample:.0%} sampling)")
    else:
        label, one_side = "mixed", False
        findings.append(f"no single phase dominates: sampling {sample:.0%}, learning {learn:.0%}, sync {sync:.0%}")
    if sync >= SYNC_HEAVY_FRAC:
        findings.append(f"weight sync takes {sync:.0%} of each iteration")
    if row.replay_frac is not None and row.replay_frac >= REPLAY_HEAVY_FRAC:
        findings.append(
            f"the replay buffer takes {row.replay_frac:.0%} of each iteration (storing, drawing and re-prioritizing "
            "steps, in the driver: part of 'other')"
        )
    if row.policy_lag_mean is not None and row.asynchronous:  # PPO's is always 1 (RLlib's count; docs/ANALYSIS.md)
        findings.append(
            f"policy lag: {row.policy_lag_mean:.1f} learner updates on average, at most "
            f"{'-' if row.policy_lag_max is None else f'{row.policy_lag_max:.1f}'} "
            "(1: on-policy, as PPO)"
        )
    starved = []
    for role, name, keep, their, were in (
        ("env_runner", "env runners", "keep", "their", "were"),
        ("learner", "remote learners", "keep", "their", "were"),
        ("aggregator", "aggregator actors", "keep", "their", "were"),
        ("driver", "the driver", "keeps", "its", "was"),
    ):
        alloc, used = row.cpus_of(role)
        if alloc is None or used is None or alloc <= 0:
            continue
        plural = "s" if alloc != 1 else ""
        if used >= STARVED_FRAC * alloc:
            starved.append(f"{name} {keep} {used:.2f} of {their} {alloc:g} allocated core{plural} busy")
        elif alloc >= 1 and used < IDLE_FRAC * alloc:
            findings.append(
                f"idle allocation: {name} {were} given {alloc:g} CPU{plural} and use{'s' if keep == 'keeps' else ''} "
                f"{used:.2f}"
            )
    if starved:
        findings.append("CPU-starved: " + "; ".join(starved))
    if all_cores_busy(row):
        findings.append(f"all cores busy: {row.cpus_used:.2f} of the trial's {row.cpus:g} cores in use")
        starved.append("all")
    if starved and one_side:
        label += ", CPU-starved"
    if (row.learner_gpus or 0.0) > 0:
        if row.gpu_util_pct is None:
            findings.append("GPU utilization not measured")
        elif row.gpu_util_pct < GPU_IDLE_PCT:
            findings.append(f"GPU idle: {row.gpu_util_pct:.0f}% mean utilization in steady state")
            label += ", GPU idle"
    causes = (*sampler, *learner_verdicts(row))
    findings += [cause.text for cause in causes]
    label += "".join(f", {word}" for word in dict.fromkeys(c.label for c in causes))  # a kind with two knobs: once
    straggler = straggler_finding(row)
    if straggler:
        findings.append(straggler)
    if row.host_steal_pct is not None and row.host_steal_pct >= HOST_STEAL_PCT:
        findings.append(
            f"host busy: the hypervisor took {row.host_steal_pct:.0f}% of this machine's CPU time while a repeat ran "
            "(steal); its throughput says as much about the host as about the configuration"
        )
    if row.foreign_cpu_pct is not None and row.foreign_cpu_pct >= FOREIGN_CPU_PCT:
        findings.append(
            f"nodes shared: processes that are not the trial's used {row.foreign_cpu_pct:.0f}% of its CPUs on its "
            "nodes while a repeat ran (foreign_cpu_s: another job, a stray process); its throughput says as much "
            "about them as about the configuration"
        )
    if row.node_types is not None and row.node_types > 1:
        findings.append(
            f"its repeats ran on {row.node_types:.0f} node types: its figures mix hardware (the report's Nodes "
            "section shows each node set)"
        )
    if row.noisy:
        findings.append(f"too noisy to rank: CV {row.env_steps_per_s_cv:.0%} across repeats (> {NOISY_CV:.0%})")
    return label, findings


def _overlapping_verdict(row: ConfigRow, sampler: float, learner: float, findings: list[str]) -> tuple[str, bool]:
    """(bottleneck, whether one side alone limits it) of an asynchronous configuration from where the work ran, not
    from the driver's waits: the side (env runners, learners) busy at least SATURATED_FRAC of the iteration."""
    busy = f"env runners busy {sampler:.0%}, learner busy {learner:.0%} of each iteration"
    if sampler >= SATURATED_FRAC and learner >= SATURATED_FRAC:
        label, one_side = "sampling- and learning-bound", False
        findings.append(f"both sides saturated ({busy}): the pipeline is full")
    elif learner >= SATURATED_FRAC:
        label, one_side = "learning-bound", True
        findings.append(f"learning-bound: {busy}; more env runners would wait on the learner")
    elif sampler >= SATURATED_FRAC:
        label, one_side = "sampling-bound", True
        findings.append(f"sampling-bound: {busy}; the learner waits for samples")
    else:
        label, one_side = "mixed", False
        findings.append(f"neither side saturated ({busy}); the driver's loop takes {row.other_frac or 0.0:.0%}")
    findings.append(
        f"sampling and learning overlap for at least {row.busy_overlap_frac or 0.0:.0%} of each iteration; the driver "
        f"waits {row.sample_frac or 0.0:.0%} for samples and {row.learn_frac or 0.0:.0%} for the learner"
    )
    return label, one_side


def straggler_finding(config: Mapping[str, Any] | ConfigRow) -> str | None:
    """The verdict's straggler sentence for one configuration row, or None."""
    row = ConfigRow.of(config)
    if row.straggler_env_runner is None:
        return None
    step, cpu = row.straggler_step_ratio, row.straggler_cpu_ratio
    parts = [
        f"{step:.1f}x the others' time per env step" if step is not None else None,
        f"{cpu:.1f}x their CPU per env step" if cpu is not None else None,
    ]
    text = f"straggler: env runner {int(row.straggler_env_runner)} takes " + " and ".join(p for p in parts if p)
    if row.straggler_wait_s is not None:
        frac = row.straggler_wait_frac
        share = f" ({frac:.0%} of it)" if frac is not None else ""
        text += (
            f"; the driver waited {row.straggler_wait_s:.2f} s per iteration on it after the others were done{share}"
        )
    if row.straggler_repeats is not None and row.n:
        text += f" (in {int(row.straggler_repeats)} of {int(row.n)} repeats)"
    return text


def all_cores_busy(row: ConfigRow) -> bool:
    """Whether the trial's own roles kept at least :data:`ALL_BUSY_FRAC` of its cores busy (more processes would share
    them); False where either figure is missing."""
    return bool(row.cpus) and row.cpus_used is not None and row.cpus_used >= ALL_BUSY_FRAC * (row.cpus or 0.0)


def limiting_sides(config: Mapping[str, Any] | ConfigRow, bound: float = BOUND_FRAC) -> tuple[bool, bool]:
    """(learning limits the iteration, sampling does): the driver's shares for a synchronous configuration, at least
    ``bound`` of it each (:data:`BOUND_FRAC`; :data:`SHARE_WORTH_FRAC` where no side is bound, both may), where the
    work ran for an asynchronous one (:data:`SATURATED_FRAC`)."""
    row = ConfigRow.of(config)
    if row.asynchronous:
        sampler, learner = row.sampler_busy_frac, row.learner_busy_frac
        if sampler is None or learner is None:
            return False, False
        return learner >= SATURATED_FRAC, sampler >= SATURATED_FRAC and learner < SATURATED_FRAC
    return (row.learn_frac or 0.0) >= bound, (row.sample_frac or 0.0) >= bound


def learner_verdicts(config: Mapping[str, Any] | ConfigRow, bound: float = BOUND_FRAC) -> list[Verdict]:
    """Why the learner of one configuration row is slow, from its split (docs/ANALYSIS.md, "Why a learner is
    slow"): :data:`LEARNER_RULES`' verdicts. Empty when none holds (a busy GPU, a learner that does not limit the
    iteration: learning under ``bound`` of it, :func:`limiting_sides`)."""
    row = ConfigRow.of(config)
    return [] if row.env_steps_per_s is None else evaluate(LEARNER_RULES, row, bound)


def _starved(row: ConfigRow, bound: float) -> Verdict | None:
    """Sampling limits the iteration while a GPU or remote learners wait: the sampler's verdict names the knob."""
    gpus = row.learner_gpus or 0.0
    if not limiting_sides(row, bound)[1] or not (gpus > 0 or (row.num_learners or 0) > 0):
        return None
    waits = "its GPU" if gpus > 0 else "the learner actors"
    share = (
        f"env runners busy {row.sampler_busy_frac:.0%}, learner busy {row.learner_busy_frac:.0%} of each iteration"
        if row.asynchronous
        else f"sampling takes {row.sample_frac or 0.0:.0%} of each iteration, learning {row.learn_frac or 0.0:.0%}"
    )
    return Verdict(
        Kind.LEARNER_STARVED,
        f"sampling starves the learner: {share}, and {waits} wait{'s' if gpus > 0 else ''} meanwhile: "
        "sampling is the side to speed up, and why it is slow is the sampler's verdict",
        None,
    )


def _work(row: ConfigRow, bound: float) -> tuple[float, float, str] | None:
    """(train-batch building s, minibatch updates s, both in words) of a learner that limits the iteration; None
    without them."""
    batch, update = row.learn_batch_s, row.learn_update_s
    if not limiting_sides(row, bound)[0] or batch is None or update is None or batch + update <= 0:
        return None
    return batch, update, f"building the train batch {batch:.3g} s, the minibatch updates {update:.3g} s an iteration"


def _threads(row: ConfigRow) -> tuple[float | None, float | None, str]:
    """(threads of the learner's process, those it kept busy while it learned, that in words or "")."""
    remote = (row.num_learners or 0) > 0
    threads, used = row.learner_torch_threads if remote else row.driver_torch_threads, row.learn_cpus_used
    if used is None or not threads:
        return threads, used, ""
    return threads, used, f"; the learner's process kept {used:.2f} of its {threads:g} threads busy while it learned"


def _cpu_knob(row: ConfigRow) -> tuple[str, Knob]:
    """(words, knob) of the CPUs of the learner's process: the driver's, or each remote learner's."""
    if (row.num_learners or 0) > 0:
        return Knob.NUM_CPUS_PER_LEARNER, Knob.NUM_CPUS_PER_LEARNER
    words = "(the driver holds the learner; driver_torch_threads where the spec sets its threads)"
    return f"{Knob.NUM_CPUS_FOR_MAIN_PROCESS} {words}", Knob.NUM_CPUS_FOR_MAIN_PROCESS


def _fed_by_cpu(row: ConfigRow, bound: float) -> Verdict | None:
    """A GPU learner building its train batch on the CPU at least :data:`BATCH_BOUND_FRAC` of its work."""
    work = _work(row, bound)
    if work is None or (row.learner_gpus or 0.0) <= 0 or work[0] / (work[0] + work[1]) < BATCH_BOUND_FRAC:
        return None
    (batch, update, split), (words, knob), busy = work, _cpu_knob(row), _threads(row)[2]
    copied = f" (copying to the GPU {row.learn_copy_s:.3g} s of it)" if row.learn_copy_s is not None else ""
    return Verdict(
        Kind.FED_BY_CPU,
        f"the CPU feeds the GPU learner too slowly: {split}{copied}: {batch / (batch + update):.0%} of its work is on "
        f"the CPU{busy}; give it CPUs ({words}), or more learners (num_learners) to build their shares at once",
        knob,
    )


def _launch_bound(row: ConfigRow, bound: float) -> Verdict | None:
    """A GPU learner busy under :data:`DEVICE_BUSY_LOW_PCT` of its learn window over more than one minibatch step an
    epoch a learner (one: the minibatch is the whole batch; a larger one changes nothing)."""
    work, device, steps, epochs = _work(row, bound), row.gpu_busy_pct, row.sgd_steps_per_iteration, row.num_epochs
    if work is None or (row.learner_gpus or 0.0) <= 0 or device is None or device >= DEVICE_BUSY_LOW_PCT:
        return None
    if steps is None or (steps / epochs if epochs else steps) <= 1:
        return None
    dev = row.learn_device_s
    on_device = f"; device time in the updates {dev:.3g} s of {work[1]:.3g} s" if dev is not None else ""
    return Verdict(
        Kind.LAUNCH_BOUND,
        f"launch- or sync-bound: {steps:.0f} minibatch steps an iteration of {1000 * (row.sgd_step_s or 0.0):.1f} ms "
        f"each, and the GPU busy {device:.0f}% of the learn window{on_device}: a larger minibatch_size (now "
        f"{_int(row.minibatch_size)}) makes fewer, larger steps (it changes learning as well as speed: time to a "
        "target settles it)",
        Knob.MINIBATCH_SIZE,
    )


def _short_of_threads(row: ConfigRow, bound: float) -> Verdict | None:
    """A CPU learner keeping at least :data:`STARVED_FRAC` of its threads busy, on a trial with more cores."""
    work, (threads, used, busy), (words, knob) = _work(row, bound), _threads(row), _cpu_knob(row)
    if work is None or (row.learner_gpus or 0.0) != 0 or used is None or not threads or used < STARVED_FRAC * threads:
        return None
    if (row.cpus or 0) <= threads:
        return None
    return Verdict(
        Kind.SHORT_OF_THREADS,
        f"the CPU learner is short of threads: learning takes {row.learn_frac or 0.0:.0%} of each iteration "
        f"({work[2]}){busy}, and the trial has {row.cpus:g} cores: give it CPUs ({words})",
        knob,
    )


def _model_too_small(row: ConfigRow, bound: float) -> Verdict | None:
    """A GPU learner's throughput under :data:`GAIN_WORTH_HAVING` times its CPU twin's (the change rule's)."""
    twin = row.cpu_twin_ratio
    if (row.learner_gpus or 0.0) <= 0 or twin is None or twin >= GAIN_WORTH_HAVING:
        return None
    return Verdict(
        Kind.MODEL_TOO_SMALL,
        f"the model is too small for the GPU: its learner gave {twin:.2f}x the throughput of the CPU learner one axis "
        f"away (grid point {_int(row.cpu_twin_index)}, {row.cpu_twin_env_steps_per_s:,.0f} env steps/s; "
        f"{row.cpu_twin_evidence}): below {GAIN_WORTH_HAVING:g}x, the CPU learner does as well and leaves the GPU free",
        None,
    )


_CPUS = (Knob.NUM_CPUS_FOR_MAIN_PROCESS, Knob.NUM_CPUS_PER_LEARNER)
#: The learner's verdicts in the order the report says them (after the sampler's): sampling starves it; what its work
#: is bound by, the first that holds (the CPU feeding a GPU, launches and syncs, a CPU learner's threads); a model
#: too small for its GPU.
LEARNER_RULES = (
    Rule((Kind.LEARNER_STARVED,), _starved),
    Rule((Kind.FED_BY_CPU,), _fed_by_cpu, _CPUS, group="work"),
    Rule((Kind.LAUNCH_BOUND,), _launch_bound, (Knob.MINIBATCH_SIZE,), group="work"),
    Rule((Kind.SHORT_OF_THREADS,), _short_of_threads, _CPUS, group="work"),
    Rule((Kind.MODEL_TOO_SMALL,), _model_too_small),
)


def _int(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
