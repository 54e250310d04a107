"""The residual policy of ``rlbench servebench``: RLlib and torch at module level, so that an RLModule
checkpoint names this class and any process that loads one imports it (only servebench imports this module).
"""

from __future__ import annotations

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule


class ResidualPolicy(TorchRLModule):
    """Residual fully connected blocks, ``x <- relu(x + W2 relu(W1 x))``, between a linear stem and a logits
    head: the stand-in for the paper's residual network (whose convolutions it does not have).
    ``model_config``: ``width`` (of every layer) and ``depth`` (blocks)."""

    def setup(self):
        width, depth = self.model_config["width"], self.model_config["depth"]
        self.stem = torch.nn.Linear(self.observation_space.shape[0], width)
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width))
            for _ in range(depth)
        )
        self.head = torch.nn.Linear(width, self.action_space.n)

    def _forward(self, batch, **kwargs):
        x = torch.relu(self.stem(batch[Columns.OBS]))
        for block in self.blocks:
            x = torch.relu(x + block(x))
        return {Columns.ACTION_DIST_INPUTS: self.head(x)}
