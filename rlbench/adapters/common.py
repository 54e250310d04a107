"""What every adapter shares, once: :class:`AdapterBase` gives the members of the
:class:`~rlbench.adapters.base.Adapter` protocol whose answer is the same for a framework that does not say
otherwise, and each adapter adds only what differs (Stable-Baselines3's ``BaseAlgorithm`` is the model: a small base,
each algorithm its own differences). Standard library only, as every adapter's module level is.

What an adapter must still say itself, having no answer every framework shares: its ``name``, ``roles`` (its
:class:`~rlbench.adapters.roles.RoleRules`), ``algorithms``, ``key_handling`` (what it does with each key it takes:
:class:`~rlbench.adapters.vocabulary.KeyHandling`), ``result_metrics``, ``resource_demand``, ``torch_threads``, ``train_batch``,
``sampling_processes``, ``preload_modules``, ``cold_start_s`` and ``trainer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlbench.adapters.roles import Role, RoleRules, classify
from rlbench.adapters.vocabulary import KeyHandling

if TYPE_CHECKING:
    from rlbench.adapters.base import ConfigSnippet, Serving, TrialConfig


class AdapterBase:
    """The members every adapter shares (see the module docstring for those it must give itself)."""

    name: str
    #: How the framework's processes are named: its titles and markers, and whether a Ray runtime runs beside it.
    role_rules: RoleRules = RoleRules(titles=())
    #: Actor class name (Ray's GCS actor table) -> role, for the cluster node samplers: none without actors.
    actor_class_roles: dict[str, str] = {}
    #: Process titles of the runtime's own agents: none without a runtime.
    system_titles: tuple[str, ...] = ()
    #: Keys of other sections only some algorithms use (the vocabulary's): none unless the framework runs them.
    algo_only_keys: dict[tuple[str, str], tuple[str, ...]] = {}
    #: Training key -> a value the framework refuses, and why: none unless it refuses one for every framework.
    refused_values: dict[str, tuple[Any, str]] = {}
    #: Keys the framework no longer has -> what instead: none unless it had them.
    removed_keys: dict[str, str] = {}
    #: The runtime its trials need: none (no Ray process).
    runtime: str | None = None
    #: Distribution -> the oldest release the adapter drives: none.
    requires: dict[str, str] = {}

    @property
    def roles(self) -> tuple[str, ...]:
        """The process roles utilization is reported by: its rules' (``driver`` first, ``other`` last)."""
        return self.role_rules.roles

    def classify_process(self, cmdline: list[str], *, is_driver: bool) -> Role:
        """The one classifier (:func:`rlbench.adapters.roles.classify`) with the adapter's rules."""
        return classify(cmdline, is_driver=is_driver, rules=self.role_rules)

    def key_handling(self, algo: str) -> dict[str, KeyHandling]:
        """Every ``training:`` key a trial of ``algo`` may set -> what the adapter does with it."""
        raise NotImplementedError(f"the {self.name} adapter says what it does with each key it takes")

    def training_keys(self, algo: str) -> frozenset[str]:
        """The keys it takes: those it says what it does with."""
        return frozenset(self.key_handling(algo))

    def hyperparameter_defaults(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        return {}  # a framework that learns nothing, or one the matched preset does not pin

    def refusals(self, config: TrialConfig) -> list[tuple[tuple[str, ...], str]]:
        return []  # nothing beyond the spec's own refusals

    def is_asynchronous(self, algo: str) -> bool:
        return False

    def trains_on_replay(self, algo: str) -> bool:
        return False

    def metric_column(self, name: str) -> str | None:
        return "episode_return_mean" if name.removeprefix("env_runners/") == "episode_return_mean" else None

    def config_snippet(self, config: TrialConfig, title: str) -> ConfigSnippet | None:
        return None  # no code to give

    def quiet_logging(self) -> None:
        pass

    def set_driver_threads(self, n: int) -> None:
        import torch

        torch.set_num_threads(n)

    def make_env(self, env: str, env_config: dict[str, Any]) -> Any:
        from rlbench.adapters.envs import make_env

        return make_env(env, env_config)

    def serving(self) -> Serving | None:
        return None  # no policy to serve
