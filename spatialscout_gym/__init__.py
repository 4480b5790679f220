"""spatialscout-gym: the SpatialScout benchmark as Gymnasium environments.

Importing this package registers the ``SpatialScout/...`` environment ids with Gymnasium (as other
Gymnasium packages do; idempotent), so ``import spatialscout_gym`` makes
``gymnasium.make("SpatialScout/NBV-v1")`` work. Registration stays light: it imports gymnasium and
reads the catalog manifest's scene ids; no scene is built and SAPIEN, torch and the model SDKs are
not imported (:mod:`spatialscout_gym.envs.registration`).
"""

__version__ = "0.6.0"
"""The package's version: pyproject.toml reads it from here, and CHANGELOG.md has its section."""


def _register() -> None:
    from spatialscout_gym.envs.registration import register_envs
    from spatialscout_gym.nbv.registration import register_nbv_envs
    try:
        register_envs()
        register_nbv_envs()
    except Exception as exc:  # a broken catalog setting must not make the package unimportable
        import warnings
        warnings.warn(f"spatialscout_gym could not register its environments: {exc}", stacklevel=2)


_register()
