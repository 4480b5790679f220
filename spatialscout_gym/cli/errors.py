"""The CLI's user-facing error type and the one-line message for a missing optional extra."""

from __future__ import annotations

__all__ = ["CliError", "EXTRA_OF_MODULE", "extra_of_module", "missing_extra_message"]


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
