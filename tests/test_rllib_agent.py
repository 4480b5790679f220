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


def write_policy(root, obs_size: int = 36, said_obs_size: int | None = None, deterministic: bool = False):
    """An untrained NBVConvModule saved where a run directory keeps it, with its nbv_config.json."""
    from spatialscout_gym.nbv.rllib_train import module_spec
    module = module_spec(NBVConfig(motion="heading", obs_size=obs_size)).build()
    run = root / "run"
    module.save_to_path(str(run / "checkpoint" / "learner_group" / "learner" / "rl_module" / "default_policy"))
    cfg = save_nbv_config(NBVConfig(motion="heading", obs_size=said_obs_size or obs_size), run / "checkpoint",
                          mapper="oracle-surface", image_budget=5, resolution=48, deterministic=deterministic)
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "obs_layout": "image+vector"}))
    return run, module


def test_rllib_policy_loads_from_each_folder_and_runs_an_episode(tmp_path):
    from spatialscout_gym.eval.runner import run_episode
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
    with pytest.raises(ConfigError, match="does not fit the NBV env of its nbv_config.json"):
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
