"""autoconfig's input: the spec with its ``autoconfig:`` section, the budget, and the search space on this machine.

Everything a user can get wrong is caught here, before anything runs, as one
:class:`~rlbench.spec.model.SpecError` naming the key or flag and the fix (the command exits 2): an
unparsable ``--budget``, a budget below the smallest plan that can answer (the probes, then the baseline
against one other for ``min_rounds`` rounds: :meth:`rlbench.autoconfig.session.Session.minimum_budget_s`,
with the figure to give instead), an empty search space (no grid, or no grid point this machine can run),
``time_to_target`` without a ``stop`` target, a baseline axis that is not a grid axis.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlbench.adapters import get_adapter
from rlbench.autoconfig.model import Candidate
from rlbench.autoconfig.plan import TrialShape
from rlbench.autoconfig.section import AutoconfigSection
from rlbench.autoconfig.session import Session, Space
from rlbench.autoconfig.walk.session import WalkSession
from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import TrialPlan, plan_cluster_trials, plan_trials
from rlbench.spec.load import axis_column, axis_target, spec_from_dict
from rlbench.spec.model import LoadedSpec, SpecError
from rlbench.spec.yamlfile import read_yaml

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_BUDGET = re.compile(r"(\d+(?:\.\d+)?)([smh])")


def parse_budget(text: str) -> float:
    """``20m``, ``90s``, ``1h30m`` or plain seconds (``600``) -> seconds; SpecError naming ``--budget``."""
    t = str(text).strip().lower().replace(" ", "")
    try:
        seconds = float(t)
    except ValueError:
        parts = _BUDGET.findall(t)
        seconds = sum(float(n) * _UNITS[u] for n, u in parts) if parts and "".join(n + u for n, u in parts) == t else -1
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise SpecError(f"--budget {text!r}: not a duration; write e.g. --budget 20m, 90s, 1h30m or 600 (seconds)")
    return seconds


@dataclass
class Setup:
    """A validated autoconfig run: the spec, its section, and the search space planned on this machine."""

    loaded: LoadedSpec
    """The spec without its ``autoconfig:`` section (the grid is the search space)."""
    data: dict[str, Any]
    """The spec mapping as written, less ``autoconfig:`` (for best.yaml)."""
    section: AutoconfigSection
    """The section, with ``--objective`` and ``--budget`` applied."""
    budget_s: float
    """Seconds for the whole run."""
    candidates: dict[str, Candidate]
    """key -> configuration: every runnable grid point (grid order), then the baseline if it is not one."""
    templates: dict[str, TrialPlan]
    """key -> its planned trial (repeat 0), from which every trial of it is made."""
    baseline_key: str
    """The configuration to beat."""
    searched: list[str]
    """Keys of the grid points the search starts from."""
    notes: list[str]
    """Grid points left out (the machine cannot run them), in words."""
    shape: TrialShape
    """How long a trial trains: the spec's ``stop:``, capped by ``autoconfig.trial_s``."""
    cold_start_s: float
    """Seconds a trial is expected to spend outside training until the probes measure it
    (``autoconfig.cold_start_s``, else the largest of the space's frameworks' own figures)."""
    walk: bool
    """Walk the verdicts from the baseline (``rlbench.autoconfig.walk``) instead of searching the grid: a spec with no
    grid axis of two values, or ``--walk``."""
    grid_axes: dict[str, tuple[str, tuple[Any, ...]]] | None
    """``--walk`` on a grid: column -> (the grid's axis name, its values): the walk moves along those only."""
    lines: Any
    """The spec file's line map (for the words of a point the walk plans)."""
    machine: MachineInfo
    """This machine (a point the walk plans is planned on it)."""
    cluster: Any = None
    """The cluster the trials run on (None: this machine)."""
    parallel: bool = False
    """Planned for ``--parallel``."""

    @property
    def space(self) -> Space:
        """What the session searches."""
        return Space(self.candidates, self.searched, self.baseline_key, second_probe(self), device_probe(self))

    def session(self) -> Session:
        """A new session over this space (a resume gives it the saved decisions): the walk's, or the search's."""
        if self.walk:
            return WalkSession(
                self.space, self.section, self.budget_s, self.shape, self.cold_start_s, grid_axes=self.grid_axes
            )
        return Session(self.space, self.section, self.budget_s, self.shape, self.cold_start_s)


def plan_point(setup: Setup, axes: dict[str, Any]) -> TrialPlan | str:
    """The planned trial of the spec's base with ``axes`` set (a point the walk moves to), or why this machine cannot
    run it, in words. Where the spec sets the driver's torch threads itself, a move of the driver's CPUs
    (``num_cpus_for_main_process``) sets its threads to the same number: else the CPUs would be reserved and unused."""
    data = copy.deepcopy(setup.data)
    grid = {a: [v] for a, v in axes.items()}
    columns = {axis_column(a): a for a in axes}
    base = setup.templates[setup.baseline_key].config
    if "num_cpus_for_main_process" in columns and base.threads.driver_torch_threads is not None:
        grid.setdefault(
            columns.get("driver_torch_threads", "driver_torch_threads"), [axes[columns["num_cpus_for_main_process"]]]
        )
    data["grid"], data["repeats"] = grid, 1
    try:
        loaded = spec_from_dict(data, source=setup.loaded.source, lines=setup.lines, check_envs=False)
        plan = _plans(loaded, setup.machine, setup.cluster, setup.parallel)[0]
    except SpecError as e:
        return str(e)
    if plan.skip_reason is not None:
        return plan.skip_reason
    crowded = (
        None
        if setup.cluster is not None
        else all_cores_threads(plan, setup.templates[setup.baseline_key], setup.machine)
    )
    return crowded if crowded is not None else plan


def all_cores_threads(plan: TrialPlan, start: TrialPlan, machine: MachineInfo) -> str | None:
    """Why the walk does not move to ``plan``, in words, when the move gives a learner (the driver's, or each remote
    one) as many torch threads as this machine has cores for rlbench and the start gave it fewer (issue 57); None:
    it may. Torch's threads meet at every operation, so one thread kept off a core stalls the rest: on 2 cores every
    2-thread learner point read 4-17x below its 1-thread twin whenever anything else wanted a core (inference_wide's
    exhaustive grid at load 3-9, its side-by-side at 2.5; the learner workload), though the walk's race in a quiet
    minute read the trade to it 1.16x faster (docs/AUTOCONFIG.md). One core is the machine's whole: nothing to
    leave."""
    cores = len(machine.usable_cores)

    def most(p: TrialPlan) -> int:
        return max(p.torch_threads.get("driver", 1), p.torch_threads.get("learner", 1))

    if cores < 2 or most(plan) < cores or most(start) >= cores:
        return None
    return (
        f"it gives a learner {most(plan)} torch threads, every core of this machine's {cores}: a move the walk does "
        "not make, as its speed holds only while nothing else wants a core (docs/AUTOCONFIG.md, the walk)"
    )


def second_probe(setup: Setup) -> str | None:
    """The searched configuration that separates the most of the baseline's costs, its learner on the same device:
    another envs per runner (inference's per-call cost from its per-step cost) and another minibatch step count
    (the learner's per-step cost from its per-env-step cost), both if one does; then the envs per runner that differ
    most (the larger on a tie), the rest as alike as possible. None when the grid varies neither."""
    base = setup.candidates[setup.baseline_key]

    def splits(c: Candidate) -> int:
        return (c.num_envs_per_env_runner != base.num_envs_per_env_runner) + (c.sgd_steps != base.sgd_steps)

    others = [
        setup.candidates[k]
        for k in setup.searched
        if setup.candidates[k].on_gpu == base.on_gpu and splits(setup.candidates[k])
    ]
    if not others:
        return None
    return max(
        others,
        key=lambda c: (
            splits(c),
            abs(c.num_envs_per_env_runner - base.num_envs_per_env_runner),
            c.num_env_runners == base.num_env_runners,
            -c.cpus,
        ),
    ).key


def device_probe(setup: Setup) -> str | None:
    """The searched configuration whose learner is on the other device than the baseline's (a GPU learner beside a
    CPU baseline, or the reverse), the fewest axes away from it (the fewer CPUs on a tie): without a probe there,
    the cost model predicts nothing on that device. None when every searched learner is on the baseline's."""
    base = setup.candidates[setup.baseline_key]
    others = [setup.candidates[k] for k in setup.searched if setup.candidates[k].on_gpu != base.on_gpu]
    if not others:
        return None
    values = dict(base.axes)
    return min(others, key=lambda c: (sum(values.get(a) != v for a, v in c.axes), c.cpus)).key


def candidate(plan: TrialPlan, axes: dict[str, Any]) -> Candidate:
    """A planned grid point as the search sees it: its resource sums and train batch as its framework's
    adapter says (the decision core asks no adapter itself)."""
    adapter = get_adapter(plan.config.framework)
    return Candidate.from_config(
        plan.config,
        axes,
        demand=plan.demand(),
        batch=adapter.train_batch(plan.config),
        defaults=adapter.hyperparameter_defaults(plan.config),
    )


def _value_at(config: Any, path: tuple[str, ...]) -> Any:
    node: Any = config.model_dump(mode="json")
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _plans(loaded: LoadedSpec, machine: MachineInfo, cluster, parallel: bool = False) -> list[TrialPlan]:
    seeds: list[int | None] = [0] * loaded.spec.repeats
    plans = (
        plan_cluster_trials(loaded, cluster, seeds, parallel=parallel)
        if cluster is not None
        else plan_trials(loaded, machine, seeds)
    )
    # a spec's rounds_per_process reads a sweep's rounds warm; autoconfig reads its own way (its race, a walk's windows)
    cold = {"windows": None, "window_iterations": None, "stop_iterations": loaded.spec.stop.iterations}
    return [p.model_copy(update=cold) if p.windows else p for p in plans if p.repeat == 0]


def prepare(
    path: Path,
    *,
    budget: str | None,
    objective: str | None,
    machine: MachineInfo,
    cluster=None,
    parallel: bool = False,
    quick: bool = False,
    walk: bool = False,
) -> Setup:
    """Read, validate and plan an autoconfig spec; raises SpecError (bad input: nothing run). ``parallel``: planned
    for ``--parallel`` on ``cluster`` (against the node sets a trial can get). ``quick``: for ``rlbench sweep
    --quick``, which runs the baseline alone: no budget is needed, none is checked. A spec with no grid axis of two
    values is walked from its configuration (``rlbench.autoconfig.walk``); ``walk``: a grid spec too, from its
    baseline along the grid's axes."""
    path = Path(path)
    data, lines = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the top level must be a mapping (name:, environment:, grid:, autoconfig:, ...)")
    raw_section = data.pop("autoconfig", None) or {}
    if not isinstance(raw_section, dict):
        raise SpecError(f"{path}: autoconfig: must be a mapping of keys (objective:, budget_s:, baseline:, ...)")
    try:
        section = AutoconfigSection.model_validate(raw_section)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise SpecError(f"{path}: autoconfig.{where}: {first['msg']} (docs/AUTOCONFIG.md lists the keys)") from None
    if objective is not None:
        section = section.model_copy(update={"objective": objective})
    budget_s = parse_budget(budget) if budget is not None else section.budget_s
    if budget_s is None and quick:
        budget_s = math.inf  # nothing is searched: the smallest plan's budget is not asked for
    if budget_s is None:
        raise SpecError(f"{path}: no budget: give --budget 20m (or autoconfig.budget_s in the spec)")
    grid = data.get("grid") or {}
    varied = isinstance(grid, dict) and any(isinstance(v, list) and len(v) >= 2 for v in grid.values())
    walking = walk or not varied  # no space to search: walk the verdicts from the spec's configuration
    loaded = spec_from_dict(copy.deepcopy(data), source=path, lines=lines)
    if not walking:
        _refuse_replay(path, loaded)
    if section.objective == "time_to_target" and loaded.spec.stop.target is None:
        raise SpecError(
            f"{path}: stop: objective time_to_target needs a stop target to time: add one, e.g. "
            "stop: {episode_return_mean: 150}, or use --objective throughput"
        )
    axes = list(loaded.spec.grid)  # old names translated
    columns = {axis_column(a): a for a in axes}
    unknown = [a for a in section.baseline if a not in axes and a not in columns]
    if unknown:
        raise SpecError(
            f"{path}: autoconfig.baseline.{unknown[0]}: not a grid axis; the baseline names values of "
            f"the grid's axes ({', '.join(axes)})"
        )
    templates: dict[str, TrialPlan] = {}
    candidates: dict[str, Candidate] = {}
    notes = []
    for plan in _plans(loaded, machine, cluster, parallel):
        named = {columns.get(c, c): v for c, v in plan.axes.items()}
        if plan.skip_reason is not None:
            notes.append(f"{', '.join(f'{a}={v}' for a, v in named.items())}: left out ({plan.skip_reason})")
            continue
        c = candidate(plan, named)
        candidates[c.key], templates[c.key] = c, plan
    if not candidates:
        raise SpecError(
            f"{path}: grid: no grid point can run on this machine ({'; '.join(notes[:2])}): "
            "the search space is empty; use smaller values"
        )
    baseline_key, baseline_plan = _baseline(
        path=path,
        data=data,
        lines=lines,
        section=section,
        axes=axes,
        machine=machine,
        cluster=cluster,
        index=len(loaded.points),
        parallel=parallel,
    )
    same = next((k for k, t in templates.items() if t.config == baseline_plan.config), None)
    searched = list(candidates)
    if same is not None:
        baseline_key = same
    else:
        named = {a: _value_at(baseline_plan.config, axis_target(a)) for a in axes}
        candidates[baseline_key] = replace(candidate(baseline_plan, named), key=baseline_key)
        templates[baseline_key] = baseline_plan.model_copy(
            update={"axes": {axis_column(a): v for a, v in named.items()}}
        )
    spec = loaded.spec
    shape = TrialShape(
        stop_iterations=spec.stop.iterations,
        stop_seconds=spec.stop.seconds,
        cap_s=section.trial_s,
        warmup_iterations=spec.warmup_iterations,
    )
    cold = (
        section.cold_start_s
        if section.cold_start_s is not None
        else max(get_adapter(t.config.framework).cold_start_s for t in templates.values())
    )
    grid_axes = (
        {axis_column(a): (a, tuple(v)) for a, v in loaded.spec.grid.items() if isinstance(v, list) and len(v) >= 2}
        if walk and varied
        else None
    )
    setup = Setup(
        loaded=loaded,
        data=data,
        section=section,
        budget_s=budget_s,
        candidates=candidates,
        templates=templates,
        baseline_key=baseline_key,
        searched=[] if walking else searched,
        notes=notes,
        shape=shape,
        cold_start_s=cold,
        walk=walking,
        grid_axes=grid_axes,
        lines=lines,
        machine=machine,
        cluster=cluster,
        parallel=parallel,
    )
    need = setup.session().minimum_budget_s()
    if budget_s < need:
        training = (
            f"{shape.limit_s:g} s of training"
            if shape.limit_s is not None
            else "their training, not known before a probe"
        )
        smallest = (
            f"the start's {WalkSession.readings} reading{'s' * (WalkSession.readings != 1)}, then one step of "
            f"{section.min_rounds} rounds, the first with the start's reading"
            if walking
            else f"the probes, then the baseline against the model's best for {section.min_rounds} rounds"
        )
        given = " (autoconfig.cold_start_s)" if section.cold_start_s is not None else ""
        raise SpecError(
            f"--budget {budget_s:g} s cannot buy an answer for {path}: the smallest plan ({smallest}) needs at "
            f"least {need:.0f} s here (trials of {cold:g} s of cold start{given} "
            f"+ {training}, and the report's reserve): give --budget {_duration(need)} or more, or a "
            "shorter stop:"
        )
    return setup


def _refuse_replay(path: Path, loaded: LoadedSpec) -> None:
    """Refuse, before any trial, a space with an algorithm that trains on replayed steps: the cost model is of an
    on-policy iteration (sample, learn, sync once each), so its ranking of an off-policy one would be made up."""
    replay = sorted(
        {p.config.algo for p in loaded.points if get_adapter(p.config.framework).trains_on_replay(p.config.algo)}
    )
    if replay:
        raise SpecError(
            f"{path}: algo: autoconfig cannot search {' and '.join(replay)}: its cost model is of an on-policy "
            "iteration (sample a train batch, learn on it, sync the weights, once each), and "
            f"{' and '.join(replay)} train{'s' if len(replay) == 1 else ''} on replayed steps instead (an iteration "
            "repeats sample, store, replay, update and sync, and training_intensity, not the train batch, sets how "
            "much each sampled step is learned from), which it does not model; it would rank configurations on a "
            "wrong model. Run `rlbench sweep` over the same grid and compare the trials (docs/AUTOCONFIG.md, "
            "step 1, Input)"
        )


def _duration(seconds: float) -> str:
    """A budget flag's value at or above ``seconds``: ``90s``, ``4m``, ``1h5m``."""
    s = int(seconds) + (seconds % 1 > 0)
    if s < 120:
        return f"{s}s"
    m = -(-s // 60)
    return f"{m}m" if m < 60 else f"{m // 60}h{m % 60}m" if m % 60 else f"{m // 60}h"


def _baseline(
    path: Path,
    data: dict,
    lines,
    section: AutoconfigSection,
    axes: list[str],
    machine: MachineInfo,
    cluster,
    index: int,
    parallel: bool = False,
) -> tuple[str, TrialPlan]:
    """The baseline's planned trial: the spec's base configuration with ``autoconfig.baseline``'s axes set."""
    by_column = {axis_column(a): a for a in axes}
    given = {by_column.get(k, k): v for k, v in section.baseline.items()}
    base = copy.deepcopy(data)
    base["grid"] = {a: [v] for a, v in given.items()}
    base["repeats"] = 1
    try:
        loaded = spec_from_dict(base, source=path, lines=lines, check_envs=False)
        plans = _plans(loaded, machine, cluster, parallel)
    except SpecError as e:
        raise SpecError(f"autoconfig.baseline: {e}") from None
    plan = plans[0]
    if plan.skip_reason is not None:
        raise SpecError(
            f"{path}: autoconfig.baseline: this machine cannot run it ({plan.skip_reason}); set "
            "autoconfig.baseline to grid values that fit"
        )
    return "baseline", plan.model_copy(update={"index": index})


def has_autoconfig(path: Path) -> bool:
    """Whether the spec file holds an ``autoconfig:`` section (False when it cannot be read: the loader says why)."""
    try:
        data, _ = read_yaml(Path(path))
    except SpecError:
        return False
    return isinstance(data, dict) and "autoconfig" in data


def quick_baseline(path: Path, machine: MachineInfo, cluster=None) -> tuple[LoadedSpec, Setup]:
    """``rlbench sweep --quick`` of an autoconfig spec: its search space planned as ``rlbench autoconfig`` plans it
    (SpecError for whatever it would refuse, the budget aside), and its baseline (the spec's base config with
    ``autoconfig.baseline``'s grid values) as a one-point ``--quick`` sweep."""
    setup = prepare(path, budget=None, objective=None, machine=machine, cluster=cluster, quick=True)
    by_column = {axis_column(a): a for a in setup.loaded.spec.grid}
    data = copy.deepcopy(setup.data)
    data["grid"] = {by_column.get(k, k): [v] for k, v in setup.section.baseline.items()}
    _, lines = read_yaml(Path(path))
    return spec_from_dict(data, source=path, lines=lines, quick=True), setup
