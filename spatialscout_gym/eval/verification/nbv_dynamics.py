"""An NBV run's dynamics, checked against its trace (docs/protocol.md section 7, "Verification").

An NBV agent's trace records the dynamics it ran under (step 0's ``nbv_step`` event carries
``dynamics``: the env id, walls on or off, the wall margin, the motion kind and the observation
keys) and each step's ``blocked`` flag. ``result.json``'s ``nbv`` block must name the dynamics the
trace records, and the steps are replayed under them against the scene's walls
(:class:`~spatialscout_gym.nbv.walls.WallMap`): without walls no move is blocked; with walls a
step that moved must have moved along a free segment ending over the floor, and a blocked step
names what blocked it. A trace written before it recorded its dynamics is replayed under the
dynamics ``result.json`` names (claimed), so a run relabelled to other dynamics is still refused
when a step contradicts them.

What this cannot tell: a run under walls whose moves never met a wall moves exactly as it would
without them, so such a run and its relabelling are both consistent (the trace's record of the
dynamics is what binds it).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from spatialscout_gym.core.run_files import RESULT_FILE
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.core.trace_events import NBVStepEvent, Trace, parse_trace

__all__ = ["DYNAMICS_FIELD", "DYNAMICS_KEYS", "nbv_dynamics_error"]

DYNAMICS_FIELD = "dynamics"
"""The field of step 0's ``nbv_step`` event holding the dynamics the run ran under."""
DYNAMICS_KEYS = ("env_id", "walls", "wall_margin_m", "motion", "observation_keys")
"""The keys of ``result.json``'s ``nbv`` block that state the dynamics (the rest is the tally)."""


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _env_id_error(dyn: Mapping[str, Any], where: str) -> str | None:
    """The env id must be the one its walls and observation keys give (NBV-v1 without walls,
    NBV-v2 with them, NBV-v3 with them and the ``blocked`` observation)."""
    from spatialscout_gym.envs.registration import NBV_V1_ID, NBV_V2_ID, NBV_V3_ID
    walls, keys = dyn.get("walls"), dyn.get("observation_keys")
    if not isinstance(walls, bool):
        return f"{where}.walls, recorded {_short(walls)} (not true or false)"
    want = (NBV_V3_ID if isinstance(keys, list) and "blocked" in keys else NBV_V2_ID) if walls else NBV_V1_ID
    if dyn.get("env_id") != want:
        return (f"{where}.env_id, recorded {_short(dyn.get('env_id'))} vs {want!r} (the dynamics of walls "
                f"{'on' if walls else 'off'} and observation keys {_short(keys)})")
    return None


def _recorded_dynamics(steps: Sequence[NBVStepEvent], block: Mapping[str, Any],
                       result_file: str) -> tuple[Mapping[str, Any], str, str | None]:
    """The dynamics to replay under, where they come from, and the first disagreement between
    ``result.json``'s block and the trace's record (None when they agree or the trace has none)."""
    traced = steps[0].dynamics if steps else None
    if traced is None:
        return block, f"{result_file}'s nbv block", None
    for key in DYNAMICS_KEYS:
        if block.get(key) != traced.get(key):
            return traced, "the trace", (f"in {result_file}: nbv.{key}, recorded {_short(block.get(key))} vs the "
                                         f"dynamics the trace recorded {_short(traced.get(key))}")
    return traced, "the trace", None


def nbv_dynamics_error(events: Sequence[Mapping[str, Any]] | Trace, block: Mapping[str, Any], spec: SceneSpec,
                       result_file: str = RESULT_FILE) -> str | None:
    """The first way an NBV run's steps and ``result.json``'s ``nbv`` block (``block``) contradict
    the dynamics recorded (see the module docstring), as a verdict's detail; None when they agree.
    ``events``: the whole trace (read as :class:`~spatialscout_gym.core.trace_events.Trace`);
    ``spec``: the scene rebuilt from its source."""
    from spatialscout_gym.nbv.config import BLOCK_CAUSES
    from spatialscout_gym.nbv.walls import WallMap
    trace = parse_trace(events)
    indexed = [(i, e) for i, e in enumerate(trace.events) if isinstance(e, NBVStepEvent)]
    if not indexed:
        return None
    dyn, source, disagreement = _recorded_dynamics([e for _, e in indexed], block, result_file)
    if disagreement is not None:
        return disagreement
    if "walls" not in dyn and source != "the trace":   # neither the trace nor the record states dynamics
        return None
    traced = source == "the trace"
    bad = _env_id_error(dyn, "nbv_step dynamics" if traced else "nbv")
    if bad is not None:
        return f"at event {indexed[0][0]}: {bad}" if traced else f"in {result_file}: {bad}"
    walls = WallMap.from_spec(spec, float(dyn.get("wall_margin_m", 0.1))) if dyn["walls"] else None
    start = trace.start
    if start is None:
        return "the trace has no start event"
    before = np.asarray(start.initial_pose_world["position_world"], float)
    for i, e in indexed:
        here = np.asarray(e.position_world, float)
        blocked, cause = e.blocked, e.block_cause
        if walls is None and blocked:
            return (f"at event {i}: nbv_step, blocked, recorded true, but under the dynamics {source} records "
                    f"({dyn.get('env_id')}, walls off) no move is blocked")
        if walls is not None and blocked and cause not in BLOCK_CAUSES:
            return f"at event {i}: nbv_step, block_cause, recorded {_short(cause)} for a blocked step"
        moved = not np.array_equal(here, before)
        if walls is not None and not blocked and moved and (walls.hits_wall(before, here) or not walls.on_floor(here)):
            return (f"at event {i}: nbv_step, blocked, recorded false, but under the dynamics {source} records "
                    f"({dyn.get('env_id')}, walls on) the walls block the move from {_short(before.tolist())} to "
                    f"{_short(here.tolist())}")
        before = here
    return None
