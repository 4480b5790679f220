"""Lazy public names of a subpackage: each name is imported from the module that defines it on
first use, so that ``import spatialscout_gym`` stays light (no scene, renderer, SB3 or RLlib until a
name is asked for). One mechanism for every subpackage that hands out names this way."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` (PEP 562), given
    ``where``: public name -> the module that defines it. A name is looked up once (kept in the
    package's globals); ``dir()`` lists the package's globals and its ``__all__``."""

    def __getattr__(name: str) -> Any:
        if name in where:
            value = getattr(importlib.import_module(where[name]), name)
            setattr(sys.modules[package], name, value)   # looked up once
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        module = sys.modules[package]
        return sorted(set(vars(module)) | set(getattr(module, "__all__", ())))

    return __getattr__, __dir__
