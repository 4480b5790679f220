"""``cleanrl:PATH``: the CleanRL recipe's saved policy evaluates from another process (the recipe
trained for 8 steps in one subprocess, ``spatialscout evaluate`` run in another, real renders);
an unloadable file is a one-line error naming it, and ``ppo:`` on an ``agent.pt`` says to use
``cleanrl:``."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import spatialscout_gym  # noqa: F401  (registers the ids)
from spatialscout_gym.cli.main import main
from spatialscout_gym.nbv.config import NBVConfig, nbv_action_space, nbv_observation_space
from spatialscout_gym.nbv.policy_files import save_nbv_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.render
def test_a_cleanrl_recipe_policy_evaluates_from_another_process(tmp_path):
    save = tmp_path / "crl"
    subprocess.run([sys.executable, str(ROOT / "examples/cleanrl_ppo.py"), "--total-timesteps", "8",
                    "--num-envs", "1", "--num-steps", "8", "--num-minibatches", "1", "--update-epochs", "1",
                    "--image-budget", "3", "--resolution", "32", "--obs-size", "32", "--save-dir", str(save)],
                   check=True, capture_output=True, text=True, timeout=600)
    out = tmp_path / "eval"
    done = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "evaluate", "--agent",
                           f"cleanrl:{save / 'agent.pt'}", "--scenes", "procedural:1", "--seeds", "0",
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["episodes"]["completed"] == 1 and report["episodes"]["failed"] == 0
    # the policy's own settings were adopted (V = 3, 32 px) and the episode was scored
    assert report["settings"]["image_budget"] == 3 and report["settings"]["resolution"] == 32
    assert 0.0 < report["object_micro"]["all"]["mean_iou"] <= 1.0
    result = json.loads((out / "procedural_1" / "seed_0" / "result.json").read_text())
    assert result["agent"].startswith("cleanrl:") and result["nbv"]["env_id"] == "SpatialScout/NBV-v2"
    assert result["counters"]["images_used"] == 3


def evaluate_error(agent: str, tmp_path: Path) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(["evaluate", "--agent", agent, "--scenes", "procedural:1", "--out", str(tmp_path / "e"),
                     "--no-progress"])
    return code, printed.getvalue().strip()


def test_unloadable_files_are_one_line_errors_naming_them(tmp_path):
    import torch

    from spatialscout_gym.nbv.training.cleanrl_net import NBVActorCritic
    trained = NBVConfig(motion="heading", obs_size=32, walls=True)
    good = tmp_path / "good"
    good.mkdir()
    net = NBVActorCritic(nbv_observation_space(trained), int(nbv_action_space(trained).n))
    torch.save({"state_dict": net.state_dict(), "args": {}}, good / "agent.pt")
    save_nbv_config(trained, good, image_budget=3, resolution=32)
    other = tmp_path / "other"            # the same weights, settings of another observation (64 px, no scan)
    other.mkdir()
    (other / "agent.pt").write_bytes((good / "agent.pt").read_bytes())
    save_nbv_config(NBVConfig(motion="heading", obs_size=64, scan_bins=0, walls=True), other)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "agent.pt").write_text("not a torch file")
    save_nbv_config(trained, junk)
    bare = tmp_path / "bare"               # an agent.pt without its nbv_config.json
    bare.mkdir()
    (bare / "agent.pt").write_bytes((good / "agent.pt").read_bytes())
    cases = [(f"cleanrl:{junk / 'agent.pt'}", [str(junk / "agent.pt"), "not an agent.pt"]),
             (f"cleanrl:{other}", [str(other / "agent.pt"), "do not fit"]),
             (f"cleanrl:{bare}", [str(bare / "agent.pt"), "nbv_config.json"]),
             (f"cleanrl:{tmp_path / 'nowhere'}", [str(tmp_path / "nowhere"), "no agent.pt"]),
             (f"ppo:{good / 'agent.pt'}", [str(good / "agent.pt"), f"cleanrl:{good / 'agent.pt'}"])]
    for agent, words in cases:
        code, text = evaluate_error(agent, tmp_path)
        assert code == 2 and len(text.splitlines()) == 1 and "Traceback" not in text, (agent, text)
        assert all(w in text for w in words), (agent, text)


def test_the_trained_policy_agents_adopt_their_settings_through_one_loader(tmp_path):
    """``cleanrl:`` and ``ppo:`` load a policy's saved settings the same way: the dynamics, the
    sampling and the image budget and resolution come from its ``nbv_config.json``, and ``walls``
    and ``deterministic`` given to the agent override them."""
    import torch

    from spatialscout_gym.baselines.cleanrl_agent import CleanRLNBVAgent
    from spatialscout_gym.baselines.nbv_agents import PPONBVAgent
    from spatialscout_gym.nbv.training.cleanrl_net import NBVActorCritic
    trained = NBVConfig(motion="heading", obs_size=32, walls=True)
    crl = tmp_path / "crl"
    crl.mkdir()
    net = NBVActorCritic(nbv_observation_space(trained), int(nbv_action_space(trained).n))
    torch.save({"state_dict": net.state_dict(), "args": {}}, crl / "agent.pt")
    save_nbv_config(trained, crl, image_budget=3, resolution=32)
    shipped = ROOT / "spatialscout_gym" / "nbv" / "models" / "nbv_ppo" / "model.zip"
    for cls, path, settings in ((CleanRLNBVAgent, str(crl), {"image_budget": 3, "resolution": 32}),
                                (PPONBVAgent, str(shipped), {"image_budget": 20, "resolution": 64})):
        agent = cls(path)
        assert agent.config.walls is True and agent.deterministic is False, cls
        assert agent.episode_settings == cls.trained_settings(path) == settings, cls
        assert agent.extra_result()["nbv"]["env_id"] == "SpatialScout/NBV-v2", cls
        other = cls(path, deterministic=True, walls=False)
        assert other.config.walls is False and other.deterministic is True, cls
        assert other.extra_result()["nbv"]["env_id"] == "SpatialScout/NBV-v1", cls
    assert CleanRLNBVAgent.trained_settings(str(tmp_path / "nowhere")) == {}
