"""The plain adapter's planted learner (``env_config.plain_learn_cost_us``): the known learn cost the ceiling's
benchmark composes with a known env cost (scripts/bench_ceiling.py). Its learn phase burns CPU time, so wall time can
only be longer: a bound no load can break."""

from __future__ import annotations

from rlbench.adapters import get_adapter
from rlbench.spec.model import TrialConfig


def _trainer(cost_us: float, steps: int = 50):
    config = TrialConfig.model_validate(
        {
            "framework": "plain",
            "environment": {"env": "CartPole-v1", "env_config": {"plain_learn_cost_us": cost_us}},
            "env_runners": {"num_env_runners": 0},
            "training": {"train_batch_size_per_learner": steps},
        }
    )
    return get_adapter("plain").trainer(config, seed=0)


def test_the_planted_learner_burns_its_cost_per_step_after_sampling():
    trainer = _trainer(1000.0)
    assert trainer.infeasible_reason() is None
    trainer.build()  # CartPole would refuse the key as a keyword: it is taken out of the env's config
    try:
        trainer.train()
        t = trainer.iteration()
    finally:
        trainer.stop()
    assert t.learn_s >= 50 * 1000e-6 and t.sgd_s == t.learn_s and t.learner_connector_s == 0.0
    assert t.env_steps_sampled == 50 and t.sample_s > 0


def test_no_planted_learner_learns_nothing_and_a_negative_cost_is_refused():
    trainer = _trainer(0.0)
    trainer.build()
    try:
        trainer.train()
        assert trainer.iteration().learn_s < 0.5  # two clock reads: nothing planted
    finally:
        trainer.stop()
    assert "a planted learner's cost is 0 or more" in _trainer(-1.0).infeasible_reason()
