"""Helpers of the model-evaluation journeys: the ``spatialscout`` command in a subprocess (as a
user types it), and the scripted model's answers per episode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``spatialscout ARGV...`` run to its end, output captured (this checkout's package first)."""
    return subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", *argv], capture_output=True,
                          text=True, timeout=timeout, env=cli_env())


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def own_step(body: dict) -> int:
    """The episode's own step: its assistant turns so far (episodes interleave across workers)."""
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


def capture_then_finish(step: int, body: dict, fmt: str):
    """One capture, one submission of the first inventory id at the origin, then finish."""
    return [[("capture_image", {})], [("finish_mapping", {})]][min(own_step(body), 1)]


def model_args(url: str, out: Path, scenes: list[str], *extra: str, model: str = "scripted") -> list[str]:
    """The README's model evaluation at journey sizes: 32 px, V = 3, B = 4."""
    return ["evaluate", "--agent", f"openai:{model}", "--base-url", url, "--api-key", "local", "--scenes", *scenes,
            "--out", str(out), "--resolution", "32", "--image-budget", "3", "--call-budget", "4", "--no-progress",
            *extra]
