"""The repository explains itself: the protocol ships as docs/protocol.md and the design as
docs/architecture.md, no file cites a path outside the repository or an issue number, every cited
protocol section exists (the architecture's layer table is read by tests/test_layers.py itself), and
the bounds the protocol states are the ones the code enforces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "protocol.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SCANNED = [ROOT / "spatialscout_gym", ROOT / "tests", ROOT / "benchmarks", ROOT / "scripts", ROOT / "docs",
           ROOT / "models", ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "pyproject.toml"]
SUFFIXES = {".py", ".md", ".toml", ".txt", ".json", ".cfg", ".yaml", ".yml", ".sh", ".csv", ".html"}
# Citations a reader of the repository cannot follow. Written so that this file does not match itself
# (no file is exempt): the design notes and specs outside the repository, the shared folder and the
# machine's work tree, and issue numbers (the word followed by a number, with or without "#").
OUTSIDE = re.compile(r"\b(?:DESIGN|SPEC|STYLE)\.md\b|\bsha[r]ed/|/wor[k]/|\.\./sha[r]ed\b")
ISSUE = re.compile(r"(?<![A-Za-z])issues?[ _-]?#?[0-9]+", re.IGNORECASE)
_NUM = r"[0-9]+(?:\.[0-9]+)?"
CITE = re.compile(rf"docs/protocol\.md,?\s+sections?\s+({_NUM}(?:\s*(?:-|,|and)\s*{_NUM})*)")


def _files():
    for top in SCANNED:
        if top.is_file():
            yield top
        elif top.is_dir():
            yield from (p for p in top.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                        and "__pycache__" not in p.parts)


def _headings() -> set[str]:
    return {m.group(1) for m in re.finditer(r"^#{2,3}\s+([0-9]+(?:\.[0-9]+)?)\.?\s", DOC.read_text(), re.M)}


def _cited_sections(text: str) -> set[str]:
    out: set[str] = set()
    for m in CITE.finditer(text):
        spec = re.sub(r"\s*and\s*", ",", m.group(1))
        for part in re.split(r"\s*,\s*", spec):
            part = part.strip(" .").replace(" ", "")
            if not part:
                continue
            if "-" in part:
                lo, hi = part.split("-", 1)
                out.update(str(i) for i in range(int(lo), int(hi) + 1))
            else:
                out.add(part)
    return out


def test_protocol_doc_exists_with_the_nine_sections_and_the_release_section():
    heads = _headings()
    assert {str(i) for i in range(1, 10)} <= heads
    assert re.search(r"^### 6\.\d+ What the release scorer does differently", DOC.read_text(), re.M)


def test_no_file_cites_a_path_outside_the_repository_or_an_issue_number():
    offenders = []
    for p in _files():
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line) or ISSUE.search(line):
                offenders.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not offenders, ("cite docs/architecture.md or docs/protocol.md, and no issue numbers:\n"
                           + "\n".join(offenders))


def test_the_outside_citation_patterns_catch_what_they_must():
    for text in ("see DESIGN" ".md", "cite SPEC" ".md instead", "sha" "red/probes/batched_camera_probe.py",
                 "/wor" "k/main/x.py"):
        assert OUTSIDE.search(text), text
    for text in ("(iss" "ue 13, item 2)", "Iss" "ues 6 and 12", "iss" "ue #3", "def test_iss" "ue13_bad():"):
        assert ISSUE.search(text), text
    for text in ("docs/protocol.md section 6", "docs/architecture.md \"Scale\"", "a tissue 3 cm wide",
                 "../assets/chair.glb", "(the catalog's scene check)"):
        assert not OUTSIDE.search(text) and not ISSUE.search(text), text


def test_every_module_the_architecture_names_exists():
    named = set(re.findall(r"`((?:\w+/)+\w+\.(?:py|sh))`", ARCHITECTURE.read_text()))
    assert len(named) > 40
    missing = [m for m in named if not (ROOT / "spatialscout_gym" / m).is_file() and not (ROOT / m).is_file()]
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_cited_section_is_a_heading():
    heads = _headings()
    missing = {}
    for p in _files():
        for sec in _cited_sections(p.read_text(errors="replace")):
            if sec not in heads:
                missing.setdefault(sec, []).append(str(p.relative_to(ROOT)))
    assert not missing, f"cited sections without a heading in docs/protocol.md: {missing}"


def test_the_citation_parser_sees_ranges_and_lists():
    assert _cited_sections("docs/protocol.md sections 4-5 and docs/protocol.md section 6.8") == {"4", "5", "6.8"}
    assert _cited_sections("(docs/protocol.md sections 2 and 8)") == {"2", "8"}


@pytest.mark.parametrize("module,name,text", [
    ("spatialscout_gym.episode.tools", "MAX_TRANSLATION_M", "at most 1 m"),
    ("spatialscout_gym.episode.tools", "MAX_ROTATION_DEG", "at most 180 degrees"),
    ("spatialscout_gym.episode.tools", "PITCH_LIMIT_DEG", "[-85, 85]"),
    ("spatialscout_gym.episode.tools", "WORLD_BOX_M", "+-15 m"),
    ("spatialscout_gym.episode.tools", "SUBMIT_MARGIN_M", "r + 0.5 m"),
    ("spatialscout_gym.episode.tools", "MAX_ARG_DEPTH", "at most 6"),
    ("spatialscout_gym.episode.tools", "MAX_ARG_VALUES", "at most 2000"),
    ("spatialscout_gym.episode.tools", "MAX_STRING_CHARS", "at most 1000 characters"),
    ("spatialscout_gym.core.triangulation", "MAX_OBSERVATIONS", "2 to 64"),
    ("spatialscout_gym.core.triangulation", "MIN_BASELINE_M", "within 5 cm"),
    ("spatialscout_gym.core.triangulation", "MAX_CONDITION", "above 1e6"),
    ("spatialscout_gym.core.limits", "MAX_RESOLUTION_PX", "between 8 and 4096 pixels"),
    ("spatialscout_gym.core.limits", "MAX_IMAGE_BUDGET", "1 <= V <= 1000"),
])
def test_stated_bounds_match_the_code(module, name, text):
    import importlib
    value = getattr(importlib.import_module(module), name)
    numbers = re.findall(r"-?[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?", text)
    assert any(abs(float(n)) == pytest.approx(abs(float(value))) or float(n) * 0.01 == pytest.approx(float(value))
               for n in numbers), (name, value, text)
    assert text in DOC.read_text(), f"docs/protocol.md no longer says {text!r} ({name} = {value})"


def test_the_bound_tolerance_is_stated_and_is_what_the_episode_uses():
    from spatialscout_gym.episode.tools import BOUND_TOLERANCE_M
    text = DOC.read_text()
    assert "1e-9 m (`BOUND_TOLERANCE_M`)" in text and BOUND_TOLERANCE_M == 1e-9
    from fakes import FakeRenderer, small_scene
    from spatialscout_gym.episode import Episode
    spec = small_scene(32, 32)
    ep = Episode(spec.public, FakeRenderer(spec), image_budget=3)
    assert ep.call("move_camera", {"forward": 1.0 + 5e-10}).ok
    assert not ep.call("move_camera", {"forward": 1.0 + 1e-6}).ok
