"""No test asserts how long something took: a loaded machine is not a failure. Speed is measured in
``benchmarks/`` (docs/speed.md); a test states the behaviour behind it. Every hypothesis test runs
without hypothesis's per-example deadline, and no ``assert`` reads the clock, directly or through a
name computed from it (a ``deadline`` that bounds a wait for something to happen is not a speed
figure)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"time", "perf_counter", "monotonic", "perf_counter_ns", "monotonic_ns", "time_ns"}


def _reads_clock(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in CLOCKS
               and isinstance(n.func.value, ast.Name) and n.func.value.id == "time" for n in ast.walk(node))


def timed_assertions(source: str) -> list[int]:
    """Lines of ``assert`` statements that compare a clock reading (or a name made from one) with
    anything but a name holding ``deadline``."""
    tree = ast.parse(source)
    clocked = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _reads_clock(n.value)
               for t in n.targets if isinstance(t, ast.Name)}
    lines = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Assert):
            continue
        names = {x.id for x in ast.walk(n.test) if isinstance(x, ast.Name)}
        if any("deadline" in x for x in names):
            continue
        if _reads_clock(n.test) or names & clocked:
            lines.append(n.lineno)
    return lines


def undeadlined_given(source: str) -> list[int]:
    """Lines of ``@given`` tests whose decorators do not set ``deadline=None``."""
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = [ast.unparse(d) for d in n.decorator_list]
            if any(d.startswith("given(") for d in decorators) and not any(
                    d.startswith("settings(") and "deadline=None" in d for d in decorators):
                out.append(n.lineno)
    return out


def test_the_checks_find_what_they_look_for():
    timed = ("import time\nt0 = time.perf_counter()\nrun()\nelapsed = time.perf_counter() - t0\n"
             "assert elapsed < 5\nassert time.monotonic() - t0 < 20\n")
    assert timed_assertions(timed) == [5, 6]
    waited = "import time\ndeadline = time.monotonic() + 240\nassert time.monotonic() < deadline, 'no rollout'\n"
    assert timed_assertions(waited) == []
    assert undeadlined_given("@settings(max_examples=5)\n@given(st.integers())\ndef test_a(x): pass\n") == [3]
    assert undeadlined_given("@settings(deadline=None)\n@given(st.integers())\ndef test_a(x): pass\n") == []


def test_no_test_asserts_a_time_and_no_hypothesis_test_has_a_deadline():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        source = path.read_text()
        found += [f"{path.relative_to(TESTS)}:{line}: asserts a time" for line in timed_assertions(source)]
        found += [f"{path.relative_to(TESTS)}:{line}: @given without deadline=None" for line in undeadlined_given(source)]
    assert not found, "\n".join(found)
