"""The package's public face: each subpackage that hands out names (``__all__`` with a lazy
``__getattr__``, or eager imports) hands out the objects of the modules that define them, the old
pointer modules of the layout move are gone (the package was never published with them), and the
README, the examples and the docs import from the public names where one exists."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spatialscout_gym"

GONE = ["spatialscout_gym.baselines.providers", "spatialscout_gym.baselines.request_cache",
        "spatialscout_gym.baselines.sb3_vec", "spatialscout_gym.baselines.train_nbv",
        "spatialscout_gym.eval.mcp_server", "spatialscout_gym.viewer", "spatialscout_gym.wrappers.codecs",
        "spatialscout_gym.wrappers.conversation", "spatialscout_gym.wrappers.conversation_spaces",
        "spatialscout_gym.wrappers.images", "spatialscout_gym.wrappers.prompt", "spatialscout_gym.wrappers.replies",
        "spatialscout_gym.wrappers.schemas", "spatialscout_gym.wrappers.nbv", "spatialscout_gym.wrappers.nbv_config",
        "spatialscout_gym.wrappers.nbv_env", "spatialscout_gym.wrappers.nbv_vector",
        "spatialscout_gym.wrappers.nbv_workers"]
"""Import paths of modules that moved in the layout move of this release; none of them ever shipped."""

FACES = sorted(".".join(p.relative_to(ROOT).parent.parts) for p in PACKAGE.rglob("__init__.py")
               if "__all__" in p.read_text(encoding="utf-8"))
"""Subpackages that hand out names (``__all__``); a lazy one maps each name to its module in ``_WHERE``
(served by ``core.lazy.lazy_exports``)."""

HEAVY = {"spatialscout_gym.nbv.training.rllib_module", "spatialscout_gym.nbv.training.sb3_vec"}
"""Defining modules that import RLlib or Stable-Baselines3 (and torch): checked by reading their source."""


def _where(face: str) -> dict[str, str]:
    module = importlib.import_module(face)
    return getattr(module, "_WHERE", None) or {}


def _top_level_names(module: str) -> set[str]:
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


@pytest.mark.parametrize("old", GONE)
def test_the_old_import_paths_are_gone(old):
    base = ROOT.joinpath(*old.split("."))
    assert not base.with_suffix(".py").exists() and not base.is_dir(), f"{old} is still in the package"
    try:
        spec = importlib.util.find_spec(old)
    except ModuleNotFoundError:   # its parent is gone too
        spec = None
    # None here; an editable install of another checkout may still hold it, but never this one
    assert spec is None or not Path(spec.origin or "").is_relative_to(ROOT), spec


def test_no_module_of_the_package_is_a_pointer_to_another():
    pointers = [p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py")
                if "_MOVED_TO" in p.read_text(encoding="utf-8") or "Moved to" in p.read_text(encoding="utf-8")]
    assert pointers == []
    assert not [p.name for p in (PACKAGE / "wrappers").iterdir() if p.name.startswith("nbv")]


def test_the_faces_are_found():
    assert {"spatialscout_gym.nbv", "spatialscout_gym.wrappers", "spatialscout_gym.render",
            "spatialscout_gym.envs", "spatialscout_gym.episode"} <= set(FACES)


@pytest.mark.parametrize("face", FACES)
def test_each_public_name_is_defined_by_the_module_the_face_names(face):
    where = _where(face)
    module = importlib.import_module(face)
    assert len(set(module.__all__)) == len(module.__all__) and set(where) <= set(module.__all__)
    assert set(module.__all__) <= set(dir(module)), sorted(set(module.__all__) - set(dir(module)))
    for name in module.__all__:
        home = where.get(name)
        if home is not None:
            assert name in _top_level_names(home), f"{face}.{name}: {home} does not define it"
        if home in HEAVY:
            continue
        value = getattr(module, name)
        if home is not None:
            assert value is getattr(importlib.import_module(home), name)
        defined_in = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if inspect.isclass(value) or inspect.isfunction(value) or inspect.ismodule(value):
            assert defined_in == home if home else defined_in.startswith(face), \
                f"{face}.{name} is defined in {defined_in}"
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        getattr(module, "NoSuchName")


def test_the_nbv_stack_is_public_under_deprecation_warnings_as_errors_and_the_root_import_stays_light():
    code = ("import sys, json\nimport spatialscout_gym, spatialscout_gym.nbv\n"
            "light = sorted(m for m in ('spatialscout_gym.nbv.config', 'spatialscout_gym.nbv.wrapper', 'torch', "
            "'sapien', 'stable_baselines3', 'ray') if m in sys.modules)\n"
            "from spatialscout_gym.nbv import NBVConfig, make_nbv_vector_env, NBVWorkerVectorEnv, NBVEnv, "
            "NextBestViewWrapper, make_nbv_env, NBVVectorEnv\n"
            "print(json.dumps({'heavy_on_import': light, 'config': NBVConfig.__module__, "
            "'workers': NBVWorkerVectorEnv.__module__, 'make': make_nbv_vector_env.__module__}))\n")
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "heavy_on_import": [], "config": "spatialscout_gym.nbv.config", "workers": "spatialscout_gym.nbv.workers",
        "make": "spatialscout_gym.nbv.workers"}


IMPORT = re.compile(r"^\s*from (spatialscout_gym(?:\.\w+)+) import \(?([\w, ]+)", re.M)


def deep_imports(text: str) -> list[str]:
    """``from spatialscout_gym.<pkg>.<module> import X`` where ``spatialscout_gym.<pkg>`` hands out ``X``."""
    out = []
    for m in IMPORT.finditer(text):
        parts = m.group(1).split(".")
        if len(parts) < 3:
            continue
        face = importlib.import_module(".".join(parts[:2]))
        public = set(getattr(face, "__all__", ()))
        names = [n.strip().split(" as ")[0] for n in m.group(2).split(",") if n.strip()]
        if names and all(n in public for n in names):
            out.append(m.group(0).strip())
    return out


def test_readme_examples_and_docs_import_public_names_where_one_exists():
    files = [ROOT / "README.md", *sorted((ROOT / "examples").glob("*.py")), *sorted((ROOT / "docs").glob("*.md"))]
    deep = [f"{p.relative_to(ROOT)}: {line}" for p in files for line in deep_imports(p.read_text(encoding="utf-8"))]
    assert deep == [], "import these from the subpackage's public names:\n" + "\n".join(deep)


def test_the_deep_import_check_sees_a_deep_path():
    assert deep_imports("from spatialscout_gym.nbv.config import NBVConfig\n") == [
        "from spatialscout_gym.nbv.config import NBVConfig"]
    assert deep_imports("from spatialscout_gym.nbv.config import NBVConfig, check_obs_layout\n"
                        "from spatialscout_gym.nbv import NBVConfig\n") == []
