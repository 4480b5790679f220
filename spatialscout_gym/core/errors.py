"""The package's own error types: bad input or a missing resource a user can fix.

Every error here carries a one-line message saying what was expected, what arrived and how to fix
it; the CLI prints that line and exits with code 2 (``--debug`` adds the traceback). Anything else
that escapes is a bug and keeps its traceback. Each class also derives from the built-in type
callers caught before (``ValueError``, ``KeyError``, ...), so existing ``except`` clauses still work.
"""

from __future__ import annotations

__all__ = ["SpatialScoutError", "ConfigError", "ResourceMissingError", "MissingExtraError", "message_of",
           "install_command"]


class SpatialScoutError(Exception):
    """Base class: an expected, user-fixable failure with a readable one-line message."""


class ConfigError(SpatialScoutError, ValueError):
    """An option or setting is out of range or inconsistent (a budget, a resolution, a missing key)."""


class ResourceMissingError(SpatialScoutError, FileNotFoundError):
    """A file or directory the user named does not exist (a policy, a scene file, a price table)."""


class MissingExtraError(SpatialScoutError, ImportError):
    """An optional dependency is not installed; the message names the ``pip install`` to run."""


def message_of(exc: BaseException) -> str:
    """The readable message of ``exc`` (``KeyError`` quotes its argument; this does not)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc)


def install_command(extras: str) -> str:
    """The command that installs ``extras`` (e.g. ``"vlm"`` or ``"rl,ray"``) for this copy of the
    package, as it was installed: from its checkout when this copy runs from one (an editable
    install; the checkout named, so the command works from any directory), else into the installed
    package (from a wheel: pip keeps the installed version and adds what the extras need)."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file():
        return f"pip install -e '{root}[{extras}]'"
    return f"pip install 'spatialscout-gym[{extras}]'"
