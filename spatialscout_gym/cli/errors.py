"""The CLI's user-facing error type and the one-line messages for a missing optional extra and a
full disk."""

from __future__ import annotations

import errno

__all__ = ["CliError", "EXTRA_OF_MODULE", "extra_of_module", "missing_extra_message", "disk_full_message",
           "path_message", "os_error_message"]


class CliError(Exception):
    """A user-facing error: printed as ``spatialscout: error: <message>``, exit code 2."""


EXTRA_OF_MODULE: dict[str, str] = {
    "mcp": "vlm", "uvicorn": "vlm",
    # what the vlm extra's clients bring (an environment without the extra lacks these first)
    "anyio": "vlm", "httpx": "vlm", "starlette": "vlm", "sse_starlette": "vlm", "httpx_sse": "vlm",
    "stable_baselines3": "rl", "torch": "rl", "tensorboard": "rl", "tyro": "rl",
    "ray": "ray", "mani_skill": "maniskill", "trimesh": "maniskill",
    "inspect_ai": "inspect",
    "sapien": "render", "matplotlib": "plots",
}
"""Top-level module -> the ``pyproject.toml`` extra that installs it. The model services' SDKs are
not here: each service names its SDK and extra where it registers (``model_api(name, sdk=, extra=)``
in :mod:`spatialscout_gym.conversation.providers`), and :func:`extra_of_module` reads them there."""


def extra_of_module(module: str) -> str | None:
    """The extra that installs top-level ``module``: a model service's SDK (from the provider
    registry), else :data:`EXTRA_OF_MODULE`; None for a module of no extra."""
    from spatialscout_gym.conversation.providers import PROVIDERS
    sdk_extras = {p.sdk: p.extra for p in PROVIDERS.values()}
    return sdk_extras.get(module) or EXTRA_OF_MODULE.get(module)


def missing_extra_message(exc: BaseException) -> str | None:
    """One line naming the extra and the install command when ``exc`` is a
    ``ModuleNotFoundError`` for a module of an optional extra; None for anything else."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    module = exc.name.split(".")[0]
    extra = extra_of_module(module)
    if extra is None:
        return None
    from spatialscout_gym.core.errors import install_command
    return f"this needs the '{extra}' extra ({module} is not installed): {install_command(extra)}"


_DISK_FULL = {errno.ENOSPC: "no space is left on the device", errno.EDQUOT: "the disk quota is used up"}


def disk_full_message(exc: BaseException) -> str | None:
    """One line for an ``OSError`` of a full disk or quota (the user frees space and reruns; what a
    command writes is atomic, so nothing finished is lost); None for anything else."""
    if not isinstance(exc, OSError) or exc.errno not in _DISK_FULL:
        return None
    where = f" writing {exc.filename}" if exc.filename else ""
    return (f"{_DISK_FULL[exc.errno]}{where}; free space and rerun the same command (finished episodes "
            "and files are kept; an evaluation resumes)")


def _shown_path(path: object) -> str:
    text = str(path)
    return repr(text) if len(text) <= 80 else f"'{text[:40]}...{text[-30:]}' ({len(text)} characters)"


_PATH_ERRORS = {errno.ENAMETOOLONG: "is too long for this file system (a name over 255 bytes or a path over 4,096: "
                                    "ENAMETOOLONG); give a shorter path",
                errno.ELOOP: "has too many levels of symbolic links (ELOOP); check the links it goes through"}


def path_message(exc: BaseException) -> str | None:
    """One line naming the path of an ``OSError`` no command could use whatever it held (too long
    a name, a loop of links), so any command that is given one says so instead of a traceback;
    None for anything else."""
    if not isinstance(exc, OSError) or exc.errno not in _PATH_ERRORS or exc.filename is None:
        return None
    return f"the path {_shown_path(exc.filename)} {_PATH_ERRORS[exc.errno]}"


def os_error_message(exc: BaseException) -> str | None:
    """The one line the CLI prints for an ``OSError`` that is the user's to fix (a full disk, a
    path no file system takes); None for any other (a bug: its traceback is kept)."""
    return disk_full_message(exc) or path_message(exc)
