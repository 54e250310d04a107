"""Plan stage: turn a loaded spec into the ordered list of trials, each with its cores and fate.

A trial the machine cannot run is planned as ``skipped`` with the reason (:mod:`rlbench.planning.skips`), so
it never reaches Ray (which would wait forever). On a cluster (``--address``) the same plan is made against
the cluster's resources instead.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rlbench.adapters import ResourceDemand, get_adapter
from rlbench.measure.machine import ClusterInfo, MachineInfo
from rlbench.planning.placement import Placement, largest_node_set, node_rooms, node_set_skip_reason, trial_bundles
from rlbench.planning.skips import DUPLICATE, cluster_skip_reason, skip_reason
from rlbench.results.files import write_atomic
from rlbench.results.layout import ResultsFolder, TrialFolder
from rlbench.spec.fidelity import idle_prestart, preloads_workers, tune_differences
from rlbench.spec.model import PROFILE_ROLES, GridPoint, LoadedSpec, SpecError, StopTarget, SweepSpec, TrialConfig
from rlbench.spec.quick import QUICK_FLAG
from rlbench.spec.relative import resolve
from rlbench.spec.seeds import SEED_LIMIT, derive_seed
from rlbench.spec.variants import PackageSet, in_rounds, measured, package_set


class TrialPlan(BaseModel):
    """Everything one trial process needs; written to ``trials/<trial_id>/plan.json``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    trial_id: str
    """``t<grid index>r<repeat>``, e.g. ``t003r1``: stable for the same spec."""
    index: int
    """Position of the grid point (0-based; with variants: point x variants + variant)."""
    repeat: int
    """Repeat number (0-based)."""
    axes: dict[str, Any]
    """Grid axis column -> value."""
    config: TrialConfig
    """Resolved config."""
    cpus: int
    """Cores the trial gets (its ``cpus`` or all usable cores)."""
    cores: list[int]
    """The core ids its process tree is pinned to."""
    driver_cores: list[int]
    """The cores reserved for the driver (a prefix of ``cores``)."""
    ray_cpus: int
    """Logical CPUs given to the trial's Ray runtime: cpus minus the driver's."""
    gpus: int
    """GPUs given to the trial's Ray runtime (all the machine has)."""
    torch_threads: dict[str, int]
    """torch threads rlbench sets per role (driver, learner, env_runner)."""
    stop_iterations: int | None
    """Iteration limit."""
    stop_seconds: float | None
    """Training-time limit."""
    stop_target: StopTarget | None = None
    """The result metric's target that ends the trial when an iteration reaches it; None: no target."""
    warmup_iterations: int
    """Leading iterations flagged warm-up."""
    windows: int | None = None
    """Measured windows of one built trainer (issue 56's warm readings): after its warm-up, this many windows of
    ``window_iterations`` steady iterations each, each started by its gate (``window-<k>`` in the trial folder, k
    from 0; the first also gates the runtime's start and the build) and ended by a ``window_end`` event, the
    trainer kept built and idle between them; ``window-stop`` ends it early. None: one run to its stop rule."""
    window_iterations: int | None = None
    """Steady iterations a window (with ``windows``); a window also ends once its iterations' walls pass
    ``stop_seconds`` (a window's cap), never before its first iteration."""
    timeout_s: float
    """Kill the trial after this long."""
    sample_hz: float
    """Utilization sampling rate."""
    profile_hz: int = 0
    """py-spy samples per second of every Python process in the steady-state window; 0: off."""
    profile_native: bool = False
    """py-spy also records native frames (``--native``)."""
    profile_roles: list[str] = list(PROFILE_ROLES)
    """The roles whose processes are profiled."""
    memory_limit_bytes: int | None = None
    """Kill the trial when its processes' summed resident memory passes this; None: no limit."""
    include_dashboard: bool = False
    """Start Ray's dashboard (bound to 127.0.0.1)."""
    seed: int | None
    """RLlib seed of this trial (``config.debugging(seed=...)``): the seed of its repeat index
    (:func:`repeat_seeds`); None only in plans written before every trial was seeded."""
    skip_reason: str | None = None
    """Why the trial will not run; None when it will."""
    ray_address: str | None = None
    """GCS address of the Ray cluster the trial's driver connects to (``--address``); None: a private local
    runtime. On a cluster ``cores`` are empty (no pinning); ``cpus``, ``ray_cpus``, ``gpus``: the cluster's."""
    parallel: bool = False
    """Planned for ``--parallel``: against the node sets it can get, to run on one of its own (``placement``)."""
    placement: Placement | None = None
    """``--parallel``: the node set the trial runs on and its placement group's bundles, chosen when its turn came
    (:mod:`rlbench.run.schedule`); its trainer then runs in a trial actor there. None: every other trial."""
    differs_from_tune: list[str] = []
    """How this trial differs from the same configuration under Ray Tune, in words (:mod:`~rlbench.spec.fidelity`)."""
    worker_preload_modules: list[str] = []
    """Modules each worker process of the trial's private Ray runtime imports as it starts (its adapter's, where
    remote env runners or learners will use them: :func:`rlbench.spec.fidelity.preloads_workers`); empty
    otherwise and on a cluster."""
    idle_prestart_workers: int = 0
    """Workers Ray would start for the private runtime's CPUs as the driver connects that no actor of the trial uses;
    above 0, the runtime starts a worker as an actor asks instead (:func:`rlbench.spec.fidelity.idle_prestart`)."""
    switched_off: list[str] = []
    """rlbench's choices switched off for a fidelity diagnosis (its ``switch_off``, plus ``RLBENCH_SWITCH_OFF``
    added by the sweep); empty normally."""
    relative: dict[str, str] = {}
    """Grid axis column -> the value relative to the machine it was written as (``cpus-1``); the
    resolved value is in ``axes`` and ``config``. Empty when no grid value was relative."""
    phase: str | None = None
    """``rlbench autoconfig``'s stage of the trial: ``probe``, ``search``, ``race`` or ``walk``; None in a sweep."""
    rung: int | None = None
    """autoconfig: the search rung the trial belongs to, or the walk's step (0: the start's own readings; None
    outside the search and the walk)."""
    variant: str | None = None
    """The variant it runs (``variants:``; its keys are applied in ``config``); None without variants."""
    round: int | None = None
    """Its round: in a sweep the repeat, run interleaved with the other configurations' (None in plans
    before format 3); in an ``rlbench autoconfig`` run its race round, or its round in the walk's step (None
    outside the race and the walk)."""
    packages: PackageSet | None = None
    """Its variant's pinned packages and their environment; None: the sweep's own Python and packages."""

    def in_windows(self, windows: int) -> TrialPlan:
        """This trial read warm (issue 56): ``windows`` windows of its steady iterations each (its stop's iterations
        less the warm-up, at least 1), the warm-up once before the first."""
        steady = max(1, (self.stop_iterations or self.warmup_iterations + 1) - self.warmup_iterations)
        return self.model_copy(
            update={
                "windows": windows,
                "window_iterations": steady,
                "stop_iterations": self.warmup_iterations + windows * steady,
            }
        )

    def demand(self) -> ResourceDemand:
        """What the trial asks of the machine, per role and per actor, by its framework's rules: how the
        analysis reaches the adapter's resource arithmetic without knowing which adapter it is."""
        return get_adapter(self.config.framework).resource_demand(self.config)

    @property
    def asynchronous(self) -> bool:
        """Whether the trial's algorithm samples while it learns (its framework says)."""
        return get_adapter(self.config.framework).is_asynchronous(self.config.algo)


#: What every trial id looks like (:func:`trial_id`); an id from elsewhere that does not is refused.
TRIAL_ID = re.compile(r"t\d{3,}r\d+")


def trial_id(index: int, repeat: int) -> str:
    """The id of grid point ``index``, repeat ``repeat``."""
    return f"t{index:03d}r{repeat}"


def repeat_seeds(spec: SweepSpec, recorded: dict[int, int | None] | None = None) -> list[int | None]:
    """The seed of each repeat index (every grid point's repeat r gets the same one).

    ``spec.seed`` a list: taken as it is; an int: :func:`derive_seed`; None: drawn fresh
    (``secrets``), except the repeats in ``recorded`` (seeds a result folder already ran with,
    which a resume must reuse: its trials' plans are compared with the new ones).
    """
    recorded = recorded or {}
    out: list[int | None] = []
    for repeat in range(spec.repeats):
        if isinstance(spec.seed, list):
            out.append(int(spec.seed[repeat]))
        elif spec.seed is not None:
            out.append(derive_seed(spec.seed, repeat))
        elif repeat in recorded:
            out.append(recorded[repeat])
        else:
            out.append(secrets.randbelow(SEED_LIMIT))
    return out


def resolve_point(point: GridPoint, machine_cpus: int, source: object = "<spec>") -> tuple[TrialConfig, dict[str, Any]]:
    """The point's config and axis values with its relative grid values (``cpus-1``) resolved on a machine
    with ``machine_cpus`` usable cores: ``cpus`` first, then every other knob against the trial's ``cpus``.
    Raises SpecError when a value resolves to what its knob does not take (``cpus/4`` is 0 on 2 cores)."""
    if not point.relative:
        return point.config, point.axes
    raw = json.loads(json.dumps(point.raw))
    axes = dict(point.axes)
    resolved = []
    for rel in sorted(point.relative, key=lambda r: r.path != ("cpus",)):
        base = machine_cpus if rel.path == ("cpus",) else (raw.get("cpus") or machine_cpus)
        value = resolve(rel.expr, base)
        node = raw
        for key in rel.path[:-1]:
            node = node.setdefault(key, {})
        node[rel.path[-1]] = value
        axes[rel.axis] = value
        resolved.append(f"{rel.axis}: {rel.expr} = {value}")
    try:
        config = TrialConfig.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise SpecError(
            f"{source}: grid point {', '.join(f'{a}={v}' for a, v in point.axes.items())}: on this "
            f"machine ({machine_cpus} usable cores) {'; '.join(resolved)}, but {where}: "
            f"{first['msg'].removeprefix('Value error, ')}; change the relative value in the grid"
        ) from None
    return config, axes


def plan_trials(loaded: LoadedSpec, machine: MachineInfo, seeds: list[int | None] | None = None) -> list[TrialPlan]:
    """All trials in run order: grid order, repeats of a point one after another (with ``rounds`` or
    variants: by rounds, :func:`~rlbench.spec.variants.in_rounds`); repeat r is seeded with ``seeds[r]``.

    Relative grid values are resolved here (:func:`resolve_point`); a point that then is exactly an
    earlier one is skipped (reason :data:`DUPLICATE`, whether or not the earlier one fits the
    machine): ``[1, cpus/2]`` on 2 cores. Raises SpecError when a relative value resolves to
    something its knob does not take.
    """
    spec = loaded.spec
    seeds = seeds if seeds is not None else repeat_seeds(spec)
    plans = []
    seen: dict[str, tuple[int, str]] = {}  # resolved config (JSON) -> first point with it, its relative values
    for index, point in enumerate(loaded.points):
        config, axes = resolve_point(point, len(machine.usable_cores), loaded.source)
        cpus = config.cpus or len(machine.usable_cores)
        measure = measured(vars(spec), spec.variants, point.variant)
        # --quick cuts every batch to one size: grid points that differed only there are one trial now
        key = config.model_dump_json() + (json.dumps(measure, sort_keys=True) if loaded.quick else "")
        mine = ", ".join(f"{r.axis}={r.expr} is {axes[r.axis]}" for r in point.relative)
        if key in seen and (mine or seen[key][1] or loaded.quick):  # plain duplicates are left as the user wrote them
            first, theirs = seen[key]
            how = (
                f"on this machine ({mine or theirs})" if mine or theirs else f"under {QUICK_FLAG} (its batch cut alike)"
            )
            reason: str | None = f"{DUPLICATE} {trial_id(first, 0)[:4]} {how}"
        else:
            reason = skip_reason(config, cpus, machine)
            seen.setdefault(key, (index, mine))
        cores = machine.usable_cores[:cpus]
        adapter = get_adapter(config.framework)
        demand = adapter.resource_demand(config)
        driver_cpus = demand.driver_cpus
        ray_cpus = max(0, cpus - driver_cpus)
        idle = idle_prestart(config, ray_cpus, demand.actor_processes) if adapter.runtime == "ray" else 0
        driver_n = min(driver_cpus, len(cores))
        preload = list(adapter.worker_preload_modules) if preloads_workers(config, on_cluster=False) else []
        for repeat in range(spec.repeats):
            plans.append(
                TrialPlan(
                    trial_id=trial_id(index, repeat),
                    index=index,
                    repeat=repeat,
                    axes=axes,
                    config=config,
                    cpus=cpus,
                    cores=cores,
                    driver_cores=cores[:driver_n],
                    ray_cpus=ray_cpus,
                    gpus=machine.gpu_count,
                    torch_threads=adapter.torch_threads(config),
                    stop_iterations=spec.stop.iterations,
                    stop_seconds=spec.stop.seconds,
                    stop_target=spec.stop.target,
                    warmup_iterations=spec.warmup_iterations,
                    timeout_s=spec.trial_timeout_s,
                    **measure,  # sample_hz, profile_hz, profile_native, profile_roles: the spec's or the variant's
                    memory_limit_bytes=spec.trial_memory_limit_bytes,
                    include_dashboard=spec.ray.include_dashboard,
                    seed=seeds[repeat],
                    skip_reason=reason,
                    switched_off=list(config.switch_off),
                    worker_preload_modules=preload,
                    idle_prestart_workers=idle,
                    differs_from_tune=tune_differences(
                        config,
                        cpus,
                        len(machine.usable_cores),
                        profile_hz=measure["profile_hz"],
                        include_dashboard=spec.ray.include_dashboard,
                        ray_runtime=adapter.runtime == "ray",
                        worker_preload=bool(preload),
                        idle_prestart=idle,
                    ),
                    relative={r.axis: r.expr for r in point.relative},
                    variant=point.variant,
                    round=repeat,
                    packages=package_set(spec.variants, point.variant),
                )
            )
    rotate = None
    if (k := spec.rounds_per_process) > 1 and spec.rounds > 1:
        plans = in_processes(plans, k, spec.repeats)
        blocks, v = -(-spec.repeats // k), max(1, len(spec.variants))
        # a block of k rounds has one order; the blocks' first variants spread over the V (0 and 10 of 21 releases,
        # 0 and 1 of 3), so no release sits early in every pass, where a drift within a pass would read as the
        # release's (rotating by the round, 0 and 3, left 21 releases in nearly one order and 3 in one)
        rotate = lambda r: (r // k) * v // blocks  # noqa: E731
    interleaved = bool(spec.variants) or spec.rounds > 1
    return in_rounds(plans, len(spec.variants), rotate=rotate) if interleaved else plans


def in_processes(plans: list[TrialPlan], per_process: int, rounds: int) -> list[TrialPlan]:
    """``rounds_per_process`` (issue 56): rounds r..r+k-1 of a configuration as the k measured windows of the trial of
    round r (k = ``per_process``, fewer in the last block), the other rounds' trials not planned; a window is then a
    round (:func:`rlbench.analysis.history.runs.read_run`). A skipped trial stays as it was: it never runs."""
    out = []
    for plan in plans:
        if plan.repeat % per_process:
            continue
        k = min(per_process, rounds - plan.repeat)
        out.append(plan.in_windows(k) if k > 1 and plan.skip_reason is None else plan)
    return out


# ---------------------------------------------------------------------------------------------
# plan.json: written before the trial starts, read by the trial process


def write_plan(folder: ResultsFolder, plan: TrialPlan) -> TrialFolder:
    """Create the trial's folder with its plan; returns the folder."""
    trial = folder.trial(plan.trial_id)
    trial.path.mkdir(parents=True, exist_ok=True)
    write_atomic(trial.plan, plan.model_dump_json(indent=2).encode())
    return trial


class PlanError(ValueError):
    """A ``plan.json`` that cannot be read: missing, unreadable, not JSON, or not a plan this rlbench reads
    (written by another version, or damaged). Its message is one line that names the file and the first problem."""


def read_plan(trial: TrialFolder) -> TrialPlan:
    """The trial's plan; :class:`PlanError` (a ValueError) says in one line why it cannot be read. Every reader
    goes through here: the trial process (which then fails alone), the tables (which list it as ``unreadable``),
    ``--resume`` and ``reproduce``."""
    problem = _plan_problem(trial)
    if isinstance(problem, TrialPlan):
        return problem
    raise PlanError(problem)  # raised outside the handler: no chained pydantic text in the trial's error event


def _plan_problem(trial: TrialFolder) -> TrialPlan | str:
    """The plan, or why it cannot be read (one line)."""
    try:
        text = trial.plan.read_text()
    except (OSError, UnicodeDecodeError) as e:
        return f"{trial.plan} cannot be read ({getattr(e, 'strerror', None) or e})"
    try:
        return TrialPlan.model_validate_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "its top level"
        more = f" (and {e.error_count() - 1} more problems)" if e.error_count() > 1 else ""
        return (
            f"{trial.plan} is not a plan this rlbench reads: {where}: "
            f"{first['msg'].removeprefix('Value error, ')}{more}"
        )
    except (ValueError, RecursionError) as e:
        return f"{trial.plan} cannot be read ({str(e)[:200]})"


# ---------------------------------------------------------------------------------------------
# On a Ray cluster (--address)


def plan_cluster_trials(
    loaded: LoadedSpec, cluster: ClusterInfo, seeds: list[int | None] | None = None, *, parallel: bool = False
) -> list[TrialPlan]:
    """Plan every trial for the cluster: no pinning, Ray's CPUs/GPUs = the cluster's, the address set
    (``cpus``, machine-size emulation by pinning, has no meaning there: :func:`check_spec_for_cluster`).

    ``parallel`` (``--parallel``): each trial runs on a node set of its own (:mod:`rlbench.planning.placement`), so it
    is
    planned against the node sets it can get, not the cluster's totals: skipped when no node type's nodes hold
    its bundles together, and its ``cpus`` are those of the node set it would get on the whole cluster (the
    set it gets when its turn comes replaces them, with its ``placement``)."""
    total_cpus = int(cluster.total_cpus)
    machine = MachineInfo(
        hostname=f"ray cluster {cluster.gcs_address}",
        cpu_model="cluster",
        logical_cores=total_cpus,
        physical_cores=None,
        usable_cores=list(range(max(total_cpus, 1))),
        memory_bytes=0,
        gpus=[{}] * int(cluster.total_gpus),
    )
    rooms = node_rooms(cluster)
    plans = []
    for plan in plan_trials(loaded, machine, seeds):
        duplicate = (plan.skip_reason or "").startswith(DUPLICATE)
        cpus, gpus = total_cpus, int(cluster.total_gpus)
        if parallel:
            demand = get_adapter(plan.config.framework).resource_demand(plan.config)
            bundles = trial_bundles(demand)
            reason = node_set_skip_reason(bundles, rooms, demand.describe_actors() or "no actors")
            fits = largest_node_set(bundles, rooms)
            if fits is not None:
                cpus, gpus = int(fits.node_cpus), int(fits.node_gpus)
        else:
            reason = cluster_skip_reason(plan.config, cluster)
        plans.append(
            plan.model_copy(
                update={
                    "cpus": cpus,
                    "cores": [],
                    "driver_cores": [],
                    "ray_cpus": cpus,
                    "gpus": gpus,
                    "ray_address": cluster.gcs_address,
                    "worker_preload_modules": [],
                    "idle_prestart_workers": 0,
                    "differs_from_tune": tune_differences(
                        plan.config, cpus, cpus, on_cluster=True, profile_hz=plan.profile_hz, parallel=parallel
                    ),
                    "skip_reason": plan.skip_reason if duplicate else reason,
                    "parallel": parallel,
                }
            )
        )
    return plans


def placed(plan: TrialPlan, where: Placement) -> TrialPlan:
    """The plan of a ``--parallel`` trial whose turn has come, on the node set ``where``: its ``cpus`` and ``gpus``
    are that set's."""
    return plan.model_copy(
        update={
            "placement": where,
            "cpus": int(where.node_cpus),
            "ray_cpus": int(where.node_cpus),
            "gpus": int(where.node_gpus),
        }
    )


#: What a ``--parallel`` trial's plan gets when its turn comes (:func:`placed`), and why a trial is skipped in words
#: that name the cluster's nodes as probed: a resume compares everything else, and whether a trial is skipped.
PLACED_KEYS = ("placement", "cpus", "ray_cpus", "gpus", "skip_reason")


def check_spec_for_cluster(loaded: LoadedSpec, *, parallel: bool = False) -> str | None:
    """Why the spec cannot run on a cluster (it sets ``cpus``), or with ``--parallel`` (a trial of
    ``execution: script`` asks for what a trial actor cannot be), or None."""
    if loaded.spec.cpus is not None or any(p.config.cpus is not None for p in loaded.points):
        return (
            f"{loaded.source}: 'cpus' emulates a smaller machine by pinning the trial to local cores, "
            "which has no meaning on a Ray cluster; remove 'cpus' (and any 'cpus' grid axis) to run with "
            "--address, or drop --address to emulate machine sizes locally"
        )
    if parallel and any(p.config.execution == "script" for p in loaded.points):
        return (
            f"{loaded.source}: execution: script runs the driver as a plain algo.train() loop in its own process, "
            "but --parallel runs every driver as a Ray actor on the trial's nodes, as Tune does; drop "
            "execution: script (and any execution axis or variant) to run with --parallel, or drop --parallel"
        )
    return None
