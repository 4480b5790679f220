"""The harness record (``harness.json``) as a type, read strictly (docs/protocol.md section 7).

A model run's ``harness.json`` says what the agent sent and how: the prompt and first message, the
tool schema as sent, the budgets, the image settings, the model and its reasoning effort. ``verify``
replays the conversation under it and compares the whole file with what the harness builds again,
so the record holds no figure of its own; this module gives it a type and is the one place that
parses it. Loading is strict: an unknown field, a value of the wrong type, or a link where the run's
own file belongs is one :class:`~spatialscout_gym.core.records.RecordError` line naming the file
and the field. Records of every version so far load as they are (a field a later version added is
optional, and its absence is what :func:`~spatialscout_gym.eval.verification.verify_conversation.not_checkable`
reports).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spatialscout_gym.core.records import RecordError, build_record, read_run_file
from spatialscout_gym.core.run_files import HARNESS_FILE

__all__ = ["HarnessRecord", "HARNESS_SCHEMA_VERSION", "parse_harness", "load_harness"]

HARNESS_SCHEMA_VERSION = 1
"""``harness.json``'s form: one version so far (the file carries no version field; a later form
adds one and a migration here)."""


@dataclass(frozen=True)
class HarnessRecord:
    """``harness.json``: each field as the agent wrote it (nested blocks are JSON objects that the
    replay rebuilds and compares whole). ``written`` names the fields the file holds, so that
    :meth:`as_dict` gives back exactly the file's object."""

    agent: str
    prompt_style: str | None = None
    mode: str | None = None
    prompt_role: str | None = None
    reasoning_effort: str | None = None
    reasoning: dict[str, Any] | None = None
    model: dict[str, Any] | None = None
    budgets: dict[str, Any] | None = None
    images: dict[str, Any] | None = None
    passive: dict[str, Any] | None = None
    warnings: list[Any] | None = None
    task_prompt: str | None = None
    system_prompt: str | None = None
    first_message: list[Any] | str | None = None   # the parts of the first user message (an MCP run: a sentence)
    tool_names: list[str] | None = None
    tool_schema: list[Any] | None = None
    request_cache: bool | None = None
    harness: dict[str, Any] | None = None          # the harness that ran the agent (Inspect, the MCP server)
    written: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def budget(self, key: str) -> Any:
        """``budgets[key]`` (None when not recorded)."""
        return (self.budgets or {}).get(key)

    def image_setting(self, key: str) -> Any:
        """``images[key]`` (None when not recorded)."""
        return (self.images or {}).get(key)

    def as_dict(self) -> dict[str, Any]:
        """The file's object: the fields it holds, as read."""
        return {name: getattr(self, name) for name in self.written}


def parse_harness(d: Any, file: str = HARNESS_FILE) -> HarnessRecord:
    """``d`` (a parsed ``harness.json``) as a :class:`HarnessRecord`, strictly."""
    if isinstance(d, dict) and "written" in d:
        raise RecordError(f"{file}: field 'written' is not a field of this record "
                          f"(schema version {HARNESS_SCHEMA_VERSION})")
    record = build_record(HarnessRecord, d, file, HARNESS_SCHEMA_VERSION)
    return dataclasses.replace(record, written=tuple(d))


def load_harness(run_dir: str | os.PathLike) -> HarnessRecord | None:
    """``run_dir/harness.json`` as a :class:`HarnessRecord` (None when absent: reference, NBV and
    older model runs have none)."""
    path = Path(run_dir) / HARNESS_FILE
    if not path.exists() and not path.is_symlink():
        return None
    return parse_harness(read_run_file(path), str(path))
