"""PPO on the next-best-view task with RLlib (new API stack): a convolutional RLModule, the env the
env runners build, ``spatialscout train-nbv --backend rllib`` and the ``rllib:PATH`` agent.

RLlib has no default encoder for a ``Dict`` observation, and flattening the NBV dict would feed the
image to an MLP. So the env runners build ``SpatialScout/NBV-v1`` with ``obs_layout="image+vector"``
(the channel-first image and one flat float vector of the other keys; spaces in
:class:`~spatialscout_gym.nbv.env.NBVEnv`'s spec sheet) and the policy is
:class:`~spatialscout_gym.nbv.training.rllib_module.NBVConvModule`: a NatureCNN on the image,
concatenated with the vector, then separate 64-64 policy and value MLPs, the architecture SB3's
``MultiInputPolicy`` gives the ``dict`` layout.

Training (:func:`train_rllib`) runs PPO with ``--num-env-runners`` RLlib env runner actors, which
Ray places on any node of the cluster at ``--ray-address`` (each node needs this package installed).
It writes the run record of the SB3 trainer (``args.json``, ``progress.csv`` with the same
``charts/...`` columns, tensorboard scalars, ``learning_curve.png``) plus RLlib algorithm
checkpoints (``<run>/checkpoint`` at the end, ``<run>/checkpoints/<steps>`` every
``--checkpoint-every`` steps), each with ``nbv_config.json``: ``Algorithm.from_checkpoint`` resumes
one, and ``rllib:PATH`` (:class:`RLlibNBVAgent`) acts with its RLModule alone.

Ray and torch are imported inside the functions (the RLModule lives in
:mod:`~spatialscout_gym.nbv.training.rllib_module`): importing this module is light.
"""

from __future__ import annotations

import csv
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spatialscout_gym.nbv.policy_files import CONFIG_FILE, load_policy_config, save_nbv_config
from spatialscout_gym.nbv.config import (NBVConfig, layout_observation_space,
                                                  nbv_action_space)

if TYPE_CHECKING:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from spatialscout_gym.nbv.env import NBVEnv
    from spatialscout_gym.nbv.training.args import Args

__all__ = ["RLLIB_ENV", "RLLIB_OBS_LAYOUT", "RUNNERS_FILE", "nbv_env_creator", "module_spec", "ppo_config", "train_rllib",
           "module_checkpoint", "rllib_policy_config", "PROGRESS_COLUMNS"]

RLLIB_ENV = "SpatialScout-NBV-rllib"
"""The name :func:`ppo_config` registers :func:`nbv_env_creator` under in Ray Tune's env registry."""

RLLIB_OBS_LAYOUT = "image+vector"
"""The observation layout the RLlib policy sees (``nbv_config.json`` records it as ``obs_layout``)."""

PROGRESS_COLUMNS = ("time/iterations", "time/total_timesteps", "time/time_elapsed", "charts/episodic_return",
                    "charts/episodic_length", "charts/coverage", "charts/all_mean_iou", "charts/SPS",
                    "losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/explained_variance")
"""Columns of the RLlib run's ``progress.csv``: the SB3 trainer's names, so
:func:`~spatialscout_gym.nbv.training.sb3.plot_learning_curve` draws it as it draws theirs."""


def nbv_env_creator(env_config: dict) -> NBVEnv:
    """The env an RLlib env runner builds: ``SpatialScout/NBV-v1`` (:class:`NBVEnv`) with
    ``env_config`` as its arguments and ``obs_layout="image+vector"`` unless given."""
    from spatialscout_gym.nbv.env import NBVEnv
    return NBVEnv(**{"obs_layout": RLLIB_OBS_LAYOUT, **dict(env_config)})


def module_spec(config: NBVConfig | None = None) -> RLModuleSpec:
    """The ``RLModuleSpec`` of :class:`~spatialscout_gym.nbv.training.rllib_module.NBVConvModule` for
    the NBV env of ``config`` (default: NBV-v1's) in the ``image+vector`` layout."""
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from spatialscout_gym.nbv.training.rllib_module import NBVConvModule
    config = config or NBVConfig(motion="heading")
    return RLModuleSpec(module_class=NBVConvModule,
                        observation_space=layout_observation_space(config, RLLIB_OBS_LAYOUT),
                        action_space=nbv_action_space(config),
                        model_config={"cnn_features": 256, "hiddens": [64, 64]})


def _log_episode(*, episode: Any, metrics_logger: Any = None, prev_episode_chunks: list | None = None,
                 **kwargs: Any) -> None:
    """RLlib ``on_episode_end``: sums over the finished episodes of their coverage, all-target mean
    IoU, return and length, and their count (RLlib sums them per training iteration over all env
    runners; ``progress.csv`` holds the means). An episode cut by a rollout's end arrives as its
    last chunk plus the earlier ones."""
    info = episode.get_infos(-1)
    chunks = [episode, *(prev_episode_chunks or [])]
    for key in ("coverage", "all_mean_iou"):
        metrics_logger.log_value(("nbv", key), float(info.get(key, 0.0)), reduce="sum")
    metrics_logger.log_value(("nbv", "episodes"), 1, reduce="sum")
    metrics_logger.log_value(("nbv", "return"), float(sum(c.get_return() for c in chunks)), reduce="sum")
    metrics_logger.log_value(("nbv", "length"), float(sum(len(c) for c in chunks)), reduce="sum")


def ppo_config(env_config: dict, *, num_env_runners: int = 0, envs_per_runner: int = 1,
               rollout_steps: int = 128, minibatch_size: int = 128, num_epochs: int = 4,
               lr: float = 3e-4, gamma: float = 0.99, gae_lambda: float = 0.95, clip: float = 0.2,
               ent_coef: float = 0.01, vf_coef: float = 0.5, seed: int | None = None, gpu: bool = False) -> PPOConfig:
    """RLlib's ``PPOConfig`` for the NBV task: env runners building :func:`nbv_env_creator`
    (``env_config``), the NBV RLModule (:func:`module_spec`), one train batch of ``rollout_steps``
    steps per env (all runners' envs), SB3's PPO loss (no KL penalty) with the hyperparameters given."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env
    register_env(RLLIB_ENV, nbv_env_creator)   # the env runners, wherever they are, look it up by name
    fields: dict[str, Any] = {k: v for k, v in env_config.items() if k in NBVConfig.__dataclass_fields__}
    fields.setdefault("motion", "heading")   # NBV-v1's motion unless given
    config = NBVConfig(**fields)
    envs = max(1, num_env_runners) * envs_per_runner
    return (PPOConfig()
            .environment(env=RLLIB_ENV, env_config=dict(env_config), disable_env_checking=True)
            .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=envs_per_runner,
                         num_cpus_per_env_runner=1, rollout_fragment_length=rollout_steps)
            .learners(num_learners=0, num_gpus_per_learner=1 if gpu else 0)
            .rl_module(rl_module_spec=module_spec(config))
            .training(lr=lr, gamma=gamma, lambda_=gae_lambda, clip_param=clip, entropy_coeff=ent_coef,
                      vf_loss_coeff=vf_coef, use_kl_loss=False, train_batch_size_per_learner=rollout_steps * envs,
                      minibatch_size=minibatch_size, num_epochs=num_epochs)
            .callbacks(on_episode_end=_log_episode)
            .debugging(seed=seed))


# ---- the rllib:PATH agent ---------------------------------------------------------------------------

def module_checkpoint(path: str | Path) -> Path:
    """The RLModule checkpoint ``rllib:PATH`` names: ``PATH`` is a run directory (its
    ``checkpoint``), an algorithm checkpoint (its ``learner_group/learner/rl_module/default_policy``)
    or an RLModule checkpoint itself; raises ``ResourceMissingError`` saying what it looked for."""
    p = Path(path)
    candidates = [p / "checkpoint", p]
    for c in candidates:
        module = c / "learner_group" / "learner" / "rl_module" / "default_policy"
        if module.is_dir():
            return module
    if (p / "class_and_ctor_args.pkl").exists():
        return p
    from spatialscout_gym.core.errors import ResourceMissingError
    raise ResourceMissingError(f"no RLlib checkpoint at {p} (expected a run directory of `spatialscout train-nbv "
                               f"--backend rllib`, an algorithm checkpoint or an RLModule checkpoint)")


def _config_file(module_dir: Path) -> Path:
    """``nbv_config.json`` of the checkpoint holding ``module_dir``: beside it or in a folder above."""
    for d in [module_dir, *module_dir.parents][:6]:
        if (d / CONFIG_FILE).exists():
            return d / CONFIG_FILE
    return module_dir / CONFIG_FILE


def rllib_policy_config(path: str | Path) -> dict:
    """:func:`~spatialscout_gym.baselines.nbv_agents.load_policy_config` of an ``rllib:PATH`` policy,
    plus ``obs_layout``; needs neither ray nor torch."""
    cfg = _config_file(module_checkpoint(path))
    saved = json.loads(cfg.read_text()) if cfg.exists() else {}
    return {**load_policy_config(cfg), "obs_layout": str(saved.get("obs_layout", RLLIB_OBS_LAYOUT))}


# ---- training ------------------------------------------------------------------------------------

RUNNERS_FILE = "rllib_runners.json"
"""Written into an RLlib run directory: the cluster's address (``ray_address``: the GCS address
joined, whatever ``--ray-address`` said, which is ``ray_address_given``), its live nodes, and the
node (id and network address), host name and process of the driver (which also learns) and of
every env runner. Rewritten after any training iteration that changed where the env runners are
(RLlib restores a lost runner, maybe on another node): ``iteration`` says after which, and
``replaced`` lists the runners restored elsewhere since the start."""


def _record_runners(run_dir: Path, algo: Any, local: bool, given: str | None, iteration: int,
                    before: dict | None) -> dict:
    """The runners' places now, written to :data:`RUNNERS_FILE` when they differ from ``before``
    (the record last written; None: none yet). Returns the record on disk."""
    import ray

    from spatialscout_gym.core.files import write_json_atomic
    where = sorted(algo.env_runner_group.foreach_env_runner(_runner_place, local_env_runner=local),
                   key=lambda r: (r.get("worker_index") or 0, r["pid"]))
    if before is not None and where == before["env_runners"]:
        return before
    gone = [r for r in (before or {}).get("env_runners", []) if r not in where]
    record = {"ray_address": ray.get_runtime_context().gcs_address, "ray_address_given": given or "local",
              "nodes": len([n for n in ray.nodes() if n.get("Alive")]),
              "driver": before["driver"] if before else _runner_place(None), "env_runners": where,
              "iteration": iteration, "replaced": [*(before or {}).get("replaced", []), *gone]}
    write_json_atomic(run_dir / RUNNERS_FILE, record)
    return record


def _runner_place(runner: Any) -> dict:
    import os
    import socket

    from spatialscout_gym.cluster.join import node_place
    node = node_place()
    return {"node_id": node["id"], "address": node["address"], "host": socket.gethostname(), "pid": os.getpid(),
            "worker_index": getattr(runner, "worker_index", None)}


def _learner_value(result: dict, *names: str) -> float | None:
    stats = result.get("learners", {}).get("default_policy", {})
    for n in names:
        if n in stats:
            return float(np.asarray(stats[n]).mean())
    return None


def _progress_row(result: dict, iteration: int, steps: int, elapsed: float) -> dict:
    nbv = result.get("env_runners", {}).get("nbv", {})
    episodes = float(nbv.get("episodes", 0) or 0)
    row: dict[str, Any] = {c: "" for c in PROGRESS_COLUMNS}
    row.update({"time/iterations": iteration, "time/total_timesteps": steps, "time/time_elapsed": f"{elapsed:.3f}",
                "charts/SPS": int(steps / max(elapsed, 1e-9))})
    if episodes > 0:     # as SB3's logger: the mean of the episodes finished in this iteration
        for key, col in (("return", "charts/episodic_return"), ("length", "charts/episodic_length"),
                         ("coverage", "charts/coverage"), ("all_mean_iou", "charts/all_mean_iou")):
            row[col] = float(nbv.get(key, 0.0)) / episodes
    for col, names in (("losses/policy_loss", ("policy_loss",)), ("losses/value_loss", ("vf_loss",)),
                       ("losses/entropy", ("entropy",)), ("losses/explained_variance", ("vf_explained_var",))):
        v = _learner_value(result, *names)
        if v is not None:
            row[col] = v
    return row


def _save_checkpoint(algo: Any, directory: Path, config: NBVConfig, args: Any) -> Path:
    """An algorithm checkpoint in ``directory`` with its ``nbv_config.json`` (the ``rllib:PATH``
    agent's mapper, V, resolution and ``obs_layout``)."""
    directory.mkdir(parents=True, exist_ok=True)
    algo.save_to_path(str(directory.resolve()))
    path = save_nbv_config(config, directory, mapper=args.agent_mapper or args.mapper,
                           image_budget=args.image_budget, resolution=args.resolution)
    path.write_text(json.dumps({**json.loads(path.read_text()), "reward_mapper": args.mapper,
                                "obs_layout": RLLIB_OBS_LAYOUT, "backend": "rllib"}, indent=2))
    return directory


def train_rllib(args: Args, config: NBVConfig, env_kwargs: dict) -> Path:
    """``spatialscout train-nbv --backend rllib``: PPO with ``args.num_env_runners`` env runners
    on the Ray cluster at ``args.ray_address`` (see the module docstring); returns the run's final
    checkpoint directory (``rllib:<it>`` and ``rllib:<run dir>`` both load it). The raylet's
    ``[state-dump]`` lines, which Ray shows when a node dies, stay off the terminal
    (:func:`~spatialscout_gym.cluster.ray_output.without_state_dumps`)."""
    from spatialscout_gym.cluster.ray_output import without_state_dumps
    with without_state_dumps():
        return _train_rllib(args, config, env_kwargs)


def _train_rllib(args: Args, config: NBVConfig, env_kwargs: dict) -> Path:
    import ray

    from spatialscout_gym.nbv.training.record import plot_learning_curve, summary_line

    runners = int(args.num_env_runners)
    run_name = args.run_name or f"{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = Path(args.out) / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    from dataclasses import asdict
    (run_dir / "args.json").write_text(json.dumps(asdict(args), indent=2))
    from spatialscout_gym.cluster.local_ray import init_local_ray, stop_local_ray
    try:
        if not args.ray_address and not ray.is_initialized():   # loopback only, gone with this process
            init_local_ray(logging_level=logging.WARNING, log_to_driver=False)
        elif not ray.is_initialized():   # one line for an unreachable head, a missing token, another version
            from spatialscout_gym.cluster.join import join_ray
            join_ray(args.ray_address)
    except ConnectionError as exc:
        from spatialscout_gym.core.errors import ConfigError
        raise ConfigError(f"--ray-address {args.ray_address}: cannot join that Ray cluster ({str(exc).splitlines()[0]}); "
                          f"start it with `ray start --head` (docs/rllib.md), and where it uses token "
                          f"authentication (RAY_AUTH_MODE=token at its start) export RAY_AUTH_MODE=token and its token "
                          f"(RAY_AUTH_TOKEN, or ~/.ray/auth_token)") from None
    algo = ppo_config(env_kwargs, num_env_runners=runners, envs_per_runner=args.num_envs // max(1, runners),
                      rollout_steps=args.num_steps, minibatch_size=args.batch_size, num_epochs=args.update_epochs,
                      lr=args.learning_rate, gamma=args.gamma, gae_lambda=args.gae_lambda, clip=args.clip_coef,
                      ent_coef=args.ent_coef, vf_coef=args.vf_coef, seed=args.seed,
                      gpu=args.device != "cpu").build_algo()
    # where the samples come from, for the run record: each env runner's node and process
    assert algo.env_runner_group is not None   # build_algo() makes it (a local runner when runners == 0)
    placed = _record_runners(run_dir, algo, runners == 0, args.ray_address, 0, None)
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(str(run_dir))
    bar = None
    if args.progress_bar:
        from tqdm import tqdm
        bar = tqdm(total=args.total_timesteps, unit="step", desc="train-nbv (rllib)")
    counts: list[tuple[int, float]] = []     # per iteration: (episodes finished, sum of their returns)
    steps, iteration, interrupted, stopped_early, saved_multiple = 0, 0, False, False, 0
    t0 = time.perf_counter()
    final = run_dir / "checkpoint"
    try:
        with (run_dir / "progress.csv").open("w", newline="") as fh:
            out = csv.DictWriter(fh, fieldnames=PROGRESS_COLUMNS)
            out.writeheader()
            while steps < args.total_timesteps and not stopped_early:
                result = algo.train()
                iteration += 1
                placed = _record_runners(run_dir, algo, runners == 0, args.ray_address, iteration, placed)
                before, steps = steps, int(result.get("num_env_steps_sampled_lifetime")
                                           or result["env_runners"]["num_env_steps_sampled_lifetime"])
                elapsed = time.perf_counter() - t0
                row = _progress_row(result, iteration, steps, elapsed)
                out.writerow(row)
                fh.flush()
                for col, v in row.items():
                    if v != "" and col.startswith(("charts/", "losses/")):
                        writer.add_scalar(col, float(v), steps)
                finished = int((result.get("env_runners", {}).get("nbv", {}) or {}).get("episodes", 0) or 0)
                if finished:      # episodes finished in this iteration, and the sum of their returns
                    counts.append((finished, float(row["charts/episodic_return"]) * finished))
                if bar is not None:
                    bar.update(min(steps - before, max(0, bar.total - bar.n)))
                if args.checkpoint_every > 0 and steps // args.checkpoint_every > saved_multiple:
                    saved_multiple = steps // args.checkpoint_every
                    _save_checkpoint(algo, run_dir / "checkpoints" / str(steps), config, args)
                stopped_early = args.time_limit_s > 0 and elapsed > args.time_limit_s
    except KeyboardInterrupt:
        interrupted = True   # a stop asked for: save what was learnt, no traceback
    finally:
        if bar is not None:
            bar.close()
        writer.close()
        _save_checkpoint(algo, final, config, args)
        (run_dir / CONFIG_FILE).write_text((final / CONFIG_FILE).read_text())
        plot_learning_curve(run_dir)
        algo.stop()
        stop_local_ray()
    # episodes: those every env runner finished, summed over the iterations; the mean return is that
    # of the last iterations holding at least 50 of them (the SB3 trainer's last 50 episodes)
    recent_n, recent_sum = 0, 0.0
    for n, total in reversed(counts):
        if recent_n >= 50:
            break
        recent_n, recent_sum = recent_n + n, recent_sum + total
    print(summary_line(steps, time.perf_counter() - t0, sum(n for n, _ in counts), [], final, stopped_early,
                       interrupted, agent="rllib", recent=(recent_n, recent_sum / max(recent_n, 1))))
    return final
