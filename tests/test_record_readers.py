"""The records an evaluation writes are parsed by their records modules alone: no other module of
the package hands a path naming ``result.json``, ``harness.json``, ``evaluate.json``,
``report.json``, ``planned.json``, ``scenes.json`` or a failure note to a JSON parser (``json.load``/``json.loads``,
``read_json``, ``read_json_object``, ``loads_finite``, ``read_text_bounded``) itself; every reader
loads them typed, through ``spatialscout_gym.core.records``, ``spatialscout_gym.core.harness_record``
and ``spatialscout_gym.core.eval_records`` (``report.json`` is written through its record type and
read back by it; pages recompute it). The check reads the
package's source with ``ast``: a call's argument, or a local name assigned from an expression, that
names one of those files (by its constant or its literal name)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spatialscout_gym"
RECORDS_MODULES = {PACKAGE / "core" / "records.py", PACKAGE / "core" / "eval_records.py",
                   PACKAGE / "core" / "harness_record.py"}
RECORD_FILES = {"RESULT_FILE": "result.json", "PLANNED_FILE": "planned.json", "SCENES_FILE": "scenes.json",
                "HARNESS_FILE": "harness.json", "EVALUATE_FILE": "evaluate.json", "SETTINGS_FILE": "evaluate.json",
                "REPORT_JSON": "report.json", "REPORT_FILE": "report.json", "FAILED_NOTE_FILE": "failed.json",
                "FAILED_SUFFIX": ".failed.json", "failed_file": ".failed.json"}
PARSERS = {"load", "loads", "read_json", "read_json_object", "loads_finite", "read_text_bounded"}


def _names_a_record(node: ast.AST, tainted: dict[str, str]) -> str | None:
    """The record file ``node`` names: a constant of :data:`RECORD_FILES`, its literal name, or a
    local name assigned from such an expression."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and (sub.id in RECORD_FILES or sub.id in tainted):
            return RECORD_FILES.get(sub.id) or tainted[sub.id]
        if isinstance(sub, ast.Attribute) and sub.attr in RECORD_FILES:
            return RECORD_FILES[sub.attr]
        if isinstance(sub, ast.Constant) and sub.value in RECORD_FILES.values():
            return str(sub.value)
    return None


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def parses_of_records(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, file)`` of every parse of a record file in ``tree`` (see the module docstring)."""
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in [tree, *functions]:
        tainted: dict[str, str] = {}   # a function's locals assigned a record's path (module level: none)
        for n in ast.walk(scope) if scope is not tree else ():
            if isinstance(n, (ast.Assign, ast.NamedExpr, ast.AnnAssign)) and n.value is not None \
                    and (name := _names_a_record(n.value, tainted)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                tainted |= {t.id: name for t in targets if isinstance(t, ast.Name)}
        for n in ast.walk(scope):
            if isinstance(n, ast.Call) and _callee(n) in PARSERS:
                named = next((w for a in [*n.args, *(k.value for k in n.keywords)]
                              if (w := _names_a_record(a, tainted))), None)
                if named:
                    found.append((n.lineno, named))
    return sorted(set(found))


def test_no_module_but_the_records_modules_parses_a_record_file():
    offenders = [f"{p.relative_to(PACKAGE.parent)}:{line}: parses {name}"
                 for p in sorted(PACKAGE.rglob("*.py")) if p not in RECORDS_MODULES
                 for line, name in parses_of_records(ast.parse(p.read_text(encoding="utf-8")))]
    assert offenders == [], "\n".join(offenders)


def test_the_check_finds_a_parse_by_constant_by_name_and_through_a_local():
    code = '''
def a(d):
    return json.loads((d / RESULT_FILE).read_text())
def b(d):
    return read_json_object(d / "planned.json")
def c(root):
    p = Path(root) / layout.SCENES_FILE
    return read_json(p)
def d(root):
    return read_json(root / "ground_truth.json")
def e(d):
    return read_json_object(d / layout.SETTINGS_FILE).get("agent_options")
def f(run_dir):
    hp = run_dir / HARNESS_FILE
    if hp.is_file():
        return json.loads(hp.read_text())
'''
    assert [name for _, name in parses_of_records(ast.parse(code))] == ["result.json", "planned.json", "scenes.json",
                                                                        "evaluate.json", "harness.json"]
