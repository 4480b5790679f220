"""spatialscout-gym: the SpatialScout benchmark as Gymnasium environments.

Importing this package is light (no SAPIEN, torch, model SDKs, nor gymnasium itself). The
``SpatialScout/...`` environment ids are registered with Gymnasium as soon as both this package
and ``gymnasium`` are imported, in either order: at once if gymnasium is already loaded, else right
after ``import gymnasium`` finishes (a one-shot import hook). So ``spatialscout score`` and other
commands that need no environment do not pay for importing gymnasium.
"""

__version__ = "0.1.0"

import sys as _sys


def _register() -> None:
    from spatialscout_gym.envs.registration import register_envs
    register_envs()


class _RegisterAfterGymnasium:
    """A ``sys.meta_path`` finder that wraps gymnasium's loader once: after the module has run,
    the envs are registered. It removes itself at the first lookup of ``gymnasium``."""

    def find_spec(self, name, path=None, target=None):
        if name != "gymnasium":
            return None
        if self in _sys.meta_path:
            _sys.meta_path.remove(self)
        import importlib.util
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            try:
                _register()
            except Exception as exc:  # never break the user's `import gymnasium`
                import warnings
                warnings.warn(f"spatialscout_gym could not register its environments: {exc}", stacklevel=2)
        spec.loader.exec_module = exec_module
        return spec


if "gymnasium" in _sys.modules:
    _register()
elif not any(isinstance(f, _RegisterAfterGymnasium) for f in _sys.meta_path):
    _sys.meta_path.insert(0, _RegisterAfterGymnasium())
