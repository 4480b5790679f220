"""One tool call (name + arguments) as an action of the SpatialScout env's fixed-shape ``Dict`` space.

:func:`encode_call` fills the fields the tool reads (``translation`` and the ``given`` flags for
``move_camera``, ``marks``/``num_marks`` for ``triangulate_observations``, ``positions``/``submit_mask``
in inventory rows for ``submit_positions``, ...) and checks that the env's own decoder gives the
call back: the same argument names and the same numbers (an integer ``1`` and ``1.0`` are the same
number; within a vector that holds NaN or inf the types must match too, since the refusal then
quotes the vector). Every call the protocol accepts is held this way. A call the fields cannot hold
(wrong types, unknown ids or argument names, ``null`` values, more marks than the block has rows)
is passed as ``action["arguments"]`` so the episode refuses it with its own reason and counts it
against the tool-call budget, exactly as if it had been called directly.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from spatialscout_gym.episode.tools import TOOL_NAMES

__all__ = ["encode_call", "same_arguments"]

_MOVE = ("forward", "right", "up")
_ROTATE = ("yaw", "pitch")


class _NotEncodable(Exception):
    pass


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _num(x: Any) -> float:
    if not _is_number(x):
        raise _NotEncodable
    return float(x)


def _vec(x: Any, n: int) -> list[float]:
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if not isinstance(x, (list, tuple)) or len(x) != n:
        raise _NotEncodable
    return [_num(v) for v in x]


def same_arguments(a: Any, b: Any) -> bool:
    """True when two argument values are the same call (see the module docstring)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b)
                and all(same_arguments(a[k], b[k]) for k in a))
    if isinstance(a, np.ndarray):
        a = a.tolist()
    if isinstance(b, np.ndarray):
        b = b.tolist()
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)):
            return False
        quoted = any(_is_number(v) and not math.isfinite(float(v)) for v in list(a) + list(b))
        if quoted and any(isinstance(x, (int, np.integer)) != isinstance(y, (int, np.integer))
                          for x, y in zip(a, b) if _is_number(x) and _is_number(y)):
            return False
        return all(same_arguments(x, y) for x, y in zip(a, b))
    if _is_number(a) and _is_number(b):
        fa, fb = float(a), float(b)
        return fa == fb or (math.isnan(fa) and math.isnan(fb))
    return type(a) is type(b) and a == b


def _fill(action: dict, name: str, args: Mapping[str, Any], inventory_ids: Sequence[str]) -> None:
    given = action["given"]
    flag = {n: i for i, n in enumerate(("forward", "right", "up", "yaw", "pitch", "yaw_deg", "pitch_deg"))}
    if name in ("move_camera", "rotate_camera"):
        names, key = (_MOVE, "translation") if name == "move_camera" else (_ROTATE, "rotation")
        if set(args) - set(names) or not args:
            raise _NotEncodable
        for i, n in enumerate(names):
            if n in args:
                action[key][i] = _num(args[n])
                given[flag[n]] = 1
    elif name == "set_camera_position":
        if set(args) - {"position", "yaw_deg", "pitch_deg"} or "position" not in args:
            raise _NotEncodable
        action["position"][:] = _vec(args["position"], 3)
        for i, n in enumerate(("yaw_deg", "pitch_deg")):
            if n in args:
                action["yaw_pitch"][i] = _num(args[n])
                given[flag[n]] = 1
    elif name == "triangulate_observations":
        obs = args.get("observations")
        if set(args) != {"observations"} or not isinstance(obs, (list, tuple)) or len(obs) > len(action["marks"]):
            raise _NotEncodable
        for i, m in enumerate(obs):
            if not isinstance(m, dict) or set(m) != {"frame_id", "u", "v"}:
                raise _NotEncodable
            action["marks"][i] = [_num(m["frame_id"]), _num(m["u"]), _num(m["v"])]
        action["num_marks"] = len(obs)
    elif name == "submit_positions":
        pos = args.get("positions")
        if set(args) != {"positions"} or not isinstance(pos, dict) or len(inventory_ids) > len(action["submit_mask"]):
            raise _NotEncodable
        row = {tid: i for i, tid in enumerate(inventory_ids)}
        for tid, value in pos.items():
            if tid not in row:
                raise _NotEncodable
            action["positions"][row[tid]] = _vec(value, 3)
            action["submit_mask"][row[tid]] = 1
    elif args:  # tools without arguments
        raise _NotEncodable


def encode_call(name: str, args: Mapping[str, Any], action_space: spaces.Dict, inventory_ids: Sequence[str],
                decode: Callable[[dict], tuple[str, dict]]) -> dict:
    """The env action for the tool call ``name(**args)``.

    Parameters
    ----------
    name : str
        One of :data:`~spatialscout_gym.episode.tools.TOOL_NAMES`.
    args : dict
        The call's arguments as the model sent them (parsed JSON).
    action_space : gymnasium.spaces.Dict
        The env's action space (its fields give the shapes).
    inventory_ids : sequence of str
        The inventory in row order (``positions`` row i is entry i).
    decode : callable
        The env's decoder, ``action -> (tool, args)`` (``env.unwrapped.decode_action``).

    Returns
    -------
    dict
        An action in the space, or, for a call the fields cannot hold, one with
        ``action["arguments"] = args`` added (see the module docstring).
    """
    if name not in TOOL_NAMES:
        raise ValueError(f"unknown tool {name!r}; expected one of {', '.join(TOOL_NAMES)}")
    action: dict[str, Any] = {k: np.zeros(s.shape, s.dtype) for k, s in action_space.spaces.items()}
    action["tool"] = TOOL_NAMES.index(name)
    try:
        _fill(action, name, args, inventory_ids)
        tool, decoded = decode(action)
        if tool == name and same_arguments(decoded, dict(args)):
            return action
    except (_NotEncodable, OverflowError, ValueError):
        pass
    action = {k: np.zeros(s.shape, s.dtype) for k, s in action_space.spaces.items()}
    action["tool"] = TOOL_NAMES.index(name)
    action["arguments"] = dict(args)
    return action
