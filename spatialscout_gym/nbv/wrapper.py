"""Next-best-view (NBV) control for RL: :class:`NextBestViewWrapper` (``gym.make("SpatialScout/NBV-v0")``)
and :func:`make_nbv_env`.

Each step is a camera motion followed by a capture, and a mapper turns captures into submissions;
that step is the one NBV core (:class:`~spatialscout_gym.nbv.core.NBVCore`), which the
wrapper drives through the inner tool env's ``step`` (so wrappers placed inside it see each call),
and the NBV agents of :mod:`spatialscout_gym.baselines.nbv_agents` drive on an
:class:`~spatialscout_gym.episode.episode.Episode` directly
(:class:`~spatialscout_gym.nbv.core.NBVController`). A policy sees the same observations
and actions in both.

The parts live in small modules, re-exported here: settings and spaces
(:mod:`~spatialscout_gym.nbv.config`), motions (:mod:`~spatialscout_gym.nbv.motion`),
observation features (:mod:`~spatialscout_gym.nbv.features`), the core
(:mod:`~spatialscout_gym.nbv.core`) and its ports (:mod:`~spatialscout_gym.nbv.ports`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.renderer_api import Renderer
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.nbv.config import (DISCRETE_MOTIONS, MAP_CHANNELS, MOTIONS, N_SECTORS, LaidOutObservation,
                                         NBVConfig, check_obs_layout, layout_observation, layout_observation_space,
                                         nbv_action_space, nbv_observation_space)
from spatialscout_gym.nbv.core import NBVController, NBVCore, NBVStep
from spatialscout_gym.nbv.features import ViewHistory, depth_rays, nbv_observation
from spatialscout_gym.nbv.motion import TRANSLATION_AXIS_M, motion_args, move_parts
from spatialscout_gym.nbv.ports import ToolEnvPort

if TYPE_CHECKING:
    from spatialscout_gym.nbv.mappers import Mapper

__all__ = ["NextBestViewWrapper", "NBVController", "NBVCore", "NBVStep", "NBVConfig", "DISCRETE_MOTIONS",
           "N_SECTORS", "MOTIONS", "make_nbv_env", "nbv_observation_space", "nbv_action_space", "motion_args",
           "ViewHistory", "nbv_observation", "MAP_CHANNELS", "move_parts", "depth_rays", "TRANSLATION_AXIS_M",
           "NBVObservationLayout"]


class NextBestViewWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Choose camera views; an automatic mapper turns each capture into submissions.

    ## Description
    Wraps a :class:`~spatialscout_gym.envs.spatialscout_env.SpatialScoutEnv` (possibly wrapped,
    e.g. ``gym.make("SpatialScout/Procedural-v0")``). Each step applies one camera motion
    (rotation first, then translation along the new heading), captures an image, lets the mapper
    turn the capture into ``submit_positions`` entries and submits them. Every one of these is a
    tool call sent through the inner env's ``step`` (so wrappers inside this one see them); the
    mapper reads the evaluator-only data it needs (the scene's target table, the privileged frame
    of each capture) from ``env.unwrapped`` (``scene_spec``, ``privileged_frame()``).

    How an NBV step counts against the inner episode's budgets: 1 tool call for the rotation (if
    any), 1 or more for the translation (if any: it is sent as :func:`move_parts` equal calls, each
    within the inner action space's per-axis bound of 0.577 m, so 1-2 for a continuous motion and
    up to 4 for a 2 m heading stride), 1 for the capture and 1 image (while images are left), and 1
    for the submission (when the mapper adds entries): 1 to 7 tool calls and 1 image.
    ``make_nbv_env`` and ``SpatialScout/NBV-v0`` make the inner tool-call budget unlimited, so the
    image budget alone ends the episode.
    The default mapper, ``"oracle"``
    (:class:`~spatialscout_gym.nbv.mappers.OraclePerceptionMapper`), submits the reference
    centre of every target seen in the capture's privileged segmentation, so the task reduces to
    view planning: the all-target mean IoU equals the fraction of the inventory seen.

    ## Action Space
    ``motion="discrete"`` (default): ``Discrete(10)``, :data:`DISCRETE_MOTIONS`:

    | index | motion | amount |
    |---|---|---|
    | 0, 1 | forward, back (horizontal heading) | ``move_m`` = 0.5 m |
    | 2, 3 | left, right (horizontal) | ``move_m`` = 0.5 m |
    | 4, 5 | up, down (world vertical) | ``lift_m`` = 0.25 m |
    | 6, 7 | turn left, turn right (yaw) | ``turn_deg`` = 45 deg |
    | 8, 9 | look up, look down (pitch) | ``tilt_deg`` = 15 deg |

    ``motion="heading"``: ``Discrete(headings x len(strides_m))`` (6 x 3 = 18 by default); action
    ``a = k * len(strides_m) + d`` turns by ``k * 360 / headings`` degrees (k = 0 keeps the heading;
    wrapped to (-180, 180], left +), sets the pitch to ``hold_pitch_deg`` (-20), then moves
    ``strides_m[d]`` metres (0, 1 or 2) forward along the new heading: a turn-in-place or a stride
    through the room and its doorways with one image per step.

    ``motion="continuous"``: ``Box(-1, 1, (5,), float32)`` = (forward, right, up) in metres
    (the vector is shortened to 1 m if longer: docs/protocol.md section 4's move bound), yaw x
    ``max_yaw_deg`` (180) and pitch x ``max_pitch_deg`` (45) in degrees, relative.
    A motion the episode refuses (leaving the +-15 m world box; pitch is clamped to [-85, 85])
    leaves the camera in place; the capture still happens.

    ## Observation Space
    A flat ``Dict``:

    | key | space | meaning |
    |---|---|---|
    | ``image`` | Box(0, 255, (S, S, 3), uint8) | the latest capture, area-resized to S = ``obs_size`` (64) |
    | ``pose`` | Box(-1, 1, (6,), float32) | task-frame position / (r + 0.5 m) (clipped), sin yaw, cos yaw (yaw relative to the initial heading), pitch / 85 deg |
    | ``coverage`` | Box(0, 1, (2,), float32) | fraction of the inventory submitted; fraction of the image budget left |
    | ``sectors`` | Box(0, 1, (8,), float32) | 1 where an image was captured in the current 1 m floor cell with heading in 45-deg sector k (egocentric, k = 0 ahead, counter-clockwise) |
    | ``map`` | Box(0, 1, (3, M, M), float32) | egocentric top-down map, M = ``map_cells`` (16) cells of ``map_cell_m`` (0.75 m), heading up: captures taken per cell, captures whose view wedge covered the cell, inside the search radius (:meth:`ViewHistory.visit_map`) |
    | ``scan`` | Box(0, 1, (B,), float32) | B = ``scan_bins`` (12; absent when 0): a pseudo laser scan, the free distance / 6 m per egocentric 30-degree bin, from the privileged depth of the captures taken within 1 m (0 = not yet seen; :meth:`ViewHistory.scan`), the same depth the ``frontier-nbv`` heuristic steers by |

    ## Rewards
    The change in all-target mean IoU (docs/protocol.md section 6, paper scoring) of the accepted map, so
    an episode's return is its final all-target mean IoU minus that of the starting state: frame
    0's map is part of the starting state and not rewarded (``reset`` reports it as
    ``info["all_mean_iou"]``).
    With ``reward_submitted_weight=w`` (an :class:`NBVConfig` field, default 0) the reward adds w
    times the change in submitted mean IoU, so the return is also w times the final minus the
    starting submitted mean IoU (a training knob: it values placing mapped targets better).

    ## Starting State
    The inner env's reset (a new ``SpatialScout/Procedural-v0`` scene per reset seed, or a fixed
    scene), with frame 0 captured and already mapped.

    ## Episode End
    - Termination: the image budget is used up (it is observed: ``coverage[1] == 0``, so the state
      is Markov and the episode is over, not cut short).
    - Termination: every inventory target is in the accepted map (nothing more to gain with the
      oracle mapper).
    - Termination: the inner episode ended for another reason (e.g. the inner env's tool-call
      budget; use ``tool_call_budget=None`` to avoid it, as :func:`make_nbv_env` does).
    - Truncation: none (add ``gymnasium.wrappers.TimeLimit`` for a shorter horizon).
    At the end the wrapper calls ``finish_mapping`` and ``info["metrics"]`` holds the scorer's
    metrics dict.

    ## Arguments
    ``NextBestViewWrapper(env, mapper="oracle", motion="discrete", obs_size=64, **NBVConfig fields)``;
    ``mapper`` is a name (``"oracle"``, ``"oracle-surface"``) or an object with the
    :class:`~spatialscout_gym.nbv.mappers.Mapper` interface.
    ``gym.make("SpatialScout/NBV-v0", scene="procedural", image_budget=20, resolution=64,
    mapper="oracle", motion="discrete", obs_size=64, reconfigure_every=16, random_start_yaw=True)``
    (= :func:`make_nbv_env`) builds the inner env too; ``scene`` is ``"procedural"`` or a catalog id;
    ``single_room_share=p`` (procedural only) makes each new training scene a single room with
    probability p (default: the generator's 60 %). ``obs_layout="image"``, ``"flat"`` or
    ``"image+vector"`` gives the observation in the layout other RL libraries expect
    (:class:`NBVObservationLayout`; spaces in ``SpatialScout/NBV-v1``'s spec sheet).

    ## Version History
    - v0: initial version; the ``map`` observation, the ``scan`` observation and the ``heading``
      motion added (``scan_bins=0`` gives the observation space without ``scan``);
      ``single_room_share`` and ``reward_submitted_weight`` added (defaults unchanged); ``obs_layout``
      added (default ``"dict"``, unchanged); the research observations (``privileged_obs``),
      ``reward_occupancy_weight`` and ``walls`` added, all off (dynamics unchanged), and
      ``info["blocked"]`` (NBVConfig fields; spaces and rules in ``SpatialScout/NBV-v1``'s spec sheet).
    - ``SpatialScout/NBV-v1`` (:class:`~spatialscout_gym.nbv.env.NBVEnv`) is this task as its
      own env with the shipped policy's recipe as defaults; it holds this wrapper and delegates to it.
    """

    def __init__(self, env: gym.Env, mapper: str | Mapper = "oracle", motion: str = "discrete",
                 obs_size: int = 64, **config: Any) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, mapper=mapper, motion=motion, obs_size=obs_size, **config)
        gym.Wrapper.__init__(self, env)
        inner = env.unwrapped
        if not all(hasattr(inner, a) for a in ("privileged_frame", "scene_spec", "metrics", "task_frame")):
            raise TypeError(f"NextBestViewWrapper wraps a SpatialScoutEnv (gym.make('SpatialScout/...')); "
                            f"got {type(inner).__name__}")
        if not isinstance(env.action_space, spaces.Dict) or "tool" not in env.action_space.spaces:
            raise TypeError(f"NextBestViewWrapper needs the tool-call Dict action space of a SpatialScoutEnv "
                            f"directly inside it (no action wrapper in between); got {env.action_space}")
        self.config = NBVConfig(motion=motion, obs_size=int(obs_size), **config)
        if isinstance(mapper, str):
            from spatialscout_gym.nbv.mappers import make_mapper
            mapper = make_mapper(mapper)
        self.mapper: Mapper = mapper
        self.action_space = nbv_action_space(self.config)
        self.observation_space = nbv_observation_space(self.config)
        self.port = ToolEnvPort(env)
        """The core's way to the inner env: every tool call is one of its ``step`` calls."""
        self.core = NBVCore(self.port, mapper, self.config)
        """The NBV step (motion, capture, mapping, observation, reward, end rule)."""

    # ---- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        _, info = self.port.reset(seed=seed, options=options)
        self.core.begin()  # frame 0's map is part of the starting state
        info = dict(info, all_mean_iou=self.core.score, coverage=self.core.coverage(), **self.core.camera_info())
        return self.core.observation(), info

    def prepare_step(self, action: npt.ArrayLike) -> CameraPose | None:
        """Phase 1 of :meth:`step`: apply ``action``'s motion (rotation and moves; no rendering) and
        return the camera pose the step's capture will render at (a
        :class:`~spatialscout_gym.core.frames.CameraPose`), or None when the step captures nothing.

        The next :meth:`step` must get the same action; it then only captures, maps and observes,
        with the results ``step`` alone gives. :class:`~spatialscout_gym.nbv.vector.NBVVectorEnv`
        uses this to render all sub-envs' captures in one batched call between the two phases."""
        return self.core.prepare(action)

    def capture_pose(self) -> CameraPose | None:
        """The camera pose this step's capture renders at, or None when it captures nothing (the
        inner episode ended or no image is left)."""
        return self.core.capture_pose()

    def action_masks(self) -> np.ndarray:
        """The actions whose move the walls would not block (:meth:`NBVCore.action_masks
        <spatialscout_gym.nbv.core.NBVCore.action_masks>`; privileged: from unobserved geometry)."""
        return self.core.action_masks()

    def step(self, action: npt.ArrayLike) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        s = self.core.step(action)
        # the last inner step's info (counters; metrics and wrappers' keys such as "episode" at the end)
        info: dict[str, Any] = {k: v for k, v in self.port.last_info.items() if k != "tool_result"}
        info.update(refused=s.refused, submitted=s.submitted, coverage=s.coverage, all_mean_iou=s.score,
                    blocked=s.blocked)
        if self.config.blocked_obs:
            info["block_cause"] = s.block_cause
        if self.core.research.occupancy is not None:
            info["occupancy_gain"] = s.occupancy_gain
        if s.terminated or s.truncated:
            info["metrics"] = self.port.metrics()
        info.update(self.core.camera_info())
        return self.core.observation(), float(s.reward), s.terminated, s.truncated, info


class NBVObservationLayout(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """The NBV observation in another layout (``obs_layout``: ``"image"``, ``"flat"`` or
    ``"image+vector"``; spaces in :func:`~spatialscout_gym.nbv.config.layout_observation_space`)
    over an env whose observation is the NBV ``dict``; the numbers are the dict's."""

    def __init__(self, env: gym.Env, obs_layout: str) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, obs_layout=obs_layout)
        gym.ObservationWrapper.__init__(self, env)
        self.obs_layout = check_obs_layout(obs_layout)
        self.observation_space = layout_observation_space(env.get_wrapper_attr("config"), obs_layout)

    def observation(self, observation: dict[str, np.ndarray]) -> LaidOutObservation:
        return layout_observation(observation, self.obs_layout)


def make_nbv_env(scene: str | SceneSpec = "procedural", *, image_budget: int = 20, resolution: int = 64,
                 mapper: str | Mapper = "oracle", motion: str = "discrete", obs_size: int = 64,
                 reconfigure_every: int = 16, random_start_yaw: bool = True, renderer: Renderer | None = None,
                 render_mode: str | None = None, render_device: str | None = None,
                 single_room_share: float | None = None, obs_layout: str = "dict", **config: Any) -> gym.Env:
    """``gym.make("SpatialScout/NBV-v0", ...)``: :class:`NextBestViewWrapper` over
    ``gym.make("SpatialScout/Procedural-v0" or "SpatialScout/<scene>-v0")`` with an unlimited
    tool-call budget (the inner env checker is off: the wrapper's own checks cover its calls).

    Parameters
    ----------
    scene : str or SceneSpec
        ``"procedural"`` (a new training scene every ``reconfigure_every`` resets), a catalog id
        or a spec.
    image_budget : int
        V, images per episode including the initial one.
    resolution : int
        Render grid, pixels (the observation is resized to ``obs_size``).
    reconfigure_every : int
        Resets per procedural training scene (see ``SpatialScoutEnv``'s Starting State).
    random_start_yaw : bool
        Turn the start camera by a random yaw per episode (procedural scenes only; a catalog scene
        always starts from its own initial camera, as in evaluation).
    renderer : Renderer, optional
        Passed to the inner env (tests pass a fake one).
    render_device : str, optional
        SAPIEN render device of the inner env's renderer (e.g. ``"cuda"``); None: SAPIEN's default.
    single_room_share : float, optional
        ``"procedural"`` only: chance in [0, 1] that a new training scene is a single room (the
        rest are apartments); None: the generator's own mix (60 % single rooms).
    obs_layout : str
        ``"dict"`` (default: the :class:`NextBestViewWrapper` itself), or ``"image"``, ``"flat"``
        or ``"image+vector"``: that wrapper inside :class:`NBVObservationLayout`
        (:func:`~spatialscout_gym.nbv.config.layout_observation_space`).
    """
    check_obs_layout(obs_layout)   # before any scene is built
    from spatialscout_gym.envs.registration import NAMESPACE, env_id_for_scene, register_envs
    register_envs()
    procedural = isinstance(scene, str) and scene == "procedural"
    env_id = f"{NAMESPACE}/Procedural-v0" if procedural or isinstance(scene, SceneSpec) else env_id_for_scene(scene)
    if env_id not in gym.registry:  # a spec path or procedural:<seed>: the generic entry point
        env_id = f"{NAMESPACE}/Procedural-v0"
    extra: dict[str, Any] = {}   # given only when set (the tool env's own defaults otherwise)
    if render_device is not None:
        extra["render_device"] = str(render_device)
    if single_room_share is not None:
        extra["single_room_share"] = float(single_room_share)
    env = gym.make(env_id, scene=scene, resolution=resolution, image_budget=image_budget, tool_call_budget=None,
                   renderer=renderer, reconfigure_every=reconfigure_every, render_mode=render_mode,
                   random_start_yaw=bool(random_start_yaw) and procedural, disable_env_checker=True, **extra)
    nbv = NextBestViewWrapper(env, mapper=mapper, motion=motion, obs_size=obs_size, **config)
    return nbv if obs_layout == "dict" else NBVObservationLayout(nbv, obs_layout)
