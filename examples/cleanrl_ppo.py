"""PPO on ``SpatialScout/NBV-v2`` in one file, CleanRL style: read it top to bottom.

A small CNN encodes the ``image`` observation (channel-first inside the network), an MLP the
other keys (``pose``, ``coverage``, ``sectors``, ``map``, ``scan``) flattened; one actor-critic
head over both. That network is ``Agent``, the package's
``spatialscout_gym.nbv.training.cleanrl_net.NBVActorCritic`` (read it there: 40 lines), so that
``spatialscout evaluate --agent cleanrl:<save_dir>/agent.pt`` rebuilds the saved policy in another
process; a recipe that changes the network saves weights that agent refuses in one line. Gymnasium's ``SyncVectorEnv`` steps ``num_envs`` envs built by the ``make_env``
thunk. Run it (the ``rl`` extra: torch, tyro, tensorboard; the renderer):

    python examples/cleanrl_ppo.py --total-timesteps 200000 --num-envs 8

It writes ``<save_dir>/agent.pt`` (the network's weights and the settings to rebuild it; evaluate it
with ``spatialscout evaluate --agent cleanrl:<save_dir>/agent.pt``),
``<save_dir>/nbv_config.json`` (the NBV settings of the env it trained on, as ``train-nbv`` writes
them) and ``<save_dir>/summary.json`` (steps taken, episodes finished, the last losses). docs/rl.md lists the
other recipes.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import tyro

import spatialscout_gym  # noqa: F401  (registers SpatialScout/...)
from spatialscout_gym.nbv import save_nbv_config
from spatialscout_gym.nbv.training.cleanrl_net import AGENT_FILE
from spatialscout_gym.nbv.training.cleanrl_net import NBVActorCritic as Agent
from spatialscout_gym.scenes.splits import check_training_scene


@dataclass
class Args:
    seed: int = 1
    """seed of the envs, of torch and of numpy"""
    total_timesteps: int = 100_000
    """env steps over all envs"""
    num_envs: int = 4
    """envs stepped together (one SyncVectorEnv)"""
    num_steps: int = 128
    """steps per env per rollout"""
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    image_budget: int = 20
    """V, images per episode (NBV-v2's default)"""
    resolution: int = 64
    """render grid, pixels"""
    obs_size: int = 64
    """the image observation's side, pixels"""
    scenes: str = "split:train"
    """training scenes: split:train (new procedural scenes) or one train-split scene (procedural:<seed>);
    val and test scenes are refused (docs/nbv.md, named splits)"""
    save_dir: str = "runs/cleanrl_ppo"
    """where agent.pt and summary.json go"""
    torch_threads: int = 1
    """torch CPU threads of this process (1: faster beside the renderer on small machines, docs/rl.md)"""


def make_env(seed: int, args: Args):
    """A thunk, as ``SyncVectorEnv`` wants: NBV-v2 with episode statistics in ``info["episode"]``."""
    def thunk() -> gym.Env:
        env = gym.make("SpatialScout/NBV-v2", scene=check_training_scene(args.scenes),
                       image_budget=args.image_budget, resolution=args.resolution, obs_size=args.obs_size)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env.action_space.seed(seed)
        return env
    return thunk


def to_tensors(obs: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(v) for k, v in obs.items()}


def main(args: Args) -> dict:
    torch.set_num_threads(args.torch_threads)
    check_training_scene(args.scenes)        # before any env is built
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    # same-step autoreset: every step is a real env step; an ended env's next observation is its
    # reset one (with done = 1 below), as in CleanRL's loop
    envs = gym.vector.SyncVectorEnv([make_env(args.seed + i, args) for i in range(args.num_envs)],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    agent = Agent(envs.single_observation_space, int(envs.single_action_space.n))
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    batch_size = args.num_envs * args.num_steps
    num_iterations = max(1, args.total_timesteps // batch_size)
    # rollout storage: one array per observation key
    obs_buf = {k: torch.zeros((args.num_steps, args.num_envs, *sp.shape), dtype=torch.as_tensor(sp.sample()).dtype)
               for k, sp in envs.single_observation_space.spaces.items()}
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros((args.num_steps, args.num_envs)) for _ in range(4))

    global_step, episodes, returns, losses = 0, 0, [], {}
    start = time.time()
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = to_tensors(next_obs)
    next_done = torch.zeros(args.num_envs)
    for iteration in range(1, num_iterations + 1):
        for step in range(args.num_steps):          # collect a rollout
            global_step += args.num_envs
            for k in obs_buf:
                obs_buf[k][step] = next_obs[k]
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            obs, reward, terminated, truncated, infos = envs.step(action.numpy())
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs, next_done = to_tensors(obs), torch.as_tensor(np.logical_or(terminated, truncated),
                                                                   dtype=torch.float32)
            final = infos.get("final_info", {})    # the ended envs' last info (same-step autoreset)
            if "episode" in final:                  # RecordEpisodeStatistics
                for i in np.flatnonzero(final["_episode"]):
                    episodes += 1
                    returns.append(float(final["episode"]["r"][i]))

        with torch.no_grad():                       # generalised advantage estimation
            next_value = agent.get_value(next_obs).flatten()
            advantages = torch.zeros_like(rewards)
            last = 0.0
            for t in reversed(range(args.num_steps)):
                nonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                nxt = next_value if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nxt * nonterminal - values[t]
                advantages[t] = last = delta + args.gamma * args.gae_lambda * nonterminal * last
            returns_buf = advantages + values

        b_obs = {k: v.reshape(batch_size, *v.shape[2:]) for k, v in obs_buf.items()}
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns_buf.reshape(-1)
        for _ in range(args.update_epochs):         # PPO update
            for mb in np.array_split(np.random.permutation(batch_size), args.num_minibatches):
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    {k: v[mb] for k, v in b_obs.items()}, b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                adv = b_advantages[mb]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((newvalue.flatten() - b_returns[mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        losses = {"policy": pg_loss.item(), "value": v_loss.item(), "entropy": entropy_loss.item()}
        print(f"iteration {iteration}/{num_iterations}: {global_step} steps, {episodes} episodes, "
              f"{global_step / (time.time() - start):.1f} steps/s, losses {losses}", flush=True)
    config = envs.envs[0].unwrapped.config      # the NBV settings, saved beside the weights
    envs.close()

    out = Path(args.save_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": agent.state_dict(), "args": asdict(args)}, out / AGENT_FILE)
    save_nbv_config(config, out, image_budget=args.image_budget, resolution=args.resolution)
    summary = {"global_step": global_step, "episodes": episodes, "losses": losses,
               "mean_return": float(np.mean(returns)) if returns else None, "seconds": time.time() - start}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main(tyro.cli(Args))
