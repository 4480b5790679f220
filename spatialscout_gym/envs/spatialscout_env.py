"""``SpatialScoutEnv``: one SpatialScout episode as a Gymnasium environment."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.episode.tools import (MAX_ROTATION_DEG, PITCH_LIMIT_DEG, TOOL_NAMES,
                                            WORLD_BOX_M, ToolResult)

__all__ = ["SpatialScoutEnv", "MAX_TARGETS", "MAX_MARKS", "GIVEN_ARGS", "PROCEDURAL", "UNLIMITED"]

MAX_TARGETS = 40
"""N_max: rows of the ``positions``/``accepted_map`` blocks (docs/protocol.md section 8: 35 or 40 targets)."""
MAX_MARKS = 64
"""K: rows of the ``marks`` block of one ``triangulate_observations`` action: the most
observations one call may carry (docs/protocol.md section 4), so every valid call fits."""
GIVEN_ARGS: tuple[str, ...] = ("forward", "right", "up", "yaw", "pitch", "yaw_deg", "pitch_deg")
"""The optional arguments the ``given`` flags name (move_camera, rotate_camera, set_camera_position)."""
PROCEDURAL = "procedural"
"""The ``scene`` value that makes a new training scene on every ``reset``."""
_TRANSLATION_AXIS_M = 1.0 / np.sqrt(3.0)
_POSITION_BOUND_M = 10.0
_OBS_POSITION_BOUND_M = 2 * np.sqrt(3.0) * WORLD_BOX_M + 1.0
_REWARD_MODES = ("sparse", "dense")
_SHARED_RENDERERS: dict[int, Any] = {}
"""Process-wide renderers by resolution for ``shared_renderer=True`` (one SAPIEN scene reused by
every such env of this process; each env re-loads its scene before it captures)."""
_MAX_PIXELS = 1e6
UNLIMITED = 1e6
"""``budgets`` value for calls left when ``tool_call_budget=None``."""


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
    it with its reason and counts it, as :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper` does. ``positions`` is bounded by ``r + 0.5`` m for a fixed scene (10 m for
    ``Procedural-v0``), so a sampled entry lies outside the submission ball about half of the time
    and is refused per entry. Out-of-bound requests are refused by the episode, never raised.

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
    empty accepted map. ``SpatialScout/Procedural-v0`` draws a new training scene per reset from
    ``self.np_random`` (seeds disjoint from the catalog). ``reset(options={"scene": NAME})`` loads
    another scene (catalog id, ``procedural:<seed>`` or spec path); a fixed-scene env keeps it.

    ## Episode End
    - Termination: ``finish_mapping`` is called.
    - Termination: the tool-call budget is used up (the budgets are observed state).
    - Truncation: none in the env itself (add ``gymnasium.wrappers.TimeLimit`` if needed).
    Using up the image budget does not end the episode (docs/protocol.md section 5). At the end
    ``info["metrics"]`` holds the scorer's metrics dict.

    ## Arguments
    ``gym.make("SpatialScout/<scene_id>-v0", resolution=512, image_budget=100, tool_call_budget=100,
    reward_mode="sparse", privileged_obs=False, render_mode=None)``; ``scene`` is a catalog id,
    ``"procedural"`` or a scene spec JSON path (or, not JSON-serialisable, a ``SceneSpec``).
    ``shared_renderer=True`` reuses one renderer per resolution across the envs of a process (many
    scenes, one SAPIEN context; each env switches the scene before it renders; not thread-safe).
    ``renderer`` (not JSON; optional) reuses a given renderer that has ``set_scene(spec)``. The env
    closes only a renderer it made for itself.

    ## Version History
    * v0: initial version.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, scene: str | SceneSpec = PROCEDURAL, *, resolution: int = 512, image_budget: int = 100,
                 tool_call_budget: int | None = 100, reward_mode: str = "sparse",
                 privileged_obs: bool = False, render_mode: str | None = None,
                 shared_renderer: bool = False, renderer: Any = None) -> None:
        if reward_mode not in _REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {_REWARD_MODES}, got {reward_mode!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if int(resolution) < 8:
            raise ValueError(f"resolution must be >= 8 pixels, got {resolution}")
        self.scene_name = scene.scene_id if isinstance(scene, SceneSpec) else str(scene)
        self.resolution = int(resolution)
        self.image_budget = int(image_budget)
        self.tool_call_budget = None if tool_call_budget is None else int(tool_call_budget)
        self.reward_mode = reward_mode
        self.privileged_obs = bool(privileged_obs)
        self.render_mode = render_mode
        if renderer is None and shared_renderer:
            renderer = _SHARED_RENDERERS.get(int(resolution))
        self._shared = bool(shared_renderer)
        self._owns_renderer = renderer is None and not self._shared
        self._renderer = renderer
        self.procedural = not isinstance(scene, SceneSpec) and self.scene_name == PROCEDURAL
        self.scene_spec: SceneSpec | None = None  # (gym.Env.spec is the registry's EnvSpec)
        self.episode: Episode | None = None
        self._gt = None
        if isinstance(scene, SceneSpec):
            self._load_scene(scene)
        elif not self.procedural:
            from spatialscout_gym.scenes.catalog import scene_by_name
            self._load_scene(scene_by_name(self.scene_name))  # heavy work once, here
        H = W = self.resolution
        pos_bound = (float(self.scene_spec.public.radius_m) + 0.5) if self.scene_spec is not None else _POSITION_BOUND_M
        pos_bound = float(np.float32(pos_bound))
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
        self._score = 0.0
        self._privileged_cache: tuple[int, Any] | None = None

    # ---- heavy work: scene and renderer ---------------------------------------------------
    def _load_scene(self, spec: SceneSpec) -> None:
        n = len(spec.public.inventory)
        if n > MAX_TARGETS:
            raise ValueError(f"scene {spec.scene_id!r} has {n} targets; this env holds at most "
                             f"{MAX_TARGETS} (MAX_TARGETS)")
        from spatialscout_gym.core.scoring import GroundTruth
        if self._renderer is None:
            from spatialscout_gym.render.sapien_renderer import SapienRenderer
            self._renderer = SapienRenderer(spec, self.resolution, self.resolution)
            if self._shared:
                _SHARED_RENDERERS[self.resolution] = self._renderer
        else:
            self._renderer.set_scene(spec)
        K = self._renderer.intrinsics
        if (K.width, K.height) != (self.resolution, self.resolution):
            raise ValueError(f"the renderer's grid is {K.width} x {K.height}; this env was made with "
                             f"resolution={self.resolution}; pass a renderer of that size")
        self.scene_spec = spec
        self._gt = GroundTruth.from_spec(spec)

    @property
    def renderer(self):
        return self._renderer

    @property
    def inventory(self) -> list[dict]:
        """The public inventory of the current scene (id, category, group), in row order."""
        return [e.to_dict() for e in self.scene_spec.public.inventory] if self.scene_spec else []

    # ---- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if self.procedural or self.scene_spec is None or (options and "scene" in options):
            from spatialscout_gym.scenes.catalog import procedural_scene, scene_by_name
            if options and "scene" in options:
                spec = scene_by_name(str(options["scene"]))
            else:
                spec = procedural_scene(self._draw_training_seed())
            self._load_scene(spec)
        self._renderer_check_same_scene()
        self.episode = Episode(self.scene_spec.public, self._renderer, image_budget=self.image_budget,
                               tool_call_budget=self.tool_call_budget)
        self._score = 0.0
        self._privileged_cache = None
        info = {"scene_id": self.scene_spec.scene_id, "inventory": self.inventory,
                "radius_m": float(self.scene_spec.public.radius_m), "counters": self.episode.counters()}
        return self._observation(), info

    def _renderer_check_same_scene(self) -> None:
        """A shared renderer may have been switched to another scene by another env."""
        current = getattr(self._renderer, "spec", None)
        if current is not None and current is not self.scene_spec and hasattr(self._renderer, "set_scene"):
            self._renderer.set_scene(self.scene_spec)

    def _draw_training_seed(self) -> int:
        from spatialscout_gym.scenes import catalog
        lo = int(getattr(catalog, "TRAINING_SEED_MIN", 1_000_000))
        return int(self.np_random.integers(lo, lo + 2**31 - 1))

    def step(self, action: dict):
        if self.episode is None:
            raise RuntimeError("call reset() before step()")
        ep = self.episode
        if ep.done:
            res = ToolResult("none", False, error=f"the episode has ended ({ep.end_reason}); call reset()")
        else:
            tool, args = self.decode_action(action)
            self._renderer_check_same_scene()
            res = ep.call(tool, args)
        reward = 0.0
        if res.ok and res.tool == "submit_positions":
            new_score = self._current_score()
            if self.reward_mode == "dense":
                reward = new_score - self._score
            self._score = new_score
        terminated = bool(ep.done)
        info: dict[str, Any] = {"tool_result": res.to_dict(), "counters": ep.counters()}
        if terminated:
            if self.reward_mode == "sparse" and res.tool != "none":
                reward = self._score
            info["metrics"] = self.metrics()
        return self._observation(), float(reward), terminated, False, info

    def render(self):
        if self.render_mode != "rgb_array" or self.episode is None:
            return None
        self._renderer_check_same_scene()
        return np.asarray(self._renderer.capture_rgb(self.episode.pose))

    def close(self) -> None:
        if self._owns_renderer and self._renderer is not None:
            self._renderer.close()
        self._renderer = None

    # ---- scoring ------------------------------------------------------------------------------
    def _positions(self) -> dict[str, np.ndarray]:
        return self.episode.accepted_map

    def _current_score(self) -> float:
        from spatialscout_gym.core.scoring import score_scene
        return float(score_scene(self._gt, self._positions()).metrics()["all"]["mean_iou"])

    def metrics(self) -> dict:
        """The scorer's metrics dict of the current accepted map (evaluator-only data)."""
        from spatialscout_gym.core.scoring import score_scene
        return score_scene(self._gt, self._positions()).metrics()

    # ---- action / observation conversion -------------------------------------------------------
    def decode_action(self, action: dict) -> tuple[str, dict]:
        """Turn a Dict-space action into ``(tool_name, args)`` for :meth:`Episode.call`."""
        index = int(np.asarray(action["tool"]).item())
        if not 0 <= index < len(TOOL_NAMES):
            return f"tool#{index}", {}
        tool = TOOL_NAMES[index]
        if isinstance(action.get("arguments"), dict):  # a call the fixed fields cannot hold: as given
            return tool, action["arguments"]
        given = {name for name, flag in zip(GIVEN_ARGS, np.asarray(action.get("given", np.zeros(len(GIVEN_ARGS))))
                                            .reshape(-1)) if int(flag)}
        if tool in ("move_camera", "rotate_camera"):
            names, key = (("forward", "right", "up"), "translation") if tool == "move_camera" else \
                (("yaw", "pitch"), "rotation")
            values = [float(x) for x in np.asarray(action[key], dtype=float)]
            keep = [n in given for n in names] if given & set(names) else [True] * len(names)
            return tool, {n: v for n, v, k in zip(names, values, keep) if k}
        if tool == "set_camera_position":
            args: dict[str, Any] = {"position": [float(x) for x in np.asarray(action["position"], dtype=float)]}
            y, p = (float(x) for x in np.asarray(action["yaw_pitch"], dtype=float))
            if given & {"yaw_deg", "pitch_deg"}:
                args.update({n: v for n, v in (("yaw_deg", y), ("pitch_deg", p)) if n in given})
            elif int(np.asarray(action.get("set_orientation", 0)).item()):
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
            ids = self.episode.inventory_ids
            mask = np.asarray(action["submit_mask"]).astype(bool)
            pos = np.asarray(action["positions"], dtype=float)
            return tool, {"positions": {ids[i]: pos[i].tolist() for i in range(min(len(ids), len(mask)))
                                        if mask[i]}}
        return tool, {}

    def _observation(self) -> dict:
        ep = self.episode
        pose = ep.task_frame.pose_to_task(ep.pose)
        K = ep.intrinsics
        amap = np.zeros((MAX_TARGETS, 3), np.float32)
        submitted = np.zeros(MAX_TARGETS, np.int8)
        inv = np.zeros(MAX_TARGETS, np.int8)
        accepted = ep.accepted_map
        for i, tid in enumerate(ep.inventory_ids):
            inv[i] = 1
            if tid in accepted:
                amap[i] = accepted[tid]
                submitted[i] = 1
        calls_left = UNLIMITED if ep.calls_left is None else min(ep.calls_left, UNLIMITED)
        obs = {
            "image": ep.latest_image.copy(),
            "camera_position": np.asarray(pose["position"], np.float32),
            "camera_yaw_pitch": np.array([pose["yaw_deg"], pose["pitch_deg"]], np.float32),
            "intrinsics": np.array([K.fx, K.fy, K.cx, K.cy, K.width, K.height], np.float32),
            "accepted_map": amap,
            "submitted": submitted,
            "inventory_mask": inv,
            "budgets": np.array([ep.images_left, calls_left], np.float32),
        }
        if self.privileged_obs:
            fid = max(ep.frames)
            if self._privileged_cache is None or self._privileged_cache[0] != fid:
                self._renderer_check_same_scene()
                self._privileged_cache = (fid, self._renderer.capture_privileged(ep.frames[fid].pose))
            priv = self._privileged_cache[1]
            obs["depth"] = np.array(priv.depth_m, np.float32)  # copies: obs never share memory
            obs["segmentation"] = np.array(priv.segmentation, np.int32)
        return obs
