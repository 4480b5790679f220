"""Shared test-session setup."""

import atexit
import os
import shutil
import tempfile

import pytest

# bound here, so a test that puts generate_catalog_scene_once in its place still reaches the generator
from spatialscout_gym.scenes.catalog import generate_catalog_scene as _generate_catalog_scene

try:
    # mcp's stdio client binds ``sys.stderr`` as its default error log when first imported; imported
    # here, at collection, it binds the session's stream, not a stream one test's ``capsys`` owns
    # (a later stdio test would fail with ``fileno``).
    import mcp.client.stdio  # noqa: F401
except ImportError:   # the vlm extra is not installed: the MCP tests skip themselves
    pass

# ``verify``, ``report`` and ``leaderboard`` keep verdicts in a cache outside the verified directory;
# the tests use one of their own (a fresh folder per session, never the user's ``~/.cache``).
# The process that makes the folder removes it at exit (pytest-xdist's workers inherit the variable).
if "SPATIALSCOUT_VERIFY_CACHE" not in os.environ:
    os.environ["SPATIALSCOUT_VERIFY_CACHE"] = tempfile.mkdtemp(prefix="spatialscout-verify-cache-")
    atexit.register(shutil.rmtree, os.environ["SPATIALSCOUT_VERIFY_CACHE"], ignore_errors=True)

CATALOG_GROUP = pytest.mark.xdist_group("catalog")
"""The files that read every scene of a catalog version run one after another on one worker, so
:func:`catalog_specs` generates each version once for all of them."""

_generated: dict[tuple[str, str], object] = {}


def generate_catalog_scene_once(entry):
    """``scenes.catalog.generate_catalog_scene``, each (version, scene) generated once per test
    process. The specs are shared: a test reads them and never changes them."""
    key = (entry.version, entry.scene_id)
    if key not in _generated:
        _generated[key] = _generate_catalog_scene(entry)
    return _generated[key]


@pytest.fixture(scope="session")
def catalog_specs():
    """``catalog_specs(version)``: every scene of that catalog version, in manifest order,
    generated once per test process (:func:`generate_catalog_scene_once`)."""
    from spatialscout_gym.scenes.catalog import catalog_entries
    return lambda version: [generate_catalog_scene_once(e) for e in catalog_entries(version)]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under ``pytest -n N --dist loadgroup`` (scripts/test.sh) each test file runs whole on one
    worker (its module fixtures are built once), and files that share a group run one after another
    on one worker: the ``ray`` group starts Ray clusters and trains the RL recipes its files share."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(str(item.path.relative_to(config.rootpath))))


@pytest.hookimpl(optionalhook=True)       # pytest-xdist's hook: the floors venv runs without xdist
def pytest_xdist_node_collection_finished(node, ids):
    """Under ``--dist loadgroup`` every test id a pytest-xdist worker collected must carry its group
    (``...::test@group``), or the scheduler spreads the tests of a file over the workers and builds
    every module fixture on each: refuse to run rather than run slowly (pytest 9 with xdist 3.8)."""
    if node.config.getoption("dist", "no") != "loadgroup":
        return
    ungrouped = [i for i in ids if "@" not in i.rsplit("::", 1)[-1]]
    if ungrouped:
        raise pytest.UsageError(f"pytest-xdist did not put {ungrouped[0]} in its group (--dist loadgroup "
                                "needs pytest < 9 with pytest-xdist 3.8; pip install 'pytest<9')")
