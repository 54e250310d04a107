"""A trial config as RLlib code (new API stack), ready to paste: ``rllib_config.py``, what ``rlbench autoconfig``
writes for its answer (standard library only; nothing is imported from RLlib to write it).

The calls are the ones the trial's build makes with the spec's keys (:func:`.config.spec_calls`), without
rlbench's instruments (its stats class, timing callback, fault-tolerance and log settings). Every value is
rendered inert (:mod:`rlbench.adapters.pysource`); the only import is the algorithm's config class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlbench.adapters.base import ConfigSnippet
from rlbench.adapters.pysource import literal, method_call
from rlbench.adapters.rllib.config import ALGO_CONFIG_CLASSES, spec_calls

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig

#: The file the snippet is written to.
FILE_NAME = "rllib_config.py"


def config_snippet(config: TrialConfig, title: str) -> ConfigSnippet:
    """``rllib_config.py`` for one trial config, headed by ``title`` (which configuration it is)."""
    module, cls = ALGO_CONFIG_CLASSES[config.algo]
    text = "\n".join(
        [
            '"""The configuration rlbench autoconfig chose (autoconfig.json has the evidence)."""',
            f"# configuration: {literal(title)}",
            "# An env written as 'package.module:Class' in the spec must be registered (ray.tune.register_env)",
            "# or replaced by the class itself.",
            f"from {module} import {cls}",
            "",
            "config = (",
            f"    {cls}()",
            *(method_call(method, kwargs) for method, kwargs in spec_calls(config)),
            ")",
            "",
        ]
    )
    return ConfigSnippet(FILE_NAME, "python", text)
