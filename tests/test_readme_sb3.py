"""The README's Stable-Baselines3 training block runs as written (real SAPIEN render, real SB3 with
its rich progress bar, SB3's own ``make_vec_env`` on ``SpatialScout/NBV-v1``) and saves a policy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _sb3_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    found = [b for b in blocks if "make_vec_env(" in b and "model.learn(" in b]
    assert len(found) == 1, "the README has one SB3 training block"
    return found[0]


@pytest.mark.render
def test_readme_sb3_training_block_runs_and_saves_a_policy(tmp_path, monkeypatch):
    code = _sb3_block()
    assert len(code.strip().splitlines()) <= 15
    assert '"SpatialScout/NBV-v1"' in code and "NBV-v0" not in code and "SB3VecEnv" not in code
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_sb3"})
    assert (tmp_path / "nbv_ppo_example.zip").stat().st_size > 0


def test_rl_extra_installs_a_renderer_and_the_progress_bar():
    import tomllib
    extras = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", r, maxsplit=1)[0] for r in extras["rl"]}
    assert {"sapien", "rich", "tqdm", "stable-baselines3", "torch"} <= names
