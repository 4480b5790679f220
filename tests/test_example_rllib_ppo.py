"""``examples/rllib_ppo.py``: RLlib PPO with a convolutional encoder on NBV-v1's image trains for a
few hundred steps, its checkpoint holds the trained policy and its NBV settings, the RLModule alone
plays a greedy episode on a catalog scene, and ``spatialscout evaluate --agent rllib:DIR`` runs it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("ray.rllib", reason="needs the ray extra with RLlib")

pytestmark = [pytest.mark.render, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rllib_ppo.py"


def test_rllib_ppo_example_trains_a_cnn_policy_and_plays_it(tmp_path, capsys):
    from torch import nn
    spec = importlib.util.spec_from_file_location("rllib_ppo_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = example.main(["--iterations", "2", "--envs", "2", "--rollout", "64", "--image-budget", "4",
                        "--resolution", "36", "--scene", "Kitchen_01", "--out", str(tmp_path / "ck")])
    printed = capsys.readouterr().out
    assert out["steps"] == 256 and "iteration 2: 256 env steps" in printed      # 2 x (64 steps x 2 envs)
    module = out["module"]
    # a convolutional encoder on the channel-first image, not an MLP on the flattened pixels
    convs = [m for m in module.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 3 and convs[0].in_channels == 3
    assert module.observation_space["image"].shape == (3, 36, 36)
    assert all(m.in_features != 3 * 36 * 36 for m in module.modules() if isinstance(m, nn.Linear))
    # the checkpoint holds the trained policy: the heads' output biases start at zero, PPO moved them
    assert module.pi[-1].bias.abs().max() > 0 and module.vf[-1].bias.abs().max() > 0
    assert (out["checkpoint"] / "learner_group" / "learner" / "rl_module" / "default_policy").is_dir()
    assert 0.0 < out["coverage"] <= 1.0 and "greedy episode on Kitchen_01: coverage" in printed

    # the checkpoint holds the NBV settings: `spatialscout evaluate --agent rllib:DIR` runs it as it is
    from spatialscout_gym.cli.main import main
    ev = tmp_path / "eval"
    assert main(["evaluate", "--agent", f"rllib:{tmp_path / 'ck'}", "--scenes", "Kitchen_01", "--out", str(ev),
                 "--no-progress"]) == 0
    settings = json.loads((ev / "evaluate.json").read_text())
    assert (settings["image_budget"], settings["resolution"]) == (4, 36)
    report = json.loads((ev / "report.json").read_text())
    assert report["episodes"]["completed"] == 1 and report["episodes"]["end_reasons"] == {"finish_mapping": 1}
