"""The package's layers only import downward (the layer table of docs/architecture.md): every ``spatialscout_gym``
import in every module, function-level imports included, is checked against what its layer may use."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spatialscout_gym"

MAY_IMPORT: dict[str, set[str]] = {
    "core": {"core"},
    "scenes": {"core", "scenes"},
    "render": {"core", "render"},
    "episode": {"core", "episode"},
    "envs": {"core", "scenes", "render", "episode", "envs"},
    "wrappers": {"core", "scenes", "render", "episode", "envs", "wrappers"},
    "baselines": {"core", "scenes", "render", "episode", "envs", "wrappers", "baselines"},
}
"""Layer -> the layers it may import; ``eval``, ``viewer``, ``cli`` and ``integrations`` (the top) may import
everything."""


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out += [(node.lineno, n) for n in names if n.startswith("spatialscout_gym.")]
    return out


def test_layers_import_only_downward():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) < 2 or rel.parts[0] not in MAY_IMPORT:
            continue
        layer = rel.parts[0]
        for line, module in _imports(path):
            target = module.split(".")[1]
            if (PACKAGE / target).is_dir() and target not in MAY_IMPORT[layer]:
                wrong.append(f"{rel}:{line} ({layer}) imports {module}")
    assert not wrong, "imports against the layer order of docs/architecture.md:\n" + "\n".join(wrong)


def test_the_checker_sees_function_level_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from spatialscout_gym.eval.runner import write_run\n")
    assert _imports(module) == [(2, "spatialscout_gym.eval.runner")]
