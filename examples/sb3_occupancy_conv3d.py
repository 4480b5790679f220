"""PPO from Stable-Baselines3 on ``SpatialScout/NBV-v2`` with the occupancy grid read by a 3D
convolution.

The env adds the ``occupancy`` research observation (``privileged_obs=["occupancy"]``,
docs/nbv.md): an ``(nx, ny, nz)`` grid of voxel states, 0 unknown, 1 free, 2 occupied, in the task
frame (``occupancy_frame="gravity"`` puts z along world up). SB3's default ``MultiInputPolicy``
would flatten it into one long vector; :class:`OccupancyConv3dExtractor` instead turns each voxel
into three channels (one per state), runs a small ``Conv3d`` stack over them, and puts SB3's
NatureCNN on the ``image`` key and a flatten on every other key, as ``CombinedExtractor`` does.
Run it (the ``rl`` extra):

    python examples/sb3_occupancy_conv3d.py --total-timesteps 200000 --n-envs 8 --subproc

The saved ``model.zip`` is an SB3 policy and ``nbv_config.json`` beside it names the settings (the
occupancy grid included), so ``spatialscout evaluate --agent ppo:runs/sb3_occupancy/model.zip``
runs it as it is (the class must be importable there: run from the repository root, or copy it
into your package). docs/rl.md lists the other recipes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, NatureCNN
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
from torch import nn

import spatialscout_gym  # noqa: F401  (registers SpatialScout/...)
from spatialscout_gym.nbv import save_nbv_config

OCCUPANCY_STATES = 3
"""Voxel states of the grid (unknown, free, occupied): one input channel each."""


class OccupancyConv3dExtractor(BaseFeaturesExtractor):
    """Features of an NBV dict observation: a ``Conv3d`` stack over the one-hot ``occupancy`` grid
    (``occupancy_dim`` features), NatureCNN over ``image`` (``cnn_dim``), the rest flattened.

    Two stride-2 convolutions halve each grid axis twice, so every axis of the grid must be at
    least 4 voxels (the default grid is 64 x 64 x 16)."""

    def __init__(self, observation_space: gym.spaces.Dict, occupancy_dim: int = 128, cnn_dim: int = 256) -> None:
        cells = tuple(int(n) for n in observation_space["occupancy"].shape)
        if len(cells) != 3 or min(cells) < 4:
            raise ValueError(f"the occupancy grid must have 3 axes of at least 4 voxels, got {cells}")
        conv = nn.Sequential(
            nn.Conv3d(OCCUPANCY_STATES, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(),
            nn.Conv3d(16, 32, kernel_size=3, stride=2, padding=1), nn.ReLU(),
            nn.Flatten())
        with torch.no_grad():
            n_conv = conv(torch.zeros(1, OCCUPANCY_STATES, *cells)).shape[1]
        others = {k: s for k, s in observation_space.spaces.items() if k != "occupancy"}
        images = {k for k, s in others.items() if is_image_space(s)}
        flat = sum(int(torch.tensor(s.shape).prod()) for k, s in others.items() if k not in images)
        super().__init__(observation_space, occupancy_dim + cnn_dim * len(images) + flat)
        self.occupancy = nn.Sequential(conv, nn.Linear(n_conv, occupancy_dim), nn.ReLU())
        self.images = nn.ModuleDict({k: NatureCNN(others[k], features_dim=cnn_dim) for k in sorted(images)})
        self.flat_keys = sorted(k for k in others if k not in images)

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        states = observations["occupancy"].long().clamp(0, OCCUPANCY_STATES - 1)
        grid = nn.functional.one_hot(states, OCCUPANCY_STATES).permute(0, 4, 1, 2, 3).float()
        parts = [self.occupancy(grid)]
        parts += [net(observations[k]) for k, net in self.images.items()]
        parts += [observations[k].flatten(start_dim=1).float() for k in self.flat_keys]
        return torch.cat(parts, dim=1)


def main(argv: list[str] | None = None) -> PPO:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--total-timesteps", type=int, default=100_000)
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--n-steps", type=int, default=128, help="steps per env per rollout")
    p.add_argument("--image-budget", type=int, default=20)
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--cells", type=int, nargs=3, default=(64, 64, 16), metavar=("NX", "NY", "NZ"),
                   help="voxels of the occupancy grid along x, y, z (0.25 m each by default)")
    p.add_argument("--subproc", action="store_true", help="SubprocVecEnv (one process per env)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default="runs/sb3_occupancy/model", help="where model.zip goes (without .zip)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch CPU threads of this process (1: faster beside the renderer on small machines)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.torch_threads)

    env_kwargs = {"image_budget": args.image_budget, "resolution": args.resolution,
                  "privileged_obs": ["occupancy"], "occupancy_cells": tuple(args.cells), "occupancy_frame": "gravity"}
    venv = make_vec_env("spatialscout_gym:SpatialScout/NBV-v2", n_envs=args.n_envs, seed=args.seed,
                        env_kwargs=env_kwargs, vec_env_cls=SubprocVecEnv if args.subproc else DummyVecEnv)
    model = PPO("MultiInputPolicy", venv, n_steps=args.n_steps, batch_size=min(64, args.n_steps * args.n_envs),
                policy_kwargs={"features_extractor_class": OccupancyConv3dExtractor}, seed=args.seed, verbose=1)
    model.learn(total_timesteps=args.total_timesteps)
    model.save(args.save)
    save_nbv_config(venv.get_attr("config", indices=[0])[0], Path(args.save).parent,
                    image_budget=args.image_budget, resolution=args.resolution)
    venv.close()
    return model


if __name__ == "__main__":
    main()
