"""docs/protocol.md section 11 lists every limit the protocol's code enforces: a limit constant
without a line there fails, a line naming a constant the code lacks fails, and a value there that
differs from the code's fails.

A limit constant is a public module-level constant of the protocol's modules whose name has a
``MAX`` or ``MIN`` part, or one named in :data:`OTHER_LIMITS` (limits whose names lack that part)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spatialscout_gym"
DOC = ROOT / "docs" / "protocol.md"
LIMIT_NAME = re.compile(r"(?:^|_)(?:MAX|MIN)(?:_|$)")
# The protocol's code: everything but scene generation, rendering, the viewer and the
# next-best-view / RL-training modules (docs/protocol.md section 11 says so).
EXCLUDED_DIRS = {"scenes", "render", "viewer"}
EXCLUDED_FILES = re.compile(r"^(?:nbv.*|train_nbv|sb3_vec)\.py$")
OTHER_LIMITS: dict[str, set[str]] = {
    "episode/tools.py": {"PITCH_LIMIT_DEG", "SUBMIT_MARGIN_M", "BOUND_TOLERANCE_M", "MODEL_DECIMALS"},
    "core/limits.py": {"WORLD_BOX_M"},
    "core/triangulation.py": {"RADIUS_MARGIN_M"},
    "conversation/images.py": {"JPEG_QUALITY"},
    "conversation/prompt.py": {"REMINDER_AT"},
    "conversation/providers.py": {"TIMEOUT_S", "ATTEMPTS", "BACKOFF_S", "DEFAULT_REASONING_EFFORT",
                               "THINKING_BUDGET_TOKENS", "THINKING_REPLY_TOKENS"},
    "baselines/vlm.py": {"TRUNCATED_STOP_REASONS"},
    "eval/running/evaluate.py": {"STOP_AFTER_IDENTICAL_FAILURES"},
    "cli/options.py": {"CALL_BUDGET_DEFAULT", "EPISODE_DEFAULTS"},
}


def _protocol_files():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in EXCLUDED_DIRS or EXCLUDED_FILES.match(path.name):
            continue
        yield rel.as_posix(), path


def _module_constants(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AnnAssign) else [])
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def code_limits() -> set[tuple[str, str]]:
    out = set()
    for rel, path in _protocol_files():
        names = _module_constants(path)
        out |= {(rel, n) for n in names if n.isupper() and not n.startswith("_") and LIMIT_NAME.search(n)}
        out |= {(rel, n) for n in OTHER_LIMITS.get(rel, ()) if n in names}
    return out


def doc_limits() -> dict[tuple[str, str], str]:
    text = DOC.read_text()
    table = text[text.index("<!-- limits:begin -->"):text.index("<!-- limits:end -->")]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`"):
            rows[(cells[1].strip("`"), cells[0].strip("`"))] = cells[2].strip("`")
    return rows


def test_every_limit_constant_has_a_line_and_every_line_a_constant():
    code, doc = code_limits(), set(doc_limits())
    assert len(code) >= 40
    assert not code - doc, f"limits without a line in docs/protocol.md section 11: {sorted(code - doc)}"
    assert not doc - code, f"docs/protocol.md section 11 names constants the code lacks: {sorted(doc - code)}"
    for rel, names in OTHER_LIMITS.items():   # the registry itself names real constants
        assert names <= _module_constants(PACKAGE / rel), rel


def test_every_value_in_the_table_is_the_codes():
    for (rel, name), cell in doc_limits().items():
        module = importlib.import_module("spatialscout_gym." + rel.removesuffix(".py").replace("/", "."))
        value, stated = getattr(module, name), ast.literal_eval(cell)
        if isinstance(value, frozenset):
            value = set(value)
        assert stated == value, f"docs/protocol.md section 11 says {name} = {cell}, the code has {value!r}"


def test_the_collector_sees_a_new_limit_and_a_renamed_one(tmp_path):
    # the convention catches names it has never seen, and leaves non-limits alone
    for name in ("MAX_FOO", "MIN_BAR_M", "ANTHROPIC_FALLBACK_MAX_TOKENS", "JSONABLE_MAX_DEPTH"):
        assert LIMIT_NAME.search(name), name
    for name in ("MAXIMUM", "ANIMATION_S", "PROMPT_STYLES", "SUMMIT_M"):
        assert not LIMIT_NAME.search(name), name
    src = tmp_path / "m.py"
    src.write_text("MAX_NEW = 3\nx: int = 1\nLIMIT: dict = {}\n_MAX_PRIVATE = 2\n")
    assert _module_constants(src) == {"MAX_NEW", "x", "LIMIT", "_MAX_PRIVATE"}
