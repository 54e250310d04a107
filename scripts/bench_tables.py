"""Benchmark: build the tables and the report of a large generated result set; print time and memory.

    python scripts/bench_tables.py                 # 1,000 trials x 100 iterations in a temp dir
    python scripts/bench_tables.py --trials 200 --iterations 50 --keep /tmp/big

The result set is generated in the real on-disk format (per-trial plan.json, events.jsonl,
record.json, utilization.parquet and a manifest), with made-up but plausible numbers: an Amdahl-like
throughput model with noise. The timed work (``analysis.tables.build_tables`` then ``report.document.write_report``)
runs in a child process so its peak resident memory (``ru_maxrss``, interpreter and imports
included) can be read afterwards. Targets (issue 5): under 10 s and under 1 GiB.

``generate`` is also used by the tests to make small synthetic result sets.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from rlbench import SCHEMA_VERSION
from rlbench.measure.machine import MachineInfo, machine_dict
from rlbench.planning.plan import plan_trials, write_plan
from rlbench.results.files import write_json
from rlbench.results.layout import ResultsFolder
from rlbench.results.records import TrialRecord, write_record
from rlbench.results.tables import UTILIZATION_SCHEMA, write_table
from rlbench.spec.load import spec_from_dict

#: Processes per trial in the generated utilization samples: (role, typical cores busy).
PROCESSES = [("driver", 0.3), ("env_runner", 0.8)] + [("ray_system", 0.01)] * 6
SAMPLE_HZ = 10.0


def grid_for(trials: int, repeats: int) -> dict[str, list]:
    """A grid with about ``trials / repeats`` points over three axes."""
    points = max(1, trials // repeats)
    envs = max(1, points // 10)
    return {
        "num_env_runners": [0, 1],
        "num_envs_per_env_runner": list(range(1, envs + 1)),
        "env_config.step_cost_us": [0, 10, 20, 50, 100][: max(1, min(5, points // (2 * envs)))],
    }


def generate(
    out_dir: Path,
    trials: int = 1000,
    iterations: int = 100,
    repeats: int = 2,
    seed: int = 0,
    speed: float = 1.0,
    name: str = "bench",
    grid: dict[str, list] | None = None,
    target: float | None = None,
) -> Path:
    """Write a result set of ``trials`` trials (grid points x ``repeats``) with ``iterations`` each.

    ``speed`` scales every throughput (0.8 makes a 20% slower copy for compare tests). With ``target``
    the spec stops at ``episode_return_mean: target``, the return of iteration i is 10 x i, and a
    trial ends at the first iteration that reaches it, as the trial loop does. Returns out_dir.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    data = {
        "name": name,
        "environment": {"env": "envs.synthetic:SyntheticEnv", "env_config": {"step_cost_us": 0}},
        "training": {"train_batch_size_per_learner": 256, "minibatch_size": 64, "num_epochs": 1},
        "cpus": 2,
        "grid": grid or grid_for(trials, repeats),
        "repeats": repeats,
        "stop": {"iterations": iterations, **({"episode_return_mean": target} if target is not None else {})},
        "warmup_iterations": 1,
        "sample_hz": SAMPLE_HZ,
    }
    loaded = spec_from_dict(data, source="bench_tables", check_envs=False)
    machine = MachineInfo("bench", "generated", 2, 2, [0, 1], 16 * 2**30, [])
    plans = plan_trials(loaded, machine)[:trials]
    manifest = {
        "spec_file": "bench_tables",
        "spec": loaded.spec.model_dump(mode="json", by_alias=True),
        "alias_notes": [],
        "command": ["scripts/bench_tables.py"],
        "trial_ids": [p.trial_id for p in plans],
        "software": {"rlbench": "generated", "schema_version": str(SCHEMA_VERSION)},
        "git_commit": None,
        "machine": machine_dict(machine),
        "started_at": None,
        "ended_at": None,
    }
    folder = ResultsFolder(out_dir)
    write_json(folder.manifest, manifest)
    names = [f.name for f in UTILIZATION_SCHEMA]
    for plan in plans:
        trial = write_plan(folder, plan)
        c = plan.config
        cost_us = float(c.environment.env_config.get("step_cost_us", 0))
        envs = c.env_runners.num_envs_per_env_runner
        # Amdahl-like: sampling speeds up with vectorized envs, learning is fixed.
        sample_s = (0.02 + cost_us * 256e-6) * (0.3 + 0.7 / envs) / (1.3 if c.env_runners.num_env_runners else 1.0)
        learn_s, sync_s, other_s = 0.03, 0.004, 0.003
        noise = rng.normal(1.0, 0.03, size=(iterations, 4)).clip(0.8, 1.2) / speed
        t0 = 5.0
        lines = [
            {"event": "start", "t_s": 0.5, "pid": 1000},
            {"event": "ray_init", "t_s": 2.5, "ray_init_s": 2.0, "session_dir": None},
            {"event": "build", "t_s": t0, "build_s": 2.5, "torch_threads": plan.torch_threads},
        ]
        t = t0
        for i in range(iterations):
            parts = np.array([sample_s, learn_s, sync_s, other_s]) * noise[i] * (3.0 if i == 0 else 1.0)
            wall = float(parts.sum())
            ret = 20.0 if target is None else 10.0 * (i + 1)
            lines.append(
                {
                    "event": "iteration",
                    "t_s": t + wall,
                    "iteration": i + 1,
                    "warmup": i == 0,
                    "t_start_s": t,
                    "t_end_s": t + wall,
                    "wall_s": wall,
                    "sample_s": float(parts[0]),
                    "learn_s": float(parts[1]),
                    "sync_s": float(parts[2]),
                    "other_s": float(parts[3]),
                    "env_steps_sampled": 256,
                    "env_steps_trained": 1280,
                    "env_steps_per_s": 256 / wall,
                    "episode_return_mean": ret,
                    "target_value": None if target is None else ret,
                }
            )
            t += wall
            if target is not None and ret >= target:
                break
        lines += [
            {"event": "shutdown", "t_s": t + 0.5, "shutdown_s": 0.5},
            {"event": "end", "t_s": t + 0.6, "status": "ok"},
        ]
        trial.events_file.write_text("".join(json.dumps(e) + "\n" for e in lines))
        ticks = np.arange(0.0, t + 0.6, 1.0 / SAMPLE_HZ)
        n, k = len(ticks), len(PROCESSES) + 2
        cols: dict[str, object] = {name: [None] * (n * k) for name in names}
        cols["trial_id"] = [plan.trial_id] * (n * k)
        cols["t_s"] = np.repeat(ticks, k).tolist()
        kinds = ["process"] * len(PROCESSES) + ["core", "core"]
        cols["kind"] = kinds * n
        cols["role"] = ([r for r, _ in PROCESSES] + [None, None]) * n
        cols["pid"] = (list(range(2000, 2000 + len(PROCESSES))) + [None, None]) * n
        cols["core"] = ([None] * len(PROCESSES) + [0, 1]) * n
        busy = np.array([b for _, b in PROCESSES] + [0.6, 0.6]) * 100
        cols["cpu_pct"] = (np.tile(busy, n) * rng.uniform(0.8, 1.2, n * k)).tolist()
        cols["rss_bytes"] = ([300_000_000] * len(PROCESSES) + [None, None]) * n
        write_table(trial.utilization, pa.table(cols, schema=UTILIZATION_SCHEMA))
        record = TrialRecord(
            trial_id=plan.trial_id,
            status="ok",
            exit_code=0,
            started_epoch=1.7e9,
            trial_wall_s=t + 0.6,
            sampler_cpu_s=0.1,
            sampler_samples=n,
        )
        write_record(trial, record)
    return out_dir


def timed_work(out_dir: Path) -> dict[str, float]:
    """build_tables then write_report; returns their seconds."""
    from rlbench.analysis.tables import build_tables
    from rlbench.report.document import write_report

    t = time.perf_counter()
    tables = build_tables(out_dir)
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    write_report(out_dir, tables)
    report_s = time.perf_counter() - t
    return {
        "build_tables_s": build_s,
        "report_s": report_s,
        "total_s": build_s + report_s,
        "trials": len(tables["trials"]),
        "iterations": len(tables["iterations"]),
        "utilization_rows": len(tables["utilization"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="generate here and keep it (default: a temp dir)")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # the measured process
        print(json.dumps(timed_work(args.child)))
        return 0
    with tempfile.TemporaryDirectory(prefix="rlbench-bench-") as tmp:
        out_dir = args.keep or Path(tmp) / "set"
        t = time.perf_counter()
        generate(out_dir, args.trials, args.iterations, args.repeats)
        print(
            f"generated {args.trials} trials x {args.iterations} iterations in {time.perf_counter() - t:.1f} s "
            f"-> {out_dir}"
        )
        done = subprocess.run([sys.executable, __file__, "--child", str(out_dir)], capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout + done.stderr, file=sys.stderr)
            return 1
        result = json.loads(done.stdout.strip().splitlines()[-1])
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: KiB
        print(
            f"tables: {result['trials']} trials, {result['iterations']} iterations, "
            f"{result['utilization_rows']:,} utilization rows"
        )
        print(
            f"build_tables: {result['build_tables_s']:.2f} s, report: {result['report_s']:.2f} s, "
            f"total: {result['total_s']:.2f} s (target < 10 s)"
        )
        print(f"peak memory (child process RSS, imports included): {peak_mib:.0f} MiB (target < 1024 MiB)")
        ok = result["total_s"] < 10 and peak_mib < 1024
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
