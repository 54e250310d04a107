"""The workload study's table (docs/STUDIES.md, "Workloads users train"), from the results folders of the
catalogue's sweeps (configs/workloads/): per configuration, the env's ceiling (the sweep's envbench, in as many
processes as sample), the steady env steps/s and its share of the ceiling, the iteration's split, the env's and
the policy's share of sampling, the replay buffer's share, CPU used per role, and rlbench's verdict. Timing
figures: it prints them, it asserts nothing.

    python scripts/workloads_table.py results/workload_*/*/
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from rlbench.analysis import analyze


def pct(x) -> str:
    return "-" if x is None or pd.isna(x) else f"{100 * float(x):.0f}%"


def num(x, digits: int = 0) -> str:
    return "-" if x is None or pd.isna(x) else f"{float(x):,.{digits}f}"


def rows(folder: Path) -> list[str]:
    a = analyze(folder)
    its = pd.read_parquet(folder / "iterations.parquet")
    steady = its[~its["warmup"]]
    out = []
    for _, c in a.configs.iterrows():
        trials = a.trials[(a.trials["index"] == c["index"]) & (a.trials["status"] == "ok")]
        ids = set(trials["trial_id"])
        s = steady[steady["trial_id"].isin(ids)]
        sample = s["sample_s"].sum()
        env_share = s["env_step_s"].sum() / sample if sample > 0 else None
        inf_share = s["inference_s"].sum() / sample if sample > 0 else None
        t = trials.iloc[0] if len(trials) else {}
        axes = ", ".join(f"{ax}={c[ax]}" for ax in a.axes) or "-"
        spec = a.manifest.get("spec") or {}
        out.append(
            " | ".join(
                [
                    str(spec.get("name", folder.name)),
                    axes,
                    str(t.get("algo", "-")) if len(trials) else "-",
                    num(t.get("env_ceiling_steps_per_s")) if len(trials) else "-",
                    num(c["env_steps_per_s"]),
                    pct(t.get("sampling_efficiency")) if len(trials) else "-",
                    " / ".join(pct(c[f"{p}_frac"]) for p in ("sample", "learn", "sync", "other")),
                    f"{pct(env_share)} / {pct(inf_share)}",
                    pct(c.get("replay_frac")),
                    num(c.get("updates_per_env_step"), 2),
                    " / ".join(num(c.get(f"{r}_cpus_used"), 2) for r in ("driver", "env_runner")),
                    str(c["bottleneck"]),
                    str(len(s)),
                ]
            )
        )
    return out


def main(folders: list[str]) -> None:
    print(
        " | ".join(
            [
                "workload",
                "axes",
                "algo",
                "env ceiling steps/s",
                "env steps/s",
                "of ceiling",
                "sample / learn / sync / other",
                "env / policy of sampling",
                "replay",
                "updates/step",
                "CPU used: driver+learner / env runner",
                "verdict",
                "steady its",
            ]
        )
    )
    for folder in folders:
        for line in rows(Path(folder)):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
