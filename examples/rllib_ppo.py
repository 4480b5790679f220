"""RLlib PPO (new API stack) on SpatialScout/NBV-v2, with a CNN on the image.

RLlib has no default encoder for NBV-v2's Dict observation, so the env is made with
``obs_layout="image+vector"`` (the channel-first uint8 image, and the pose, coverage, sectors, map
and scan as one flat float vector) and the policy is the package's ``NBVConvModule``: a NatureCNN
on the image, concatenated with the vector, then 64-64 policy and value MLPs. Training writes an
RLlib checkpoint with the NBV settings in it (``nbv_config.json``, so ``spatialscout evaluate
--agent rllib:runs/rllib_ppo`` runs the policy); the trained RLModule alone then plays one greedy
episode on a catalog scene.

    python examples/rllib_ppo.py --iterations 50 --env-runners 2       # on this machine
    spatialscout train-nbv --backend rllib --ray-address auto ...       # a cluster: docs/rllib.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec

import spatialscout_gym  # noqa: F401  (registers SpatialScout/NBV-v2 here; env runners import it by the id's prefix)
from spatialscout_gym.cluster.local_ray import init_local_ray, stop_local_ray
from spatialscout_gym.nbv import NBVConvModule, save_nbv_config
from spatialscout_gym.scenes.splits import check_training_scene

ENV_ID = "spatialscout_gym:SpatialScout/NBV-v2"   # "module:id": Gymnasium imports the module in every env runner


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=20, help="PPO iterations (one train batch each)")
    p.add_argument("--env-runners", type=int, default=0, help="RLlib env runner actors (0: sample in this process)")
    p.add_argument("--envs", type=int, default=4, help="envs per env runner")
    p.add_argument("--rollout", type=int, default=64, help="steps per env per iteration")
    p.add_argument("--image-budget", type=int, default=20, help="V, images per episode")
    p.add_argument("--resolution", type=int, default=64, help="render grid and observed image side, pixels")
    p.add_argument("--scene", default="Kitchen_01", help="catalog scene of the final greedy episode")
    p.add_argument("--scenes", default="split:train",
                   help="training scenes: split:train (new procedural scenes) or one train-split scene "
                        "(procedural:<seed>); val and test scenes are refused (docs/nbv.md, named splits)")
    p.add_argument("--out", type=Path, default=Path("runs/rllib_ppo"), help="checkpoint directory")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch CPU threads of this process, the learner (Ray gives env runners one each)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.torch_threads)

    env_config = {"scene": check_training_scene(args.scenes), "obs_layout": "image+vector",
                  "image_budget": args.image_budget,
                  "resolution": args.resolution, "obs_size": args.resolution}
    probe = gym.make(ENV_ID, **env_config)                     # the spaces the module is built for
    nbv_config = probe.unwrapped.config                        # the NBV settings, saved with the checkpoint
    batch = args.rollout * args.envs * max(1, args.env_runners)
    config = (PPOConfig()
              .environment(ENV_ID, env_config=env_config, disable_env_checking=True)
              .env_runners(num_env_runners=args.env_runners, num_envs_per_env_runner=args.envs,
                           rollout_fragment_length=args.rollout)
              .rl_module(rl_module_spec=RLModuleSpec(
                  module_class=NBVConvModule, observation_space=probe.observation_space,
                  action_space=probe.action_space, model_config={"cnn_features": 256, "hiddens": [64, 64]}))
              .training(lr=3e-4, gamma=0.99, lambda_=0.95, clip_param=0.2, entropy_coeff=0.01, use_kl_loss=False,
                        train_batch_size_per_learner=batch, minibatch_size=min(128, batch), num_epochs=4)
              .debugging(seed=0))
    probe.close()
    init_local_ray(log_to_driver=False)        # ray.init, every port on loopback (docs/rllib.md)
    algo = config.build_algo()
    steps, returns = 0, []
    for i in range(args.iterations):
        result = algo.train()
        steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
        returns.append(float(result["env_runners"].get("episode_return_mean", np.nan)))
        print(f"iteration {i + 1}: {steps} env steps, mean episode return {returns[-1]:.3f}")
    checkpoint = algo.save_to_path(str(args.out.resolve()))
    algo.stop()
    stop_local_ray()
    # the NBV settings in the checkpoint: `spatialscout evaluate --agent rllib:<out>` rebuilds this env
    written = save_nbv_config(nbv_config, checkpoint, image_budget=args.image_budget, resolution=args.resolution)
    written.write_text(json.dumps({**json.loads(written.read_text()), "obs_layout": "image+vector"}, indent=2))

    # inference needs no Ray: the RLModule alone, from its part of the checkpoint
    module = RLModule.from_checkpoint(Path(checkpoint) / "learner_group" / "learner" / "rl_module" / "default_policy")
    env = gym.make(ENV_ID, **{**env_config, "scene": args.scene})
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        with torch.no_grad():
            out = module.forward_inference({"obs": {k: torch.as_tensor(v)[None] for k, v in obs.items()}})
        obs, _, terminated, truncated, info = env.step(int(out["action_dist_inputs"][0].argmax()))
        done = terminated or truncated
    env.close()
    print(f"greedy episode on {args.scene}: coverage {info['coverage']:.3f}, all-target mean IoU "
          f"{info['all_mean_iou']:.3f}; checkpoint {checkpoint}")
    return {"steps": steps, "returns": returns, "checkpoint": Path(checkpoint), "coverage": info["coverage"],
            "module": module}


if __name__ == "__main__":
    main()
