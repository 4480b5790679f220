"""Shared test-session setup."""

import os
import tempfile

import pytest

try:
    # mcp's stdio client binds ``sys.stderr`` as its default error log when first imported; imported
    # here, at collection, it binds the session's stream, not a stream one test's ``capsys`` owns
    # (a later stdio test would fail with ``fileno``).
    import mcp.client.stdio  # noqa: F401
except ImportError:   # the vlm extra is not installed: the MCP tests skip themselves
    pass

# ``verify``, ``report`` and ``leaderboard`` keep verdicts in a cache outside the verified directory;
# the tests use one of their own (a fresh folder per session, never the user's ``~/.cache``).
os.environ.setdefault("SPATIALSCOUT_VERIFY_CACHE", tempfile.mkdtemp(prefix="spatialscout-verify-cache-"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under ``pytest -n N --dist loadgroup`` (scripts/test.sh) each test file runs whole on one
    worker (its module fixtures are built once), and files that share a group run one after another
    on one worker: the ``ray`` group starts Ray clusters and trains the RL recipes its files share."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(str(item.path.relative_to(config.rootpath))))
