"""docs/speed.md is the one source of every speed figure: the README's Speed paragraph quotes it
word for word (each figure with its unit), and no other page states a figure in ms, steps/s,
frames/s or episodes/min that speed.md does not hold. docs/rl.md's vector-env table and docs/nbv.md's
training runs are their own records (speed.md points to them)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEED = ROOT / "docs" / "speed.md"
README = ROOT / "README.md"
OWN_RECORDS = {"speed.md", "rl.md", "nbv.md"}
_NUMBER = r"(\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?)"
RATE = re.compile(_NUMBER + r"\s+(?:[A-Za-z][\w-]*\s+){0,3}?(ms|steps/s|frames/s|episodes/min)\b")
"""A speed figure on any page: ``25 ms``, ``250 env steps/s``, ``244 NBV-v1 steps/s``."""
SECONDS = re.compile(_NUMBER + r"\s+(s)\b")
"""Seconds, counted as a speed figure inside the README's Speed paragraph only (elsewhere ``180 s`` is a timeout)."""


def figures(text: str, *, seconds: bool = False) -> list[tuple[str, str]]:
    found = [(m.group(1), m.group(2)) for m in RATE.finditer(text)]
    return found + ([(m.group(1), m.group(2)) for m in SECONDS.finditer(text)] if seconds else [])


def unheld(found: list[tuple[str, str]], source: str) -> list[str]:
    """Figures no line of ``source`` states: the same number (not part of a longer one) and its unit."""
    lines = source.splitlines()
    return [f"{number} {unit}" for number, unit in found
            if not any(re.search(rf"(?<![\d.,-]){re.escape(number)}(?![\d,-]|\.\d)", line) and unit in line
                       for line in lines)]


def readme_speed() -> str:
    return README.read_text(encoding="utf-8").split("\n## Speed\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_speed_paragraph_quotes_speed_md():
    section = readme_speed()
    found = figures(section, seconds=True)
    assert len(found) >= 4 and "(docs/speed.md)" in section
    assert unheld(found, SPEED.read_text(encoding="utf-8")) == []


def test_no_other_page_states_a_speed_figure_speed_md_does_not_hold():
    source = SPEED.read_text(encoding="utf-8")
    pages = [README, *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in OWN_RECORDS)]
    wrong = [f"{p.relative_to(ROOT)}: {f}" for p in pages for f in unheld(figures(p.read_text(encoding="utf-8")), source)]
    assert wrong == [], "state these in docs/speed.md, or link to it"


def test_the_figure_check_sees_a_changed_figure():
    source = "| bench | 512 x 512 RGB capture 25 ms, 250 env steps/s at 512 px, 16 envs 147-151 (149-153) steps/s |"
    assert unheld(figures("a capture in 25 ms and 250 env steps/s, 147-151 steps/s"), source) == []
    assert unheld(figures("a capture in 20 ms, 2,250 env steps/s and 147 steps/s"), source) == [
        "20 ms", "2,250 steps/s", "147 steps/s"]
    assert figures("scored in 0.061 s", seconds=True) == [("0.061", "s")] and figures("a 180 s timeout") == []
