"""What the sdist and the wheel carry: the sdist is built from the checkout's files and the wheel from
the sdist (as ``python -m build`` does), in-process with the setuptools backend, in a temporary copy
(no build output lands in the checkout). The wheel holds the shipped policy (every file of its
folder), ``py.typed`` and the license; the sdist holds the docs and tests its tests read; the
metadata has an index-friendly description, classifiers, the ``all`` extra and the upper bounds.
scripts/test_wheel.sh installs the wheel into a fresh environment and runs it from outside the clone."""

from __future__ import annotations

import email
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".git", ".venv", ".venv-floors", "runs", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis",
        ".cache", ".whl", ".gl", "site", "results", ".mypy_cache", ".ruff_cache"}

BUILD = """
import sys
from pathlib import Path
from setuptools import build_meta
out, work = Path(sys.argv[1]), Path(sys.argv[2])
sdist = build_meta.build_sdist(str(out))
import tarfile
with tarfile.open(out / sdist) as tar:
    tar.extractall(work, filter="data")
import os
os.chdir(work / sdist[:-len(".tar.gz")])
print(sdist, build_meta.build_wheel(str(out)))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """``{"sdist": [names], "wheel": [names], "metadata": Message}`` of a fresh build."""
    tmp = tmp_path_factory.mktemp("package")
    src, out, work = tmp / "src", tmp / "dist", tmp / "unpacked"
    shutil.copytree(ROOT, src, ignore=lambda d, names: [n for n in names if n in SKIP or n.endswith(".egg-info")])
    run = subprocess.run([sys.executable, "-c", BUILD, str(out), str(work)], cwd=src, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    sdist_name, wheel_name = run.stdout.split()[-2:]
    with tarfile.open(out / sdist_name) as tar:
        top = sdist_name[:-len(".tar.gz")] + "/"
        sdist = [n[len(top):] for n in tar.getnames() if n.startswith(top)]
    with zipfile.ZipFile(out / wheel_name) as whl:
        wheel = whl.namelist()
        meta = next(n for n in wheel if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(whl.read(meta))
    return {"sdist": sdist, "wheel": wheel, "metadata": metadata}


def test_wheel_carries_the_shipped_policy_py_typed_and_the_license(built):
    wheel = set(built["wheel"])
    shipped = {f"spatialscout_gym/nbv/models/nbv_ppo/{p.name}" for p in SHIPPED_POLICY.iterdir() if p.is_file()}
    assert "spatialscout_gym/nbv/models/nbv_ppo/model.zip" in shipped
    assert shipped <= wheel, f"missing from the wheel: {sorted(shipped - wheel)}"   # whatever files the folder has
    assert "spatialscout_gym/py.typed" in wheel
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in wheel)
    assert "spatialscout_gym/servers/viewer/static/view.html" in wheel   # the viewer works from the wheel


def test_sdist_carries_docs_tests_license_and_policy(built):
    sdist = set(built["sdist"])
    docs = {f"docs/{p.name}" for p in (ROOT / "docs").iterdir() if p.is_file()}
    assert docs <= sdist, f"missing from the sdist: {sorted(docs - sdist)}"   # tests read docs/
    assert {"LICENSE", "README.md", "CHANGELOG.md", "tests/test_package.py", "tests/fakes.py",
            "spatialscout_gym/nbv/models/nbv_ppo/model.zip", "spatialscout_gym/py.typed"} <= sdist


def test_metadata_license_classifiers_extras_and_bounds(built):
    meta = built["metadata"]
    assert meta["License-Expression"] == "MIT"
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and any(c.startswith("Programming Language :: Python :: 3.") for c in classifiers)
    requires = meta.get_all("Requires-Dist")
    extras = set(meta.get_all("Provides-Extra")) - {"all", "test"}
    everything = next(r for r in requires if r.startswith("spatialscout-gym[") and 'extra == "all"' in r)
    in_all = set(re.match(r"spatialscout-gym\[([^\]]+)\]", everything).group(1).split(","))
    assert extras <= in_all, f"the all extra leaves out {sorted(extras - in_all)}"
    for name in ("ray", "stable-baselines3"):      # APIs that move fast have an upper bound
        spec = next(r for r in requires if re.match(rf"{name}\b", r))
        assert "<" in spec.split(";")[0], spec


def test_index_description_has_no_relative_links(built):
    """An index page resolves no link relative to the checkout: every link and image in the long
    description is absolute (or the description has none)."""
    body = built["metadata"].get_payload()
    assert "spatialscout-gym" in body and "ppo:models/nbv_ppo/model.zip" in body
    targets = [tok.attrs.get("href") or tok.attrs.get("src") for block in MarkdownIt().parse(body)
               for tok in (block.children or []) if tok.type in ("link_open", "image")]
    relative = [t for t in targets if not re.match(r"https?://", str(t))]
    assert not relative, f"relative links on the index page: {relative}"
