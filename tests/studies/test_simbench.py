"""Async vs bulk-synchronous simulation (Ray OSDI'18 Table 4), a tiny real run."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from rlbench.studies.simbench import PAPER_TABLE4, rollout_lengths


def test_rollout_lengths_are_uneven_and_reproducible():
    lengths = rollout_lengths(2, 1000, seed=0)
    assert len(lengths) == 6
    assert all(100 <= n <= 1900 for n in lengths)
    assert lengths == rollout_lengths(2, 1000, seed=0)
    assert len(set(lengths)) > 1


def test_paper_figures():
    assert PAPER_TABLE4[16] == (208e3, 290e3)
    assert PAPER_TABLE4[256][1] / PAPER_TABLE4[256][0] == pytest.approx(1.866, abs=1e-3)


@pytest.mark.slow
def test_tiny_simbench_for_real(tmp_path):
    out = tmp_path / "sim.json"
    done = run_cli("simbench", "--cpus", "1", "--mean-steps", "300", "--repeats", "1", "--out", str(out), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(out.read_text())
    assert row["cpus"] == 1 and row["tasks"] == 3
    assert row["timesteps"] == sum(rollout_lengths(1, 300))
    assert row["bsp_steps_per_s"] > 0 and row["async_steps_per_s"] > 0
    assert row["async_over_bsp"] == pytest.approx(row["async_steps_per_s"] / row["bsp_steps_per_s"])
    assert "22.6K" in done.stdout or "22,600" in done.stdout


@pytest.mark.no_ray
def test_cli_rejects_more_cpus_than_cores():
    done = run_cli("simbench", "--cpus", "999")
    assert done.returncode == 2 and "usable cores" in done.stdout
