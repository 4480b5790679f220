"""The scan guard: a heading policy acting through it never takes a stride longer than the free
distance its own ``scan`` observation shows that way (less the margin); turning in place and bins
with no depth stay allowed; the margin comes from ``nbv_config.json`` or the agent option and is
recorded in the run's ``nbv`` block."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import spatialscout_gym.nbv.scan_guard as scan_guard
from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.nbv.config import NBVConfig
from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY, SHIPPED_V3_POLICY, load_policy_config
from spatialscout_gym.nbv.scan_guard import heading_index, scan_guard_mask

HEADING = NBVConfig(motion="heading")      # 6 headings x strides (0, 1, 2) m, 12 scan bins of 30 degrees, 6 m range


def _scan(**free_m: float) -> np.ndarray:
    """A scan with the free distance (m) of some bins (``b0=1.2``), the rest unknown (0)."""
    scan = np.zeros(HEADING.scan_bins, np.float32)
    for name, metres in free_m.items():
        scan[int(name[1:])] = metres / HEADING.scan_range_m
    return scan


def test_a_stride_longer_than_the_free_distance_is_forbidden_and_turning_never_is():
    allowed = scan_guard_mask(_scan(b0=1.2), HEADING, 0.1)
    assert allowed[[0, 1, 2]].tolist() == [True, True, False]          # ahead: 0 m, 1 m fit 1.2 m; 2 m does not
    assert allowed[3:].all()                                           # other headings: nothing seen there
    assert scan_guard_mask(_scan(b0=1.2), HEADING, 0.3)[[0, 1, 2]].tolist() == [True, False, False]
    # heading k turns 60 k degrees left: bin 2 k; k = 3 is behind (bin 6), k = 5 is 60 degrees right (bin 10)
    allowed = scan_guard_mask(_scan(b6=0.5, b10=2.5, b2=9.0), HEADING, 0.2)
    assert allowed[[9, 10, 11]].tolist() == [True, False, False]
    assert allowed[[15, 16, 17]].tolist() == [True, True, True]       # 2 m + 0.2 m fit 2.5 m
    assert allowed[[3, 4, 5]].tolist() == [True, True, True]
    assert allowed[[0, 3, 6, 9, 12, 15]].all()                         # stride 0 everywhere


def test_a_neighbouring_bin_counts_projected_onto_the_stride():
    # a wall seen 30 degrees off the stride at 2.0 m is 2.0 cos 30 = 1.73 m away along it
    allowed = scan_guard_mask(_scan(b0=6.0, b1=2.0), HEADING, 0.0)
    assert allowed[[0, 1, 2]].tolist() == [True, True, False]
    assert scan_guard_mask(_scan(b1=2.4), HEADING, 0.0)[[0, 1, 2]].tolist() == [True, True, True]   # 2.08 m
    # bin 3 (90 degrees left) neighbours headings 1 and 2 (60 and 120 degrees) only
    allowed = scan_guard_mask(_scan(b3=0.1), HEADING, 0.0).reshape(6, 3)
    assert allowed[[1, 2], 1:].sum() == 0 and allowed[[0, 3, 4, 5]].all() and allowed[:, 0].all()


def test_a_closed_heading_turns_in_place_only():
    allowed = scan_guard_mask(_scan(), HEADING, 0.3, closed={1, 4})
    assert allowed[[3, 4, 5, 12, 13, 14]].tolist() == [True, False, False, True, False, False]
    assert allowed[[0, 1, 2, 6, 7, 8, 9, 10, 11, 15, 16, 17]].all()


def test_a_guard_held_back_from_the_scan_forbids_only_the_closed_headings():
    scan = _scan(b0=1.2, b6=0.5)
    held = scan_guard_mask(scan, HEADING, 0.1, closed={1}, by_scan=False)
    assert held.reshape(6, 3).tolist() == [[True] * 3, [True, False, False]] + [[True] * 3] * 4
    judged = scan_guard_mask(scan, HEADING, 0.1, closed={1})
    assert judged[[2, 10, 11]].tolist() == [False, False, False]      # what the scan alone forbids


def test_heading_index_maps_a_turn_to_its_heading():
    assert [heading_index(t, HEADING) for t in (0.0, 59.0, -60.0, 180.0, -179.0, 30.0, 720.0)] == [0, 1, 5, 3, 3, None, 0]


@pytest.mark.parametrize("config, scan, margin, words", [
    (NBVConfig(motion="discrete"), _scan(), 0.1, "heading motion"),
    (HEADING, np.zeros(8), 0.1, "12 bins"),
    (HEADING, _scan(), -0.1, "margin"),
    (HEADING, _scan(), float("nan"), "margin"),
])
def test_bad_input_is_refused(config, scan, margin, words):
    with pytest.raises(ValueError, match=words):
        scan_guard_mask(scan, config, margin)


def _policy_copy(d: Path, **fields: object) -> str:
    """A copy of the shipped NBV-v3 policy in ``d`` whose ``nbv_config.json`` sets ``fields``."""
    shutil.copytree(SHIPPED_V3_POLICY, d)
    saved = json.loads((d / "nbv_config.json").read_text())
    (d / "nbv_config.json").write_text(json.dumps({**saved, **fields}))
    return str(d)


def _guarded_copy(tmp_path, margin) -> str:
    return _policy_copy(tmp_path / "guarded", scan_guard_m=margin)


def test_the_margin_is_read_from_the_policy_settings_and_a_bad_one_is_refused(tmp_path):
    from spatialscout_gym.baselines.registry import make_agent
    assert load_policy_config(SHIPPED_V3_POLICY / "model.zip")["scan_guard_m"] == 0.1      # the shipped default
    assert load_policy_config(SHIPPED_POLICY / "model.zip")["scan_guard_m"] is None        # NBV-v2: none
    assert make_agent(f"ppo:{_guarded_copy(tmp_path, 0.25)}").scan_guard_m == 0.25
    assert make_agent("ppo:models/nbv_ppo_v3", scan_guard_m=0.5).scan_guard_m == 0.5
    for bad in (-1, "0.3", True):
        with pytest.raises(ConfigError, match="scan_guard_m"):
            make_agent(f"ppo:{_guarded_copy(tmp_path / str(bad), bad)}")
    from spatialscout_gym.baselines.nbv_agents import TrainedNBVAgent
    trained = load_policy_config(SHIPPED_V3_POLICY / "model.zip")
    with pytest.raises(ConfigError, match="heading policy"):
        TrainedNBVAgent({**trained, "config": NBVConfig(motion="continuous")}, SHIPPED_V3_POLICY / "model.zip",
                        scan_guard_m=0.3)


def test_the_count_of_blocked_moves_before_the_scan_judges_is_read_and_checked(tmp_path):
    from spatialscout_gym.baselines.registry import make_agent

    def copy(name: str, **fields: object) -> str:
        return _policy_copy(tmp_path / name, **fields)

    assert make_agent(f"ppo:{copy('two', scan_guard_after_blocked=2)}").scan_guard_after_blocked == 2
    assert make_agent(f"ppo:{copy('zero', scan_guard_after_blocked=0)}").scan_guard_after_blocked is None
    assert make_agent("ppo:models/nbv_ppo_v3", scan_guard_after_blocked=3).scan_guard_after_blocked == 3
    for i, bad in enumerate((-1, "2", True, 1.5)):
        with pytest.raises(ConfigError, match="scan_guard_after_blocked must be"):
            make_agent(f"ppo:{copy(f'bad{i}', scan_guard_after_blocked=bad)}")
    with pytest.raises(ConfigError, match="needs the guard's margin"):
        make_agent(f"ppo:{copy('unguarded', scan_guard_m=None, scan_guard_after_blocked=2)}")
    with pytest.raises(ConfigError, match="scan_guard_after_blocked must be"):
        make_agent("ppo:models/nbv_ppo_v3", scan_guard_after_blocked=-2)
    with pytest.raises(ConfigError, match="acts through no scan guard"):
        make_agent("ppo:models/nbv_ppo", scan_guard_after_blocked=2)          # NBV-v2's: no guard to hold back


@pytest.mark.parametrize("after", [1, 2])
def test_the_guard_judges_by_the_scan_from_the_blocked_move_it_is_told(after, monkeypatch):
    """Walked into walls, a guarded agent builds every step's mask from the closed headings alone
    until it has seen ``after`` blocked moves, and by the scan from then on."""
    import types

    import gymnasium as gym

    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.scenes.catalog import load_scene
    built: list[bool] = []

    def recorded(scan, config, margin_m, closed=(), by_scan=True):
        built.append(by_scan)
        return scan_guard_mask(scan, config, margin_m, closed, by_scan)

    monkeypatch.setattr(scan_guard, "scan_guard_mask", recorded)
    spec = load_scene("Kitchen_01")
    env = gym.make("SpatialScout/NBV-v3", scene=spec, renderer=FakeRenderer(spec, 64, 64), resolution=64,
                   obs_size=64, image_budget=40)
    agent = make_agent("ppo:models/nbv_ppo_v3", scan_guard_m=0.1, scan_guard_after_blocked=after)
    agent.begin(None, np.random.default_rng(0))
    obs, _ = env.reset(seed=0)
    seen = 0
    expected: list[bool] = []
    for _ in range(30):
        seen += bool(np.any(obs["blocked"]))
        ctl = types.SimpleNamespace(episode=types.SimpleNamespace(pose=env.unwrapped.core.pose_world))
        agent.act(obs, ctl, np.random.default_rng(1))
        expected.append(seen >= after)
        obs, _, term, trunc, _ = env.step(2)                      # straight on, 2 m: into the walls
        if term or trunc:
            break
    env.close()
    assert built == expected
    assert False in built and True in built, (seen, built)


def test_every_step_of_a_guarded_episode_is_one_the_guard_allowed(tmp_path, monkeypatch):
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    masks: list[np.ndarray] = []

    def recorded(scan, config, margin_m, closed=(), by_scan=True):
        masks.append(scan_guard_mask(scan, config, margin_m, closed, by_scan))
        return masks[-1]

    monkeypatch.setattr(scan_guard, "scan_guard_mask", recorded)
    spec = small_scene(64, 64)
    agent = make_agent("ppo:models/nbv_ppo_v3", scan_guard_m=3.0)     # a wide margin, so that it forbids
    res = run_episode(agent, spec, tmp_path / "run", image_budget=10, tool_call_budget=None, resolution=64,
                      renderer=FakeRenderer(spec))
    steps = [json.loads(ln) for ln in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()
             if '"nbv_step"' in ln]
    actions = [s["action"] for s in steps if s.get("event") == "nbv_step"]
    assert len(actions) == len(masks) > 0
    assert all(m[a] for m, a in zip(masks, actions))
    assert any(not m.all() for m in masks), "the guard never forbade anything: the test shows nothing"
    assert res["nbv"]["scan_guard_m"] == 3.0


def test_a_guard_that_forbids_every_stride_leaves_the_camera_turning_in_place(tmp_path, monkeypatch):
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    monkeypatch.setattr(scan_guard, "scan_guard_mask",
                        lambda scan, config, margin_m, closed=(), by_scan=True: np.arange(18) % 3 == 0)   # strides forbidden
    spec = small_scene(64, 64)
    res = run_episode(make_agent("ppo:models/nbv_ppo_v3", scan_guard_m=0.3), spec, tmp_path / "run",
                      image_budget=8, tool_call_budget=None, resolution=64, renderer=FakeRenderer(spec))
    steps = [json.loads(ln) for ln in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()
             if '"nbv_step"' in ln]
    assert steps and all(s["action"] % 3 == 0 for s in steps)
    assert res["exploration"]["blocked_moves"] == 0


def test_the_agent_remembers_a_blocked_move_as_a_closed_heading_from_where_it_stood():
    import types
    from spatialscout_gym.baselines.registry import make_agent

    def ctl(x: float, yaw: float):
        pose = types.SimpleNamespace(position_world=np.array([x, 0.0, 1.6]), yaw_deg=yaw)
        return types.SimpleNamespace(episode=types.SimpleNamespace(pose=pose))

    agent = make_agent("ppo:models/nbv_ppo_v3", scan_guard_m=0.3)
    agent.begin(None, np.random.default_rng(0))
    clear, blocked = {"blocked": np.zeros(4, np.float32)}, {"blocked": np.array([1, 0, 0, 0], np.float32)}
    assert agent._closed_headings(clear, ctl(0.0, 0.0)) == set()
    # a move turned the camera to 60 degrees and was blocked there: that way is closed from here
    assert agent._closed_headings(blocked, ctl(0.0, 60.0)) == {0}
    assert agent._closed_headings(clear, ctl(0.1, 0.0)) == {1}        # facing 0 now: 60 degrees left is heading 1
    assert agent._closed_headings(clear, ctl(0.1, 180.0)) == {4}      # -120 degrees: heading 4
    assert agent._closed_headings(clear, ctl(1.0, 0.0)) == set()      # a metre away it is open again
    agent.begin(None, np.random.default_rng(0))
    assert agent._closed_headings(clear, ctl(0.0, 0.0)) == set()      # a new episode forgets


def test_a_resumed_evaluation_redoes_episodes_its_policy_now_acts_otherwise_in(tmp_path):
    """A guard turned on, the scan held back, or other weights saved over the policy's file: each
    makes the recorded episode another agent's, so a resumed evaluation redoes it (kept as an attempt)."""
    from spatialscout_gym.eval.running.evaluate import evaluate
    from spatialscout_gym.eval.running.tasks import EvalSettings
    policy = _guarded_copy(tmp_path, None)                      # the fine-tune alone, as 0.4.0 shipped it
    spec = tmp_path / "scene.json"
    spec.write_text(small_scene(64, 64, scene_id="fake-guard").to_json())
    out = tmp_path / "ev"

    def run() -> dict:
        summary = evaluate(out, EvalSettings(f"ppo:{policy}", 4, None, 64), [str(spec)], seeds=1, workers=1,
                           progress=False, renderer_factory=FakeRenderer, write_report=False)
        assert summary.total == 1 and not summary.failed, summary
        return json.loads(next(out.glob("*/seed_0/result.json")).read_text())

    assert "scan_guard_m" not in run()["nbv"]
    first = next(out.glob("*/seed_0/trace.jsonl")).read_bytes()
    assert "scan_guard_m" not in run()["nbv"]                    # nothing changed: the episode is kept
    assert next(out.glob("*/seed_0/trace.jsonl")).read_bytes() == first
    assert not list(out.glob("*/seed_0/attempts/*"))
    saved = json.loads((Path(policy) / "nbv_config.json").read_text())
    (Path(policy) / "nbv_config.json").write_text(json.dumps({**saved, "scan_guard_m": 0.1}))
    assert run()["nbv"]["scan_guard_m"] == 0.1                   # the policy acts otherwise now: redone
    assert len(list(out.glob("*/seed_0/attempts/*"))) == 1       # the earlier episode kept as an attempt
    assert "scan_guard_after_blocked" not in run()["nbv"]        # unchanged: kept
    (Path(policy) / "nbv_config.json").write_text(json.dumps({**saved, "scan_guard_m": 0.1,
                                                              "scan_guard_after_blocked": 2}))
    assert run()["nbv"]["scan_guard_after_blocked"] == 2         # the scan held back now: redone
    assert len(list(out.glob("*/seed_0/attempts/*"))) == 2
    # other weights under the same path (a retrained policy saved over the old): another agent
    from spatialscout_gym.nbv.policy_files import SHIPPED_V3_BLOCKED_POLICY, policy_sha256
    before = run()["nbv"]["policy_sha256"]
    assert before == policy_sha256(Path(policy) / "model.zip") and len(list(out.glob("*/seed_0/attempts/*"))) == 2
    shutil.copyfile(SHIPPED_V3_BLOCKED_POLICY / "model.zip", Path(policy) / "model.zip")
    after = run()["nbv"]["policy_sha256"]
    assert after == policy_sha256(SHIPPED_V3_BLOCKED_POLICY / "model.zip") != before   # redone with them
    assert len(list(out.glob("*/seed_0/attempts/*"))) == 3


def test_a_cleanrl_policy_with_a_scan_guard_is_refused_not_recorded_unapplied(tmp_path):
    import torch

    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.nbv.config import nbv_action_space, nbv_observation_space
    from spatialscout_gym.nbv.policy_files import save_nbv_config
    from spatialscout_gym.nbv.training.cleanrl_net import NBVActorCritic
    trained = NBVConfig(motion="heading", obs_size=32, walls=True)
    net = NBVActorCritic(nbv_observation_space(trained), int(nbv_action_space(trained).n))
    torch.save({"state_dict": net.state_dict(), "args": {}}, tmp_path / "agent.pt")
    config = save_nbv_config(trained, tmp_path, image_budget=3, resolution=32)
    assert make_agent(f"cleanrl:{tmp_path}").scan_guard_m is None
    config.write_text(json.dumps({**json.loads(config.read_text()), "scan_guard_m": 0.1}))
    with pytest.raises(ConfigError, match="only ppo:PATH"):
        make_agent(f"cleanrl:{tmp_path}")


def test_the_envs_guard_mask_is_the_one_a_guarded_agent_acts_through():
    """``mask_guard_m`` makes ``action_masks()`` the scan guard's mask: at every step of a walk it
    equals the mask a ``ppo:PATH`` agent with that margin builds from the same observations and
    its own memory of blocked moves (so a policy trained under it samples as it will act)."""
    import types

    import gymnasium as gym

    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.scenes.catalog import load_scene
    spec = load_scene("Kitchen_01")
    env = gym.make("SpatialScout/NBV-v3", scene=spec, renderer=FakeRenderer(spec, 32, 32), resolution=32,
                   obs_size=32, image_budget=60, mask_guard_m=0.3)
    agent = make_agent("ppo:models/nbv_ppo_v3", scan_guard_m=0.3)
    agent.begin(None, np.random.default_rng(0))
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(2)
    blocked = closed_seen = forbidden = 0
    for step in range(40):
        core = env.unwrapped.core
        ctl = types.SimpleNamespace(episode=types.SimpleNamespace(pose=core.pose_world))
        closed = agent._closed_headings(obs, ctl)
        expected = scan_guard_mask(obs["scan"], agent.config, 0.3, closed)
        mask = env.unwrapped.action_masks()
        np.testing.assert_array_equal(mask, expected, err_msg=f"step {step}")
        closed_seen += bool(closed)
        forbidden += int(not mask.all())
        # mostly straight on (into walls), some of it through the mask, some against it
        action = 2 if step % 4 else int(rng.choice(np.flatnonzero(mask)))
        obs, _, term, trunc, info = env.step(action)
        blocked += bool(info["blocked"])
        if term or trunc:
            break
    assert blocked and closed_seen and forbidden, (blocked, closed_seen, forbidden)
    with pytest.raises(ValueError, match="mask_guard_m"):
        NBVConfig(motion="discrete", mask_guard_m=0.1)
    with pytest.raises(ValueError, match="mask_guard_m"):
        NBVConfig(motion="heading", mask_guard_m=-0.1)
    env.close()


def test_a_resumed_evaluation_redoes_an_nbv_episode_recorded_before_the_mapper_was(tmp_path):
    from spatialscout_gym.eval.running.evaluate import evaluate
    from spatialscout_gym.eval.running.tasks import EvalSettings
    spec = tmp_path / "scene.json"
    spec.write_text(small_scene(64, 64, scene_id="fake-mapper").to_json())
    out = tmp_path / "ev"

    def run():
        summary = evaluate(out, EvalSettings("frontier-nbv", 3, None, 64), [str(spec)], seeds=1, workers=1,
                           progress=False, renderer_factory=FakeRenderer, write_report=False)
        assert summary.total == 1 and not summary.failed, summary
        return summary

    run()
    result = next(out.glob("*/seed_0/result.json"))
    assert json.loads(result.read_text())["nbv"]["mapper"] == "oracle"
    assert run().skipped == 1                                   # recorded with its mapper: kept
    old = json.loads(result.read_text())
    del old["nbv"]["mapper"]                                    # as 0.5.0 wrote it
    result.write_text(json.dumps(old))
    summary = run()
    assert "no nbv.mapper" in next(iter(summary.redone.values()))
    assert json.loads(result.read_text())["nbv"]["mapper"] == "oracle"
