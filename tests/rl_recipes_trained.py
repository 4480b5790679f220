"""The RL recipes of examples/ trained once per test session at their smallest sizes (real SAPIEN
renders on ``SpatialScout/NBV-v1``), shared by the tests that read what they leave
(tests/test_examples.py, tests/test_example_rllib_ppo.py, the RL journey), and the
``frontier-nbv`` evaluation the journey compares them with. Every policy is trained with V = 4 on a
36 px render (the smallest grid SB3's NatureCNN takes), so one ``frontier-nbv`` run on the same
settings is the reference of both."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
IMAGE_BUDGET, RESOLUTION = 4, 36
SCENE = "Kitchen_01"
"""The catalog scene each policy is evaluated on."""


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass(frozen=True)
class Trained:
    """What a recipe returned and printed, where it saved, and torch's thread count after it."""

    returned: Any
    printed: str
    saved: Path
    torch_threads: int


_MADE: dict[str, Any] = {}


def _once(key: str, make):
    if key not in _MADE:
        _MADE[key] = make()
    return _MADE[key]


def sb3_recipe(tmp_path_factory) -> Trained:
    """``python examples/sb3_ppo.py --total-timesteps 256 --n-envs 2 --n-steps 64 --image-budget 4
    --resolution 36 --subproc --save DIR/model`` (the policy: ``DIR/model.zip``)."""
    def make() -> Trained:
        import torch
        save = tmp_path_factory.mktemp("sb3_recipe") / "model"
        torch.set_num_threads(2)           # the recipe sets its own (1 by default)
        model = load_example("sb3_ppo").main([
            "--total-timesteps", "256", "--n-envs", "2", "--n-steps", "64", "--image-budget", str(IMAGE_BUDGET),
            "--resolution", str(RESOLUTION), "--subproc", "--save", str(save)])
        return Trained(model, "", Path(f"{save}.zip"), torch.get_num_threads())
    return _once("sb3", make)


def rllib_recipe(tmp_path_factory) -> Trained:
    """``python examples/rllib_ppo.py --iterations 2 --envs 2 --rollout 64 --image-budget 4
    --resolution 36 --scene Kitchen_01 --out DIR/ck`` (the policy: ``DIR/ck``)."""
    def make() -> Trained:
        import torch
        out = tmp_path_factory.mktemp("rllib_recipe") / "ck"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            returned = load_example("rllib_ppo").main([
                "--iterations", "2", "--envs", "2", "--rollout", "64", "--image-budget", str(IMAGE_BUDGET),
                "--resolution", str(RESOLUTION), "--scene", SCENE, "--out", str(out)])
        return Trained(returned, printed.getvalue(), out, torch.get_num_threads())
    return _once("rllib", make)


def frontier_reference(tmp_path_factory) -> Path:
    """``spatialscout evaluate --agent frontier-nbv --scenes Kitchen_01 --image-budget 4
    --resolution 36``: the settings every recipe's policy is evaluated with."""
    def make() -> Path:
        from spatialscout_gym.cli.main import main
        out = tmp_path_factory.mktemp("frontier_nbv") / "frontier-nbv"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            code = main(["evaluate", "--agent", "frontier-nbv", "--scenes", SCENE, "--image-budget",
                         str(IMAGE_BUDGET), "--resolution", str(RESOLUTION), "--out", str(out), "--no-progress"])
        assert code == 0, printed.getvalue()[-3000:]
        return out
    return _once("frontier", make)
