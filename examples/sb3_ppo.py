"""PPO from Stable-Baselines3 on ``SpatialScout/NBV-v2``, vectorised by SB3's own ``make_vec_env``.

SB3's ``MultiInputPolicy`` puts its NatureCNN on the ``image`` key (transposed to channel-first by
SB3's ``VecTransposeImage``) and flattens the others. ``--subproc`` runs the envs in SB3's
``SubprocVecEnv`` (one process each) instead of ``DummyVecEnv`` (one process); the env id is
given as ``"spatialscout_gym:SpatialScout/NBV-v2"`` so that those processes register it. Run it
(the ``rl`` extra):

    python examples/sb3_ppo.py --total-timesteps 200000 --n-envs 8 --subproc

The saved ``model.zip`` is an SB3 policy; the ``nbv_config.json`` written beside it names the
settings it was trained with, so ``spatialscout evaluate --agent ppo:runs/sb3_ppo/model.zip`` runs
it as it is. docs/rl.md lists the other recipes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

import spatialscout_gym  # noqa: F401  (registers SpatialScout/...)
from spatialscout_gym.nbv import save_nbv_config
from spatialscout_gym.scenes.splits import check_training_scene


def main(argv: list[str] | None = None) -> PPO:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--total-timesteps", type=int, default=100_000)
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--n-steps", type=int, default=128, help="steps per env per rollout")
    p.add_argument("--image-budget", type=int, default=20)
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--subproc", action="store_true", help="SubprocVecEnv (one process per env)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scenes", default="split:train",
                   help="training scenes: split:train (new procedural scenes) or one train-split scene "
                        "(procedural:<seed>); val and test scenes are refused (docs/nbv.md, named splits)")
    p.add_argument("--save", default="runs/sb3_ppo/model", help="where model.zip goes (without .zip)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch CPU threads of this process (1: faster beside the renderer on small machines)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    scene = check_training_scene(args.scenes)     # before any env is built

    # "module:id": Gymnasium imports spatialscout_gym first, also in SubprocVecEnv's fresh processes
    # (which do not run this file's imports, so the plain id is unknown there)
    venv = make_vec_env("spatialscout_gym:SpatialScout/NBV-v2", n_envs=args.n_envs, seed=args.seed,
                        env_kwargs={"scene": scene, "image_budget": args.image_budget, "resolution": args.resolution},
                        vec_env_cls=SubprocVecEnv if args.subproc else DummyVecEnv)
    model = PPO("MultiInputPolicy", venv, n_steps=args.n_steps, batch_size=min(64, args.n_steps * args.n_envs),
                seed=args.seed, verbose=1)
    model.learn(total_timesteps=args.total_timesteps)
    model.save(args.save)
    # the NBV settings beside model.zip: `spatialscout evaluate --agent ppo:<save>.zip` rebuilds this env
    save_nbv_config(venv.get_attr("config", indices=[0])[0], Path(args.save).parent,
                    image_budget=args.image_budget, resolution=args.resolution)
    venv.close()
    return model


if __name__ == "__main__":
    main()
