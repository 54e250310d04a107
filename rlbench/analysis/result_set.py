"""The analysis of one result set, computed once: what the report, the terminal and anyone else show.

:func:`analyze` is the analysis room's one entry (re-exported by :mod:`rlbench.analysis`): a results
folder (its tables read from the parquet files, or given) in, an :class:`Analysis` out. The report
imports it, never the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rlbench.adapters import FRAMEWORKS, get_adapter
from rlbench.analysis.advice import (
    Recommendation,
    learner_cpu_findings,
    recommendations,
    target_recommendations,
    with_learning_notes,
)
from rlbench.analysis.autoconfig_run import AutoconfigRun, autoconfig_run
from rlbench.analysis.comparison import ComparisonRow
from rlbench.analysis.configs import config_label, configurations, result_axes, sm_count
from rlbench.analysis.curves import (
    CURVE_X,
    EqualSteps,
    below_at_equal_steps,
    learning_curves,
    returns_at_equal_steps,
    trial_curves,
)
from rlbench.analysis.evidence import Below
from rlbench.analysis.next_step import NextSweep, next_advice, next_sweep
from rlbench.analysis.node_spread import NodeReport, node_report
from rlbench.analysis.profiles import RoleProfile, role_profiles
from rlbench.analysis.scaling import ScalingCurve, scaling_curves
from rlbench.analysis.targets import time_to_target
from rlbench.analysis.trial_rows import teardown_text
from rlbench.analysis.variants import compare_variants, variant_names
from rlbench.results.layout import ResultsFolder

#: What the report and the terminal say instead of recommendations for a ``--quick`` run (rlbench.spec.quick).
QUICK_NO_RECOMMENDATIONS = (
    "none: this is a --quick run (one repeat, no warm-up, one iteration on a cut train batch): "
    "it checks that every configuration runs, and its figures are start-up more than steady "
    "state; run the spec without --quick to rank configurations"
)

#: Configurations whose profiles are shown (fastest first); the rest are in profiles.parquet.
MAX_PROFILED_CONFIGS = 12


@dataclass
class Learning:
    """What the learning section and figures show, computed once."""

    target: dict[str, Any] | None
    """``metric``, ``threshold``, ``mode`` of the sweep's target; None without one."""
    ttt: pd.DataFrame
    """Time to target per configuration (:func:`rlbench.analysis.targets.time_to_target`); empty without a target."""
    curves: dict[str, pd.DataFrame]
    """x (``env_steps``, ``seconds``) -> learning curves per configuration."""
    equal: EqualSteps
    """Every configuration's return at equal env steps."""
    below: list[Below]
    """Configurations below the best at equal env steps: clearly, or with the evidence still missing."""
    seeds: list[int] = field(default_factory=list)
    """The distinct seeds the ok trials ran with, by repeat."""


def target_of(trials: pd.DataFrame) -> dict[str, Any] | None:
    """The sweep's target as recorded in trials.parquet, or None: ``metric``, ``threshold``, ``mode`` and
    ``column``, the iterations column that holds the metric as its framework's adapter says (None: no column)."""
    if "target_metric" not in trials or trials["target_metric"].isna().all():
        return None
    row = trials[trials["target_metric"].notna()].iloc[0]
    framework = row.get("framework") if isinstance(row.get("framework"), str) else FRAMEWORKS[0]
    column = get_adapter(framework).metric_column(str(row["target_metric"])) if framework in FRAMEWORKS else None
    return {
        "metric": row["target_metric"],
        "threshold": float(row["target_threshold"]),
        "mode": row["target_mode"],
        "column": column,
    }


def learning(trials: pd.DataFrame, iterations: pd.DataFrame | None, axes: list[str]) -> Learning:
    """The learning figures of a result set."""
    its = iterations if iterations is not None else pd.DataFrame(columns=["trial_id"])
    have = not its.empty and "episode_return_mean" in its
    per_trial = trial_curves(its, trials.loc[trials["status"] == "ok", "trial_id"]) if have else {}
    curves = {x: learning_curves(trials, its, x, per_trial) for x in CURVE_X} if have else {}
    equal = returns_at_equal_steps(trials, its, per_trial) if have else EqualSteps(None, {})
    seeds = []
    if "seed" in trials:
        ok = trials[(trials["status"] == "ok") & trials["seed"].notna()].sort_values("repeat")
        seeds = [int(s) for s in ok.drop_duplicates("repeat")["seed"]]
    return Learning(target_of(trials), time_to_target(trials, axes), curves, equal, below_at_equal_steps(equal), seeds)


@dataclass
class ConfigProfiles:
    """One configuration's stack profiles, per role, over its ok repeats."""

    index: int
    """The configuration's grid index."""
    label: str
    """Its axis values, ``a=1, b=2``."""
    trial_ids: list[str]
    """Its ok repeats, first repeat first (the first one with a role's flame graph shows it)."""
    roles: list[RoleProfile]
    """Per profiled role: its top functions and verdict."""
    cores_used: dict[str, float | None]
    """Role -> median cores its processes kept busy (trials.parquet ``<role>_cpus_used``)."""


def config_profiles(
    configs: pd.DataFrame, trials: pd.DataFrame, axes: list[str], profiles: pd.DataFrame | None
) -> tuple[list[ConfigProfiles], str]:
    """Per configuration with profiles, fastest first (at most :data:`MAX_PROFILED_CONFIGS`), and a
    note when some were left out."""
    if profiles is None or profiles.empty or configs.empty:
        return [], ""
    out: list[ConfigProfiles] = []
    ordered = configs.sort_values("env_steps_per_s", ascending=False, na_position="last")
    ok = trials[trials["status"] == "ok"].sort_values("repeat")
    for _, c in ordered.iterrows():
        ids = ok.loc[ok["index"] == c["index"], "trial_id"].tolist()
        roles = role_profiles(profiles, ids)
        if not roles:
            continue
        if len(out) == MAX_PROFILED_CONFIGS:
            return out, (
                f"Profiles of the {MAX_PROFILED_CONFIGS} fastest profiled configurations are shown; every "
                "profile is in profiles.parquet and trials/*/profiles/."
            )
        used = {rp.role: c.get(f"{rp.role}_cpus_used") for rp in roles}
        out.append(
            ConfigProfiles(
                int(c["index"]),
                config_label(c, axes),
                ids,
                roles,
                {r: None if u is None or pd.isna(u) else float(u) for r, u in used.items()},
            )
        )
    return out, ""


def energy_text(manifest: dict[str, Any], trials: pd.DataFrame) -> str:
    """What the machine let rlbench measure of energy, in words (empty for result sets from before RAPL)."""
    if "cpu_energy_zones" not in manifest:
        return ""
    zones = manifest.get("cpu_energy_zones") or []
    gpu = "gpu_energy_j" in trials and trials["gpu_energy_j"].notna().any()
    if not zones:
        text = (
            "Energy: no CPU energy counter on this machine (no readable RAPL package zone under "
            "/sys/class/powercap), so cpu_energy_j is null, never estimated"
        )
    else:
        text = f"Energy: CPU packages read through RAPL ({', '.join(z['zone'] for z in zones)})"
    text += "; GPU energy from NVML." if gpu else "; no GPU energy (no GPU, or NVML gave no counter)."
    if zones or gpu:
        text += " Both count the whole device, whoever used it: other work on the machine is included."
    return text


@dataclass
class Analysis:
    """Everything the report shows of one result set, computed once by :func:`analyze`."""

    out_dir: Path
    """The results folder."""
    manifest: dict[str, Any]
    """Its manifest.json: the spec, the machine, the software, the command."""
    axes: list[str]
    """The grid axes' table columns, in spec order."""
    trials: pd.DataFrame
    """trials.parquet: one row per trial."""
    configs: pd.DataFrame
    """One row per configuration (:func:`rlbench.analysis.configs.configurations`), with its verdict."""
    curves: list[ScalingCurve]
    """Scaling along each axis, per group of the other axes."""
    recs: list[Recommendation]
    """The configuration to pick per goal (those on reaching the target first)."""
    findings: list[str] = field(default_factory=list)
    """Plain-words answers for learner-CPU axes (the forum question)."""
    learning: Learning | None = None
    """Learning curves, time to target, returns at equal env steps."""
    energy: str = ""
    """What energy the machine let rlbench measure, in words."""
    profiles: list[ConfigProfiles] = field(default_factory=list)
    """Per configuration (fastest first, capped), where the time goes inside each role."""
    profiles_note: str = ""
    """Said when configurations' profiles were left out."""
    variants: list[ComparisonRow] = field(default_factory=list)
    """Per grid point, each variant against the first (a sweep with ``variants:``; else empty)."""
    endings: str = ""
    """The ok trials whose process ended in their teardown, with their signals, in words; empty when none."""
    next: NextSweep | None = None
    """The sweep a learner verdict asks for next (``next.yaml``), or None."""
    no_recommendations: str = ""
    """Why the report recommends nothing although configurations were measured (a ``--quick`` run); empty else."""
    unreadable: pd.DataFrame = field(default_factory=pd.DataFrame)
    """trials.parquet's rows of trials whose plan.json cannot be read (status ``unreadable``, the reason): listed
    by the report, left out of ``trials`` and so of every figure and count."""
    nodes: NodeReport | None = None
    """Node to node (a ``--parallel`` sweep: each trial's node set recorded); None otherwise."""
    autoconfig: AutoconfigRun | None = None
    """The autoconfig run (``autoconfig.json`` and its Pareto front of CPUs against throughput) when
    ``rlbench autoconfig`` wrote the folder; None for a sweep's."""
    next_stop: str = ""
    """Why there is no next sweep although a verdict of the configuration to keep applies: ``cores_limit`` (no more
    env runners fit), ``no_fit`` (its knob has no larger value that fits the trial's cores); empty otherwise."""


def analyze(folder: Path, tables: dict[str, pd.DataFrame] | None = None) -> Analysis:
    """The analysis of the result set in ``folder``: per-configuration figures and verdicts, scaling
    curves, learning, recommendations and profiles. ``tables``: its tables when already read
    (:func:`rlbench.analysis.tables.read_tables`), else read here."""
    from rlbench.analysis.tables import measured_rows, read_tables  # imports pyarrow: not at the module's top

    out_dir = Path(folder)
    tables = tables if tables is not None else read_tables(out_dir)
    manifest = ResultsFolder(out_dir).read_manifest()
    trials = measured_rows(tables["trials"])  # a trial whose plan cannot be read has no configuration to count in
    axes = result_axes(manifest, trials)
    configs = configurations(trials, axes, tables.get("iterations"), tables.get("utilization"), sm_count(manifest))
    if manifest.get("quick") and len(configs):  # one iteration each: shown, never ranked
        configs["rank"] = pd.array([pd.NA] * len(configs), dtype="Int64")
    curves = scaling_curves(configs, axes)
    findings = learner_cpu_findings(configs, trials, tables.get("iterations"), axes)
    lrn = learning(trials, tables.get("iterations"), axes)
    recs = with_learning_notes(recommendations(configs, axes), configs, lrn.ttt, lrn.below, axes, lrn.equal.env_steps)
    recs = target_recommendations(lrn.ttt, axes) + recs
    if manifest.get("quick"):  # one iteration, no warm-up, one repeat: start-up is all it measured
        recs = []
    profiles, note = config_profiles(configs, trials, axes, tables.get("profiles"))
    variants = compare_variants(
        trials,
        [a for a in axes if a != "variant"],
        variant_names(manifest, trials),
        iterations=tables.get("iterations"),
    )
    return Analysis(
        out_dir=out_dir,
        manifest=manifest,
        axes=axes,
        trials=trials,
        configs=configs,
        curves=curves,
        recs=recs,
        findings=findings,
        learning=lrn,
        energy=energy_text(manifest, trials),
        profiles=profiles,
        profiles_note=note,
        variants=variants,
        endings=teardown_text(trials),
        next=None if manifest.get("quick") else next_sweep(configs),  # a quick run asks for no next sweep
        no_recommendations=QUICK_NO_RECOMMENDATIONS if manifest.get("quick") else "",
        unreadable=tables["trials"].loc[tables["trials"].index.difference(trials.index)],
        nodes=node_report(trials, axes),
        autoconfig=autoconfig_run(out_dir, trials, axes),
        next_stop=_next_stop(configs, bool(manifest.get("quick"))),
    )


def _next_stop(configs: pd.DataFrame, quick: bool) -> str:
    """Why the configuration to keep asks for no next sweep though a verdict of it applies (``cores_limit``,
    ``no_fit``: issue 57's inference_wide endpoint was told "no verdict names a knob" where its learner's verdict
    named the driver's CPUs and no larger value fit)."""
    advice = None if quick else next_advice(configs)
    return advice.stop if advice is not None and advice.stop in ("cores_limit", "no_fit") else ""
