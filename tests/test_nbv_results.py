"""``benchmarks/nbv_results.py`` prints the README's "Next-best-view baselines" table layout: one
row per agent, the mean over seeds, labelled with the all-target mean IoU spread."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import numpy as np
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
    assert m.agent_label("ppo:models/nbv_ppo/model.zip") == "nbv_ppo"
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
    lines = section.splitlines()                                  # the first table of the section
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    table = [line for line in lines[start:end] if line.startswith("| ")]
    assert table[0] == m.markdown({}).splitlines()[0]           # same columns, same order
    labels = [line.split(" | ")[0][2:] for line in table[1:]]
    suffix = r" \(spread \d+\.\d\d\)" if n_seeds > 1 else ""
    assert len(labels) == len(agents)
    for label, agent in zip(labels, agents):
        assert re.fullmatch(re.escape(m.agent_label(agent)) + suffix, label), (label, agent)


def test_summary_has_micro_macro_spreads_and_scene_types():
    m = _script()

    def result(micro, macro, single, apartment=None):
        by_type = {"single_room": {"all": {"mean_iou": single}}}
        if apartment is not None:
            by_type["apartment"] = {"all": {"mean_iou": apartment}}
        return {"object_micro": {"all": {"mean_iou": micro}}, "scene_macro": {"all": {"mean_iou": macro}},
                "by_type": by_type}

    rows = m.summary_rows({"ppo": [result(0.80, 0.82, 0.9, 0.7), result(0.84, 0.83, 0.92, 0.74)],
                           "rooms-only": [result(0.5, 0.5, 0.5)]})
    assert rows["ppo"] == pytest.approx([82.0, 4.0, 82.5, 1.0, 91.0, 72.0])
    assert np.isnan(rows["rooms-only"][-1])                       # no apartment evaluated
    text = m.markdown(rows, m.SUMMARY_COLUMNS)
    assert text.splitlines()[0] == "| agent | " + " | ".join(m.SUMMARY_COLUMNS) + " |"
    assert text.splitlines()[-1].endswith("| 50.00 | - |")
