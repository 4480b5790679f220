"""Strict reading of a JSON object as a record type: a dataclass whose field types are JSON types
and nested dataclasses. An unknown or missing field, or a value of the wrong type, is one
:class:`RecordError` naming the file and the field. The run record
(:mod:`spatialscout_gym.core.records`), the trace's events (:mod:`spatialscout_gym.core.trace_events`)
and the evaluation's records load through it."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Literal, Mapping, Union

from spatialscout_gym.core.errors import SpatialScoutError

__all__ = ["RecordError", "build_record", "convert", "is_union"]


class RecordError(SpatialScoutError, ValueError):
    """A run record that cannot be read as its type: the message names the file and the field."""


def is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _type_name(tp: Any) -> str:
    if is_union(tp):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    if typing.get_origin(tp) is Literal:
        return " or ".join(repr(a) for a in typing.get_args(tp))
    if dataclasses.is_dataclass(tp):
        return "an object"
    origin = typing.get_origin(tp)
    return {dict: "an object", list: "a list", bool: "true/false", int: "an integer", float: "a number",
            str: "a string"}.get(origin or tp, str(tp))


def convert(tp: Any, value: Any, where: str, file: str) -> Any:
    def bad() -> RecordError:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        return RecordError(f"{file}: field {where!r} must be {_type_name(tp)}, got {shown}")

    if tp is Any:
        return value
    if is_union(tp):
        given = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is not None and len(given) == 1:   # an optional field given: its own error names the inner field
            return convert(given[0], value, where, file)
        for arg in typing.get_args(tp):
            try:
                return convert(arg, value, where, file)
            except RecordError:
                continue
        raise bad()
    if tp is type(None):
        if value is None:
            return None
        raise bad()
    origin = typing.get_origin(tp)
    if origin is Literal:
        if value in typing.get_args(tp) and isinstance(value, str):
            return value
        raise bad()
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise bad()
        return _build(tp, value, where + ".", file, "")  # type: ignore[arg-type]
    if origin is dict:
        if not isinstance(value, dict):
            raise bad()
        vt = typing.get_args(tp)[1]
        return {str(k): convert(vt, v, f"{where}.{k}", file) for k, v in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise bad()
        et = typing.get_args(tp)[0]
        return [convert(et, v, f"{where}[{i}]", file) for i, v in enumerate(value)]
    check = _SCALARS.get(tp)
    if check is not None and check(value):
        return value
    raise bad()


_SCALARS = {
    bool: lambda v: isinstance(v, bool),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
    str: lambda v: isinstance(v, str),
}
"""The JSON scalar types a record's fields take, each with its check (a bool is no number; a
number is finite)."""


def _build(cls: type, d: Mapping[str, Any], prefix: str, file: str, version: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - set(fields))
    if unknown:
        raise RecordError(f"{file}: field {prefix + unknown[0]!r} is not a field of this record{version}")
    kwargs = {}
    for name, f in fields.items():
        if name not in d:
            if f.default is dataclasses.MISSING:
                raise RecordError(f"{file}: field {prefix + name!r} is missing")
            continue
        kwargs[name] = convert(hints[name], d[name], prefix + name, file)
    return cls(**kwargs)


def build_record(cls: type, d: Any, file: str, version: int) -> Any:
    """``d`` (a parsed JSON object) as the record type ``cls`` (a dataclass whose field types are
    JSON types and nested dataclasses), strictly: an unknown or missing field, or a value of the
    wrong type, is one :class:`RecordError` naming ``file`` and the field. The other records of a
    run and of an evaluation (``harness.json``, ``evaluate.json``) load through it."""
    if not isinstance(d, dict):
        raise RecordError(f"{file}: expected a JSON object, got {type(d).__name__}")
    return _build(cls, d, "", file, f" (schema version {version})")
