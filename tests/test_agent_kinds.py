"""Agents declare their kind in the registry (reference, privileged, NBV, model); the CLI's defaults
follow the declaration, not the module an agent's factory lives in."""

from __future__ import annotations

import argparse

import pytest

from spatialscout_gym.baselines import registry
from spatialscout_gym.cli.options import resolve_call_budget


def test_every_known_agent_has_a_declared_kind():
    kinds = {name: registry.agent_kind(name.replace(":ARG", ":x")) for name in registry.known_agents()}
    assert set(kinds.values()) == set(registry.AGENT_KINDS), kinds
    assert (kinds["origin"], kinds["oracle-click"], kinds["frontier-nbv"], kinds["ppo:ARG"], kinds["openai:ARG"]) \
        == ("reference", "privileged", "nbv", "nbv", "model")
    assert registry.agent_kind("nobody") is None and registry.agent_kind("nobody:x") is None


def test_the_kind_not_the_module_path_decides_the_nbv_budget(monkeypatch):
    monkeypatch.setattr(registry, "_AGENTS", dict(registry._AGENTS))
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    registry.register_agent("my-nbv", "elsewhere.module:MyAgent", kind="nbv")
    registry.register_agent("my-ref", "spatialscout_gym.baselines.nbv_agents:RandomNBVAgent", kind="reference")
    budgets = {}
    for name in ("my-nbv", "my-ref"):
        args = argparse.Namespace(agent=name, call_budget=None)
        resolve_call_budget(args)
        budgets[name] = args.call_budget
    assert budgets == {"my-nbv": None, "my-ref": 100}


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="agent kind must be one of"):
        registry.register_agent("odd", "m:A", kind="robot")
    assert "odd" not in registry.known_agents()
