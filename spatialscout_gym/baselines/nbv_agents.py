"""Next-best-view policies as agents: ``random-nbv``, ``frontier-nbv``, ``ppo:PATH``, ``rllib:PATH``,
``cleanrl:PATH``.

Each agent drives the episode through the NBV core
(:class:`~spatialscout_gym.nbv.core.NBVController`, the core over an ``Episode``): the
same motion/capture/mapping step, observation and end rule as :class:`NextBestViewWrapper`, so a
policy trained on the wrapper runs unchanged here. Steps repeat until the core's end rule holds
(the image budget is used, the inventory is fully mapped, a step captured nothing, or the episode
ended, e.g. at the tool-call budget: each step costs up to seven tool calls, so run these agents
with a large or unlimited ``tool_call_budget``); then ``finish_mapping``.

All three use the oracle-perception mapper (privileged segmentation of each capture), so they are
``privileged`` agents: they measure view selection, not perception.

* ``random-nbv``: a uniformly random action of NBV-v1's ``Discrete(18)`` per step (``rng``): the
  training action space of the learned policies, so it is their chance baseline.
* ``frontier-nbv``: coverage-driven. In the current 1 m floor cell it turns to the nearest yaw
  sector (45 degrees) not yet captured there; when all eight are done it moves up to 1 m towards
  the heading with the most free space (the median depth of the central band of its own earlier
  capture in that sector, privileged like the mapper), preferring the least-visited next cell.
* ``ppo:PATH``: a Stable-Baselines3 PPO policy saved by ``spatialscout train-nbv`` (``PATH`` is the
  ``model.zip``). Its ``nbv_config.json`` beside it fixes the motion kind, observation size and
  mapper, and names the image budget and resolution it was trained with, which ``spatialscout
  run/evaluate`` adopt unless told otherwise (:attr:`PPONBVAgent.episode_settings`). At load the
  policy's observation and action spaces are compared with those of that config's env, and a
  policy they do not fit (e.g. no ``nbv_config.json`` and not trained with NBV-v1's settings, which
  are then assumed) is refused in one line saying what differs and giving the line that writes
  the ``nbv_config.json`` its spaces call for. Actions are
  sampled (torch seeded from ``rng``) unless ``deterministic=True`` or the policy's
  ``nbv_config.json`` says ``"deterministic": true``.
* ``rllib:PATH``: an RLlib PPO policy saved by ``spatialscout train-nbv --backend rllib`` (``PATH``
  is its run directory or a checkpoint), run from its RLModule alone, with the same
  ``nbv_config.json`` rules (:class:`~spatialscout_gym.baselines.rllib_agent.RLlibNBVAgent`).
* ``cleanrl:PATH``: a policy of the CleanRL recipe (``examples/cleanrl_ppo.py``; ``PATH`` is its
  ``agent.pt`` or save directory), its network rebuilt from the ``nbv_config.json`` beside it
  (:class:`~spatialscout_gym.baselines.cleanrl_agent.CleanRLNBVAgent`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.spaces import Dict, Discrete, Space

from spatialscout_gym.baselines.base import PrivilegedAccess
from spatialscout_gym.baselines.registry import register_agent
from spatialscout_gym.nbv.mappers import make_mapper
from spatialscout_gym.core.exploration import NBV_STEP_EVENT
from spatialscout_gym.core.frames import wrap_degrees
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.nbv.config import (N_SECTORS, NBVConfig, dynamics_record, nbv_action_space,
                                                  nbv_observation_space)
from spatialscout_gym.nbv import policy_files
from spatialscout_gym.nbv.core import NBVController, NBVStep
from spatialscout_gym.nbv.policy_files import (CONFIG_FILE, fix_line, guess_config_fields, load_nbv_config,
                                                load_policy_config, policy_path, save_nbv_config)

NBVAction = int | np.ndarray
"""One action of the NBV action space: an index (``Discrete``) or a (5,) float32 array (continuous)."""

__all__ = ["NBVAgent", "TrainedNBVAgent", "NBVAction", "NBV_STEP_EVENT", "nbv_step_event", "RandomNBVAgent", "FrontierNBVAgent", "PPONBVAgent", "load_nbv_config",
           "load_policy_config", "policy_path", "space_mismatch", "save_nbv_config",
           "CONFIG_FILE", "misfit_message"]



class NBVAgent:
    """Base class: runs NBV steps chosen by :meth:`act` until the episode is over.

    Parameters
    ----------
    config : NBVConfig
    mapper : str
        Mapper name (see :mod:`spatialscout_gym.nbv.mappers`).
    """

    name = "nbv"
    privileged = True   # maps with privileged segmentation: kind "nbv" (registry.PRIVILEGED_KINDS)

    def __init__(self, config: NBVConfig | None = None, mapper: str = "oracle") -> None:
        self.config = config or NBVConfig()
        make_mapper(mapper)  # an unknown name fails here, saying which names exist
        self.mapper_name = mapper
        self.last_step: NBVStep | None = None
        """What the latest step did (None before the episode's first step)."""
        self.exploration: dict[str, float | int] | None = None
        """The latest episode's exploration metrics (None before one ran)."""

    def extra_result(self) -> dict[str, Any]:
        """``result.json``'s ``nbv`` block: the dynamics and observation keys the episode ran under
        (:func:`~spatialscout_gym.nbv.config.dynamics_record`), the mapper and, once an episode
        ran, its ``exploration`` metrics (:mod:`spatialscout_gym.nbv.exploration`)."""
        block = {**dynamics_record(self.config), "mapper": self.mapper_name}
        if self.exploration is not None:
            block["exploration"] = dict(self.exploration)
        return {"nbv": block}

    def begin(self, controller: NBVController, rng: np.random.Generator) -> None:
        """Called once per episode before the first :meth:`act`."""

    def act(self, obs: dict[str, np.ndarray], controller: NBVController, rng: np.random.Generator) -> NBVAction:
        """The next action, given the observation of :meth:`NBVController.observation`."""
        raise NotImplementedError

    def run(self, episode: Episode, *, rng: np.random.Generator,
            privileged: PrivilegedAccess | None) -> None:
        if privileged is None:
            raise ValueError(f"agent {self.name!r} maps with privileged segmentation; run it through "
                             f"the runner, which passes PrivilegedAccess because agent.privileged is True")
        ctl = NBVController(episode, privileged.spec, privileged.renderer, make_mapper(self.mapper_name),
                            self.config)
        self.last_step = None
        self.exploration = None
        self.begin(ctl, rng)
        assert ctl.exploration is not None   # NBVController keeps it
        seen = ctl.exploration.scene
        scene: dict | None = {**seen.scene(), "start": seen.take(episode.pose.position_world)}  # frame 0's
        try:
            while not ctl.ended:   # the core's end rule (it calls finish_mapping when a step ends it)
                action = self.act(ctl.observation(), ctl, rng)
                calls_before = episode.tool_calls
                self.last_step = ctl.step(action)
                episode.trace.insert(_before_end(episode.trace), nbv_step_event(
                    len([e for e in episode.trace if e.get("event") == NBV_STEP_EVENT]), action, self.last_step,
                    episode.pose.position_world, calls_before, episode.tool_calls,
                    explored=seen.take(episode.pose.position_world), scene=scene,
                    dynamics=dynamics_record(self.config) if scene is not None else None))
                scene = None   # the first step's event carries the scene, frame 0 and the dynamics
            ctl.finish()           # a starting state that already meets the rule
        finally:
            self.exploration = ctl.exploration.metrics()


def nbv_step_event(step: int, action: Any, result: NBVStep, position_world: Any, first_call: int,
                   end_call: int, explored: dict | None = None, scene: dict | None = None,
                   dynamics: dict | None = None) -> dict:
    """The :data:`NBV_STEP_EVENT` of one step."""
    from spatialscout_gym.episode.trace import event
    act = int(action) if np.ndim(action) == 0 else [float(x) for x in np.asarray(action).ravel()]
    extra = {k: v for k, v in (("explored", explored), ("scene", scene), ("dynamics", dynamics)) if v is not None}
    return event(NBV_STEP_EVENT, step=int(step), action=act, blocked=bool(result.blocked),
                 block_cause=result.block_cause, captured=bool(result.captured),
                 position_world=[float(x) for x in np.asarray(position_world)], tool_calls=[int(first_call), int(end_call)],
                 **extra)


def _before_end(trace: list[dict]) -> int:
    """Where a step's event goes: before the episode's end event when a step ended it."""
    return len(trace) - 1 if trace and trace[-1].get("event") == "end" else len(trace)


@register_agent("random-nbv", kind="nbv")
class RandomNBVAgent(NBVAgent):
    """A uniformly random action of ``SpatialScout/NBV-v1``'s action space per step: one of its
    ``Discrete(18)`` heading motions (6 relative headings x strides of 0, 1, 2 m), the space the
    learned policies are trained in, so it is their chance baseline.

    Parameters
    ----------
    mapper : str
        Mapper name.
    **config
        :class:`NBVConfig` fields (``motion="heading"`` unless given: ``motion="discrete"`` draws
        NBV-v0's ``Discrete(10)`` single motions instead; ``walls=True`` unless given: NBV-v2's
        dynamics, ``walls=False`` NBV-v1's).
    """

    def __init__(self, mapper: str = "oracle", **config: Any) -> None:
        super().__init__(NBVConfig(**{"motion": "heading", "walls": True, **config}), mapper=mapper)
        space = nbv_action_space(self.config)
        if not isinstance(space, Discrete):
            raise ValueError("random-nbv draws discrete actions: motion must be 'heading' or 'discrete'")
        self.n_actions = int(space.n)
        """How many actions it draws from (18 with NBV-v1's settings)."""

    def act(self, obs: dict[str, np.ndarray], controller: NBVController, rng: np.random.Generator) -> NBVAction:
        return int(rng.integers(self.n_actions))


@register_agent("frontier-nbv", kind="nbv")
class FrontierNBVAgent(NBVAgent):
    """Coverage-driven heuristic with continuous motions (see the module docstring).

    Parameters
    ----------
    pitch_deg : float
        Pitch it keeps, degrees.
    mapper : str
        Mapper name (``"oracle"`` or ``"oracle-surface"``).
    **config
        :class:`NBVConfig` fields (``walls=True`` unless given: NBV-v2's dynamics; a blocked move
        marks its heading as having no free space in that cell).
    """

    def __init__(self, pitch_deg: float = -20.0, mapper: str = "oracle", **config: Any) -> None:
        super().__init__(NBVConfig(**{"walls": True, **config, "motion": "continuous"}), mapper=mapper)
        self.pitch_deg = float(pitch_deg)

    def begin(self, controller: NBVController, rng: np.random.Generator) -> None:
        self._free: dict[tuple[tuple[int, int], int], float] = {}
        self._cell_visits: dict[tuple[int, int], int] = {}
        self._last_frame = -1
        self._last_move: tuple[tuple[int, int], int] | None = None   # (cell, sector) of the latest move

    def _note_capture(self, ctl: NBVController) -> None:
        ep = ctl.episode
        fid = max(ep.frames)
        if fid == self._last_frame:
            return
        self._last_frame = fid
        pose = ep.frames[fid].pose
        cell = ctl.cell(pose.position_world)
        self._cell_visits[cell] = self._cell_visits.get(cell, 0) + 1
        priv = ctl.last_privileged
        if priv is not None:
            depth = np.asarray(priv.depth_m, float)
            h, w = depth.shape
            band = depth[int(0.35 * h):int(0.65 * h) + 1, int(0.4 * w):int(0.6 * w) + 1]
            hits = band[band > 0]
            free = float(np.median(hits)) if hits.size else 10.0
            self._free[(cell, ctl.sector(pose.yaw_deg))] = free

    def act(self, obs: dict[str, np.ndarray], ctl: NBVController, rng: np.random.Generator) -> NBVAction:
        if self._last_move is not None and self.last_step is not None and self.last_step.blocked:
            self._free[self._last_move] = 0.0   # walls: that heading is closed from this cell
        self._last_move = None
        self._note_capture(ctl)
        pose = ctl.episode.pose
        c = self.config
        pitch = np.clip((self.pitch_deg - pose.pitch_deg) / c.max_pitch_deg, -1, 1)
        seen = obs["sectors"]
        unseen = [k for k in range(N_SECTORS) if seen[k] == 0]
        if unseen:  # turn to the nearest unseen sector (egocentric k -> relative yaw)
            k = min(unseen, key=lambda k: (abs(wrap_degrees(45.0 * k)), -wrap_degrees(45.0 * k)))
            yaw = wrap_degrees(45.0 * k)
            return np.array([0, 0, 0, yaw / c.max_yaw_deg, pitch], np.float32)
        cell = ctl.cell(pose.position_world)
        best: tuple[int, float] | None = None
        best_key: tuple[int, float, float] | None = None
        for s in range(N_SECTORS):
            free = self._free.get((cell, s), 0.0)
            heading = np.deg2rad(45.0 * s)
            step = float(np.clip(free - 0.6, 0.0, 1.0))
            if step < 0.3:
                continue
            nxt = ctl.cell(pose.position_world + step * np.array([np.cos(heading), np.sin(heading), 0]))
            key = (self._cell_visits.get(nxt, 0), -free, rng.random())
            if best_key is None or key < best_key:
                best, best_key = (s, step), key
        if best is None:  # boxed in: turn around
            return np.array([0, 0, 0, 1.0, pitch], np.float32)
        s, step = best
        self._last_move = (cell, s)
        yaw = wrap_degrees(45.0 * s - pose.yaw_deg)
        return np.array([step, 0, 0, yaw / c.max_yaw_deg, pitch], np.float32)


def _box_shapes_match(policy: Space, env: Space) -> bool:
    """Equal shapes, or an (H, W, C) env image the policy holds channel-first (SB3 stores image
    spaces transposed: its ``VecTransposeImage``)."""
    p, e = tuple(getattr(policy, "shape", ()) or ()), tuple(getattr(env, "shape", ()) or ())
    return p == e or (len(e) == 3 and p == (e[2], e[0], e[1]))


def space_mismatch(policy_obs: Space | None, policy_act: Space | None, env_obs: Space,
                   env_act: Space) -> str | None:
    """What differs between a policy's observation/action spaces and an env's, in a few words
    (None when they agree); image keys may be channel-first in the policy."""
    problems = []
    if policy_act != env_act:
        problems.append(f"actions {policy_act} (policy) vs {env_act} (env)")
    p_spaces = policy_obs.spaces if isinstance(policy_obs, Dict) else {}
    e_spaces = env_obs.spaces if isinstance(env_obs, Dict) else {}
    p_keys, e_keys = set(p_spaces), set(e_spaces)
    if p_keys - e_keys:
        problems.append(f"observation keys only the policy has: {sorted(p_keys - e_keys)}")
    if e_keys - p_keys:
        problems.append(f"observation keys only the env has: {sorted(e_keys - p_keys)}")
    for k in sorted(p_keys & e_keys):
        if not _box_shapes_match(p_spaces[k], e_spaces[k]):
            problems.append(f"observation {k!r} shape {tuple(p_spaces[k].shape or ())} (policy) vs "
                            f"{tuple(e_spaces[k].shape or ())} (env)")
    return "; ".join(problems) or None


def trained_episode_settings(trained: dict) -> dict[str, int]:
    """``image_budget`` and ``resolution`` of a policy's saved settings (those it records)."""
    return {k: int(trained[k]) for k in ("image_budget", "resolution") if trained.get(k) is not None}


def misfit_message(policy: Path, trained: dict, differs: str, observation_space: Space | None,
                   action_space: Space | None) -> str:
    """One line: the policy does not fit the NBV env of its settings, what differs, and the one
    line that writes the ``nbv_config.json`` its spaces call for (:func:`guess_config_fields`)."""
    source = trained.get("source")
    why = (f"its {source} does not describe it" if source is not None else
           f"no {CONFIG_FILE} in or beside it, so SpatialScout/NBV-v1's settings were assumed")
    fields = guess_config_fields(observation_space, action_space)
    return (f"policy {policy} does not fit the NBV env ({why}): {differs}; write the settings it was "
            f"trained with beside it, e.g. (motion and image size read from the policy; add any other "
            f"NBVConfig field it was trained with): "
            f"{fix_line(policy.parent if policy.suffix else policy, fields, image_budget=trained.get('image_budget'), resolution=trained.get('resolution'))}")


class TrainedNBVAgent(NBVAgent):
    """Base of the agents that run a trained policy (``ppo:PATH``, ``cleanrl:PATH``): the settings
    it was trained with (``trained``: :func:`load_policy_config` of its ``nbv_config.json``) fix
    the dynamics (``walls`` overrides theirs), the mapper (``mapper`` overrides), the image budget
    and resolution the CLI adopts, and whether actions are sampled (``deterministic`` overrides)."""

    def __init__(self, trained: dict, weights: Path, walls: bool | None = None, deterministic: bool | None = None,
                 scan_guard_m: float | None = None, mapper: str | None = None,
                 scan_guard_after_blocked: int | None = None) -> None:
        self.policy_sha256 = policy_files.policy_sha256(weights)
        """The SHA-256 of the policy file (``weights``) this agent acts with, recorded in its episodes."""
        config = trained["config"] if walls is None else dataclasses.replace(trained["config"], walls=bool(walls))
        super().__init__(config, mapper=trained["mapper"] if mapper is None else mapper)
        self.episode_settings = trained_episode_settings(trained)
        """The image budget and resolution the policy was trained with (the CLI adopts them)."""
        self.deterministic = bool(trained["deterministic"] if deterministic is None else deterministic)
        guard = trained.get("scan_guard_m") if scan_guard_m is None else scan_guard_m
        if guard is not None and (config.motion != "heading" or int(config.scan_bins) < 1):
            from spatialscout_gym.core.errors import ConfigError
            raise ConfigError("the scan guard needs a heading policy with the scan observation "
                              f"(motion {config.motion!r}, scan_bins {config.scan_bins})")
        self.scan_guard_m: float | None = None if guard is None else float(guard)
        """The margin (m) of the scan guard the policy acts through, None without one
        (:mod:`spatialscout_gym.nbv.scan_guard`)."""
        self.scan_guard_after_blocked: int | None = (
            trained.get("scan_guard_after_blocked") if scan_guard_after_blocked is None else
            policy_files.scan_guard_after_blocked(scan_guard_after_blocked, self.scan_guard_m, "the agent option"))
        """How many blocked moves an episode sees before the guard also judges by the ``scan``; None:
        from the first step (and without a guard)."""

    def extra_result(self) -> dict[str, Any]:
        out = super().extra_result()
        out["nbv"]["policy_sha256"] = self.policy_sha256
        if self.scan_guard_m is not None:     # the agent, not the task: recorded, not compared
            out["nbv"]["scan_guard_m"] = self.scan_guard_m
        if self.scan_guard_after_blocked is not None:
            out["nbv"]["scan_guard_after_blocked"] = self.scan_guard_after_blocked
        return out

    @staticmethod
    def policy_file(path: str) -> Path:
        """The file ``PATH`` names (the agent's own rule: a file, or the directory holding it)."""
        raise NotImplementedError

    @classmethod
    def acting_settings(cls, path: str) -> dict[str, object]:
        """Which weights the policy at ``path`` acts with and how it acts beyond them, as its
        episodes record it in their ``nbv`` block: ``{"policy_sha256": the file's hash,
        "scan_guard_m": margin or None, "scan_guard_after_blocked": count or None}``; {} when no
        policy is there."""
        p = cls.policy_file(path)
        if not p.is_file():
            return {}
        trained = load_policy_config(p)
        return {"policy_sha256": policy_files.policy_sha256(p),
                **{name: trained[name] for name in ("scan_guard_m", "scan_guard_after_blocked")}}

    @classmethod
    def trained_settings(cls, path: str) -> dict[str, int]:
        """The image budget and resolution the policy at ``path`` was trained with, which ``run`` and
        ``evaluate`` adopt; {} when no policy is there (reported when the agent is built)."""
        p = cls.policy_file(path)
        return trained_episode_settings(load_policy_config(p)) if p.is_file() else {}


@register_agent("ppo:PATH", kind="nbv")
class PPONBVAgent(TrainedNBVAgent):
    """A trained SB3 PPO policy (``ppo:PATH``).

    Parameters
    ----------
    path : str
        The saved ``model.zip`` (or the run directory holding it).
    deterministic : bool, optional
        Take the most likely action instead of sampling; None (default): as the policy's
        ``nbv_config.json`` says (``"deterministic"``, False if absent).
    walls : bool, optional
        Run under NBV-v2's dynamics (True) or NBV-v1's (False); None (default): those the policy
        was trained under (its ``nbv_config.json``'s ``walls``, False if absent).
    scan_guard_m : float, optional
        Act through the scan guard with this margin in metres (a heading policy with ``scan``);
        None (default): as its ``nbv_config.json`` says (``"scan_guard_m"``, no guard if absent).
    scan_guard_after_blocked : int, optional
        The guard judges by the ``scan`` only once the episode has seen this many blocked moves
        (before, it forbids only the headings seen blocked from where the camera stands; 0: from
        the first step); None (default): as its ``nbv_config.json`` says
        (``"scan_guard_after_blocked"``, 0 if absent).
    """

    def __init__(self, path: str, deterministic: bool | None = None, walls: bool | None = None,
                 scan_guard_m: float | None = None, mapper: str | None = None,
                 scan_guard_after_blocked: int | None = None) -> None:
        p = policy_path(path)
        if not p.exists():
            from spatialscout_gym.core.errors import ResourceMissingError
            raise ResourceMissingError(f"no trained policy at {p}; train one with `spatialscout train-nbv` "
                                    f"(it writes <out>/<run>/model.zip)")
        trained = load_policy_config(p)
        super().__init__(trained, p, walls=walls, deterministic=deterministic, scan_guard_m=scan_guard_m, mapper=mapper,
                         scan_guard_after_blocked=scan_guard_after_blocked)
        try:
            from stable_baselines3 import PPO
        except ImportError as exc:  # pragma: no cover - depends on the install
            from spatialscout_gym.core.errors import MissingExtraError, install_command
            raise MissingExtraError(f"ppo:PATH needs the RL extra: {install_command('rl')}") from exc
        try:
            self.model = PPO.load(str(p), device="cpu")
        except Exception as exc:   # not an SB3 zip (a CleanRL agent.pt, a truncated file): one line, not a traceback
            from spatialscout_gym.core.errors import ConfigError
            hint = (f"; a CleanRL recipe's {p.name} is evaluated with cleanrl:{path}" if p.suffix == ".pt" else "")
            raise ConfigError(f"ppo:PATH: {p} is not a Stable-Baselines3 model.zip ({type(exc).__name__}: "
                              f"{(str(exc).splitlines() or ['no message'])[0]}){hint}") from None
        differs = space_mismatch(self.model.observation_space, self.model.action_space,
                                 nbv_observation_space(self.config), nbv_action_space(self.config))
        if differs:  # refuse at load, not mid-episode with a shape error
            from spatialscout_gym.core.errors import ConfigError
            raise ConfigError(misfit_message(p, trained, differs, self.model.observation_space,
                                             self.model.action_space))
        self.name = f"ppo:{path}"

    @staticmethod
    def policy_file(path: str) -> Path:
        return policy_path(path)

    def begin(self, controller: NBVController, rng: np.random.Generator) -> None:
        import torch
        torch.manual_seed(int(rng.integers(2**31 - 1)))
        self._blocked_from: list[tuple[np.ndarray, float]] = []
        """(world position, world yaw in degrees) of each move this episode saw blocked."""

    def _closed_headings(self, obs: dict[str, np.ndarray], controller: NBVController) -> set[int]:
        """The headings whose moves were seen blocked from within 0.25 m of here. A blocked move
        still turns the camera (NBV-v2), so after one the camera faces the way it could not go."""
        from spatialscout_gym.nbv.scan_guard import closed_headings
        pose = controller.episode.pose
        here = np.asarray(pose.position_world, float)
        if "blocked" in obs and np.any(obs["blocked"]):
            self._blocked_from.append((here, float(pose.yaw_deg)))
        return closed_headings(self._blocked_from, here, float(pose.yaw_deg), self.config)

    def act(self, obs: dict[str, np.ndarray], controller: NBVController, rng: np.random.Generator) -> NBVAction:
        if self.scan_guard_m is None:
            action, _ = self.model.predict(obs, deterministic=self.deterministic)
            return action
        import torch

        from spatialscout_gym.nbv.scan_guard import scan_guard_mask
        closed = self._closed_headings(obs, controller)
        by_scan = len(self._blocked_from) >= (self.scan_guard_after_blocked or 0)
        allowed = torch.as_tensor(scan_guard_mask(obs["scan"], self.config, self.scan_guard_m, closed, by_scan))
        with torch.no_grad():
            obs_t, _ = self.model.policy.obs_to_tensor(obs)
            dist: Any = self.model.policy.get_distribution(obs_t).distribution   # a Categorical (heading)
            logits = dist.logits[0]
        logits = torch.where(allowed, logits, torch.tensor(-torch.inf))   # stride 0 is always allowed
        if self.deterministic:
            return np.int64(int(torch.argmax(logits)))
        return np.int64(int(torch.distributions.Categorical(logits=logits).sample()))
