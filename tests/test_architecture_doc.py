"""docs/architecture.md agrees with the code, in both directions.

- Every path it names (``core/frames.py``, ``nbv/``, ``scripts/setup.sh``) exists, under
  ``spatialscout_gym/`` or the repository root.
- The table "Where each concept lives" places every module of the package exactly once, each row
  holds the modules of one layer, and the rows follow the layer table's order; a module a concept
  names (``baselines/rllib_agent.py``), a name it quotes (``PROVIDERS``) and an agent it quotes
  (``rllib:PATH``) are in that row's own modules.
- The layer table is a true order (a layer may import only itself and the rows above it), and the
  package root, which imports ``envs`` and ``nbv`` to register the env ids, is imported only by
  layers that may import what it imports.

The import graph against the layer table, and the absence of import circles, are in
tests/test_layers.py; package ``__init__`` files are the faces of their packages, not modules of
their own."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from test_layers import PACKAGE, ROOT, _type_checking_nodes, layer_table

ARCHITECTURE = ROOT / "docs" / "architecture.md"
LAYERS = layer_table()
PATH_TOKEN = re.compile(r"`((?:[\w.-]+/)+[\w.-]*)`")
"""A backticked path: ``core/frames.py``, ``nbv/``, ``scripts/setup.sh`` (not ``SpatialScout/...``)."""


@functools.cache
def parsed(module: str) -> ast.Module:
    return ast.parse((PACKAGE / module).read_text(encoding="utf-8"))


@functools.cache
def package_modules() -> list[str]:
    return [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
            if p.name != "__init__.py" and "__pycache__" not in p.parts]


def named_paths(text: str) -> list[str]:
    return sorted({m for m in PATH_TOKEN.findall(text) if not m.startswith("SpatialScout/")})


def missing_paths(text: str) -> list[str]:
    return [p for p in named_paths(text) if not (PACKAGE / p).exists() and not (ROOT / p).exists()]


def section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def concept_rows(text: str) -> list[tuple[str, list[str]]]:
    """``(concept cell, modules)`` of each row of "Where each concept lives"."""
    rows = [line.strip().strip("|").split("|") for line in section(text, "Where each concept lives").splitlines()
            if line.startswith("|")][2:]                                    # past the header and the rule
    return [(cells[0].strip(), re.findall(r"`([^`]+)`", cells[-1])) for cells in rows]


def layer_of(module: str) -> str:
    return module.split("/", 1)[0]


def defined_names(module: str) -> set[str]:
    """Top-level names ``module`` (a path under the package) defines or imports."""
    names: set[str] = set()
    for node in parsed(module).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def agent_name_builders(prefix: str) -> set[str]:
    """Modules that build an agent's name ``f"<prefix>:{...}"`` (where that agent is defined)."""
    found = set()
    for module in package_modules():
        for node in ast.walk(parsed(module)):
            if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) \
                    and node.values[0].value == f"{prefix}:":
                found.add(module)
    return found


def misplaced_concepts(text: str) -> list[str]:
    """What a concept cell places outside its own row: a module path, a quoted package name, an agent."""
    every = package_modules()
    defined = {m: defined_names(m) for m in every}
    wrong = []
    for concept, modules in concept_rows(text):
        faces = {str(Path(m).parent / "__init__.py") for m in modules}
        own = set(modules) | {f for f in faces if (PACKAGE / f).is_file()}
        layer = layer_of(modules[0])
        for path in named_paths(concept):   # its own module, or one of a layer it reads through
            if path not in modules and layer_of(path) not in LAYERS[layer] - {layer}:
                wrong.append(f"{concept[:50]!r} names {path}, neither among its modules {modules} nor below them")
        for token in re.findall(r"`@?([A-Za-z_]\w*)`", concept):
            homes = [m for m in every if token in defined[m] and not (PACKAGE / m).name.startswith("_")]
            if homes and not any(token in defined_names(m) for m in own):
                wrong.append(f"{concept[:50]!r} quotes {token}, which none of {modules} defines")
        for prefix in re.findall(r"`([\w-]+):PATH`", concept):
            builders = agent_name_builders(prefix)
            if builders and not builders & set(modules):
                wrong.append(f"{concept[:50]!r} places the {prefix}:PATH agent, which lives in {sorted(builders)}")
    return wrong


def test_every_path_the_architecture_names_exists():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert len(named_paths(text)) > 100 and "core/frames.py" in named_paths(text)
    assert missing_paths(text) == [], "docs/architecture.md names paths that do not exist"


def test_the_concept_table_places_every_module_once_in_layer_order():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = concept_rows(text)
    placed = [m for _, modules in rows for m in modules]
    assert sorted(placed) == package_modules(), (
        "modules placed twice: " + str(sorted({m for m in placed if placed.count(m) > 1}))
        + "; not placed: " + str(sorted(set(package_modules()) - set(placed)))
        + "; not modules: " + str(sorted(set(placed) - set(package_modules()))))
    order = list(layer_table())
    layers = []
    for concept, modules in rows:
        own = {layer_of(m) for m in modules}
        assert len(own) == 1, f"row {concept[:50]!r} mixes layers: {sorted(own)}"
        layers.append(order.index(own.pop()))
    assert layers == sorted(layers), [order[i] for i in layers]


def test_each_concept_is_in_its_own_rows_modules():
    assert misplaced_concepts(ARCHITECTURE.read_text(encoding="utf-8")) == []


def test_the_layer_table_is_an_order():
    table = layer_table()
    order = list(table)
    for i, layer in enumerate(order):
        assert layer in table[layer], f"{layer} may not import itself"
        if table[layer] == set(order):   # "everything": the top rows (cli, integrations)
            assert set(order[i:]) <= {k for k, v in table.items() if v == set(order)}, layer
            continue
        assert table[layer] <= set(order[:i + 1]), f"{layer} may import a layer below it in the table: " \
            f"{sorted(table[layer] - set(order[:i + 1]))}"


def root_imports(path: Path) -> list[int]:
    """Lines of ``path`` that import the package root itself (``import spatialscout_gym``,
    ``from spatialscout_gym import __version__``), outside ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    lines = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import) and any(a.name == "spatialscout_gym" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "spatialscout_gym" \
                and any(not (PACKAGE / a.name).is_dir() and not (PACKAGE / f"{a.name}.py").is_file()
                        for a in node.names):
            lines.append(node.lineno)
    return lines


def root_layers() -> set[str]:
    """The layers the package root imports."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    return {n.module.split(".")[1] for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("spatialscout_gym.")}


def may_import_the_root(layer: str) -> bool:
    """The root sits right above the layers it imports: a layer may import it when it may import
    each of them and none of them may import it (a layer the root imports, or one below, may not)."""
    needs = root_layers()
    return needs <= LAYERS[layer] and not any(layer in LAYERS[n] for n in needs)


def test_only_layers_above_what_the_root_imports_import_the_root():
    assert {"envs", "nbv"} <= root_layers()
    wrong = [f"{p.relative_to(PACKAGE)}:{line}" for p in sorted(PACKAGE.rglob("*.py"))
             if len(p.relative_to(PACKAGE).parts) > 1 and not may_import_the_root(p.relative_to(PACKAGE).parts[0])
             for line in root_imports(p)]
    assert wrong == [], f"these import the package root (which imports {sorted(root_layers())}) from below it"
    assert [layer for layer in LAYERS if may_import_the_root(layer)] == [
        "wrappers", "baselines", "eval", "servers", "cli", "integrations"]


def test_the_checks_see_a_wrong_path_a_misplaced_agent_and_a_root_import(tmp_path):
    assert missing_paths("`core/frames.py` and `nbv/no_such_module.py`") == ["nbv/no_such_module.py"]
    table = ("\n## Where each concept lives\n\n| concept | module |\n|---|---|\n"
             "| PPO on RLlib and the `rllib:PATH` agent | `nbv/training/rllib.py` |\n"
             "| registry (`PROVIDERS`) | `conversation/request_cache.py` |\n"
             "| a trainer beside `baselines/rllib_agent.py` | `nbv/training/sb3.py` |\n")
    wrong = misplaced_concepts(table)
    assert len(wrong) == 3 and "rllib:PATH agent" in wrong[0] and "PROVIDERS" in wrong[1], wrong
    module = tmp_path / "m.py"
    module.write_text("import spatialscout_gym\nfrom spatialscout_gym import __version__\n"
                      "from spatialscout_gym import nbv\nimport spatialscout_gym.nbv.config\n")
    assert root_imports(module) == [1, 2]

