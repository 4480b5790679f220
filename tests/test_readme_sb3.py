"""The README's Stable-Baselines3 training block runs as written (real SAPIEN render, real SB3 with
its rich progress bar, SB3's own ``make_vec_env`` on ``SpatialScout/NBV-v3``, the current env) and
saves a policy, in a fresh interpreter with ``-W error::DeprecationWarning``: no "out of date"
warning from Gymnasium (a DeprecationWarning), none from anything else it runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _sb3_block(page: Path = README) -> str:
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    found = [b for b in blocks if "make_vec_env(" in b and "model.learn(" in b]
    assert len(found) == 1, f"{page.name} has one SB3 training block"
    return found[0]


def test_docs_nbv_shows_the_readme_block():
    # docs/nbv.md repeats the block; the run below covers both only while they are the same
    assert _sb3_block(README.parent / "docs" / "nbv.md") == _sb3_block()


@pytest.mark.render
def test_readme_sb3_training_block_runs_and_saves_a_policy(tmp_path):
    code = _sb3_block()
    assert len(code.strip().splitlines()) <= 15
    assert '"SpatialScout/NBV-v3"' in code and "NBV-v0" not in code and "SB3VecEnv" not in code
    (tmp_path / "block.py").write_text(code)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(README.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "block.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "out of date" not in done.stderr + done.stdout
    assert (tmp_path / "nbv_ppo_example.zip").stat().st_size > 0


def test_rl_extra_installs_a_renderer_and_the_progress_bar():
    import tomllib
    extras = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", r, maxsplit=1)[0] for r in extras["rl"]}
    assert {"sapien", "rich", "tqdm", "stable-baselines3", "torch"} <= names
