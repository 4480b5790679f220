"""The NBV-v3 policy: ``train-nbv --init-model`` starts an NBV-v3 policy (one more observation key,
``blocked``) from the NBV-v2 one acting exactly as it did; ``--action-mask`` trains with
MaskablePPO and saves a plain PPO policy of NBV-v3; the shipped ``models/nbv_ppo_v3`` loads by its
documented name from any directory and acts on NBV-v3 observations."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.nbv.config import NBVConfig, nbv_action_space, nbv_observation_space
from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY, SHIPPED_V3_POLICY, load_policy_config, policy_path
from spatialscout_gym.nbv.training.sb3 import start_model

V3 = NBVConfig(walls=True, blocked_obs=True, motion="heading", reward_submitted_weight=0.5)


class SpacesOnly(gym.Env):
    """An env with NBV-v3's spaces, for building a model (never stepped here)."""

    observation_space = nbv_observation_space(V3)
    action_space = nbv_action_space(V3)

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def v3_observations(n: int) -> list[dict]:
    """Real NBV-v3 observations (64 px, a fake renderer), some after blocked moves."""
    spec = small_scene(64, 64)
    env = gym.make("SpatialScout/NBV-v3", scene=spec, renderer=FakeRenderer(spec), image_budget=n + 1)
    obs, _ = env.reset(seed=0)
    out = [obs]
    rng = np.random.default_rng(0)
    for _ in range(n - 1):
        obs, _, term, trunc, _ = env.step(int(rng.integers(18)))
        out.append(obs)
        if term or trunc:   # every target mapped: go on from a new start
            obs, _ = env.reset()
    env.close()
    return out


def batch(observations: list[dict], drop: str | None = None) -> dict:
    return {k: np.stack([o[k] for o in observations]) for k in observations[0] if k != drop}


def test_the_widened_start_acts_exactly_as_the_nbv_v2_policy():
    from sb3_contrib import MaskablePPO
    old = PPO.load(str(SHIPPED_POLICY / "model.zip"), device="cpu")
    new = start_model(MaskablePPO, DummyVecEnv([SpacesOnly]), str(SHIPPED_POLICY / "model.zip"),
                      dict(learning_rate=2e-4, clip_range=0.2, n_steps=16, batch_size=16, seed=0, device="cpu"))
    assert "blocked" in new.observation_space.spaces and "blocked" not in old.observation_space.spaces
    observations = v3_observations(12)
    for o in observations:
        o["blocked"][:] = 0.0
    observations[1]["blocked"][0] = 1.0   # a blocked step too: its weights start at zero, so no change either
    with torch.no_grad():
        t_new, _ = new.policy.obs_to_tensor(batch(observations))
        t_old, _ = old.policy.obs_to_tensor(batch(observations, drop="blocked"))
        np.testing.assert_allclose(new.policy.get_distribution(t_new).distribution.logits.numpy(),
                                   old.policy.get_distribution(t_old).distribution.logits.numpy(), atol=1e-4)
        np.testing.assert_allclose(new.policy.predict_values(t_new).numpy(),
                                   old.policy.predict_values(t_old).numpy(), atol=1e-4)
    a_new = new.predict(batch(observations), deterministic=True)[0]
    a_old = old.predict(batch(observations, drop="blocked"), deterministic=True)[0]
    np.testing.assert_array_equal(a_new, a_old)
    assert len(set(a_old.tolist())) > 1   # the observations differ enough to choose differently


def test_the_nbv_v3_policy_loads_by_its_name_from_any_directory_and_acts_on_nbv_v3(tmp_path, monkeypatch):
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    monkeypatch.chdir(tmp_path)
    for name in ("models/nbv_ppo_v3", "models/nbv_ppo_v3/model.zip", "./models/nbv_ppo_v3/"):
        assert policy_path(name) == SHIPPED_V3_POLICY / "model.zip", name
    saved = json.loads((SHIPPED_V3_POLICY / "nbv_config.json").read_text())
    assert saved["env_id"] == "SpatialScout/NBV-v3" and saved["blocked_obs"] is True
    assert saved["init_model"] == "models/nbv_ppo" and saved["total_timesteps"] > 0 and "seed" in saved
    trained = load_policy_config(policy_path("models/nbv_ppo_v3"))
    assert trained["config"].blocked_obs and trained["image_budget"] == 20 and trained["resolution"] == 64
    agent = make_agent("ppo:models/nbv_ppo_v3")
    assert agent.config.blocked_obs and agent.deterministic is False
    spec = small_scene(64, 64)
    env = gym.make("SpatialScout/NBV-v3", scene=spec, renderer=FakeRenderer(spec), image_budget=4)
    assert agent.model.observation_space.spaces.keys() == env.observation_space.spaces.keys()
    env.close()
    res = run_episode(agent, spec, tmp_path / "run", image_budget=6, tool_call_budget=None, resolution=64,
                      renderer=FakeRenderer(spec))
    assert res["nbv"]["env_id"] == "SpatialScout/NBV-v3" and "blocked" in res["nbv"]["observation_keys"]
    assert res["counters"]["images_used"] == 6 or res["coverage"] == 1.0


@pytest.mark.render
def test_train_nbv_with_the_action_mask_fine_tunes_the_nbv_v2_policy_into_a_plain_ppo_of_nbv_v3(tmp_path, monkeypatch):
    from spatialscout_gym.core.errors import ConfigError
    from spatialscout_gym.nbv.training.sb3 import Args, train
    from spatialscout_gym.nbv.vector import NBVVectorEnv
    asked = []
    masks = NBVVectorEnv.action_masks
    monkeypatch.setattr(NBVVectorEnv, "action_masks", lambda self: asked.append(1) or masks(self))
    args = Args(total_timesteps=16, num_envs=2, num_steps=8, batch_size=16, update_epochs=1, blocked_obs=True,
                action_mask=True, init_model="models/nbv_ppo", reconfigure_every=8, seed=5, out=str(tmp_path),
                run_name="v3", progress_bar=False)
    model_path = train(args)
    assert len(asked) >= 8                        # MaskablePPO asked the envs for their masks at every step
    saved = json.loads((tmp_path / "v3" / "nbv_config.json").read_text())
    assert (saved["env_id"], saved["blocked_obs"], saved["total_timesteps"], saved["seed"]) == \
        ("SpatialScout/NBV-v3", True, 16, 5)
    assert saved["init_model"] == str(SHIPPED_POLICY / "model.zip")
    model = PPO.load(str(model_path), device="cpu")   # a plain PPO zip: what ppo:PATH loads
    assert type(model.policy).__name__ == "MultiInputActorCriticPolicy" and "blocked" in model.observation_space.spaces
    old = PPO.load(str(SHIPPED_POLICY / "model.zip"), device="cpu").policy.state_dict()
    new = model.policy.state_dict()
    first = "mlp_extractor.policy_net.0.weight"
    assert new[first].shape[1] == old[first].shape[1] + 4
    # one small update away from the shipped weights, the blocked columns (first in key order) from zero
    assert float(new[first][:, :4].abs().max()) < 1e-2
    assert all(torch.allclose(v, old[k], atol=1e-2) for k, v in new.items() if v.shape == old[k].shape)
    with pytest.raises(ConfigError, match="add --blocked-obs"):
        train(Args(total_timesteps=8, num_envs=1, num_steps=8, init_model=str(model_path), out=str(tmp_path),
                   run_name="bad"))
    with pytest.raises(ConfigError, match="--action-mask trains with sb3-contrib's MaskablePPO"):
        train(Args(total_timesteps=8, num_envs=1, num_steps=8, blocked_obs=True, action_mask=True,
                   vectorization="sync", out=str(tmp_path), run_name="bad"))


@pytest.mark.render
def test_train_nbv_through_the_scan_guards_mask_saves_a_policy_that_acts_through_that_guard(tmp_path, monkeypatch):
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.core.errors import ConfigError
    from spatialscout_gym.nbv.training.sb3 import Args, train
    from spatialscout_gym.nbv.vector import NBVVectorEnv
    masks: list[np.ndarray] = []
    real = NBVVectorEnv.action_masks
    monkeypatch.setattr(NBVVectorEnv, "action_masks", lambda self: masks.append(real(self)) or masks[-1])
    args = Args(total_timesteps=16, num_envs=2, num_steps=8, batch_size=16, update_epochs=1, blocked_obs=True,
                motion="heading", action_mask_guard_m=0.1, init_model="models/nbv_ppo_v3", reconfigure_every=8,
                seed=5, out=str(tmp_path), run_name="guarded", progress_bar=False)
    train(args)
    assert len(masks) >= 8 and any(not m.all() for m in masks)   # the guard's mask forbade strides
    assert all(m[:, 0::3].all() for m in masks)                    # turning in place never is
    saved = json.loads((tmp_path / "guarded" / "nbv_config.json").read_text())
    assert saved["mask_guard_m"] == 0.1 and saved["scan_guard_m"] == 0.1
    assert make_agent(f"ppo:{tmp_path / 'guarded'}").scan_guard_m == 0.1   # it acts through what it trained under
    with pytest.raises(ConfigError, match="two masks"):
        train(Args(total_timesteps=8, num_envs=1, num_steps=8, blocked_obs=True, motion="heading", action_mask=True,
                   action_mask_guard_m=0.1, out=str(tmp_path), run_name="bad"))


def _value_or_first(name: str) -> bool:
    return name == "mlp_extractor.policy_net.0.weight" or name.startswith(("mlp_extractor.value_net.", "value_net."))


@pytest.mark.render
@pytest.mark.parametrize("init", ["models/nbv_ppo", "models/nbv_ppo_v3"])
def test_train_only_blocked_moves_the_blocked_weights_and_the_value_function_alone(tmp_path, init):
    """From the NBV-v2 policy (widened, a fresh optimizer) and from the NBV-v3 one (loaded whole,
    its optimizer's moments with it): every policy weight but the ``blocked`` columns is the
    starting one, bit for bit, so the policy acts as it did on any step whose move was not blocked."""
    from spatialscout_gym.nbv.training.sb3 import Args, train
    start = PPO.load(str(policy_path(init)), device="cpu")
    path = train(Args(total_timesteps=64, num_envs=2, num_steps=16, batch_size=16, update_epochs=2, blocked_obs=True,
                      train_only_blocked=True, init_model=init, learning_rate=1e-3, reconfigure_every=8, seed=5,
                      out=str(tmp_path), run_name="only", progress_bar=False))
    tuned = PPO.load(str(path), device="cpu")
    old, new = start.policy.state_dict(), tuned.policy.state_dict()
    first = "mlp_extractor.policy_net.0.weight"
    width = new[first].shape[1] - old[first].shape[1]         # 4 from NBV-v2 (no 'blocked'), 0 from NBV-v3
    assert width in (0, 4)
    for name, value in new.items():
        if not _value_or_first(name):
            assert torch.equal(value, old[name]), name
    assert torch.equal(new[first][:, 4:], old[first][:, 4 - width:])   # 'blocked' is the first key: columns 0-3
    assert not torch.equal(new[first][:, :4], old[first][:, :4] if width == 0 else torch.zeros_like(new[first][:, :4]))
    assert any(not torch.equal(v, old[k]) for k, v in new.items() if k.startswith("value_net."))
    observations = v3_observations(8)
    for o in observations:
        o["blocked"][:] = 0.0
    blocked = [dict(o, blocked=np.array([1.0, 0, 0, 0], np.float32)) for o in observations]
    with torch.no_grad():
        def logits(model, obs, drop=None):
            return model.policy.get_distribution(model.policy.obs_to_tensor(batch(obs, drop))[0]).distribution.logits
        assert torch.allclose(logits(tuned, observations), logits(start, observations, None if width == 0 else "blocked"),
                              atol=1e-6)
        assert not torch.allclose(logits(tuned, blocked), logits(start, blocked, None if width == 0 else "blocked"),
                                  atol=1e-6)
    assert json.loads((tmp_path / "only" / "args.json").read_text())["train_only_blocked"] is True


def test_train_only_blocked_is_refused_without_a_saved_policy_or_the_blocked_key(tmp_path):
    from spatialscout_gym.core.errors import ConfigError
    from spatialscout_gym.nbv.training.only_key import train_only_key
    from spatialscout_gym.nbv.training.sb3 import Args, train
    for bad in (dict(blocked_obs=True), dict(init_model="models/nbv_ppo")):
        with pytest.raises(ConfigError, match="--train-only-blocked .* needs --blocked-obs and --init-model"):
            train(Args(total_timesteps=8, num_envs=1, num_steps=8, train_only_blocked=True, out=str(tmp_path),
                       run_name="bad", **bad))
    assert not (tmp_path / "bad").exists()
    with pytest.raises(ValueError, match="observes no 'blocked'"):
        train_only_key(PPO.load(str(SHIPPED_POLICY / "model.zip"), device="cpu").policy, "blocked")


def test_the_shipped_blocked_fine_tune_is_the_nbv_v2_policy_but_for_its_blocked_weights(tmp_path, monkeypatch):
    """``models/nbv_ppo_v3_blocked`` is what its files say: ``models/nbv_ppo``'s policy weights bit
    for bit but for the first layer's ``blocked`` columns (trained, not zero), so it acts exactly as
    the NBV-v2 policy unless the last move was blocked; it loads by its name from any directory and
    acts through the held-back scan guard."""
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.nbv.policy_files import SHIPPED_V3_BLOCKED_POLICY
    monkeypatch.chdir(tmp_path)
    assert policy_path("models/nbv_ppo_v3_blocked") == SHIPPED_V3_BLOCKED_POLICY / "model.zip"
    saved = json.loads((SHIPPED_V3_BLOCKED_POLICY / "nbv_config.json").read_text())
    assert (saved["env_id"], saved["blocked_obs"], saved["init_model"]) == ("SpatialScout/NBV-v3", True, "models/nbv_ppo")
    agent = make_agent("ppo:models/nbv_ppo_v3_blocked")
    assert (agent.scan_guard_m, agent.scan_guard_after_blocked, agent.deterministic) == (0.1, 2, False)
    old = PPO.load(str(SHIPPED_POLICY / "model.zip"), device="cpu")
    new = agent.model
    old_state, new_state = old.policy.state_dict(), new.policy.state_dict()
    first = "mlp_extractor.policy_net.0.weight"
    for name, value in new_state.items():
        if name == first:
            assert torch.equal(value[:, 4:], old_state[name]) and float(value[:, :4].abs().max()) > 0
        elif not _value_or_first(name):
            assert torch.equal(value, old_state[name]), name
    observations = v3_observations(8)
    for o in observations:
        o["blocked"][:] = 0.0
    a_new = new.predict(batch(observations), deterministic=True)[0]
    np.testing.assert_array_equal(a_new, old.predict(batch(observations, drop="blocked"), deterministic=True)[0])
