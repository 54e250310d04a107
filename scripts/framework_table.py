"""The table of a sweep over ``framework`` (docs/STUDIES.md, "RLlib against Stable-Baselines3"): per configuration
and framework, throughput and time to target with 95% intervals, CPU-seconds to target, cores used per role and
the per-iteration split; then, per configuration, B = each other framework against the first, by the project's one
change rule (``rlbench.analysis.change.unpaired``: independent repeats).

    python scripts/framework_table.py RESULTS_FOLDER

Prints Markdown. Timing figures of a loaded machine: read them with its load (docs/STUDIES.md says it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from rlbench.analysis.change import unpaired
from rlbench.analysis.stats import median_ci


def _ci(values, digits: int = 0) -> str:
    e = median_ci(list(values))
    if e.median is None:
        return "-"
    f = f"{{:,.{digits}f}}"
    if e.ci_low is None:
        return f.format(e.median)
    return f"{f.format(e.median)} [{f.format(e.ci_low)}, {f.format(e.ci_high)}]"


def _verdict(change) -> str:
    if change.ratio is None:
        return "-"
    where = (
        f"{change.ratio:.2f} [{change.ci_low:.2f}, {change.ci_high:.2f}]"
        if change.ci_low is not None
        else f"{change.ratio:.2f}"
    )
    p = f"p={change.p_value:.3f}" if change.p_value is not None else "p -"
    return f"{where}, {p}: {'**differs**' if change.differs else 'no evidence'}"


def main(folder: Path) -> None:
    trials = pd.read_parquet(folder / "trials.parquet")
    its = pd.read_parquet(folder / "iterations.parquet")
    steady = its[~its["warmup"]]
    split = steady.groupby("trial_id")[
        ["sample_s", "learn_s", "sync_s", "other_s", "env_step_s", "inference_s", "wall_s"]
    ].median()
    manifest = json.loads((folder / "manifest.json").read_text())
    software = manifest.get("software") or {}
    print(
        f"Versions: ray {software.get('ray')} (RLlib), stable-baselines3 {software.get('stable-baselines3')}, "
        f"torch {software.get('torch')}, gymnasium {software.get('gymnasium')}, python {software.get('python')}\n"
    )
    frameworks = list(dict.fromkeys(trials["framework"]))
    axes = ["num_env_runners", "num_envs_per_env_runner"]
    target = "time_to_target_s" in trials and trials["time_to_target_s"].notna().any()
    trials = trials.assign(cpus_used=trials[[c for c in trials if c.endswith("_cpus_used")]].sum(axis=1))
    trials = trials.assign(cpu_s_to_target=trials["time_to_target_s"] * trials["cpus_used"])
    head = [
        "runners x envs",
        "framework",
        "env steps/s",
        "time to target s" if target else None,
        "with start + build s" if target else None,
        "env steps to target" if target else None,
        "CPU-s to target" if target else None,
        "reached",
        "cores used: driver / env runners / other",
        "per iteration s: sample (env, inference) / learn / sync / other",
    ]
    head = [h for h in head if h]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    verdicts = []
    for key, group in trials.groupby(axes, sort=True):
        for framework in frameworks:
            mine = group[group["framework"] == framework]
            ok = mine[mine["status"] == "ok"]
            s = split.reindex(ok["trial_id"]).median()
            other = (ok["cpus_used"] - ok["driver_cpus_used"] - ok["env_runner_cpus_used"]).clip(lower=0.0)
            row = [f"{key[0]} x {key[1]}", framework, _ci(ok["env_steps_per_s"])]
            if target:
                row += [
                    _ci(ok["time_to_target_s"], 1),
                    f"{ok['time_to_target_total_s'].median():.1f}",
                    f"{ok['env_steps_to_target'].median():,.0f}",
                    _ci(ok["cpu_s_to_target"], 1),
                ]
            row += [
                f"{int(ok['reached_target'].fillna(False).sum())}/{len(mine)}" if target else f"{len(ok)} ok",
                f"{ok['driver_cpus_used'].median():.2f} / {ok['env_runner_cpus_used'].median():.2f} / "
                f"{other.median():.2f}",
                f"{s['sample_s']:.3f} ({s['env_step_s']:.3f}, {s['inference_s']:.3f}) / {s['learn_s']:.3f} / "
                f"{s['sync_s']:.3f} / {s['other_s']:.3f}",
            ]
            print("| " + " | ".join(row) + " |")
        first = group[(group["framework"] == frameworks[0]) & (group["status"] == "ok")]
        for framework in frameworks[1:]:
            other = group[(group["framework"] == framework) & (group["status"] == "ok")]
            line = f"- {key[0]} x {key[1]}, {framework} / {frameworks[0]}: env steps/s " + _verdict(
                unpaired(first["env_steps_per_s"], other["env_steps_per_s"])
            )
            if target:
                for column, words in (
                    ("time_to_target_s", "time to target"),
                    ("time_to_target_total_s", "with start + build"),
                    ("env_steps_to_target", "env steps to target"),
                ):
                    line += f"; {words} " + _verdict(unpaired(first[column], other[column]))
            verdicts.append(line)
    print("\nB against A by the change rule (ratio of medians B/A [95% CI], one-sided Mann-Whitney U):\n")
    print("\n".join(verdicts))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
