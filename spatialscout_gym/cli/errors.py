"""The CLI's user-facing error type and the one-line message for a missing optional extra."""

from __future__ import annotations

__all__ = ["CliError", "EXTRA_OF_MODULE", "missing_extra_message"]


class CliError(Exception):
    """A user-facing error: printed as ``spatialscout: error: <message>``, exit code 2."""


EXTRA_OF_MODULE: dict[str, str] = {
    "openai": "vlm", "anthropic": "vlm",   # the model services' SDKs (conversation/providers.PROVIDERS: sdk, extra)
    "mcp": "vlm", "uvicorn": "vlm",
    # what the vlm extra's clients bring (an environment without the extra lacks these first)
    "anyio": "vlm", "httpx": "vlm", "starlette": "vlm", "sse_starlette": "vlm", "httpx_sse": "vlm",
    "stable_baselines3": "rl", "torch": "rl", "tensorboard": "rl", "tyro": "rl",
    "ray": "ray", "mani_skill": "maniskill", "trimesh": "maniskill",
    "sapien": "render", "matplotlib": "plots",
}
"""Top-level module -> the ``pyproject.toml`` extra that installs it."""


def missing_extra_message(exc: BaseException) -> str | None:
    """One line naming the extra and the install command when ``exc`` is a
    ``ModuleNotFoundError`` for a module of an optional extra; None for anything else."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    module = exc.name.split(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    from spatialscout_gym.core.errors import install_command
    return f"this needs the '{extra}' extra ({module} is not installed): {install_command(extra)}"
