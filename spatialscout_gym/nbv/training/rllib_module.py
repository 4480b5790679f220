"""The RLlib policy network of the NBV task, :class:`NBVConvModule` (needs ray and torch; loaded
only by :mod:`~spatialscout_gym.nbv.training.rllib` when RLlib trains or acts)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
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
        space, actions = self.observation_space, self.action_space
        image = space["image"] if isinstance(space, spaces.Dict) and space.spaces else space
        vector = space.spaces.get("vector") if isinstance(space, spaces.Dict) else None
        if not isinstance(image, spaces.Box) or not isinstance(actions, spaces.Discrete):
            raise TypeError(f"NBVConvModule needs an image Box (or a Dict with one) and a Discrete action space; "
                            f"got {space} and {actions}")
        n_vector = int(np.prod(vector.shape)) if vector is not None and vector.shape is not None else 0
        channels, height, width = image.shape
        model_config = self.model_config or {}
        if not isinstance(model_config, dict):
            raise TypeError(f"NBVConvModule's model_config is a dict (cnn_features, hiddens); got {model_config!r}")
        self.cnn = nn.Sequential(
            nn.Conv2d(channels, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, 1), nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            n_flat = int(self.cnn(torch.zeros(1, channels, height, width)).shape[1])
        features = int(model_config.get("cnn_features", 256))
        self.cnn_head = nn.Sequential(nn.Linear(n_flat, features), nn.ReLU())
        hiddens = [int(h) for h in model_config.get("hiddens", [64, 64])]

        def mlp(out: int, gain: float) -> nn.Sequential:
            layers: list[nn.Module] = []
            size = features + n_vector
            for h in hiddens:
                layers += [nn.Linear(size, h), nn.Tanh()]
                size = h
            last = nn.Linear(size, out)
            nn.init.orthogonal_(last.weight, gain)   # small logits: a near-uniform first policy
            nn.init.zeros_(last.bias)
            return nn.Sequential(*layers, last)

        self.pi = mlp(int(actions.n), 0.01)
        self.vf = mlp(1, 1.0)

    def _features(self, batch: dict) -> torch.Tensor:
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

    def compute_values(self, batch: dict, embeddings: torch.Tensor | None = None) -> torch.Tensor:
        x = self._features(batch) if embeddings is None else embeddings
        return self.vf(x).squeeze(-1)
