"""Moved to :mod:`spatialscout_gym.servers.viewer`. This import path, and those of its modules, work for one
release and warn (``DeprecationWarning``); import from the new path."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

_MOVED_TO = "spatialscout_gym.servers.viewer"
warnings.warn(f"{__name__} moved to {_MOVED_TO}; import it from there (the old path goes in the next "
              "release)", DeprecationWarning, stacklevel=2)


class _OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``<old>.<module>`` is the module ``<new>.<module>`` itself (never a second copy of it)."""

    def __init__(self, old: str) -> None:
        self.old = old

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name.startswith(self.old + ".") else None

    def create_module(self, spec):
        return importlib.import_module(_MOVED_TO + spec.name[len(self.old):])

    def exec_module(self, module):
        pass


if not any(getattr(f, "old", None) == __name__ for f in sys.meta_path):  # once per process
    sys.meta_path.insert(0, _OldNames(__name__))
sys.modules[__name__] = importlib.import_module(_MOVED_TO)
