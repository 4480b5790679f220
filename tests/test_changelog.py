"""One version, stated once: ``spatialscout_gym.__version__`` is what pyproject.toml builds (setuptools
reads it), and CHANGELOG.md (Keep a Changelog) has its newest section for that version."""

from __future__ import annotations

import re
import tomllib
from datetime import date
from pathlib import Path

import pytest

import spatialscout_gym

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$")


def releases(text: str) -> list[tuple[str, str, list[str]]]:
    """``(version, date, subsection names)`` of each ``## [x.y.z] - YYYY-MM-DD`` section, in order;
    a ``## `` heading of another shape is refused."""
    out: list[tuple[str, str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            m = RELEASE.match(line)
            assert m, f"CHANGELOG.md: not a release heading: {line!r}"
            out.append((m.group(1), m.group(2), []))
        elif line.startswith("### "):
            assert out, f"CHANGELOG.md: {line!r} before the first release"
            out[-1][2].append(line[4:].strip())
    return out


def test_pyproject_builds_the_version_the_package_states():
    from setuptools.config.expand import read_attr
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert read_attr(attr, root_dir=ROOT) == spatialscout_gym.__version__


def test_the_changelog_opens_with_the_package_version_and_keeps_its_shape():
    found = releases((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert found and found[0][0] == spatialscout_gym.__version__
    versions = [tuple(int(x) for x in v.split(".")) for v, _, _ in found]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    dates = [date.fromisoformat(d) for _, d, _ in found]
    assert dates == sorted(dates, reverse=True)
    for version, _, sections in found:
        assert set(sections) <= SECTIONS and len(set(sections)) == len(sections), (version, sections)


def test_the_shape_check_refuses_a_bad_heading():
    with pytest.raises(AssertionError, match="not a release heading"):
        releases("## 0.2.0 (today)\n")
    assert releases("## [0.2.0] - 2026-12-02\n### Added\n- x\n") == [("0.2.0", "2026-12-02", ["Added"])]
