"""The ``rllib:PATH`` agent and ``train-nbv --backend rllib``'s option checks, without a cluster: an
RLModule checkpoint written here is loaded from its checkpoint folders, runs an episode through the
runner, adopts its training settings in ``evaluate``, and a policy that does not fit its config or a
bad option is refused in one line."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="needs the ray extra with RLlib")

from fakes import FakeRenderer, small_scene
from spatialscout_gym.baselines.nbv_agents import save_nbv_config
from spatialscout_gym.baselines.registry import is_nbv_agent, make_agent
from spatialscout_gym.nbv.config import NBVConfig, layout_observation


pytestmark = pytest.mark.xdist_group("ray")   # Ray and the shared RL recipes: one worker (tests/conftest.py)

def with_repo_path() -> dict:
    """This environment with this checkout first on the import path (for a ``python -c`` line)."""
    import os
    from pathlib import Path
    repo = str(Path(__file__).resolve().parents[1])
    return dict(os.environ, PYTHONPATH=os.pathsep.join([repo, *filter(None, [os.environ.get("PYTHONPATH")])]))


def write_policy(root, obs_size: int = 36, said_obs_size: int | None = None, deterministic: bool = False):
    """An untrained NBVConvModule saved where a run directory keeps it, with its nbv_config.json."""
    from spatialscout_gym.nbv.training.rllib import module_spec
    module = module_spec(NBVConfig(motion="heading", obs_size=obs_size)).build()
    run = root / "run"
    module.save_to_path(str(run / "checkpoint" / "learner_group" / "learner" / "rl_module" / "default_policy"))
    cfg = save_nbv_config(NBVConfig(motion="heading", obs_size=said_obs_size or obs_size), run / "checkpoint",
                          mapper="oracle-surface", image_budget=5, resolution=48, deterministic=deterministic)
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "obs_layout": "image+vector"}))
    return run, module


def test_rllib_policy_loads_from_each_folder_and_runs_an_episode(tmp_path):
    from spatialscout_gym.eval.running.runner import run_episode
    run, module = write_policy(tmp_path)
    assert is_nbv_agent(f"rllib:{run}")              # the NBV tables' protocol (no tool-call cap)
    inner = run / "checkpoint" / "learner_group" / "learner" / "rl_module" / "default_policy"
    for path in (run, run / "checkpoint", inner):
        agent = make_agent(f"rllib:{path}")
        assert agent.mapper_name == "oracle-surface" and agent.config.obs_size == 36
        assert agent.episode_settings == {"image_budget": 5, "resolution": 48} and not agent.deterministic
    # the loaded module is the saved one: same logits on the same observation
    import torch
    space = module.observation_space
    obs = {"image": np.random.default_rng(0).integers(0, 256, (36, 36, 3), dtype=np.uint8),
           "pose": np.zeros(6, np.float32), "coverage": np.ones(2, np.float32) / 2,
           "sectors": np.zeros(8, np.float32), "map": np.zeros((3, 16, 16), np.float32),
           "scan": np.zeros(12, np.float32)}
    x = layout_observation(obs, "image+vector")
    assert space.contains(x)
    with torch.no_grad():
        want = module.forward_inference({"obs": {k: torch.as_tensor(v)[None] for k, v in x.items()}})
    assert np.allclose(agent.logits(obs), want["action_dist_inputs"][0].numpy())
    spec = small_scene(64, 64)
    res = run_episode(make_agent(f"rllib:{run}", deterministic=True), spec, tmp_path / "ep", image_budget=5,
                      tool_call_budget=None, resolution=48, renderer=FakeRenderer(spec, 48, 48))
    assert res["end_reason"] == "finish_mapping"
    assert res["counters"]["images_used"] == 5 or res["coverage"] == 1.0


def test_evaluate_adopts_the_rllib_policys_settings(tmp_path):
    from spatialscout_gym.cli.options import check_episode_options
    run, _ = write_policy(tmp_path)
    args = argparse.Namespace(agent=f"rllib:{run}", image_budget=None, resolution=None, call_budget=None)
    check_episode_options(args)
    assert (args.image_budget, args.resolution, args.call_budget) == (5, 48, None)


def test_a_policy_that_does_not_fit_its_config_or_no_policy_is_refused(tmp_path):
    from spatialscout_gym.core.errors import ConfigError, ResourceMissingError
    run, _ = write_policy(tmp_path, obs_size=36, said_obs_size=40)
    with pytest.raises(ConfigError, match=r"does not fit the NBV env \(its \S+/checkpoint/nbv_config.json does not "):
        make_agent(f"rllib:{run}")
    with pytest.raises(ResourceMissingError, match="no RLlib checkpoint at"):
        make_agent(f"rllib:{tmp_path / 'nothing'}")


@pytest.mark.parametrize("argv, says", [
    (["--backend", "tf"], "--backend must be one of sb3, rllib, got 'tf'"),
    (["--backend", "rllib", "--num-envs", "3", "--num-env-runners", "2"], "--num-envs must be a multiple of it"),
    (["--backend", "rllib", "--init-model", "x"], "--init-model continues an SB3 model.zip"),
])
def test_bad_rllib_options_are_one_line_errors(tmp_path, capsys, argv, says):
    from spatialscout_gym.cli.main import main
    assert main(["train-nbv", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_without_nbv_config_rllib_assumes_nbv_v1_and_says_the_line_that_fixes_a_misfit(tmp_path):
    """No nbv_config.json anywhere: NBV-v1's settings are assumed (a 64 px policy loads as it is);
    a 36 px one is refused in one line that names no nbv_config.json that does not exist and gives
    the line that writes one; after that line the policy loads."""
    import shlex
    import subprocess
    import sys

    from spatialscout_gym.core.errors import ConfigError
    run, _ = write_policy(tmp_path / "v1", obs_size=64)
    (run / "checkpoint" / "nbv_config.json").unlink()
    agent = make_agent(f"rllib:{run}")
    assert (agent.config.motion, agent.config.obs_size, agent.episode_settings) == ("heading", 64, {})

    run, _ = write_policy(tmp_path / "small", obs_size=36)
    (run / "checkpoint" / "nbv_config.json").unlink()
    with pytest.raises(ConfigError) as err:
        make_agent(f"rllib:{run}")
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and "SpatialScout/NBV-v1's settings were assumed" in msg
    assert "observation 'image' shape (3, 36, 36) (policy) vs (3, 64, 64) (env)" in msg
    assert "/nbv_config.json" not in msg and not list(run.rglob("nbv_config.json"))
    fix = msg.split("NBVConfig field it was trained with): ", 1)[1]
    assert "obs_size=36" in fix and "motion='heading'" in fix
    argv = shlex.split(fix)
    assert argv[:2] == ["python", "-c"] and len(argv) == 3
    done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, env=with_repo_path())
    assert done.returncode == 0, done.stderr
    assert (run / "nbv_config.json").is_file()
    assert make_agent(f"rllib:{run}").config.obs_size == 36
