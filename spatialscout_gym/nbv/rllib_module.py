"""The RLlib policy network of the NBV task, :class:`NBVConvModule` (needs ray and torch; loaded
only by :mod:`~spatialscout_gym.nbv.rllib_train` when RLlib trains or acts)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

__all__ = ["NBVConvModule"]


class NBVConvModule(TorchRLModule, ValueFunctionAPI):
    """PPO's actor and critic on the NBV observation in the ``image+vector`` layout: a NatureCNN
    (8x8 stride 4, 4x4 stride 2 and 3x3 stride 1 convolutions, then ``cnn_features`` units) on
    the channel-first uint8 image scaled to [0, 1], concatenated with the flat ``vector``, then
    separate ``hiddens`` tanh MLPs for the action logits and the value (SB3's ``MultiInputPolicy``
    on the ``dict`` layout, less the flattening of the map, which the vector already is). An
    ``image`` Box alone (the ``image`` layout) works too. ``model_config``: ``{"cnn_features":
    256, "hiddens": [64, 64]}``."""

    def setup(self) -> None:
        space = self.observation_space
        keys = getattr(space, "spaces", None) or {}
        image = space["image"] if keys else space
        n_vector = int(np.prod(space["vector"].shape)) if "vector" in keys else 0
        channels, height, width = image.shape
        self.cnn = nn.Sequential(
            nn.Conv2d(channels, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, 1), nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            n_flat = int(self.cnn(torch.zeros(1, channels, height, width)).shape[1])
        features = int(self.model_config.get("cnn_features", 256))
        self.cnn_head = nn.Sequential(nn.Linear(n_flat, features), nn.ReLU())
        hiddens = [int(h) for h in self.model_config.get("hiddens", [64, 64])]

        def mlp(out: int, gain: float) -> nn.Sequential:
            layers, size = [], features + n_vector
            for h in hiddens:
                layers += [nn.Linear(size, h), nn.Tanh()]
                size = h
            last = nn.Linear(size, out)
            nn.init.orthogonal_(last.weight, gain)   # small logits: a near-uniform first policy
            nn.init.zeros_(last.bias)
            return nn.Sequential(*layers, last)

        self.pi = mlp(int(self.action_space.n), 0.01)
        self.vf = mlp(1, 1.0)

    def _features(self, batch: dict) -> Any:
        obs = batch[Columns.OBS]
        image = obs["image"] if isinstance(obs, dict) else obs
        x = self.cnn_head(self.cnn(image.float() / 255.0))
        if isinstance(obs, dict) and "vector" in obs:
            x = torch.cat([x, obs["vector"].float()], dim=-1)
        return x

    def _forward(self, batch: dict, **kwargs: Any) -> dict:
        return {Columns.ACTION_DIST_INPUTS: self.pi(self._features(batch))}

    def _forward_train(self, batch: dict, **kwargs: Any) -> dict:
        x = self._features(batch)
        return {Columns.ACTION_DIST_INPUTS: self.pi(x), Columns.EMBEDDINGS: x}

    def compute_values(self, batch: dict, embeddings: Any = None) -> Any:
        x = self._features(batch) if embeddings is None else embeddings
        return self.vf(x).squeeze(-1)
