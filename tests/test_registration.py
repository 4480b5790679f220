"""``import spatialscout_gym`` registers the envs the usual way (no import hook), registration is
light, and the CLI imports only the command it runs (``--help`` imports none)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import warnings

import pytest

from spatialscout_gym.cli.main import COMMANDS, SUMMARIES, build_parser
from spatialscout_gym.envs import registration
from spatialscout_gym.scenes import catalog, maniskill
from spatialscout_gym.nbv.registration import register_nbv_envs


def _python(code: str, *args: str) -> str:
    """stdout of ``python -W error -c code args`` in a fresh process (any warning fails it)."""
    out = subprocess.run([sys.executable, "-W", "error", "-c", code, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_importing_the_package_alone_registers_every_id():
    code = (
        "import sys, json, spatialscout_gym\n"
        "gym = sys.modules['gymnasium']                       # imported by the package itself\n"
        "ids = sorted(k for k in gym.registry if k.startswith('SpatialScout/'))\n"
        "spec = gym.spec('SpatialScout/NBV-v1')\n"
        "creator = gym.envs.registration.load_env_creator(spec.entry_point)\n"
        "hooks = [type(f).__name__ for f in sys.meta_path if 'Gymnasium' in type(f).__name__]\n"
        "heavy = [m for m in ('sapien', 'torch', 'spatialscout_gym.scenes.catalog', "
        "'spatialscout_gym.scenes.procedural') if m in sys.modules]\n"
        "print(json.dumps({'ids': ids, 'creator': creator.__name__, 'hooks': hooks, 'heavy': heavy}))\n")
    out = json.loads(_python(code))
    assert out["creator"] == "NBVEnv" and out["hooks"] == [] and out["heavy"] == []
    assert {"SpatialScout/NBV-v1", "SpatialScout/NBV-v0", "SpatialScout/Procedural-v0",
            "SpatialScout/Kitchen_01-v0"} <= set(out["ids"])
    assert len(out["ids"]) == 5 + len(catalog.catalog_scene_ids())   # NBV-v0, v1, v2, v3, Procedural-v0


def test_registration_is_idempotent():
    import gymnasium as gym
    before = {k: gym.spec(k).entry_point for k in registration.registered_ids()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # re-registering an id would warn
        ids = registration.register_envs() + register_nbv_envs()
    # ids other tests registered (imported scene directories) stay; registering again adds and changes nothing
    assert set(ids) <= set(before) and {k: gym.spec(k).entry_point for k in registration.registered_ids()} == before
    assert {registration.NBV_ID, registration.NBV_V1_ID} | {registration.env_id_for_scene(i)
                                                           for i in catalog.catalog_scene_ids()} <= set(ids)


@pytest.mark.parametrize("version", catalog.CATALOG_VERSIONS)
def test_light_catalog_ids_equal_the_catalogs(version, monkeypatch):
    monkeypatch.setenv(catalog.CATALOG_ENV, version)
    assert registration._catalog_ids() == catalog.catalog_scene_ids(version)
    assert registration._manifest_ids(version) is not None       # read without the generator


def test_registration_constants_name_the_scene_modules_settings():
    assert registration.CATALOG_ENV == catalog.CATALOG_ENV
    assert registration.SCENE_DIRS_ENV == maniskill.SCENE_DIRS_ENV
    assert registration._DEFAULT_CATALOG_VERSION == catalog.DEFAULT_CATALOG_VERSION
    assert registration._MANIFEST_DIR == catalog.manifest_path("2.0").parent


def test_an_unknown_catalog_version_is_left_to_the_catalog(monkeypatch):
    monkeypatch.setenv(catalog.CATALOG_ENV, "9.9")
    assert registration._manifest_ids("9.9") is None
    with pytest.raises(Exception, match="unknown catalog version '9.9'"):
        registration._catalog_ids()


HEAVY = ("sapien", "torch", "stable_baselines3", "spatialscout_gym.render.sapien_renderer")
PROBE = ("import sys, io, json, contextlib\n"
         "from spatialscout_gym.cli.main import main\n"
         "with contextlib.redirect_stdout(io.StringIO()):\n"
         "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
         f"print(json.dumps([m for m in sys.modules if m in {HEAVY!r} or m.startswith('spatialscout_gym.cli.')]))\n")


@pytest.mark.parametrize("argv", [["--help"], [], ["scors"], ["score", "--help"], ["compare", "--help"],
                                  ["run", "--help"], ["evaluate", "--help"], ["scenes", "--help"]])
def test_cli_help_imports_only_the_named_command_and_no_renderer(argv):
    loaded = json.loads(_python(PROBE, *argv))
    assert not [m for m in loaded if m in HEAVY], loaded
    commands = {m.split(".")[2] for m in loaded} & set(COMMANDS)
    named = {a.replace("-", "_") for a in argv if a.replace("-", "_") in COMMANDS}
    assert named <= commands if named else commands == set(), loaded     # the listing imports none
    assert len(commands) <= 2, loaded               # the command (and what it reuses), not all 15


def test_the_listing_shows_each_commands_own_help_line():
    for name in COMMANDS:
        sub = next(a for a in build_parser(name)._actions if isinstance(a, argparse._SubParsersAction))
        (action,) = sub._choices_actions
        assert (action.dest, SUMMARIES[name]) == (name.replace("_", "-"), action.help)
