"""``SpatialScoutEnv``: one SpatialScout episode as a Gymnasium environment."""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from spatialscout_gym.core.frames import TaskFrame
from spatialscout_gym.core.renderer_api import FrameSource, PrivilegedFrame
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.core.triangulation import MAX_OBSERVATIONS
from spatialscout_gym.core.types import UNLIMITED
from spatialscout_gym.envs.session import EpisodeSession, sapien_factory
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.episode.tools import (MAX_ROTATION_DEG, PITCH_LIMIT_DEG, TOOL_NAMES,
                                            WORLD_BOX_M, ToolResult)

__all__ = ["SpatialScoutEnv", "MAX_TARGETS", "MAX_MARKS", "GIVEN_ARGS", "PROCEDURAL", "UNLIMITED"]

MAX_TARGETS = 40
"""N_max: rows of the ``positions``/``accepted_map`` blocks (docs/protocol.md section 8: 35 or 40 targets)."""
MAX_MARKS = MAX_OBSERVATIONS
"""K: rows of the ``marks`` block of one ``triangulate_observations`` action: the most
observations one call may carry (docs/protocol.md section 4), so every valid call fits."""
GIVEN_ARGS: tuple[str, ...] = ("forward", "right", "up", "yaw", "pitch", "yaw_deg", "pitch_deg")
"""The optional arguments the ``given`` flags name (move_camera, rotate_camera, set_camera_position)."""
PROCEDURAL = "procedural"
"""The ``scene`` value that makes a new training scene on every ``reset``."""
_TRANSLATION_AXIS_M = 1.0 / np.sqrt(3.0)
_POSITION_BOUND_M = 10.0
"""Bound of ``positions``, metres: above r + SUBMIT_MARGIN_M of every catalog scene (largest r 9.1 m)."""
_OBS_POSITION_BOUND_M = 2 * np.sqrt(3.0) * WORLD_BOX_M + 1.0
_REWARD_MODES = ("sparse", "dense")
_MAX_PIXELS = 1e6


class SpatialScoutEnv(gym.Env):
    """Map the centres of the listed targets of one indoor scene with the ten SpatialScout tools.

    ## Description
    The SpatialScout protocol (docs/protocol.md) as an env: each step runs one of the ten tools of docs/protocol.md
    section 4 on an :class:`~spatialscout_gym.episode.Episode`. The agent moves a camera, captures
    RGB images, triangulates marked pixels and submits target centres in the **task frame**
    (origin at the initial camera, +x its forward, +y its left, +z its up; metres).

    ## Action Space
    A flat ``Dict`` (fixed shapes, so vector envs batch it); only the fields of the chosen tool are
    read:

    | key | space | used by | meaning |
    |---|---|---|---|
    | ``tool`` | Discrete(10) | all | index into ``TOOL_NAMES`` (list_entities, get_camera_pose, get_camera_intrinsics, set_camera_position, move_camera, rotate_camera, capture_image, triangulate_observations, submit_positions, finish_mapping) |
    | ``translation`` | Box(-0.577, 0.577, (3,)) | move_camera | forward, right, up, metres (per-axis bound 1/sqrt(3) keeps the norm <= 1 m) |
    | ``rotation`` | Box(-180, 180, (2,)) | rotate_camera | yaw (left +), pitch (up +), degrees |
    | ``position`` | Box(-10, 10, (3,)) | set_camera_position | task-frame position, metres |
    | ``yaw_pitch`` | Box([-180, -85], [180, 85]) | set_camera_position | yaw relative to the initial heading, pitch elevation, degrees |
    | ``set_orientation`` | Discrete(2) | set_camera_position | 1: also apply ``yaw_pitch`` |
    | ``given`` | MultiBinary(7) | move_camera, rotate_camera, set_camera_position | 1: that optional argument (forward, right, up, yaw, pitch, yaw_deg, pitch_deg) is passed; when none of a tool's flags is set, move/rotate pass all their arguments and ``set_orientation`` decides the angles |
    | ``marks`` | Box((K, 3)) | triangulate_observations | rows (frame_id, u, v); frame_id rounded; pixels on the render grid |
    | ``num_marks`` | Discrete(K + 1) | triangulate_observations | how many rows of ``marks`` to use |
    | ``positions`` | Box((N_max, 3)) | submit_positions | task-frame centres, metres, row i = inventory entry i |
    | ``submit_mask`` | MultiBinary(N_max) | submit_positions | 1: submit row i (rows past the inventory are ignored) |

    K = 64, N_max = 40. The argument blocks are float64, so a JSON number round-trips exactly.
    A tool call these fields cannot hold (wrong types, unknown ids or argument names) may be passed
    as ``action["arguments"]`` (a dict, outside the space) with ``tool``: the episode then refuses
    it with its reason and counts it, as :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper` does. ``positions`` is bounded by 10 m for every scene (fixed at construction: a
    ``reset(options={"scene": ...})`` never changes a space), so a sampled entry often lies outside
    the submission ball ``|p| <= r + 0.5`` m and is refused per entry. Out-of-bound requests are refused by the episode, never raised.

    ## Observation Space
    | key | space | units / frame |
    |---|---|---|
    | ``image`` | Box(0, 255, (H, W, 3), uint8) | the latest capture (frame 0 after reset) |
    | ``camera_position`` | Box((3,)) float32 | current camera centre, task frame, metres |
    | ``camera_yaw_pitch`` | Box([-180, -85], [180, 85]) float32 | yaw relative to the initial heading, pitch elevation, degrees |
    | ``intrinsics`` | Box(0, 1e6, (6,)) float32 | fx, fy, cx, cy (pixels), W, H |
    | ``accepted_map`` | Box((N_max, 3)) float32 | accepted centres in inventory order, task frame, metres; 0 where none |
    | ``submitted`` | MultiBinary(N_max) | 1 where the accepted map holds that entry |
    | ``inventory_mask`` | MultiBinary(N_max) | 1 for the rows that are inventory entries |
    | ``budgets`` | Box(0, 1e6, (2,)) float32 | images left, tool calls left (1e6 when unlimited) |
    | ``depth`` | Box(0, 1000, (H, W), float32) | only with ``privileged_obs=True``: metres along the optical axis of the latest capture |
    | ``segmentation`` | Box(-1, 2**31-1, (H, W), int32) | only with ``privileged_obs=True``: object index of the latest capture, -1 none |

    The inventory itself (ids, categories, groups) and the radius come from the ``list_entities``
    tool (also ``env.unwrapped.inventory``).

    ## Rewards
    The all-target mean IoU of the accepted map (docs/protocol.md section 6, paper scoring), in [0, 1].
    ``reward_mode="sparse"`` (default) pays it once when the episode ends; ``"dense"`` pays its change
    on every step, so both sum to the same final score. ``"dense"`` tells the agent how each
    submission changed its score, which docs/protocol.md section 1 forbids during evaluation: use it for
    training only (``spatialscout run``/``evaluate`` drive the episode and never pay a reward).

    ## Starting State
    The scene's initial camera with frame 0 captured (counted against the image budget) and an
    empty accepted map. ``reset(options={"scene": NAME})`` loads another scene (catalog id,
    ``procedural:<seed>`` or spec path) and rebuilds the spaces for it; a fixed-scene env keeps it.

    What changes per episode (``SpatialScout/Procedural-v0``, after ManiSkill3's
    ``reconfiguration_freq``):

    | reset | scene (heavy: generate, upload to the renderer) | start |
    |---|---|---|
    | ``reset(seed=s)`` | a new training scene drawn from ``s`` | drawn from ``s`` |
    | ``reset()``, fewer than ``reconfigure_every`` resets since the last new scene | the same scene | drawn anew |
    | ``reset()``, the ``reconfigure_every``-th | a new training scene drawn from ``self.np_random`` | drawn anew |

    Training scenes come from ``procedural:<seed>`` seeds drawn from ``self.np_random``, a stream
    disjoint from the catalog's. The start is the scene's initial camera, turned by a yaw drawn
    uniformly in [-180, 180) degrees when ``random_start_yaw=True`` (the task frame follows the
    turned camera; the default keeps the scene's own start).

    ## Episode End
    - Termination: ``finish_mapping`` is called.
    - Termination: the tool-call budget is used up (the budgets are observed state).
    - Truncation: none in the env itself (add ``gymnasium.wrappers.TimeLimit`` if needed).
    Using up the image budget does not end the episode (docs/protocol.md section 5). At the end
    ``info["metrics"]`` holds the scorer's metrics dict. Every step's ``info["tool_result"]`` is the
    tool's result (``tool``, ``ok``, ``result``, ``error``, ``frame_id``: the new frame of a capture,
    -1 otherwise).

    ## Arguments
    ``gym.make("SpatialScout/<scene_id>-v0", resolution=512, image_budget=100, tool_call_budget=100,
    reward_mode="sparse", privileged_obs=False, render_mode=None, reconfigure_every=1,
    random_start_yaw=False)``; ``scene`` is a catalog id, ``"procedural"`` or a scene spec JSON path
    (or, not JSON-serialisable, a ``SceneSpec``). ``resolution`` is 8 to 4096 pixels,
    ``image_budget`` at least 1, ``tool_call_budget`` at least 1 or None (unlimited).
    ``reconfigure_every=K`` (procedural only) keeps a training scene for K resets.
    ``single_room_share=p`` (procedural only; default None, the generator's own 60 %) makes each new
    training scene a single room with probability p, else a 2-5 room apartment (a curriculum knob).
    ``shared_renderer=True`` reuses one renderer per resolution and render device across the envs of
    a process (many scenes, one SAPIEN context; each env switches the scene before it renders, also
    before a privileged frame read late renders its buffers; not thread-safe).
    ``renderer`` (not JSON; optional) reuses a given renderer that has ``set_scene(spec)``.
    ``render_device`` (e.g. ``"cuda"``; default None: SAPIEN's default Vulkan device) is the
    SAPIEN device of the renderer the env builds (``SapienRenderer(device=...)``).
    Scene, renderer and episode live in an
    :class:`~spatialscout_gym.envs.session.EpisodeSession` (``env.unwrapped.session``), which
    closes only a renderer it made for itself.

    ## Version History
    * v0: initial version; ``reconfigure_every`` and ``random_start_yaw`` added (defaults keep the
      v0 behaviour of a fixed-scene env).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    action_space: spaces.Dict
    observation_space: spaces.Dict

    def __init__(self, scene: str | SceneSpec = PROCEDURAL, *, resolution: int = 512, image_budget: int = 100,
                 tool_call_budget: int | None = 100, reward_mode: str = "sparse",
                 privileged_obs: bool = False, render_mode: str | None = None,
                 shared_renderer: bool = False, renderer: Any = None, reconfigure_every: int = 1,
                 random_start_yaw: bool = False, render_device: str | None = None,
                 single_room_share: float | None = None) -> None:
        if reward_mode not in _REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {_REWARD_MODES}, got {reward_mode!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if int(reconfigure_every) < 1:
            raise ValueError(f"reconfigure_every must be >= 1 (resets per training scene), got {reconfigure_every}")
        if single_room_share is not None:   # refused here, before a renderer exists, not at a reset
            from spatialscout_gym.scenes.procedural import checked_single_room_share
            single_room_share = checked_single_room_share(single_room_share)
        self.scene_name = scene.scene_id if isinstance(scene, SceneSpec) else str(scene)
        self.session = EpisodeSession(resolution=resolution, image_budget=image_budget,
                                      tool_call_budget=tool_call_budget, renderer=renderer,
                                      shared=bool(shared_renderer) and renderer is None,
                                      renderer_factory=None if render_device is None
                                      else sapien_factory(str(render_device)))
        self.resolution = self.session.resolution
        self.image_budget = self.session.image_budget
        self.tool_call_budget = self.session.tool_call_budget
        self.reward_mode = reward_mode
        self.privileged_obs = bool(privileged_obs)
        self.render_mode = render_mode
        self.reconfigure_every = int(reconfigure_every)
        self.random_start_yaw = bool(random_start_yaw)
        self.single_room_share = single_room_share
        """Procedural only: chance that a new training scene is a single room (None: the generator's own)."""
        self.procedural = not isinstance(scene, SceneSpec) and self.scene_name == PROCEDURAL
        if self.single_room_share is not None and not self.procedural:
            raise ValueError(f"single_room_share applies to procedural training scenes only; scene "
                             f"{self.scene_name!r} is fixed")
        self._resets_on_scene = 0
        if isinstance(scene, SceneSpec):
            self._load_scene(scene)
        elif not self.procedural:
            from spatialscout_gym.scenes.catalog import scene_by_name
            self._load_scene(scene_by_name(self.scene_name))  # heavy work once, here
        self._build_spaces()
        self._score = 0.0
        self._metrics: dict | None = None
        self._privileged_cache: tuple[int, Any] | None = None
        self._obs_parts: list | None = None

    def _build_spaces(self) -> None:
        H = W = self.resolution
        # one bound for every scene the env can load (reset(options={"scene": ...}) never changes a
        # space); the episode refuses entries beyond the scene's own r + SUBMIT_MARGIN_M
        pos_bound = float(np.float32(_POSITION_BOUND_M))
        self.action_space = spaces.Dict({
            "tool": spaces.Discrete(len(TOOL_NAMES)),
            "translation": spaces.Box(-_TRANSLATION_AXIS_M, _TRANSLATION_AXIS_M, (3,), np.float64),
            "rotation": spaces.Box(-MAX_ROTATION_DEG, MAX_ROTATION_DEG, (2,), np.float64),
            "position": spaces.Box(-_POSITION_BOUND_M, _POSITION_BOUND_M, (3,), np.float64),
            "yaw_pitch": spaces.Box(np.array([-180, -PITCH_LIMIT_DEG]),
                                    np.array([180, PITCH_LIMIT_DEG]), dtype=np.float64),
            "set_orientation": spaces.Discrete(2),
            "given": spaces.MultiBinary(len(GIVEN_ARGS)),
            "marks": spaces.Box(np.tile(np.array([0, -0.5, -0.5]), (MAX_MARKS, 1)),
                                np.tile(np.array([self.image_budget - 1, W - 0.5, H - 0.5]),
                                        (MAX_MARKS, 1)), dtype=np.float64),
            "num_marks": spaces.Discrete(MAX_MARKS + 1),
            "positions": spaces.Box(-pos_bound, pos_bound, (MAX_TARGETS, 3), np.float64),
            "submit_mask": spaces.MultiBinary(MAX_TARGETS),
        })
        obs = {
            "image": spaces.Box(0, 255, (H, W, 3), np.uint8),
            "camera_position": spaces.Box(-_OBS_POSITION_BOUND_M, _OBS_POSITION_BOUND_M, (3,), np.float32),
            "camera_yaw_pitch": spaces.Box(np.array([-180, -PITCH_LIMIT_DEG], np.float32),
                                           np.array([180, PITCH_LIMIT_DEG], np.float32), dtype=np.float32),
            "intrinsics": spaces.Box(0, _MAX_PIXELS, (6,), np.float32),
            "accepted_map": spaces.Box(-_OBS_POSITION_BOUND_M, _OBS_POSITION_BOUND_M, (MAX_TARGETS, 3),
                                       np.float32),
            "submitted": spaces.MultiBinary(MAX_TARGETS),
            "inventory_mask": spaces.MultiBinary(MAX_TARGETS),
            "budgets": spaces.Box(0, UNLIMITED, (2,), np.float32),
        }
        if self.privileged_obs:
            obs["depth"] = spaces.Box(0, 1000.0, (H, W), np.float32)
            obs["segmentation"] = spaces.Box(-1, np.iinfo(np.int32).max, (H, W), np.int32)
        self.observation_space = spaces.Dict(obs)

    # ---- heavy work: scene and renderer ---------------------------------------------------
    def _load_scene(self, spec: SceneSpec) -> None:
        n = len(spec.public.inventory)
        if n > MAX_TARGETS:
            raise ValueError(f"scene {spec.scene_id!r} has {n} targets; this env holds at most "
                             f"{MAX_TARGETS} (MAX_TARGETS)")
        self.session.load(spec)
        self._resets_on_scene = 0

    @property
    def scene_spec(self) -> SceneSpec | None:
        """The current episode's scene (evaluator-only: its private half holds the answers)."""
        return self.session.episode_spec or self.session.spec

    @property
    def episode(self) -> Episode | None:
        return self.session.episode

    def _live_episode(self) -> Episode:
        """The current episode; a clear error before the first ``reset()``."""
        ep = self.session.episode
        if ep is None:
            raise RuntimeError("no episode yet: call reset() first")
        return ep

    @property
    def renderer(self) -> FrameSource:
        return self.session.renderer

    @property
    def inventory(self) -> list[dict]:
        """The public inventory of the current scene (id, category, group), in row order."""
        spec = self.scene_spec
        return [e.to_dict() for e in spec.public.inventory] if spec else []

    @property
    def task_frame(self) -> TaskFrame | None:
        """The current episode's task frame (public: it is the initial camera's frame); None before
        the first reset."""
        ep = self.session.episode
        return None if ep is None else ep.task_frame

    # ---- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict[str, Any]]:
        super().reset(seed=seed)
        if options is not None and not isinstance(options, Mapping):
            from spatialscout_gym.core.errors import ConfigError
            raise ConfigError(f"reset(options=...) takes a dict such as {{'scene': 'Kitchen_01'}} or None, "
                              f"got {type(options).__name__}")
        if options and "scene" in options:
            from spatialscout_gym.scenes.catalog import scene_by_name
            spec = scene_by_name(str(options["scene"]))
            self._load_scene(spec)
        elif self.procedural and (seed is not None or self.session.spec is None
                                  or self._resets_on_scene >= self.reconfigure_every):
            from spatialscout_gym.scenes.catalog import procedural_scene
            scene_seed = int(self.np_random.integers(0, 2**31 - 1))
            self._load_scene(procedural_scene(scene_seed) if self.single_room_share is None else
                             procedural_scene(scene_seed, single_room_share=self.single_room_share))
        yaw = float(self.np_random.uniform(-180.0, 180.0)) if self.random_start_yaw else None
        self.session.new_episode(start_yaw_deg=yaw)
        self._resets_on_scene += 1
        self._score = 0.0
        self._metrics = None
        self._privileged_cache = None
        loaded = self.scene_spec
        assert loaded is not None   # loaded above or by an earlier reset
        info = {"scene_id": loaded.scene_id, "inventory": self.inventory,
                "radius_m": float(loaded.public.radius_m), "counters": self._live_episode().counters()}
        return self._observation(), info

    def step(self, action: dict) -> tuple[dict, float, bool, bool, dict[str, Any]]:
        if self.episode is None:
            raise RuntimeError("call reset() before step()")
        ep = self.episode
        if ep.done:
            res = ToolResult("none", False, error=f"the episode has ended ({ep.end_reason}); call reset()")
        else:
            tool, args = self.decode_action(action)
            res = ep.call(tool, args)
        reward = 0.0
        if res.ok and res.tool == "submit_positions":
            self._metrics = None  # the accepted map changed
            new_score = self._current_score()
            if self.reward_mode == "dense":
                reward = new_score - self._score
            self._score = new_score
        terminated = bool(ep.done)
        tool_result = res.to_dict()
        if tool_result["frame_id"] is None:  # one type per info key, so vector envs can stack infos
            tool_result["frame_id"] = -1
        info: dict[str, Any] = {"tool_result": tool_result, "counters": ep.counters()}
        if terminated:
            if self.reward_mode == "sparse" and res.tool != "none":
                reward = self._score
            info["metrics"] = self.metrics()
        return self._observation(), float(reward), terminated, False, info

    def render(self) -> np.ndarray | None:  # type: ignore[override]  # gymnasium types it with an unbound TypeVar
        if self.render_mode != "rgb_array" or self.episode is None:
            return None
        return np.asarray(self.renderer.capture_rgb(self.episode.pose))

    def close(self) -> None:
        self.session.close()

    def privileged_frame(self) -> PrivilegedFrame:
        """Evaluator-only: the :class:`~spatialscout_gym.core.renderer_api.PrivilegedFrame` (depth,
        segmentation, world positions) of the latest capture, rendered once per frame. Its buffers
        are read lazily and always show the frame's own scene: a shared renderer is switched back
        to it first; an env's own renderer that has loaded another scene since refuses with
        ``StaleFrameError``. Never shown to an evaluated agent; the NBV wrapper's oracle mappers
        read it."""
        ep = self.episode
        if ep is None:
            raise RuntimeError("call reset() first")
        fid = max(ep.frames)
        if self._privileged_cache is None or self._privileged_cache[0] != fid:
            self._privileged_cache = (fid, self.renderer.capture_privileged(ep.frames[fid].pose))
        return self._privileged_cache[1]

    # ---- scoring ------------------------------------------------------------------------------
    def _current_score(self) -> float:
        return float(self.metrics()["all"]["mean_iou"])

    def metrics(self) -> dict:
        """The scorer's metrics dict of the current accepted map (evaluator-only data; computed
        once per accepted-map change)."""
        if self._metrics is None:
            self._metrics = self.session.metrics()
        return self._metrics

    # ---- action / observation conversion -------------------------------------------------------
    def _action_part(self, action: Any, key: str) -> np.ndarray:
        """``action[key]`` as an array of the action space's shape, or one clear ``ValueError``."""
        space = self.action_space[key]
        if key not in action:
            raise self._bad_action(f"the key {key!r} is missing")
        if isinstance(action[key], np.ma.MaskedArray) and np.ma.getmaskarray(action[key]).any():
            raise self._bad_action(f"{key!r} is a masked array (a masked value is no number)")
        try:
            value = np.asarray(action[key])
        except Exception as e:   # ragged lists, objects numpy refuses or whose conversions raise
            raise self._bad_action(f"{key!r} is not an array of numbers ({type(e).__name__})") from None
        shape = space.shape if space.shape else ()
        # booleans, integers and floats only: a complex number, a timedelta (numpy counts it an
        # integer), a datetime or an object is no coordinate, index or flag
        real = value.dtype.kind in "biuf"
        if value.shape != shape or not real:
            raise self._bad_action(f"{key!r} must be numbers of shape {shape}, got {value.dtype} of shape "
                                   f"{value.shape}")
        return value

    def _bad_action(self, detail: str) -> ValueError:
        return ValueError(
            f"action outside the action space: {detail}. Expected a dict with 'tool' (an integer 0-"
            f"{len(TOOL_NAMES) - 1}: {', '.join(f'{i}={t}' for i, t in enumerate(TOOL_NAMES))}) and, for "
            f"that tool, 'translation' (3,), 'rotation' (2,), 'position' (3,) with 'set_orientation' "
            f"(0/1) and 'yaw_pitch' (2,), 'marks' ({MAX_MARKS}, 3) with 'num_marks' (0-{MAX_MARKS}), or "
            f"'positions' ({MAX_TARGETS}, 3) with 'submit_mask' ({MAX_TARGETS},); optionally 'given' "
            f"({len(GIVEN_ARGS)},) flags for {', '.join(GIVEN_ARGS)}, or 'arguments' (a dict passed on "
            f"as the call's arguments); env.action_space.sample() "
            f"shows one")

    def _action_int(self, action: Any, key: str, high: int) -> int:
        value = self._action_part(action, key)
        x = value.item()
        if isinstance(x, (bool, np.bool_)) or not np.isfinite(x) or float(x) != int(x) or not 0 <= int(x) <= high:
            raise self._bad_action(f"{key!r} must be an integer from 0 to {high}, got {x!r}")
        return int(x)

    def decode_action(self, action: dict) -> tuple[str, dict]:
        """Turn a Dict-space action into ``(tool_name, args)`` for :meth:`Episode.call`.

        An ``"arguments"`` dict, when present, is passed on as the call's arguments (a call the
        fixed fields cannot hold, e.g. from :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`);
        the ``given`` flags (:data:`GIVEN_ARGS`) name which optional arguments the fixed fields carry.

        Raises
        ------
        ValueError
            The action is not in the action space's structure (not a dict, a missing key, a wrong
            shape, a tool index that is not an integer from 0 to 9, a value that is not booleans,
            integers or floats (complex, timedelta, datetime, objects), ``given`` or
            ``submit_mask`` flags other than 0 and 1, a key that is not a ``str``, ``arguments``
            that is not a dict); the message lists what is expected. Values outside a Box's bounds
            are passed on and refused by the episode.
        """
        if not isinstance(action, Mapping):
            raise self._bad_action(f"got {type(action).__name__}, not a dict")
        # a key of another type may hash like a field name and compare as anything (or raise)
        odd = next((k for k in action if type(k) is not str), None)
        if odd is not None:
            raise self._bad_action(f"every key must be a str, got a key of type {type(odd).__name__}")
        tool = TOOL_NAMES[self._action_int(action, "tool", len(TOOL_NAMES) - 1)]
        passed = action.get("arguments")
        if passed is not None:
            if not isinstance(passed, Mapping):
                raise self._bad_action(f"'arguments' must be a dict of the tool's arguments, got "
                                       f"{type(passed).__name__}")
            return tool, dict(passed)   # a call the fixed fields cannot hold: as given
        needs = {"move_camera": ("translation",), "rotate_camera": ("rotation",),
                 "set_camera_position": ("position",), "triangulate_observations": ("marks",),
                 "submit_positions": ("positions", "submit_mask")}.get(tool, ())
        for key in needs:
            self._action_part(action, key)
        given_flags = self._action_part(action, "given") if "given" in action else np.zeros(len(GIVEN_ARGS))
        if not np.all(np.isin(given_flags, (0, 1))):   # also inf and NaN, which int() cannot take
            raise self._bad_action(f"'given' flags must each be 0 or 1, got {given_flags.tolist()!r}")
        given = {name for name, flag in zip(GIVEN_ARGS, given_flags.reshape(-1)) if int(flag)}
        if tool == "set_camera_position" and "set_orientation" in action:
            if self._action_int(action, "set_orientation", 1):
                self._action_part(action, "yaw_pitch")
        if tool == "set_camera_position" and given & {"yaw_deg", "pitch_deg"}:
            self._action_part(action, "yaw_pitch")
        if tool == "triangulate_observations":
            self._action_int(action, "num_marks", MAX_MARKS)
        if tool in ("move_camera", "rotate_camera"):
            names, key = (("forward", "right", "up"), "translation") if tool == "move_camera" else \
                (("yaw", "pitch"), "rotation")
            values = [float(x) for x in np.asarray(action[key], dtype=float)]
            keep = [n in given for n in names] if given & set(names) else [True] * len(names)
            return tool, {n: v for n, v, k in zip(names, values, keep) if k}
        if tool == "set_camera_position":
            args: dict[str, Any] = {"position": [float(x) for x in np.asarray(action["position"], dtype=float)]}
            # yaw_pitch is read only when the call uses it (checked above), so it may be absent otherwise
            if given & {"yaw_deg", "pitch_deg"}:
                y, p = (float(x) for x in np.asarray(action["yaw_pitch"], dtype=float))
                args.update({n: v for n, v in (("yaw_deg", y), ("pitch_deg", p)) if n in given})
            elif "set_orientation" in action and self._action_int(action, "set_orientation", 1):
                y, p = (float(x) for x in np.asarray(action["yaw_pitch"], dtype=float))
                args.update(yaw_deg=y, pitch_deg=p)
            return tool, args
        if tool == "triangulate_observations":
            n = int(np.asarray(action["num_marks"]).item())
            marks = np.asarray(action["marks"], dtype=float)[:n]
            obs = []
            for fid, u, v in marks:
                obs.append({"frame_id": int(round(fid)) if np.isfinite(fid) else fid,
                            "u": float(u), "v": float(v)})
            return tool, {"observations": obs}
        if tool == "submit_positions":
            ids = self._live_episode().inventory_ids
            mask = self._action_part(action, "submit_mask")
            if not np.all(np.isin(mask, (0, 1))):   # 2, -1, 0.5 and NaN are no flag (not "submit")
                raise self._bad_action(f"'submit_mask' flags must each be 0 or 1, got "
                                       f"{sorted({float(x) for x in mask.reshape(-1) if x not in (0, 1)}, key=str)!r}")
            mask = mask.astype(bool)
            pos = np.asarray(action["positions"], dtype=float)
            return tool, {"positions": {ids[i]: pos[i].tolist() for i in range(min(len(ids), len(mask)))
                                        if mask[i]}}
        return tool, {}

    def _observation(self) -> dict:
        ep = self._live_episode()
        pose = ep.pose_task()
        parts = self._obs_parts
        if parts is None or parts[0] is not ep:   # per episode: intrinsics and inventory rows
            K = ep.intrinsics
            inv = np.zeros(MAX_TARGETS, np.int8)
            inv[:len(ep.inventory_ids)] = 1
            parts = self._obs_parts = [ep, np.array([K.fx, K.fy, K.cx, K.cy, K.width, K.height], np.float32),
                                       inv, -1, None, None]
        if parts[3] != ep.map_version:            # per accepted-map change
            amap = np.zeros((MAX_TARGETS, 3), np.float32)
            submitted = np.zeros(MAX_TARGETS, np.int8)
            accepted = ep.accepted_map
            for i, tid in enumerate(ep.inventory_ids):
                if tid in accepted:
                    amap[i] = accepted[tid]
                    submitted[i] = 1
            parts[3:] = [ep.map_version, amap, submitted]
        calls_left = UNLIMITED if ep.calls_left is None else min(ep.calls_left, UNLIMITED)
        obs = {   # copies: observations never share memory
            "image": ep.latest_image.copy(),
            "camera_position": np.asarray(pose["position"], np.float32),
            "camera_yaw_pitch": np.array([pose["yaw_deg"], pose["pitch_deg"]], np.float32),
            "intrinsics": parts[1].copy(),
            "accepted_map": parts[4].copy(),
            "submitted": parts[5].copy(),
            "inventory_mask": parts[2].copy(),
            "budgets": np.array([ep.images_left, calls_left], np.float32),
        }
        if self.privileged_obs:
            priv = self.privileged_frame()
            obs["depth"] = np.array(priv.depth_m, np.float32)  # copies: obs never share memory
            obs["segmentation"] = np.array(priv.segmentation, np.int32)
        return obs
