"""One registry of model services (``conversation/providers.PROVIDERS``, filled by ``@model_api``):
the agent registry, the CLI and the wrapper read it, so a service registered once is an agent
prefix, a model agent and a wire format everywhere, and no other module keeps its own list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spatialscout_gym.baselines.registry import agent_kind, known_agents, make_agent
from spatialscout_gym.conversation import codecs
from spatialscout_gym.conversation.messages import WIRE_FORMATS
from spatialscout_gym.conversation.providers import PROVIDERS, OpenAIProvider, model_api, provider_entry
from spatialscout_gym.core.errors import ConfigError

PACKAGE = Path(__file__).resolve().parents[1] / "spatialscout_gym"


def test_the_three_services_each_name_a_client_a_wire_format_and_an_extra():
    assert set(PROVIDERS) == {"openai", "openai-responses", "anthropic"}
    for name, entry in PROVIDERS.items():
        assert entry.client.provider == name and entry.wire_format == entry.client.api_mode in WIRE_FORMATS
        assert entry.extra == "vlm" and entry.sdk in ("openai", "anthropic")
        assert agent_kind(f"{name}:some-model") == "model" and f"{name}:ARG" in known_agents()
    assert {e.wire_format for e in PROVIDERS.values()} == set(WIRE_FORMATS)
    with pytest.raises(ConfigError, match="unknown model service 'nope'; expected one of openai"):
        provider_entry("nope")


@pytest.fixture
def local_service():
    @model_api("local-test", sdk="openai")
    class LocalProvider(OpenAIProvider):
        """An OpenAI-compatible local server under its own agent prefix."""
    yield LocalProvider
    PROVIDERS.pop("local-test")


def test_a_service_registered_once_is_an_agent_everywhere(local_service):
    agent = make_agent("local-test:tiny-vl", api_key="local", base_url="http://127.0.0.1:9/v1")
    assert type(agent.provider) is local_service and agent.name == "local-test:tiny-vl"
    assert agent.provider.api_mode == "chat_completions" and agent_kind("local-test:x") == "model"
    assert "local-test:ARG" in known_agents()
    from spatialscout_gym.cli.options import agent_help
    assert "local-test:MODEL" in agent_help()
    with pytest.raises(ValueError, match="already registered"):
        @model_api("local-test", sdk="openai")
        class Other(OpenAIProvider):
            pass
    with pytest.raises(ValueError, match="api_mode must be one of"):
        @model_api("bad-format", sdk="openai")
        class Bad(OpenAIProvider):
            api_mode = "smoke-signals"
    assert "bad-format" not in PROVIDERS


def test_no_other_module_lists_the_services():
    """The services' names appear in code only where they are registered (docstrings aside)."""
    listed = re.compile(r"""\(\s*["']openai["']\s*,\s*["']openai-responses["']|["']openai-responses["']\s*:""")
    found = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
             if listed.search(p.read_text()) and p.name != "providers.py"]
    assert found == []
    assert not (PACKAGE / "baselines" / "wire.py").exists()
    assert set(codecs.__all__) >= {"chat_completions", "responses", "anthropic_messages", "parse_reply"}
