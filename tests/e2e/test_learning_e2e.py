"""Learning outcomes end to end, with real Ray and RLlib on envs whose returns are known in advance.

``envs.fixed:FixedReturnEnv`` returns reward x episode_len whatever the actions, so with 32 env steps
per iteration and 100-step episodes the first episode (return 100) ends in iteration 4: a target of
100 is reached there, a target above the return (reward 0.5) never. With ``return_step`` episode k
returns 20 + (k - 1), which pins how RLlib 2.60 averages returns: over the episodes that ended in
that iteration only. Every assertion is a count or a value the env fixes: none depends on timing.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from conftest import run_cli, sweep_ok, trial_processes_alive

from rlbench.planning.plan import repeat_seeds
from rlbench.spec.load import spec_from_dict

pytestmark = pytest.mark.slow

KNOWN = {
    "name": "known_answers",
    "environment": {"env": "envs.fixed:FixedReturnEnv", "env_config": {"episode_len": 100}},
    "env_runners": {"num_env_runners": 0},
    "training": {"train_batch_size_per_learner": 32, "minibatch_size": 32, "num_epochs": 1},
    "rl_module": {"fcnet_hiddens": [8]},
    "grid": {
        "env_config": [{"episode_len": 100}, {"episode_len": 100, "reward": 0.5}, {"episode_len": 20, "return_step": 1}]
    },
    "cpus": 2,
    "stop": {"iterations": 6, "episode_return_mean": 100},
    "env_ceiling_s": 0,
    "trial_timeout_s": 300,
}


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    out, _ = sweep_ok(tmp_path_factory.mktemp("known"), yaml.safe_dump(KNOWN))
    return (
        out,
        pd.read_parquet(out / "trials.parquet").set_index("trial_id"),
        pd.read_parquet(out / "iterations.parquet"),
    )


def test_a_reachable_target_is_reached_where_the_env_says_and_the_trial_stops_there(known):
    out, trials, its = known
    mine = its[its["trial_id"] == "t000r0"].sort_values("iteration")
    assert list(mine["iteration"]) == [1, 2, 3, 4]  # stopped at the target, not at stop.iterations=6
    assert list(mine["env_steps_sampled"]) == [32, 32, 32, 32]
    assert mine["target_value"].isna().tolist() == [True, True, True, False] and mine["target_value"].iloc[3] == 100.0
    row = trials.loc["t000r0"]
    assert bool(row["reached_target"]) and row["iterations_to_target"] == 4
    assert row["env_steps_to_target"] == 128 == mine["env_steps_sampled"].sum()
    assert row["time_to_target_s"] == mine["wall_s"].sum()
    assert row["time_to_target_total_s"] == row["time_to_target_s"] + row["ray_init_s"] + row["build_s"]
    assert row["final_episode_return_mean"] == 100.0
    assert (row["target_metric"], row["target_threshold"], row["target_mode"]) == (
        "episode_return_mean",
        100.0,
        "at_least",
    )
    events = [json.loads(line) for line in (out / "trials" / "t000r0" / "events.jsonl").read_text().splitlines()]
    (reached,) = [e for e in events if e["event"] == "target_reached"]
    assert (reached["iteration"], reached["value"]) == (4, 100.0)


def test_an_unreachable_target_is_recorded_as_not_reached_with_nulls(known):
    out, trials, its = known
    row = trials.loc["t001r0"]
    assert row["status"] == "ok" and not bool(row["reached_target"]) and row["iterations"] == 6
    for column in (
        "iterations_to_target",
        "time_to_target_s",
        "time_to_target_total_s",
        "env_steps_to_target",
        "energy_to_target_j",
    ):
        assert pd.isna(row[column]), column
    assert row["final_episode_return_mean"] == 50.0
    mine = its[its["trial_id"] == "t001r0"].sort_values("iteration")
    assert mine["target_value"].tolist()[3] == 50.0  # the one iteration in which an episode ended
    md = (out / "report.md").read_text()
    assert 'env_config={"episode_len": 100, "reward": 0.5}: did not reach the target in any of its 1 repeats' in md
    assert 'Fastest to target (episode_return_mean >= 100): env_config={"episode_len": 100}' in md


def test_rllib_averages_returns_over_the_episodes_of_one_iteration(known):
    """32 steps per iteration, episodes of 20 steps returning 20, 21, 22, ...: iteration 2 ends episodes 2 and 3
    (21, 22 -> 21.5). A 100-episode window carried across iterations would give 20.5 there."""
    _, trials, its = known
    mine = its[its["trial_id"] == "t002r0"].sort_values("iteration")
    assert mine["episode_return_mean"].tolist() == [20.0, 21.5, 23.0, 24.5, 26.5, 28.0]


def test_every_trial_is_seeded_and_the_seed_recorded(known):
    out, trials, _ = known
    manifest = json.loads((out / "manifest.json").read_text())
    (seed,) = manifest["repeat_seeds"]
    assert (trials["seed"] == seed).all()  # one repeat: every grid point shares its seed
    assert manifest["cpu_energy_zones"] == [] or trials["cpu_energy_j"].notna().all()
    assert trial_processes_alive(out) == []


SEEDS = {
    "name": "seeds",
    "environment": {"env": "envs.tiny:TinyEnv", "env_config": {"episode_len": 20, "env_seed": 7}},
    "env_runners": {"num_env_runners": 0},
    "training": {"train_batch_size_per_learner": 200, "minibatch_size": 50, "num_epochs": 2},
    "rl_module": {"fcnet_hiddens": [16, 16]},
    "cpus": 2,
    "stop": {"iterations": 3},
    "env_ceiling_s": 0,
    "trial_timeout_s": 300,
}


def _returns(tmp_path, name, **changes):
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(yaml.safe_dump({**SEEDS, **changes}))
    done = run_cli("sweep", str(spec), "--out", str(tmp_path / name))
    assert done.returncode == 0, done.stdout + done.stderr
    its = pd.read_parquet(tmp_path / name / "iterations.parquet")
    trials = pd.read_parquet(tmp_path / name / "trials.parquet")
    return its.pivot(index="iteration", columns="trial_id", values="episode_return_mean"), trials


def test_unseeded_repeats_are_independent_and_a_seed_replays_a_run(tmp_path):
    """The env's observations are fixed (env_seed), so returns differ only by the policy's randomness.
    Before every trial was seeded, two unseeded repeats here had equal returns at every iteration: the
    driver's torch generator came from the fork server. Now each repeat draws its own seed (the plan
    of an unseeded spec), the same seed given twice replays the run exactly, and another seed gives
    another run (one sweep: the seeds 11, 11, 12)."""
    free = spec_from_dict({**SEEDS, "repeats": 2}, check_envs=False).spec
    seeds = repeat_seeds(free)
    assert len(seeds) == 2 and None not in seeds and seeds[0] != seeds[1]
    fixed, trials = _returns(tmp_path, "fixed", repeats=3, seed=[11, 11, 12])
    assert trials["seed"].tolist() == [11, 11, 12]
    assert fixed["t000r0"].tolist() == fixed["t000r1"].tolist()
    assert (fixed["t000r0"] != fixed["t000r2"]).any()
