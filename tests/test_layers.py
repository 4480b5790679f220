"""The package's layers only import downward, as the layer table of docs/architecture.md says, and no
modules import each other in a circle.

Every ``spatialscout_gym`` import in every module counts, function-level imports included, and so do
entry points written as strings (``"spatialscout_gym.envs.spatialscout_env:SpatialScoutEnv"`` in
registration, agent factories in the registry): a string names the module it will import as surely
as an import statement. Only imports under ``if TYPE_CHECKING:`` are left out (never run)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spatialscout_gym"
DOC = ROOT / "docs" / "architecture.md"
ENTRY_POINT = re.compile(r"spatialscout_gym(\.\w+)+(:\w+)?")
"""A whole string naming a module, or ``module:attribute``."""


def layer_table() -> dict[str, set[str]]:
    """Layer -> the layers it may import, read from the "Layers" table of docs/architecture.md
    (``everything`` in the last column: every layer)."""
    section = DOC.read_text(encoding="utf-8").split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("|")]
    table = {cells[0]: cells[-1] for cells in rows[2:]}           # past the header and the rule
    return {layer: set(table) if may == "everything" else {m.strip() for m in may.split(",")}
            for layer, may in table.items()}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for child in node.body for n in ast.walk(child)}
    return skip


def _imports(path: Path, *, strings: bool = True) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``spatialscout_gym`` import of ``path`` (``from a.b import c`` gives
    ``a.b.c`` when that is a module, else ``a.b``) and, with ``strings``, of every entry-point string."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" if _is_module(f"{node.module}.{a.name}") else node.module
                     for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and ENTRY_POINT.fullmatch(node.value):
            names = [node.value.partition(":")[0]]
        else:
            continue
        out += [(node.lineno, n) for n in dict.fromkeys(names) if n.startswith("spatialscout_gym.")]
    return sorted(out)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_subpackage_has_a_row_in_the_layer_table():
    table = layer_table()
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(table), f"docs/architecture.md's layer table vs the package: {packages ^ set(table)}"
    assert all(may <= set(table) for may in table.values()), table


def test_layers_import_only_downward():
    table = layer_table()
    wrong = []
    for path in _modules():
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) < 2:
            continue
        layer = rel.parts[0]
        for line, module in _imports(path):
            target = module.split(".")[1]
            if (PACKAGE / target).is_dir() and target not in table[layer]:
                wrong.append(f"{rel}:{line} ({layer}) imports {module}")
    assert not wrong, "imports against the layer order of docs/architecture.md:\n" + "\n".join(wrong)


def import_circles(modules: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in modules.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return circles


def test_no_modules_import_each_other_in_a_circle():
    graph = {module_name(p): sorted({m for _, m in _imports(p, strings=False)} - {module_name(p)})
             for p in _modules()}
    assert not import_circles(graph), import_circles(graph)


def test_the_circle_check_finds_a_lazy_circle():
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert import_circles(graph) == [["a", "b", "c"]] and import_circles({"a": ["b"], "b": []}) == []


def test_the_checker_sees_function_level_imports_and_entry_point_strings(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import spatialscout_gym.eval.pages.report\n"
                      "def f():\n    from spatialscout_gym.eval.running.runner import write_run\n"
                      "E = 'spatialscout_gym.wrappers.tool_call:ToolCallWrapper'\nD = 'see spatialscout_gym.cli'\n")
    assert _imports(module) == [(5, "spatialscout_gym.eval.running.runner"), (6, "spatialscout_gym.wrappers.tool_call")]
    assert _imports(module, strings=False) == [(5, "spatialscout_gym.eval.running.runner")]


def test_eval_is_laid_out_by_job():
    """``eval/`` keeps a short top level (the directory layout and the settings check every job
    reads) and one subpackage per job; the NBV trainers sit apart from the env stack."""
    top = sorted(p.name for p in (PACKAGE / "eval").glob("*.py") if p.name != "__init__.py")
    jobs = sorted(p.name for p in (PACKAGE / "eval").iterdir() if (p / "__init__.py").is_file())
    assert len(top) <= 8, top
    assert jobs == ["analysis", "pages", "running", "verification"], jobs
    assert not [p.name for p in (PACKAGE / "nbv").glob("*.py") if "train" in p.name or "rllib" in p.name]
    assert not (PACKAGE / "core" / "local_ray.py").exists() and (PACKAGE / "cluster" / "local_ray.py").is_file()
