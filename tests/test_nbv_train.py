"""The CleanRL-style PPO trainer runs end to end with a tiny budget, and ``ppo:PATH`` loads and runs
the saved policy."""

from __future__ import annotations

import json

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.nbv.training.sb3 import Args, planned_steps, summary_line, train
from spatialscout_gym.eval.running.runner import run_episode
from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY


@pytest.mark.render
@pytest.mark.slow
def test_trainer_end_to_end_then_ppo_agent_runs(tmp_path, capsys):
    # 64 requested steps in rollouts of 2 x 24 = 48: PPO really takes 96; the bar says so
    args = Args(total_timesteps=64, num_envs=2, num_steps=24, batch_size=24, update_epochs=1,
                image_budget=5, resolution=48, obs_size=48, mapper="oracle-surface", reconfigure_every=2,
                out=str(tmp_path), run_name="tiny", progress_bar=True, checkpoint_every=40)
    assert planned_steps(args) == 96
    model = train(args)
    out, err = capsys.readouterr()
    assert "96/96" in err and "/64" not in err and "97/" not in err and "98/" not in err
    last = out.strip().splitlines()[-1]
    assert last.startswith("train-nbv: 96 steps in ") and "steps/s" in last and str(model) in last
    run_dir = tmp_path / "tiny"
    assert model == run_dir / "model.zip" and model.exists()
    saved = json.loads((run_dir / "nbv_config.json").read_text())
    assert (saved["motion"], saved["mapper"], saved["image_budget"], saved["resolution"], saved["obs_size"]) \
        == ("heading", "oracle-surface", 5, 48, 48)
    assert (saved["headings"], saved["strides_m"], saved["scan_bins"]) == (6, [0.0, 1.0, 2.0], 12)
    assert json.loads((run_dir / "args.json").read_text())["total_timesteps"] == 64
    assert list(run_dir.glob("events.out.tfevents.*")), "no tensorboard file"
    # a checkpoint at the end of each rollout that passes a multiple of 40 steps (48: 40, 96: 80)
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["48", "96"]
    early = make_agent(f"ppo:{run_dir / 'checkpoints' / '48'}")
    assert early.mapper_name == "oracle-surface" and early.episode_settings == {"image_budget": 5, "resolution": 48}
    logged = (run_dir / "progress.csv").read_text().splitlines()[0].split(",")
    assert "charts/episodic_return" in logged and "charts/SPS" in logged and "charts/all_mean_iou" in logged
    from PIL import Image
    with Image.open(run_dir / "learning_curve.png") as curve:    # steps vs coverage and mean IoU
        assert curve.size[0] >= 600 and curve.size[1] >= 300

    spec = small_scene(64, 64)
    agent = make_agent(f"ppo:{model}")
    assert agent.mapper_name == "oracle-surface"                  # the policy's own mapper
    assert agent.episode_settings == {"image_budget": 5, "resolution": 48}
    assert agent.deterministic is False                               # samples unless the config says so
    saved["deterministic"] = True
    (run_dir / "nbv_config.json").write_text(json.dumps(saved))
    assert make_agent(f"ppo:{model}").deterministic is True
    assert make_agent(f"ppo:{model}", deterministic=False).deterministic is False
    res = run_episode(agent, spec, tmp_path / "run", image_budget=6, tool_call_budget=None, resolution=64,
                      renderer=FakeRenderer(spec))
    assert res["end_reason"] == "finish_mapping"
    assert res["counters"]["images_used"] == 6 or res["coverage"] == 1.0

    # --init-model continues from the saved policy (its weights, new hyperparameters) ...
    import torch
    from stable_baselines3 import PPO
    # ... under another training mapper (the reward, not the spaces), its agent keeping a third one
    more = Args(total_timesteps=24, num_envs=1, num_steps=24, batch_size=24, update_epochs=1, image_budget=5,
                resolution=48, obs_size=48, mapper="oracle", agent_mapper="oracle-surface", reconfigure_every=2,
                out=str(tmp_path), run_name="more", progress_bar=False, init_model=str(run_dir),
                learning_rate=1e-4, seed=7)
    before = PPO.load(str(model)).policy.state_dict()
    after_model = PPO.load(str(train(more)))
    assert after_model.num_timesteps == 24 and after_model.learning_rate == 1e-4    # steps of this run
    changed = [k for k, v in after_model.policy.state_dict().items() if not torch.equal(v, before[k])]
    assert changed                                           # it trained ...
    assert all(torch.allclose(v, before[k], atol=1e-2) for k, v in after_model.policy.state_dict().items())
    # ... from the saved weights (one small Adam step away; a fresh seed-7 initialisation is far from them)
    assert (tmp_path / "more" / "init_progress.csv").read_text() == (run_dir / "progress.csv").read_text()
    more_config = json.loads((tmp_path / "more" / "nbv_config.json").read_text())
    assert (more_config["mapper"], more_config["reward_mapper"]) == ("oracle-surface", "oracle")
    assert make_agent(f"ppo:{tmp_path / 'more'}").mapper_name == "oracle-surface"
    # ... and refuses a policy trained with other env settings
    from spatialscout_gym.core.errors import ConfigError
    with pytest.raises(ConfigError, match="--agent-mapper must be one of oracle, oracle-surface"):
        train(Args(total_timesteps=8, num_envs=1, num_steps=8, image_budget=5, resolution=48, obs_size=48,
                   agent_mapper="centre", out=str(tmp_path), run_name="bad", init_model=str(model)))
    with pytest.raises(ConfigError, match="resolution 48 there, 64 here"):
        train(Args(total_timesteps=8, num_envs=1, num_steps=8, image_budget=5, resolution=64, obs_size=48,
                   mapper="oracle-surface", out=str(tmp_path), run_name="bad", init_model=str(model)))


def test_learning_curve_of_a_continued_run_counts_steps_on_from_the_earlier_run(tmp_path):
    from spatialscout_gym.nbv.training.sb3 import INIT_PROGRESS, curve_points, plot_learning_curve
    head = "time/total_timesteps,charts/coverage,charts/all_mean_iou,time/time_elapsed,charts/SPS\n"
    (tmp_path / "progress.csv").write_text(head + "100,0.5,0.25,10,10\n200,,,20,10\n300,0.6,0.3,30,10\n")
    assert curve_points(tmp_path / "progress.csv").tolist() == [[100, 0.5, 0.25, 10], [300, 0.6, 0.3, 30]]
    assert curve_points(tmp_path / INIT_PROGRESS).shape == (0, 4)         # none: a fresh run
    fresh = plot_learning_curve(tmp_path).read_bytes()
    (tmp_path / INIT_PROGRESS).write_text(head + "1000,0.8,0.8,100,10\n2000,0.85,0.85,200,10\n")
    from PIL import Image
    with Image.open(plot_learning_curve(tmp_path)) as curve:
        assert curve.size[0] >= 600 and curve.size[1] >= 300
    assert (tmp_path / "learning_curve.png").read_bytes() != fresh         # the earlier run is drawn


def test_planned_steps_and_summary_line(tmp_path):
    assert planned_steps(Args(total_timesteps=100, num_envs=4, num_steps=8)) == 128
    assert planned_steps(Args(total_timesteps=128, num_envs=4, num_steps=8)) == 128
    line = summary_line(128, 2.0, 3, [0.1, 0.2, 0.3], tmp_path / "model.zip", stopped_early=True)
    assert "128 steps in 2.0 s (64.0 steps/s) (stopped by --time-limit-s), 3 episodes" in line
    assert "mean return of the last 3 0.200" in line and f"ppo:{tmp_path / 'model.zip'}" in line


def test_cli_adopts_the_policys_budget_and_resolution_and_warns_on_a_mismatch(tmp_path, capsys):
    from argparse import Namespace

    from spatialscout_gym.baselines.nbv_agents import save_nbv_config
    from spatialscout_gym.cli.options import adopt_agent_settings
    from spatialscout_gym.nbv.wrapper import NBVConfig
    (tmp_path / "model.zip").write_bytes(b"")
    save_nbv_config(NBVConfig(), tmp_path, mapper="oracle", image_budget=20, resolution=64)
    args = Namespace(agent=f"ppo:{tmp_path / 'model.zip'}", image_budget=None, resolution=None)
    adopt_agent_settings(args)
    assert (args.image_budget, args.resolution) == (20, 64) and capsys.readouterr().err == ""
    args = Namespace(agent=f"ppo:{tmp_path}", image_budget=40, resolution=None)
    adopt_agent_settings(args)
    assert (args.image_budget, args.resolution) == (40, 64)
    assert "WARNING: --image-budget 40 differs from the 20" in capsys.readouterr().err
    args = Namespace(agent="origin", image_budget=None, resolution=None)
    adopt_agent_settings(args)
    assert (args.image_budget, args.resolution) == (100, 512)


def test_ppo_agent_names_a_missing_policy(tmp_path):
    with pytest.raises(FileNotFoundError, match="spatialscout train-nbv"):
        make_agent(f"ppo:{tmp_path / 'nope.zip'}")


def test_cli_train_nbv_reports_bad_options_in_one_line(tmp_path, capsys):
    from spatialscout_gym.cli.main import main
    assert main(["train-nbv", "--vectorization", "threads", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--vectorization must be one of vector, sync, async" in err and "Traceback" not in err


def test_reconfigure_every_below_one_is_refused(tmp_path, capsys):
    from spatialscout_gym.cli.main import main
    assert main(["train-nbv", "--reconfigure-every", "0", "--out", str(tmp_path)]) == 2
    assert "--reconfigure-every must be >= 1" in capsys.readouterr().err


def test_motion_steps_outside_the_move_bound_are_refused(tmp_path, capsys):
    from spatialscout_gym.cli.main import main
    assert main(["train-nbv", "--move-m", "1.5", "--out", str(tmp_path)]) == 2
    assert "--move-m must be in (0, 1] metres" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_too_small_obs_size_is_a_clear_error_not_a_torch_crash(tmp_path, capsys):
    """SB3's NatureCNN needs a >= 36 px image; a smaller ``--obs-size`` is refused before training."""
    from spatialscout_gym.cli.main import main
    assert main(["train-nbv", "--obs-size", "16", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--obs-size must be >= 36" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())      # refused before any run directory is made


SHIPPED = SHIPPED_POLICY / "model.zip"


def test_shipped_policy_reads_the_current_nbv_observation():
    """The policy in models/nbv_ppo was trained on today's NBV observation and action spaces (a
    change to either must come with a retrained policy) and records its own settings."""
    from stable_baselines3 import PPO

    from spatialscout_gym.baselines.nbv_agents import load_policy_config
    from spatialscout_gym.nbv.wrapper import nbv_action_space, nbv_observation_space
    from stable_baselines3.common.preprocessing import is_image_space
    from stable_baselines3.common.vec_env import VecTransposeImage
    trained = load_policy_config(SHIPPED)
    model = PPO.load(str(SHIPPED), device="cpu")
    env_space = nbv_observation_space(trained["config"])
    assert set(model.observation_space.spaces) == set(env_space.spaces)
    for key, space in env_space.spaces.items():           # SB3 stores images channel-first
        expected = VecTransposeImage.transpose_space(space) if is_image_space(space) else space
        assert model.observation_space[key] == expected, key
    assert model.action_space == nbv_action_space(trained["config"])
    assert (trained["mapper"], trained["image_budget"], trained["resolution"]) == ("oracle", 20, 64)
    assert trained["config"].motion == "heading" and "scan" in env_space.spaces   # the README's recipe
    assert SHIPPED.stat().st_size < 8_000_000                   # a few MB (weights + optimizer state)


@pytest.mark.render
@pytest.mark.slow
def test_shipped_policy_evaluates_with_no_other_flags(tmp_path):
    """``spatialscout evaluate --agent ppo:models/nbv_ppo/model.zip --scenes Kitchen_01`` uses the
    policy's own image budget and resolution."""
    from spatialscout_gym.cli.main import main
    out = tmp_path / "ev"
    assert main(["evaluate", "--agent", f"ppo:{SHIPPED}", "--scenes", "Kitchen_01", "--out", str(out)]) == 0
    settings = json.loads((out / "evaluate.json").read_text())
    assert (settings["image_budget"], settings["resolution"]) == (20, 64)
    report = json.loads((out / "report.json").read_text())
    assert report["episodes"]["completed"] == 1 and report["episodes"]["end_reasons"] == {"finish_mapping": 1}
    assert report["object_micro"]["all"]["mean_iou"] > 0.3        # it explores, it does not stand still
    frames = list((out / "Kitchen_01").rglob("frame_*.png"))
    assert 2 <= len(frames) <= 20


def test_cuda_device_without_cuda_is_refused_not_silently_cpu(tmp_path, capsys, monkeypatch):
    """``--device cuda`` where torch sees no CUDA device is a one-line error (exit 2), not a CPU
    training run that records ``"device": "cuda"``."""
    import torch

    from spatialscout_gym.cli.main import main
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["train-nbv", "--device", "cuda", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--device cuda: torch sees no CUDA device here" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_a_chain_of_continued_runs_keeps_every_earlier_curve(tmp_path):
    """A run continuing a run that itself continued another gets both earlier curves, steps counted on."""
    from spatialscout_gym.nbv.training.sb3 import INIT_PROGRESS, curve_points, write_init_progress
    head = "time/total_timesteps,charts/coverage,charts/all_mean_iou,time/time_elapsed,charts/SPS\n"
    first, second, third = (tmp_path / n for n in ("first", "second", "third"))
    for d in (first, second, third):
        d.mkdir()
    (first / "progress.csv").write_text(head + "1000,0.5,0.5,10,10\n2000,0.6,0.6,20,10\n")
    assert write_init_progress(first / "model.zip", second).read_text() == (first / "progress.csv").read_text()
    (second / "progress.csv").write_text(head + "500,0.7,0.3,5,10\n1500000,0.8,0.35,15,10\n")
    write_init_progress(second / "model.zip", third)
    assert curve_points(third / INIT_PROGRESS).tolist() == [
        [1000, 0.5, 0.5, 10], [2000, 0.6, 0.6, 20], [2500, 0.7, 0.3, 5], [1502000, 0.8, 0.35, 15]]
    assert write_init_progress(third / "model.zip", tmp_path) is None     # no progress.csv there yet


def test_sigterm_stops_training_and_keeps_the_model(tmp_path):
    """``kill PID`` of a training run (a background job's only clean stop: it ignores SIGINT) saves
    the policy so far, loadable by ``ppo:PATH``, instead of losing the run."""
    import signal
    import subprocess
    import sys
    import time
    run_dir = tmp_path / "killed"
    cmd = [sys.executable, "-m", "spatialscout_gym.nbv.training.sb3", "--total-timesteps", "100000",
           "--num-envs", "1", "--num-steps", "8", "--batch-size", "8", "--update-epochs", "1",
           "--image-budget", "3", "--resolution", "48", "--obs-size", "48", "--out", str(tmp_path),
           "--run-name", "killed", "--no-progress-bar"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 240
    while not (run_dir / "progress.csv").exists() or not (run_dir / "progress.csv").read_text().strip():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "no rollout finished in 240 s"
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in out, out
    assert "(interrupted: Ctrl-C or SIGTERM)" in out.strip().splitlines()[-1]  # stopped, not finished
    assert (run_dir / "model.zip").exists() and (run_dir / "nbv_config.json").exists(), out
    agent = make_agent(f"ppo:{run_dir}")
    assert agent.episode_settings == {"image_budget": 3, "resolution": 48}


def test_train_nbv_dynamics_and_research_flags_go_into_the_policys_settings(tmp_path):
    """``train-nbv`` runs NBV-v2's dynamics by default; ``--no-walls``, ``--privileged-obs`` and
    ``--reward-occupancy-weight`` reach every env and the ``nbv_config.json`` ``ppo:PATH`` loads."""
    import tyro

    from spatialscout_gym.baselines.nbv_agents import load_policy_config, save_nbv_config
    from spatialscout_gym.nbv.training.sb3 import _env_kwargs, nbv_config_of
    assert nbv_config_of(Args()).walls is True and _env_kwargs(Args())["walls"] is True
    args = tyro.cli(Args, args=["--no-walls", "--privileged-obs", "depth", "occupancy",
                                "--reward-occupancy-weight", "0.5"])
    config = nbv_config_of(args)
    assert (config.walls, config.privileged_obs, config.reward_occupancy_weight) == \
        (False, ("depth", "occupancy"), 0.5)
    assert _env_kwargs(args)["privileged_obs"] == ("depth", "occupancy")
    save_nbv_config(nbv_config_of(Args()), tmp_path)
    assert json.loads((tmp_path / "nbv_config.json").read_text())["env_id"] == "SpatialScout/NBV-v2"
    loaded = load_policy_config(tmp_path / "model.zip")["config"]
    assert loaded.walls is True
    save_nbv_config(config, tmp_path)
    loaded = load_policy_config(tmp_path / "model.zip")["config"]
    assert (loaded.walls, loaded.privileged_obs) == (False, ("depth", "occupancy"))


def test_the_shipped_policy_states_its_nbv_v2_dynamics():
    """models/nbv_ppo was trained on NBV-v2 (its last phase): its settings say so, so ppo:PATH runs
    it there, the env the baselines run in by default."""
    from spatialscout_gym.baselines.nbv_agents import load_policy_config
    saved = json.loads(SHIPPED.with_name("nbv_config.json").read_text())
    assert (saved["walls"], saved["env_id"]) == (True, "SpatialScout/NBV-v2")
    assert load_policy_config(SHIPPED)["config"].walls is True
