"""Every module that moved keeps its old import path for one release: importing it warns
(``DeprecationWarning``) and gives the new module itself, so ``from old import X`` and
``mock.patch("old.X")`` reach the code that runs."""

from __future__ import annotations

import importlib
import sys
import warnings
from unittest import mock

import pytest

MOVED = [
    ('spatialscout_gym.baselines.providers', 'spatialscout_gym.conversation.providers'),
    ('spatialscout_gym.baselines.request_cache', 'spatialscout_gym.conversation.request_cache'),
    ('spatialscout_gym.baselines.sb3_vec', 'spatialscout_gym.nbv.sb3_vec'),
    ('spatialscout_gym.baselines.train_nbv', 'spatialscout_gym.nbv.train'),
    ('spatialscout_gym.eval.mcp_server', 'spatialscout_gym.servers.mcp_server'),
    ('spatialscout_gym.viewer', 'spatialscout_gym.servers.viewer'),
    ('spatialscout_gym.viewer.data', 'spatialscout_gym.servers.viewer.data'),
    ('spatialscout_gym.viewer.play', 'spatialscout_gym.servers.viewer.play'),
    ('spatialscout_gym.viewer.server', 'spatialscout_gym.servers.viewer.server'),
    ('spatialscout_gym.viewer.site', 'spatialscout_gym.servers.viewer.site'),
    ('spatialscout_gym.wrappers.codecs', 'spatialscout_gym.conversation.codecs'),
    ('spatialscout_gym.wrappers.codecs.anthropic_messages', 'spatialscout_gym.conversation.codecs.anthropic_messages'),
    ('spatialscout_gym.wrappers.codecs.chat_completions', 'spatialscout_gym.conversation.codecs.chat_completions'),
    ('spatialscout_gym.wrappers.codecs.common', 'spatialscout_gym.conversation.codecs.common'),
    ('spatialscout_gym.wrappers.codecs.responses', 'spatialscout_gym.conversation.codecs.responses'),
    ('spatialscout_gym.wrappers.conversation', 'spatialscout_gym.conversation.messages'),
    ('spatialscout_gym.wrappers.conversation_spaces', 'spatialscout_gym.conversation.spaces'),
    ('spatialscout_gym.wrappers.images', 'spatialscout_gym.conversation.images'),
    ('spatialscout_gym.wrappers.nbv', 'spatialscout_gym.nbv.wrapper'),
    ('spatialscout_gym.wrappers.nbv_config', 'spatialscout_gym.nbv.config'),
    ('spatialscout_gym.wrappers.nbv_core', 'spatialscout_gym.nbv.core'),
    ('spatialscout_gym.wrappers.nbv_env', 'spatialscout_gym.nbv.env'),
    ('spatialscout_gym.wrappers.nbv_features', 'spatialscout_gym.nbv.features'),
    ('spatialscout_gym.wrappers.nbv_mappers', 'spatialscout_gym.nbv.mappers'),
    ('spatialscout_gym.wrappers.nbv_motion', 'spatialscout_gym.nbv.motion'),
    ('spatialscout_gym.wrappers.nbv_policy_files', 'spatialscout_gym.nbv.policy_files'),
    ('spatialscout_gym.wrappers.nbv_ports', 'spatialscout_gym.nbv.ports'),
    ('spatialscout_gym.wrappers.nbv_registration', 'spatialscout_gym.nbv.registration'),
    ('spatialscout_gym.wrappers.nbv_vector', 'spatialscout_gym.nbv.vector'),
    ('spatialscout_gym.wrappers.nbv_workers', 'spatialscout_gym.nbv.workers'),
    ('spatialscout_gym.wrappers.prompt', 'spatialscout_gym.conversation.prompt'),
    ('spatialscout_gym.wrappers.replies', 'spatialscout_gym.conversation.replies'),
    ('spatialscout_gym.wrappers.schemas', 'spatialscout_gym.conversation.schemas'),
]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_the_old_path_warns_and_is_the_new_module(old, new):
    module = importlib.import_module(new)
    saved = {k: v for k, v in sys.modules.items() if k == old or k.startswith(old + ".")}
    for k in saved:
        del sys.modules[k]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert importlib.import_module(old) is module
        assert any(issubclass(c.category, DeprecationWarning) and new in str(c.message) for c in caught) \
            or any(old.startswith(o + ".") for o, _ in MOVED)      # a module of a moved folder: its folder warned
    finally:
        sys.modules.update(saved)


def test_a_patch_on_an_old_path_reaches_the_new_module():
    old, new = next((o, n) for o, n in MOVED if o.endswith(".nbv_core"))
    module = importlib.import_module(new)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with mock.patch(old + ".NBVCore", "patched"):
            assert module.NBVCore == "patched"
    assert module.NBVCore != "patched"
