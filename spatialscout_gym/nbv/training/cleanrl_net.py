"""The actor-critic network of the CleanRL recipe (``examples/cleanrl_ppo.py``), kept in the package
so that the recipe's saved ``agent.pt`` can be rebuilt and evaluated from another process
(``spatialscout evaluate --agent cleanrl:PATH``, :mod:`spatialscout_gym.baselines.cleanrl_agent`).

A small CNN encodes the ``image`` observation (uint8, H x W x 3, channel-first inside the network),
an MLP the other keys of the NBV ``dict`` observation flattened in the observation space's key
order; one actor head (action logits) and one critic head over both. Needs torch (the ``rl`` extra).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical

from spatialscout_gym.nbv.policy_files import CLEANRL_AGENT_FILE as AGENT_FILE

__all__ = ["NBVActorCritic", "layer_init", "AGENT_FILE"]


def layer_init(layer: nn.Conv2d | nn.Linear, std: float = float(np.sqrt(2)), bias_const: float = 0.0) -> nn.Module:
    """Orthogonal weights scaled by ``std``, constant bias (CleanRL's initialisation)."""
    torch.nn.init.orthogonal_(layer.weight, std)
    if layer.bias is not None:   # every layer of the network has one
        torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class NBVActorCritic(nn.Module):
    """CNN on the image + MLP on the flattened other keys -> action logits and value.

    Parameters
    ----------
    observation_space : gymnasium.spaces.Dict
        The NBV ``dict`` observation space (an ``image`` key and flat-able others).
    n_actions : int
        Size of the ``Discrete`` action space.
    """

    def __init__(self, observation_space: gym.spaces.Dict, n_actions: int) -> None:
        super().__init__()
        self.vector_keys = [k for k in observation_space.spaces if k != "image"]
        n_vector = sum(int(np.prod(observation_space[k].shape or ())) for k in self.vector_keys)
        self.cnn = nn.Sequential(
            layer_init(nn.Conv2d(3, 32, 5, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 3, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(),
            layer_init(nn.Linear(64 * 4 * 4, 256)), nn.ReLU())
        self.mlp = nn.Sequential(layer_init(nn.Linear(n_vector, 128)), nn.Tanh())
        self.actor = layer_init(nn.Linear(256 + 128, n_actions), std=0.01)
        self.critic = layer_init(nn.Linear(256 + 128, 1), std=1.0)

    def features(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        image = obs["image"].permute(0, 3, 1, 2).float() / 255.0          # channel-first for the CNN
        vector = torch.cat([obs[k].flatten(1).float() for k in self.vector_keys], dim=1)
        return torch.cat([self.cnn(image), self.mlp(vector)], dim=1)

    def get_value(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.critic(self.features(obs))

    def logits(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The actor's action logits, shape (batch, n_actions)."""
        return self.actor(self.features(obs))

    def get_action_and_value(self, obs: dict[str, torch.Tensor], action: torch.Tensor | None = None
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = self.features(obs)
        dist = Categorical(logits=self.actor(hidden))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(hidden)
