"""How a planned trial differs from the same configuration run under Ray Tune, in words.

rlbench measures what a user gets under Tune (docs/MEASUREMENT.md, "Fidelity", measures it side
by side with ``scripts/bench_vs_tune.py``). What still differs is named in
every plan (``differs_from_tune``) and in the manifest, so nobody has to guess. The CPU arithmetic
is Tune's: Tune's trial actor reserves ``num_cpus_for_main_process`` CPUs of one shared runtime
and Ray sets its OMP_NUM_THREADS (so torch's threads) to that number; rlbench gives the trial's
private runtime ``cpus`` minus those CPUs and sets the driver's torch threads to the same number.
"""

from __future__ import annotations

from rlbench.spec.model import TrialConfig

#: What every trial shares: where the driver runs and the two instruments inside RLlib.
ALWAYS: tuple[str, ...] = (
    "the driver (the Algorithm) runs in its own process with a private Ray runtime, not as a Tune trial actor "
    "in a shared one (no Tune controller, result logging or checkpoint syncing beside it), and in a Linux session "
    "of its own (where the kernel schedules by session, autogroup, the trial shares the CPU with other sessions "
    "as one group; Tune's trial shares the group of the program that started Tune)",
    "a timing callback wraps env step/reset and the forward pass in every env runner (about 2% of a 0-runner "
    "CartPole PPO iteration, measured), and RLlib's timers report per-iteration means instead of its smoothed "
    "averages (which it still computes, at their usual cost)",
)


#: A private runtime's Ray agents (rlbench.worker.runtime.minimal_agents), said last.
MINIMAL_AGENTS = (
    "Ray's dashboard head and agent in the trial's private runtime start minimal, as a Ray without "
    "ray[default]'s packages starts them (with those packages each ray.init took 7.0 s against 3.8 s "
    "under load 2, and the full agent's reporter uses about 0.5% of a core beside a trial), and its log monitor "
    "and autoscaler monitor do not start (a private runtime uses neither; 0.3 core-s each at a trial's start); "
    "switch_off: [agents] starts them all as Ray does"
)

#: A trial given fewer cores than the machine's (``cpus``), pinned to them unless ``affinity`` is switched off.
PINNED = (
    "the trial's processes are pinned to {cpus} of the machine's {usable} usable cores (cpus: an emulated smaller "
    "machine; Tune pins nothing)"
)

#: ``pin_driver``, unless ``affinity`` is switched off (which pins nothing).
PIN_DRIVER = (
    "pin_driver: the driver is pinned to its reserved cores and every other process to the rest (Tune pins nothing)"
)

#: With remote env runners or learners in a private runtime (`Adapter.worker_preload_modules`).
WORKER_PRELOAD = (
    "the trial's Ray worker processes import RLlib as they start (Ray's RAY_preload_python_modules), while the "
    "driver builds, so its env runners and learners start in workers that have it (Tune's import it when the "
    "actor starts); the measured iterations run the same code; switch_off: [preload] turns it off"
)

#: Where a private runtime has more CPUs than the trial has actors (:func:`idle_prestart`); ``{n}``: how many.
IDLE_PRESTART = (
    "the trial's private runtime starts a Ray worker as an actor asks for one, not one per CPU as its driver "
    "connects ({n} of those would never get an actor; Tune's shared runtime starts them once a sweep); the "
    "measured iterations run the same code; switch_off: [on_demand_workers] starts them as Ray does"
)

#: The switch that takes each line away (``switch_off``): a name ``RLBENCH_SWITCH_OFF`` adds after planning takes its
#: line out of the plan's words (:func:`without_switched`).
SWITCHED_LINES: dict[str, tuple[str, ...]] = {
    "affinity": (PINNED, PIN_DRIVER),
    "agents": (MINIMAL_AGENTS,),
    "preload": (WORKER_PRELOAD,),
    "on_demand_workers": (IDLE_PRESTART,),
}

#: Where a ``--parallel`` trial's driver runs, in place of :data:`ALWAYS`' first entry.
IN_ACTOR = (
    "the driver (the Algorithm) runs in a Ray actor in the trial's placement group on its own nodes, as Tune's "
    "trial actor does, but driven one call per iteration by rlbench's trial process (no Tune controller, "
    "result logging or checkpoint syncing beside it); the trial holds whole nodes, no other trial of the "
    "sweep on them while it runs"
)


def tune_differences(
    config: TrialConfig,
    cpus: int,
    usable_cores: int,
    *,
    on_cluster: bool = False,
    profile_hz: int = 0,
    parallel: bool = False,
    include_dashboard: bool = False,
    ray_runtime: bool = True,
    worker_preload: bool = False,
    idle_prestart: int = 0,
) -> list[str]:
    """What differs from Tune for this trial (:data:`ALWAYS` first, then what this config adds); ``parallel``:
    a ``--parallel`` trial, whose driver is a trial actor on its nodes (:data:`IN_ACTOR`); ``worker_preload``:
    the trial's Ray workers import its framework's modules as they start (:data:`WORKER_PRELOAD`); ``idle_prestart``:
    the workers its runtime does not start ahead (:data:`IDLE_PRESTART`)."""
    out = [IN_ACTOR, *ALWAYS[1:]] if parallel else list(ALWAYS)
    r, t = config.resources, config.threads
    if parallel:
        pass  # num_cpus_for_main_process sizes the trial actor, as Tune's
    elif on_cluster:
        out.append(
            f"num_cpus_for_main_process={r.num_cpus_for_main_process} reserves nothing on the cluster: the "
            "driver runs beside rlbench (Tune's trial actor would take them from the cluster)"
        )
    elif cpus < usable_cores and "affinity" not in config.switch_off:
        out.append(PINNED.format(cpus=cpus, usable=usable_cores))
    if r.pin_driver and not on_cluster and "affinity" not in config.switch_off:
        out.append(PIN_DRIVER)
    if profile_hz:
        out.append(
            f"py-spy samples the trial's stacks at {profile_hz} Hz from outside, which costs throughput "
            "(docs/MEASUREMENT.md, profiling)"
        )
    if config.execution == "script":
        out.append(
            "execution: script: the driver runs as a plain algo.train() loop would, at the sweep's priority "
            "(Tune's trial actor runs at Ray's worker niceness, 15) and with torch's and the BLAS libraries' "
            "own thread counts (Tune's actor has OMP_NUM_THREADS = num_cpus_for_main_process)"
        )
    set_by_hand = [f"{k}={v}" for k, v in t.model_dump(exclude_none=True).items()]
    if set_by_hand:
        out.append(f"torch threads set by hand ({', '.join(set_by_hand)}); Tune's would follow the CPUs reserved")
    if ray_runtime and not on_cluster and not include_dashboard and "agents" not in config.switch_off:
        out.append(MINIMAL_AGENTS)
    if worker_preload:
        out.append(WORKER_PRELOAD)
    if idle_prestart:
        out.append(IDLE_PRESTART.format(n=idle_prestart))
    return out


def preloads_workers(config: TrialConfig, *, on_cluster: bool) -> bool:
    """Whether a trial's private runtime starts its workers with the framework's modules: only where remote env
    runners or learners will use them (a trial without them would import them in workers it never uses), never
    on a cluster (its raylets started elsewhere) and not with ``switch_off: [preload]``."""
    remote = config.env_runners.num_env_runners + config.learners.num_learners
    return remote > 0 and not on_cluster and "preload" not in config.switch_off


def idle_prestart(config: TrialConfig, ray_cpus: int, actors: int) -> int:
    """How many of the workers Ray starts as a private runtime's driver connects (one per CPU of ``ray_cpus``,
    Ray's ``--num_prestart_python_workers``) no actor of the trial would take (``actors`` of them): where above 0
    the runtime starts none ahead (:mod:`rlbench.worker.runtime`), 0 with ``switch_off: [on_demand_workers]``.

    Each idle one imports Ray, and RLlib and torch where the workers preload them (3.6 core-s, 2026-11-30), while
    the trial builds: a 1-runner CartPole PPO with a runtime of 2 CPUs, two launched together on 2 cores, took
    13.4 and 12.9 s to their first windows with them and 10.4 and 10.4 s without (ABAB, 2026-12-01); one after
    another, with a core to spare, 16.9 and 16.3 s against 17.3 and 16.3. Where every prestarted worker gets an
    actor, starting each as its actor asks read the same (16.2-17.6 s either way, 2026-11-30), so only the idle
    case changes."""
    return 0 if "on_demand_workers" in config.switch_off else max(0, ray_cpus - actors)


def without_switched(lines: list[str], names: list[str]) -> list[str]:
    """``lines`` (a plan's ``differs_from_tune``) without those of the switches in ``names``
    (:data:`SWITCHED_LINES`; a line with a count matched by its words before the count)."""
    gone = tuple(line.split("{", 1)[0] for n in names for line in SWITCHED_LINES.get(n, ()))
    return [d for d in lines if not d.startswith(gone)] if gone else lines
