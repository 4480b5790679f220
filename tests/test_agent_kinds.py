"""Agents declare their name and kind where they are defined (``@register_agent(name, kind=...)``),
policy agents included; ``privileged`` follows from the kind; the CLI's defaults follow the
declaration, not the module an agent lives in or a prefix it special-cases."""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect

import pytest

from spatialscout_gym.baselines import registry
from spatialscout_gym.cli.options import agent_help, check_episode_options, resolve_call_budget


@pytest.fixture
def scratch_registry(monkeypatch):
    """Registrations a test makes are dropped after it."""
    registry.known_agents()   # the built-in ones first
    monkeypatch.setattr(registry, "_AGENTS", dict(registry._AGENTS))
    monkeypatch.setattr(registry, "_PREFIXES", dict(registry._PREFIXES))


def _decorators(module_name: str) -> dict[str, ast.Call]:
    """Class or function name -> its ``@register_agent(...)`` call in ``module_name``'s source."""
    tree = ast.parse(inspect.getsource(importlib.import_module(module_name)))
    return {n.name: d for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef))
            for d in n.decorator_list if isinstance(d, ast.Call) and ast.unparse(d.func) == "register_agent"}


def test_every_builtin_agent_declares_name_and_kind_where_it_is_defined():
    entries = [registry.agent_entry(n) for n in registry.known_agents()]
    built_in = [e for e in entries if not isinstance(e.factory, str)]
    assert {e.name for e in built_in} == {"origin", "uniform-ball", "oracle-explorer", "oracle-click",
                                          "oracle-silhouette", "random-nbv", "frontier-nbv", "nbv-occupancy-frontier",
                                          "ppo", "rllib", "cleanrl"}
    for e in built_in:
        call = _decorators(e.factory.__module__).get(e.factory.__name__)
        assert call is not None, f"{e.name}: not registered by a decorator where {e.factory.__name__} is defined"
        declared = ast.literal_eval(call.args[0])
        kind = {k.arg: ast.literal_eval(k.value) for k in call.keywords}.get("kind")
        assert declared == (e.name if e.argument is None else f"{e.name}:{e.argument}") and kind == e.kind
        assert e.factory.privileged is e.privileged, e.name
        if e.argument is None:
            assert e.factory.name == e.name


def test_kinds_and_privilege_of_the_paper_agents():
    kinds = {n: registry.agent_kind(n.replace(":ARG", ":x")) for n in registry.known_agents()}
    assert set(kinds.values()) == set(registry.AGENT_KINDS), kinds
    assert (kinds["origin"], kinds["oracle-click"], kinds["frontier-nbv"], kinds["ppo:ARG"], kinds["rllib:ARG"],
            kinds["openai:ARG"]) == ("reference", "privileged", "nbv", "nbv", "nbv", "model")
    assert registry.agent_kind("nobody") is None and registry.agent_kind("nobody:x") is None
    assert [registry.make_agent(n).privileged for n in ("origin", "oracle-explorer", "random-nbv")] == \
        [False, True, True]


def test_no_registered_class_sets_privileged_itself():
    """``privileged`` comes from the kind: a decorated class body that sets it is a second home."""
    for module in registry.AGENT_MODULES:
        tree = ast.parse(inspect.getsource(importlib.import_module(module)))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any("register_agent" in ast.unparse(d) for d in node.decorator_list):
                own = [t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets
                       if isinstance(t, ast.Name) and t.id in ("privileged", "name")]
                assert not own, f"{module}.{node.name} sets {own} beside its registration"


def test_the_kind_is_required_and_checked(scratch_registry):
    with pytest.raises(TypeError, match="kind"):
        registry.register_agent("odd")    # type: ignore[call-arg]
    with pytest.raises(ValueError, match="agent kind must be one of"):
        registry.register_agent("odd", kind="robot")
    assert "odd" not in registry.known_agents()

    class SeesEverything:
        privileged = True

    with pytest.raises(ValueError, match="privileged is True but kind 'reference'"):
        registry.register_agent("sees", kind="reference")(SeesEverything)

    @registry.register_agent("plain-ref", kind="privileged")
    class Plain:
        def __init__(self, **options):
            pass

    assert registry.make_agent("plain-ref").privileged is True and Plain.name == "plain-ref"


def test_a_factory_function_whose_agent_contradicts_its_kind_is_refused(scratch_registry):
    registry.register_agent("liar", lambda: type("A", (), {"privileged": True})(), kind="reference")
    with pytest.raises(ValueError, match="registered as 'reference'"):
        registry.make_agent("liar")


def test_the_kind_not_the_module_path_decides_the_nbv_budget(scratch_registry):
    @registry.register_agent("my-nbv", kind="nbv")
    class MyNBV:
        pass

    @registry.register_agent("my-ref", kind="reference")
    class MyRef:
        pass

    budgets = {}
    for name in ("my-nbv", "my-ref"):
        args = argparse.Namespace(agent=name, call_budget=None)
        resolve_call_budget(args)
        budgets[name] = args.call_budget
    assert budgets == {"my-nbv": None, "my-ref": 100}


def test_a_new_policy_agent_gets_its_training_settings_without_a_cli_change(scratch_registry, capsys):
    """The CLI adopts what a policy agent says it was trained with through the registry, for any
    prefix (ppo: and rllib: are not special-cased)."""
    @registry.register_agent("mypolicy:PATH", kind="nbv")
    class MyPolicy:
        @staticmethod
        def trained_settings(path: str) -> dict[str, int]:
            return {"image_budget": 7, "resolution": 48} if path == "here" else {}

    args = argparse.Namespace(agent="mypolicy:here", image_budget=None, resolution=None, call_budget=None)
    check_episode_options(args)
    assert (args.image_budget, args.resolution, args.call_budget) == (7, 48, None)
    args = argparse.Namespace(agent="mypolicy:here", image_budget=9, resolution=None, call_budget=None)
    check_episode_options(args)
    assert args.image_budget == 9 and "differs from the 7" in capsys.readouterr().err
    args = argparse.Namespace(agent="mypolicy:elsewhere", image_budget=None, resolution=None, call_budget=None)
    check_episode_options(args)
    assert (args.image_budget, args.resolution) == (20, 64)   # the NBV tables' defaults
    assert "mypolicy:PATH" in agent_help()


def test_the_policy_agents_read_their_saved_settings(tmp_path):
    """``ppo:PATH``'s ``trained_settings`` reads the ``nbv_config.json`` beside the policy."""
    from spatialscout_gym.nbv.config import NBVConfig
    from spatialscout_gym.nbv.policy_files import save_nbv_config
    (tmp_path / "model.zip").write_bytes(b"not read here")
    save_nbv_config(NBVConfig(), tmp_path, mapper="oracle", image_budget=12, resolution=40)
    assert registry.agent_settings(f"ppo:{tmp_path / 'model.zip'}") == {"image_budget": 12, "resolution": 40}
    assert registry.agent_settings(f"ppo:{tmp_path / 'missing.zip'}") == {}
    assert registry.agent_settings(f"rllib:{tmp_path / 'missing'}") == {}
    assert registry.agent_settings("origin") == {} and registry.agent_settings("openai:m") == {}
