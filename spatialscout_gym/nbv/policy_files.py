"""The files beside a trained NBV policy: ``nbv_config.json`` (the :class:`NBVConfig` it was trained
with, its mapper, image budget and resolution, and whether ``ppo:PATH`` acts deterministically) and the
``model.zip`` that ``ppo:PATH`` names. Written by the trainer, read by the PPO agent and the CLI."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from spatialscout_gym.nbv.config import NBVConfig

__all__ = ["CONFIG_FILE", "policy_path", "load_policy_config", "load_nbv_config", "save_nbv_config"]

CONFIG_FILE = "nbv_config.json"
"""Written beside a trained ``model.zip``: the :class:`NBVConfig` the policy was trained with."""


def policy_path(path: str | Path) -> Path:
    """The ``model.zip`` that ``ppo:PATH`` names (``PATH`` is the file or the run directory)."""
    p = Path(path)
    return p / "model.zip" if p.is_dir() else p


def load_policy_config(model_path: str | Path) -> dict:
    """What a policy was trained with: ``{"config": NBVConfig, "mapper": str, "image_budget": int
    or None, "resolution": int or None, "deterministic": bool}``, from ``nbv_config.json`` beside
    ``model_path`` (older policies: the missing keys from the ``args.json`` of their training run,
    else defaults; ``deterministic``, how ``ppo:PATH`` acts by default, is False unless set)."""
    path = Path(model_path).with_name(CONFIG_FILE)
    saved = json.loads(path.read_text()) if path.exists() else {}
    args_path = Path(model_path).with_name("args.json")
    train_args = json.loads(args_path.read_text()) if args_path.exists() else {}
    fields = {f for f in NBVConfig.__dataclass_fields__}
    return {"config": NBVConfig(**{k: v for k, v in saved.items() if k in fields}),
            "mapper": str(saved.get("mapper", train_args.get("mapper", "oracle"))),
            "image_budget": saved.get("image_budget", train_args.get("image_budget")),
            "resolution": saved.get("resolution", train_args.get("resolution")),
            "deterministic": bool(saved.get("deterministic", False))}


def load_nbv_config(model_path: str | Path) -> NBVConfig:
    """The :class:`NBVConfig` saved beside ``model_path`` (defaults when there is none)."""
    return load_policy_config(model_path)["config"]


def save_nbv_config(config: NBVConfig, directory: str | Path, *, mapper: str = "oracle",
                    image_budget: int | None = None, resolution: int | None = None,
                    deterministic: bool = False) -> Path:
    """Write ``nbv_config.json`` into ``directory``: the :class:`NBVConfig` fields plus the mapper,
    image budget and resolution the policy is trained with, and whether ``ppo:PATH`` acts
    deterministically (most likely action) or samples by default."""
    path = Path(directory) / CONFIG_FILE
    path.write_text(json.dumps({**asdict(config), "mapper": mapper, "image_budget": image_budget,
                                "resolution": resolution, "deterministic": bool(deterministic)}, indent=2))
    return path
