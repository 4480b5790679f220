"""``benchmarks/nbv_results.py`` prints the README's "Next-best-view baselines" table layout: one
row per agent, the mean over seeds, labelled with the all-target mean IoU spread (issue 6, item 4)."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("nbv_results", ROOT / "benchmarks" / "nbv_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_are_seed_means_labelled_with_the_all_target_spread():
    m = _script()
    seeds = [[50.0] * 7 + [50.0], [51.27] * 7 + [51.27], [50.5] * 7 + [50.5]]
    rows = m.table_rows({"random-nbv": seeds, "origin": [[0.0] * 7 + [100.0]]})
    assert list(rows) == ["random-nbv (spread 1.27)", "origin"]
    assert rows["random-nbv (spread 1.27)"][0] == pytest.approx((50 + 51.27 + 50.5) / 3)
    assert rows["origin"][-1] == 100.0
    assert m.agent_label("ppo:models/ppo_nbv_v20/model.zip") == "ppo_nbv_v20"
    assert m.agent_label("ppo:runs/nbv/ppo20/") == "ppo20"
    assert m.agent_label("frontier-nbv") == "frontier-nbv"


def test_readme_table_has_the_scripts_layout_for_the_command_it_quotes():
    m = _script()
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Next-best-view baselines"):]
    section = section[:section.index("\n## ", 1)]
    command = re.search(r"python benchmarks/nbv_results\.py(.*?)\n```", section, re.S).group(1)
    argv = shlex.split(command.replace("\\\n", " "))

    def values(option: str) -> list[str]:
        rest = argv[argv.index(option) + 1:]
        return rest[:next((i for i, a in enumerate(rest) if a.startswith("--")), len(rest))]

    agents, n_seeds = values("--agents"), len(values("--seeds"))
    table = [line for line in section.splitlines() if line.startswith("| ")]
    assert table[0] == m.markdown({}).splitlines()[0]           # same columns, same order
    labels = [line.split(" | ")[0][2:] for line in table[1:]]
    suffix = r" \(spread \d+\.\d\d\)" if n_seeds > 1 else ""
    assert len(labels) == len(agents)
    for label, agent in zip(labels, agents):
        assert re.fullmatch(re.escape(m.agent_label(agent)) + suffix, label), (label, agent)
