"""Train a next-best-view policy with Stable-Baselines3 PPO on procedural training scenes.

In the CleanRL manner: read top to bottom. ``Args`` (parsed by ``tyro``) -> ``make_env`` thunk
(the wrapper stack) -> one seeding block -> run name -> vectorized envs -> PPO -> tensorboard
scalars ``charts/...`` and ``losses/...`` -> ``<out>/<run name>/model.zip`` plus
``nbv_config.json`` (loaded by the ``ppo:PATH`` agent), ``args.json``, ``progress.csv`` and
``learning_curve.png`` (environment steps vs the coverage and all-target mean IoU of finished
training episodes).

    spatialscout train-nbv --total-timesteps 200000 --num-envs 8 --time-limit-s 1800
    python -m spatialscout_gym.nbv.training.sb3 --help

Every env is ``SpatialScout/NBV-v0`` (with ``--walls``, the default, under NBV-v2's dynamics:
walls, floor and ceiling stop the camera; ``--privileged-obs`` adds research observations; both
recorded in ``nbv_config.json``) on procedural training scenes (a new scene every
``--reconfigure-every`` resets, never a catalog scene): ``SpatialScout/Procedural-v0`` wrapped in
:class:`~spatialscout_gym.nbv.wrapper.NextBestViewWrapper` with the oracle mapper (``--mapper``;
``oracle-surface`` rewards localization: its IoU grows when a target is seen from more sides).
``--vectorization vector`` (default) steps all envs in one process through
:class:`~spatialscout_gym.nbv.vector.NBVVectorEnv` (or in ``--num-workers`` processes,
:class:`~spatialscout_gym.nbv.workers.NBVWorkerVectorEnv`) and the
:class:`~spatialscout_gym.nbv.training.sb3_vec.SB3VecEnv` adapter; ``sync``/``async`` use SB3's
``DummyVecEnv``/``SubprocVecEnv`` over single envs. The return of an episode is its final all-target mean IoU minus that of
frame 0's map (part of the starting state), so with the oracle mapper ``charts/episodic_return``
is at most ``charts/coverage``. The reward is that IoU change, plus ``--reward-submitted-weight``
times the change in submitted mean IoU (default 0: nothing else, no shaping).
``nbv_config.json`` names ``--mapper`` as ``reward_mapper`` and, as ``mapper``, the one the
``ppo:PATH`` agent maps with (``--agent-mapper``, by default the same), and the run's steps, seed
and starting weights (``--init-model``).

``--blocked-obs`` adds NBV-v3's ``blocked`` observation (the policy then runs under NBV-v3);
``--init-model`` may then name a policy without it (its weights copied, the new key's starting at
zero: :mod:`~spatialscout_gym.nbv.training.init_weights`). ``--action-mask`` trains with
sb3-contrib's ``MaskablePPO`` on the envs' ``action_masks()`` (privileged wall geometry: training
only) and saves a plain PPO ``model.zip`` that acts on the observation alone.

``--backend rllib`` trains the same task with RLlib's PPO instead, its env runners spread over a Ray
cluster (``--ray-address``, ``--num-env-runners``), writing the same ``args.json``, ``progress.csv``
columns, tensorboard scalars and ``learning_curve.png``, and RLlib checkpoints that the
``rllib:PATH`` agent loads (:mod:`~spatialscout_gym.nbv.training.rllib`, docs/rllib.md).

The observation (``NextBestViewWrapper``'s ``image``, ``pose``, ``coverage``, ``sectors`` and the
egocentric top-down ``map`` of where captures were taken and what they viewed) is read by SB3's
``MultiInputPolicy``: a NatureCNN on the image, the vectors and the flattened map concatenated,
then separate 64-64 policy and value MLPs.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import gymnasium as gym
import numpy as np

from spatialscout_gym.nbv.training.args import BACKENDS, VECTORIZATIONS, Args
from spatialscout_gym.nbv.training.record import (CURVE_COLUMNS, INIT_PROGRESS, curve_points,
                                                    plot_learning_curve, summary_line, write_init_progress)

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

    from spatialscout_gym.nbv.config import NBVConfig

__all__ = ["Args", "nbv_config_of", "make_env", "make_vec_env", "train", "main", "VECTORIZATIONS", "BACKENDS", "plot_learning_curve", "curve_points",
           "INIT_PROGRESS", "CURVE_COLUMNS", "write_init_progress"]

_MIN_CNN_SIDE = 36
"""Smallest image side SB3's ``NatureCNN`` (the image encoder of ``MultiInputPolicy``) accepts."""


def _env_kwargs(args: Args) -> dict:
    from spatialscout_gym.scenes.splits import check_training_scene
    scene = check_training_scene(args.scenes)   # a val or test scene is refused in one line
    return dict(**({"render_device": args.render_device} if args.render_device else {}), scene=scene, image_budget=args.image_budget, resolution=args.resolution,
                mapper=args.mapper, motion=args.motion, obs_size=args.obs_size,
                reconfigure_every=args.reconfigure_every, move_m=args.move_m, turn_deg=args.turn_deg,
                headings=args.headings, strides_m=tuple(args.strides_m), scan_bins=args.scan_bins,
                reward_submitted_weight=args.reward_submitted_weight, walls=args.walls,
                privileged_obs=tuple(args.privileged_obs), reward_occupancy_weight=args.reward_occupancy_weight,
                **({"blocked_obs": True} if args.blocked_obs else {}),
                **({"reward_blocked_penalty": args.reward_blocked_penalty} if args.reward_blocked_penalty else {}),
                **({"mask_guard_m": args.action_mask_guard_m} if args.action_mask_guard_m >= 0 else {}),
                **({"single_room_share": args.single_room_share} if args.single_room_share >= 0 else {}))


def nbv_config_of(args: Args) -> NBVConfig:
    """The :class:`NBVConfig` of the run's envs (what ``nbv_config.json`` records: motion, sizes,
    ``walls``, ``privileged_obs``, reward weights); a one-line ``ConfigError`` for a bad value."""
    from spatialscout_gym.core.errors import ConfigError
    from spatialscout_gym.nbv.config import NBVConfig
    try:
        return NBVConfig(motion=args.motion, obs_size=args.obs_size, move_m=args.move_m, turn_deg=args.turn_deg,
                         headings=args.headings, strides_m=tuple(args.strides_m), scan_bins=args.scan_bins,
                         reward_submitted_weight=args.reward_submitted_weight, walls=args.walls,
                         privileged_obs=tuple(args.privileged_obs),
                         reward_occupancy_weight=args.reward_occupancy_weight, blocked_obs=args.blocked_obs,
                         reward_blocked_penalty=args.reward_blocked_penalty,
                         mask_guard_m=args.action_mask_guard_m if args.action_mask_guard_m >= 0 else None)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def make_env(args: Args, index: int) -> Callable[[], gym.Env]:
    """A thunk building env ``index``: NBV-v0 (Procedural-v0 -> NextBestViewWrapper) -> episode
    statistics (the ``sync``/``async`` vectorizations)."""

    def thunk() -> gym.Env:
        from spatialscout_gym.nbv.registration import register_nbv_envs
        register_nbv_envs()   # the ids in a subprocess too (NBV-v0's entry point registers the scene ids it needs)
        env = gym.make("SpatialScout/NBV-v0", disable_env_checker=True, **_env_kwargs(args))
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env.action_space.seed(args.seed + index)
        return env

    return thunk


def make_vec_env(args: Args) -> VecEnv:
    """The SB3 ``VecEnv`` of ``args.vectorization``."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    if args.vectorization == "vector":
        from spatialscout_gym.nbv.training.sb3_vec import SB3VecEnv
        from spatialscout_gym.nbv.workers import make_nbv_vector_env
        return SB3VecEnv(make_nbv_vector_env(args.num_envs, num_workers=args.num_workers, autoreset_mode="SameStep",
                                             **_env_kwargs(args)))
    thunks = [make_env(args, i) for i in range(args.num_envs)]
    return SubprocVecEnv(thunks) if args.vectorization == "async" else DummyVecEnv(thunks)


def planned_steps(args: Args) -> int:
    """Environment steps PPO will really take: ``total_timesteps`` rounded up to whole rollouts of
    ``num_steps x num_envs`` (SB3 finishes the rollout it is in), so a progress bar of this total
    ends exactly at 100%."""
    rollout = args.num_steps * args.num_envs
    return -(-args.total_timesteps // rollout) * rollout


def save_policy(model: BaseAlgorithm, config: NBVConfig, directory: Path, args: Args) -> Path:
    """Write ``model.zip`` and its ``nbv_config.json`` (the agent's mapper, ``reward_mapper``, V and
    resolution) into ``directory``; returns the ``model.zip`` path."""
    from spatialscout_gym.nbv.policy_files import save_nbv_config
    directory.mkdir(parents=True, exist_ok=True)
    as_ppo(model).save(str(directory / "model.zip"))
    config_path = save_nbv_config(config, directory, mapper=args.agent_mapper or args.mapper,
                                  image_budget=args.image_budget, resolution=args.resolution)
    # the run behind it: the reward's mapper, the steps taken, the seed and the weights it started from
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "reward_mapper": args.mapper,
                                       "total_timesteps": int(model.num_timesteps), "seed": args.seed,
                                       "init_model": args.init_model or None,
                                       # trained through the scan guard's mask: it acts through the same guard
                                       **({"scan_guard_m": config.mask_guard_m} if config.mask_guard_m is not None
                                          else {})}, indent=2))
    return directory / "model.zip"


def as_ppo(model: Any) -> BaseAlgorithm:
    """``model`` as a plain SB3 ``PPO`` (what ``ppo:PATH`` loads): a ``MaskablePPO`` (``--action-mask``)
    has the same parameters under the same names, copied into a ``PPO`` on its env; the mask it
    trained with is the env's, so the saved policy acts without one."""
    from stable_baselines3 import PPO
    if type(model) is PPO:
        return model
    # the policy is what ppo:PATH reads; --init-model takes its hyperparameters from the command line.
    # No seed here: it would reseed the envs mid-run
    plain = PPO("MultiInputPolicy", model.get_env(), policy_kwargs=model.policy_kwargs, device=model.device,
                n_steps=model.n_steps, batch_size=model.batch_size, n_epochs=model.n_epochs, gamma=model.gamma,
                gae_lambda=model.gae_lambda, ent_coef=model.ent_coef, vf_coef=model.vf_coef)
    plain.policy.load_state_dict(model.policy.state_dict())
    plain.num_timesteps = model.num_timesteps
    return plain


def start_model(algorithm: Any, envs: VecEnv, init_model: str, hyper: dict[str, Any]) -> BaseAlgorithm:
    """``algorithm`` (``PPO`` or ``MaskablePPO``) on ``envs`` starting from the saved PPO
    ``init_model``: loaded whole (optimizer state too) when its class and spaces are these, else a
    new model whose parameters are the saved ones, widened to the env's extra observation keys
    (their input weights zero, so it starts acting exactly as the saved policy:
    :func:`~spatialscout_gym.nbv.training.init_weights.copy_widened`) with a fresh optimizer."""
    from stable_baselines3 import PPO

    from spatialscout_gym.nbv.training.init_weights import copy_widened
    schedules = {k: hyper[k] for k in ("learning_rate", "clip_range")}
    rest = {k: v for k, v in hyper.items() if k not in schedules}
    saved = PPO.load(init_model, device=hyper.get("device", "cpu"))
    model = algorithm("MultiInputPolicy", envs, policy_kwargs=saved.policy_kwargs, **hyper)
    # compared as the model sees them: SB3 wraps an image env so that its images come channel-first
    if algorithm is PPO and saved.observation_space == model.observation_space:
        return PPO.load(init_model, env=envs, custom_objects=schedules, **rest)
    copy_widened(model.policy, saved.policy)
    return model


def _callbacks(args: Args, run_dir: Path, config):
    from stable_baselines3.common.callbacks import BaseCallback

    class CleanRLScalars(BaseCallback):
        """``charts/...`` per finished episode and per rollout, ``losses/...`` per update; a
        tqdm bar; stops at ``time_limit_s``."""

        _LOSSES = {"train/policy_gradient_loss": "losses/policy_loss", "train/value_loss": "losses/value_loss",
                   "train/entropy_loss": "losses/entropy", "train/approx_kl": "losses/approx_kl",
                   "train/clip_fraction": "losses/clipfrac", "train/explained_variance":
                   "losses/explained_variance"}

        def _on_training_start(self) -> None:
            self.t0 = time.time()
            self.bar = None
            if args.progress_bar:
                from tqdm import tqdm
                self.bar = tqdm(total=planned_steps(args), unit="step", desc="train-nbv")
            self.returns: list[float] = []
            self.stopped_early = False

        def _on_rollout_end(self) -> None:
            every = args.checkpoint_every
            if every > 0 and self.num_timesteps // every > getattr(self, "saved_multiple", 0):
                self.saved_multiple = self.num_timesteps // every
                save_policy(self.model, config, run_dir / "checkpoints" / str(self.num_timesteps), args)

        def _on_rollout_start(self) -> None:
            values = dict(self.logger.name_to_value)
            for src, dst in self._LOSSES.items():
                if src in values:
                    self.logger.record(dst, values[src])

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", []):
                if "episode" in info:
                    ret = float(np.asarray(info["episode"]["r"]).item())
                    self.returns.append(ret)
                    self.logger.record_mean("charts/episodic_return", ret)
                    self.logger.record_mean("charts/episodic_length", float(np.asarray(info["episode"]["l"]).item()))
                    self.logger.record_mean("charts/coverage", float(info.get("coverage", 0.0)))
                    self.logger.record_mean("charts/all_mean_iou", float(info.get("all_mean_iou", 0.0)))
            if self.bar is not None:
                self.bar.update(min(self.training_env.num_envs, self.bar.total - self.bar.n))
                if self.returns:
                    self.bar.set_postfix(ret=f"{np.mean(self.returns[-50:]):.3f}")
            elapsed = time.time() - self.t0
            self.logger.record("charts/SPS", int(self.num_timesteps / max(elapsed, 1e-9)))
            self.stopped_early = args.time_limit_s > 0 and elapsed > args.time_limit_s
            return not self.stopped_early

        def _on_training_end(self) -> None:
            if self.bar is not None:
                self.bar.close()

    return CleanRLScalars()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _in_main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def train(args: Args) -> Path:
    """Train and save; returns the path of ``model.zip`` (``--backend rllib``: of the final checkpoint
    directory, :func:`~spatialscout_gym.nbv.training.rllib.train_rllib`)."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import configure

    from spatialscout_gym.core.errors import ConfigError

    if args.backend not in BACKENDS:
        raise ConfigError(f"--backend must be one of {', '.join(BACKENDS)}, got {args.backend!r}")
    from spatialscout_gym.scenes.splits import check_training_scene
    check_training_scene(args.scenes)   # a val or test scene: refused before any run directory is made
    if args.backend == "rllib":
        runners = max(1, args.num_env_runners)
        if args.num_env_runners < 0 or args.num_envs % runners:
            raise ConfigError(f"--backend rllib shares --num-envs among --num-env-runners (>= 0): --num-envs must "
                              f"be a multiple of it, got {args.num_envs} envs for {args.num_env_runners} runners")
        if args.init_model:
            raise ConfigError("--init-model continues an SB3 model.zip; with --backend rllib restore a checkpoint "
                              "with ray.rllib's Algorithm.from_checkpoint instead (docs/rllib.md)")
    if args.vectorization not in VECTORIZATIONS:
        raise ConfigError(f"--vectorization must be one of {', '.join(VECTORIZATIONS)}, got {args.vectorization!r}")
    if args.device not in ("cpu", "cuda") and not args.device.startswith("cuda:"):
        raise ConfigError(f"--device must be 'cpu' or 'cuda' (or 'cuda:N'), got {args.device!r}")
    if args.device != "cpu":
        import torch
        if not torch.cuda.is_available():   # SB3 would quietly train on the CPU and record "cuda"
            raise ConfigError(f"--device {args.device}: torch sees no CUDA device here; use --device cpu")
    if args.checkpoint_every < 0:
        raise ConfigError(f"--checkpoint-every must be >= 0 steps (0: no checkpoints), got {args.checkpoint_every}")
    for name in ("total_timesteps", "num_envs", "num_workers", "image_budget", "num_steps", "batch_size",
                 "update_epochs", "reconfigure_every"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.resolution < 8:
        raise ConfigError(f"--resolution must be >= 8 pixels, got {args.resolution}")
    if args.obs_size < _MIN_CNN_SIDE:
        raise ConfigError(f"--obs-size must be >= {_MIN_CNN_SIDE} pixels (the smallest image SB3's "
                         f"NatureCNN encoder accepts), got {args.obs_size}")
    if args.init_model:
        from spatialscout_gym.nbv.policy_files import load_policy_config, policy_path
        init = policy_path(args.init_model)
        if not init.exists():
            raise ConfigError(f"--init-model {args.init_model}: no model.zip there")
        saved = load_policy_config(init)
        # the mapper is the reward, not the spaces: a policy may continue under another mapper
        differs = {k: (saved[k], getattr(args, k)) for k in ("image_budget", "resolution")
                   if saved[k] is not None and saved[k] != getattr(args, k)}
        for k in ("motion", "obs_size", "headings", "strides_m", "scan_bins"):
            want = tuple(args.strides_m) if k == "strides_m" else getattr(args, k)
            if getattr(saved["config"], k) != want:
                differs[k] = (getattr(saved["config"], k), want)
        if differs:
            raise ConfigError("--init-model was trained with other settings: " + ", ".join(
                f"{k} {a!r} there, {b!r} here" for k, (a, b) in differs.items()))
        if saved["config"].blocked_obs and not args.blocked_obs:
            raise ConfigError("--init-model observes blocked moves (NBV-v3's 'blocked' key): add --blocked-obs")
        args.init_model = str(init)
    from spatialscout_gym.nbv.mappers import MAPPERS
    for name in ("mapper", "agent_mapper"):
        if getattr(args, name) not in MAPPERS and (name == "mapper" or getattr(args, name)):
            raise ConfigError(f"--{name.replace('_', '-')} must be one of {', '.join(MAPPERS)}, got {getattr(args, name)!r}")
    if not args.single_room_share <= 1.0:   # NaN fails here too
        raise ConfigError(f"--single-room-share must be a probability in [0, 1] (negative: the "
                          f"generator's own mix), got {args.single_room_share}")
    if args.time_limit_s < 0 or args.learning_rate <= 0:
        raise ConfigError(f"--time-limit-s must be >= 0 (0: none) and --learning-rate > 0, got "
                         f"{args.time_limit_s} and {args.learning_rate}")
    if not (0 < args.move_m <= 1.0 and 0 < args.turn_deg <= 180):
        raise ConfigError(f"--move-m must be in (0, 1] metres (the move bound) and --turn-deg in (0, 180], "
                          f"got {args.move_m} and {args.turn_deg}")
    masked = args.action_mask or args.action_mask_guard_m >= 0
    if args.action_mask and args.action_mask_guard_m >= 0:
        raise ConfigError("--action-mask (the walls' mask) and --action-mask-guard-m (the scan guard's) are two "
                          "masks for one MaskablePPO; give one")
    if masked and (args.backend != "sb3" or args.vectorization != "vector"):
        raise ConfigError("--action-mask trains with sb3-contrib's MaskablePPO (--action-mask-guard-m too), which "
                          "reads the masks of --backend sb3 --vectorization vector envs; drop it or use those")
    if args.train_only_blocked and not (args.blocked_obs and args.init_model):   # rllib refuses --init-model
        raise ConfigError("--train-only-blocked fine-tunes the 'blocked' input's weights of a saved policy: it "
                          "needs --blocked-obs and --init-model")
    config = nbv_config_of(args)   # validates early, with a clear error

    if args.backend == "rllib":
        try:
            from spatialscout_gym.nbv.training.rllib import train_rllib
        except ImportError as exc:  # pragma: no cover - depends on the install
            from spatialscout_gym.core.errors import install_command
            raise ConfigError(f"--backend rllib needs RLlib ({exc}): {install_command('rl,ray')}") from None
        return train_rllib(args, config, _env_kwargs(args))

    # ---- seeding ---------------------------------------------------------------------------
    random.seed(args.seed)
    np.random.seed(args.seed)  # SB3 draws minibatch permutations from numpy's global generator
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, args.torch_threads))

    run_name = args.run_name or f"{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = Path(args.out) / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "args.json").write_text(json.dumps(asdict(args), indent=2))
    if args.init_model:
        write_init_progress(Path(args.init_model), run_dir)

    envs = make_vec_env(args)
    envs.seed(args.seed)

    hyper: dict[str, Any] = dict(learning_rate=args.learning_rate, n_steps=args.num_steps, batch_size=args.batch_size,
                 n_epochs=args.update_epochs, gamma=args.gamma, gae_lambda=args.gae_lambda,
                 clip_range=args.clip_coef, ent_coef=args.ent_coef, vf_coef=args.vf_coef, seed=args.seed,
                 device=args.device, verbose=0)
    algorithm: Any = PPO
    if masked:
        try:
            from sb3_contrib import MaskablePPO
        except ImportError as exc:  # pragma: no cover - depends on the install
            from spatialscout_gym.core.errors import install_command
            raise ConfigError(f"--action-mask needs sb3-contrib ({exc}): {install_command('rl')}") from None
        algorithm = MaskablePPO
    if args.init_model:
        model = start_model(algorithm, envs, args.init_model, hyper)
        if args.train_only_blocked:
            from spatialscout_gym.nbv.training.only_key import train_only_key
            train_only_key(model.policy, "blocked")
    else:
        model = algorithm("MultiInputPolicy", envs, **hyper)
    model.set_logger(configure(str(run_dir), ["tensorboard", "csv"]))
    callback = _callbacks(args, run_dir, config)
    t0 = time.perf_counter()
    import signal
    # `kill PID` (SIGTERM) stops training as Ctrl-C does: the model so far is saved (a background
    # job started by a non-interactive shell ignores SIGINT, so SIGTERM is how one stops it)
    previous = signal.signal(signal.SIGTERM, _interrupt) if _in_main_thread() else None
    interrupted = False
    try:
        model.learn(total_timesteps=args.total_timesteps, callback=callback, progress_bar=False)
    except KeyboardInterrupt:
        interrupted = True   # a stop asked for: save what was learnt and report it, no traceback
    finally:
        save_policy(model, config, run_dir, args)
        envs.close()
        model.logger.close()
        plot_learning_curve(run_dir)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    returns = getattr(callback, "returns", [])
    print(summary_line(int(model.num_timesteps), time.perf_counter() - t0, len(returns), returns,
                       run_dir / "model.zip", bool(getattr(callback, "stopped_early", False)), interrupted))
    return run_dir / "model.zip"


def main(argv: list[str] | None = None) -> Path:
    import tyro
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    return train(args)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
