"""Every data file the package reads ships in a built wheel: each ``package-data`` pattern of
pyproject.toml matches files, and every non-Python file inside the package is matched by one."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spatialscout_gym"


def test_package_data_patterns_match_every_data_file():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = patterns["spatialscout_gym"]
    matched = {p for g in globs for p in PACKAGE.glob(g) if p.is_file()}
    for g in globs:
        assert any(p.is_file() for p in PACKAGE.glob(g)), f"package-data pattern {g!r} matches no file"
    data = {p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
            and "__pycache__" not in p.parts}
    assert sorted(str(p.relative_to(PACKAGE)) for p in data - matched) == []
