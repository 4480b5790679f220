"""The settings of one NBV training run (``spatialscout train-nbv``, parsed by ``tyro``): one
dataclass that both trainers read (:mod:`spatialscout_gym.nbv.training.sb3` for Stable-Baselines3,
:mod:`spatialscout_gym.nbv.training.rllib` for RLlib) and that ``args.json`` records."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Args", "VECTORIZATIONS", "BACKENDS"]

VECTORIZATIONS = ("vector", "sync", "async")
BACKENDS = ("sb3", "rllib")


@dataclass
class Args:
    exp_name: str = "ppo_nbv"
    """the name of this experiment (first part of the run name)"""
    seed: int = 1
    """seed of the experiment (python, numpy, torch, env resets)"""
    backend: str = "sb3"
    """'sb3' (Stable-Baselines3 PPO, envs in this machine's processes) or 'rllib' (RLlib PPO, env runners
    spread over a Ray cluster: --ray-address, --num-env-runners; the policy is an rllib:PATH agent)"""
    ray_address: str = ""
    """--backend rllib: the Ray cluster ('auto': the one this machine joined with `ray start`; 'HOST:PORT':
    the head's GCS port, 6379 by default; 'ray://HOST:10001': Ray Client; '': a Ray started on this machine
    for this run). With token authentication on, export RAY_AUTH_MODE=token and the token (RAY_AUTH_TOKEN,
    or the file ~/.ray/auth_token)"""
    num_env_runners: int = 2
    """--backend rllib: RLlib env runner actors (one CPU each, on any node of the cluster) sharing the
    --num-envs envs; 0: sample in this process"""
    total_timesteps: int = 200_000
    """total environment steps (one step = one motion and one capture)"""
    time_limit_s: float = 0.0
    """stop training after this many seconds of wall clock (0: no limit); the model is saved"""
    num_envs: int = 8
    """number of parallel environments"""
    vectorization: str = "vector"
    """'vector' (NBVVectorEnv; over --num-workers processes), 'sync' (SB3 DummyVecEnv) or 'async' (SB3 SubprocVecEnv, one process per env)"""
    num_workers: int = 1
    """--vectorization vector: worker processes holding the envs in chunks (one per CPU core is the usual choice; 1: this process)"""
    device: str = "cpu"
    """torch device of the PPO policy: 'cpu' or 'cuda'"""
    render_device: str = ""
    """SAPIEN render device of every env, e.g. 'cuda' (with --vectorization vector the cameras are then
    rendered in one batched camera-group call; unverified on a GPU so far); '': SAPIEN's default"""
    image_budget: int = 20
    """images per episode, the initial one included (the episode length is image_budget - 1)"""
    resolution: int = 64
    """render grid of every capture, pixels"""
    obs_size: int = 64
    """side of the observed image, pixels (>= 36, the smallest SB3's NatureCNN accepts)"""
    motion: str = "heading"
    """action space: 'heading' (turn to one of --headings relative yaws, then stride one of --strides-m),
    'discrete' (10 single motions) or 'continuous' (Box(-1, 1, (5,)))"""
    headings: int = 6
    """heading motion: relative yaws to choose from, evenly spaced"""
    strides_m: tuple[float, ...] = (0.0, 1.0, 2.0)
    """heading motion: distances to move along the new heading, metres (at most 2)"""
    scan_bins: int = 12
    """bins of the 'scan' observation (free distance per egocentric bin from the depth of nearby captures); 0: none"""
    move_m: float = 0.5
    """discrete forward/back/left/right step, metres"""
    turn_deg: float = 45.0
    """discrete yaw step, degrees"""
    scenes: str = "split:train"
    """the scenes training draws: 'split:train' (the default: a new procedural scene every
    --reconfigure-every resets, the train split's random draws) or one train-split scene
    (procedural:<seed>); a scene of the val or test split (a catalog id, a val seed) is refused
    (named splits: docs/nbv.md)"""
    reconfigure_every: int = 16
    """resets per procedural training scene (a new scene is generated and uploaded every K resets;
    between them the same scene from a random start yaw)"""
    single_room_share: float = -1.0
    """chance that a new training scene is a single room, else a 2-5 room apartment (a curriculum
    knob, recorded in args.json); negative: the generator's own mix (60 % single rooms)"""
    reward_submitted_weight: float = 0.0
    """the reward adds this weight times the change in submitted mean IoU to the change in all-target
    mean IoU (0: all-target only); with the surface mapper it values placing mapped targets better"""
    walls: bool = True
    """walls, floor and ceiling stop the camera (SpatialScout/NBV-v2's dynamics; recorded in
    nbv_config.json, so ppo:PATH runs under them); --no-walls: NBV-v1's (the camera passes them)"""
    blocked_obs: bool = False
    """observe whether the last move was blocked and by what (SpatialScout/NBV-v3's 'blocked' key;
    needs --walls; recorded in nbv_config.json, so ppo:PATH runs under NBV-v3); --init-model may be a
    policy without that key: its weights are copied and the new key's start at zero"""
    train_only_blocked: bool = False
    """fine-tune only the policy's weights on the 'blocked' input (and the value function): every
    other policy weight stays --init-model's, so the policy acts exactly as it did except on the
    step after a blocked move (needs --blocked-obs and --init-model)"""
    action_mask: bool = False
    """--backend sb3 --vectorization vector: train with sb3-contrib's MaskablePPO on the envs'
    action_masks() (the wall-geometry mask, privileged: it shapes training only; the saved policy is
    a plain PPO model.zip that acts without it)"""
    action_mask_guard_m: float = -1.0
    """>= 0: train with MaskablePPO on the scan guard's mask with this margin, metres (built from the
    policy's own scan and blocked observations, not privileged: what ppo:PATH then acts through, as
    nbv_config.json's scan_guard_m records); negative (default): no guard mask. Needs --motion
    heading and, like --action-mask (which it replaces), --backend sb3 --vectorization vector"""
    privileged_obs: tuple[str, ...] = ()
    """research observations the policy gets besides NBV-v1's: any of depth segmentation points
    occupancy (recorded in nbv_config.json); none by default"""
    reward_occupancy_weight: float = 0.0
    """the reward adds this weight times the occupancy gain (newly known voxels as a fraction of the grid)"""
    reward_blocked_penalty: float = 0.0
    """the reward subtracts this on a step whose move was blocked (needs --walls; recorded in nbv_config.json)"""
    mapper: str = "oracle"
    """mapper turning captures into submissions during training (its IoU change is the reward): 'oracle' or 'oracle-surface'"""
    agent_mapper: str = ""
    """mapper the saved policy's ppo:PATH agent maps with by default (nbv_config.json 'mapper'; the
    training mapper is kept as 'reward_mapper'); '': --mapper"""
    learning_rate: float = 3e-4
    """the learning rate of the optimizer"""
    num_steps: int = 128
    """steps per environment per rollout"""
    batch_size: int = 128
    """minibatch size"""
    update_epochs: int = 4
    """epochs per policy update"""
    gamma: float = 0.99
    """the discount factor"""
    gae_lambda: float = 0.95
    """the lambda of generalized advantage estimation"""
    clip_coef: float = 0.2
    """the surrogate clipping coefficient"""
    ent_coef: float = 0.01
    """coefficient of the entropy bonus"""
    vf_coef: float = 0.5
    """coefficient of the value loss"""
    torch_threads: int = 1
    """torch CPU threads (keep 1 on small machines)"""
    init_model: str = ""
    """continue from this saved model.zip instead of a fresh policy (its nbv_config.json must match these
    spaces, V and resolution; --mapper may differ: it changes the reward only)"""
    out: str = "runs/nbv"
    """directory under which the run directory <exp_name>__<seed>__<time> is created"""
    run_name: str = ""
    """run directory name (default: <exp_name>__<seed>__<unix time>)"""
    progress_bar: bool = True
    """show a tqdm progress bar"""
    checkpoint_every: int = 0
    """save the policy every this many environment steps (at the end of the rollout that passes
    each multiple) to <run dir>/checkpoints/<steps>/, a directory ppo:PATH loads; 0: only at the end"""
