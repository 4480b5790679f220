"""docs/architecture.md is true to the layout: every module of the package appears there (its path
under ``spatialscout_gym/``, e.g. ``core/frames.py``), so a new module cannot land without its place
in the architecture. Package ``__init__`` files and pointer modules left at old import paths are not
modules of their own. The other direction (every path the page names exists) is in test_protocol_doc.py."""

from __future__ import annotations

from test_layers import PACKAGE, ROOT, is_pointer

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def package_modules() -> list[str]:
    return [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
            if p.name != "__init__.py" and "__pycache__" not in p.parts and not is_pointer(p)]


def test_every_package_module_appears_in_the_architecture():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    missing = [m for m in package_modules() if f"`{m}`" not in text]
    assert not missing, ("modules docs/architecture.md does not place (add each to the table "
                         f"\"Where each concept lives\"): {missing}")


def test_the_module_list_is_the_package():
    modules = package_modules()
    assert len(modules) > 100 and "core/frames.py" in modules and "cli/main.py" in modules
    assert not any(m.endswith("__init__.py") for m in modules)
