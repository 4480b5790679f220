"""The SB3 recipe with a 3D-convolution occupancy encoder (examples/sb3_occupancy_conv3d.py): the
extractor reads the one-hot voxel grid (a changed voxel changes the features), refuses a grid too
small for its two stride-2 convolutions, and the recipe, run as a user runs it, trains, saves its
NBV settings and is evaluated by ``spatialscout evaluate --agent ppo:PATH`` from another process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import torch

import spatialscout_gym  # noqa: F401  (registers the ids)
from rl_recipes_trained import load_example

pytestmark = pytest.mark.render
ROOT = Path(__file__).resolve().parents[1]


def test_the_extractor_reads_the_voxel_grid_and_refuses_a_grid_too_small():
    ex = load_example("sb3_occupancy_conv3d")
    env = gym.make("SpatialScout/NBV-v2", image_budget=3, resolution=32, privileged_obs=["occupancy"],
                   occupancy_cells=(8, 8, 4))
    try:
        obs, _ = env.reset(seed=0)
        space = env.observation_space
    finally:
        env.close()
    # what PPO hands the extractor: the image channel-first (VecTransposeImage) and scaled to [0, 1]
    from stable_baselines3.common.vec_env import VecTransposeImage
    space = gym.spaces.Dict({k: VecTransposeImage.transpose_space(s) if k == "image" else s
                             for k, s in space.spaces.items()})
    obs = {**obs, "image": obs["image"].transpose(2, 0, 1) / 255.0}
    torch.manual_seed(0)
    net = ex.OccupancyConv3dExtractor(space, occupancy_dim=16, cnn_dim=32)
    assert any(isinstance(m, torch.nn.Conv3d) for m in net.modules())
    assert "occupancy" not in net.flat_keys and set(net.images) == {"image"}
    batch = {k: torch.as_tensor(v, dtype=torch.float32)[None] for k, v in obs.items()}
    features = net(batch)
    assert features.shape == (1, net.features_dim) and torch.isfinite(features).all()
    grid = batch["occupancy"].clone()
    grid[0, 0, 0, 0] = 2 if int(grid[0, 0, 0, 0]) != 2 else 0      # one voxel in another state
    assert not torch.equal(net({**batch, "occupancy": grid}), features)
    small = gym.spaces.Dict({**space.spaces, "occupancy": gym.spaces.Box(0, 2, (8, 8, 2))})
    with pytest.raises(ValueError, match="at least 4 voxels"):
        ex.OccupancyConv3dExtractor(small)


def test_the_recipe_trains_and_its_policy_is_evaluated_from_another_process(tmp_path):
    save = tmp_path / "occ" / "model"
    train = subprocess.run([sys.executable, "examples/sb3_occupancy_conv3d.py", "--total-timesteps", "64",
                            "--n-envs", "1", "--n-steps", "32", "--image-budget", "4", "--resolution", "32",
                            "--cells", "8", "8", "4", "--save", str(save)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert train.returncode == 0, train.stderr[-3000:]
    settings = json.loads((save.parent / "nbv_config.json").read_text())
    assert settings["privileged_obs"] == ["occupancy"] and settings["occupancy_cells"] == [8, 8, 4]
    assert settings["occupancy_frame"] == "gravity"
    out = tmp_path / "ev"
    done = subprocess.run([str(Path(sys.executable).with_name("spatialscout")), "evaluate", "--agent",
                           f"ppo:{save}.zip", "--scenes", "procedural:3", "--out", str(out), "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(next(out.rglob("result.json")).read_text())
    assert result["status"] == "ok" and result["nbv"]["observation_keys"] and "occupancy" in result["nbv"]["observation_keys"]
