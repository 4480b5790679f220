"""The files beside a trained NBV policy: ``nbv_config.json`` (the :class:`NBVConfig` it was trained
with, its mapper, image budget and resolution, and whether ``ppo:PATH`` acts deterministically) and the
``model.zip`` that ``ppo:PATH`` names. Written by the trainer, read by the PPO agent and the CLI.

The shipped policies live in the package (``nbv/models/nbv_ppo``, the NBV-v2 policy, and
``nbv/models/nbv_ppo_v3``, it fine-tuned on NBV-v3; installed with the wheel): a documented name
``models/nbv_ppo`` or ``models/nbv_ppo_v3`` (or ``.../model.zip``) finds it from any directory,
unless a file of that relative path exists there (a policy of one's own takes precedence)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from spatialscout_gym.nbv.config import NBVConfig

__all__ = ["CLEANRL_AGENT_FILE", "CONFIG_FILE", "ASSUMED", "SHIPPED_POLICY", "SHIPPED_V3_POLICY",
           "SHIPPED_V3_BLOCKED_POLICY", "policy_sha256",
           "SHIPPED_POLICIES", "SHIPPED_NAMES", "policy_path", "load_policy_config",
           "load_nbv_config", "save_nbv_config", "scan_guard_after_blocked",
           "guess_config_fields", "fix_line"]

CONFIG_FILE = "nbv_config.json"
"""Written beside a trained ``model.zip``: the :class:`NBVConfig` the policy was trained with."""

CLEANRL_AGENT_FILE = "agent.pt"
"""What the CleanRL recipe (``examples/cleanrl_ppo.py``) saves: ``{"state_dict": ..., "args": ...}``
of :class:`~spatialscout_gym.nbv.training.cleanrl_net.NBVActorCritic` (``cleanrl:PATH`` loads it)."""

ASSUMED: dict = {"motion": "heading"}
"""The :class:`NBVConfig` fields a policy with no ``nbv_config.json`` (and no ``args.json``) is
assumed to be trained with: ``SpatialScout/NBV-v1``'s (its heading motion ``Discrete(18)``; the
other fields are NBV-v1's as they default), the env the recipes train on. Its image budget and
resolution are then unknown (None): ``spatialscout run/evaluate`` use the NBV tables' V = 20 and
64 px, NBV-v1's too, without a warning."""


SHIPPED_POLICY = Path(__file__).resolve().parent / "models" / "nbv_ppo"
"""The shipped PPO policy's directory (``model.zip`` and the files of its training run), package data."""

SHIPPED_V3_POLICY = SHIPPED_POLICY.with_name("nbv_ppo_v3")
"""The shipped policy fine-tuned on ``SpatialScout/NBV-v3`` (it observes blocked moves), package data."""

SHIPPED_V3_BLOCKED_POLICY = SHIPPED_POLICY.with_name("nbv_ppo_v3_blocked")
"""The shipped policy fine-tuned on ``SpatialScout/NBV-v3`` in its weights on ``blocked`` alone (every
other policy weight is the NBV-v2 policy's), acting through the held-back scan guard; package data."""

SHIPPED_POLICIES = {Path("models/nbv_ppo"): SHIPPED_POLICY, Path("models/nbv_ppo_v3"): SHIPPED_V3_POLICY,
                    Path("models/nbv_ppo_v3_blocked"): SHIPPED_V3_BLOCKED_POLICY}
"""Each shipped policy's documented folder name and its directory in the package."""

SHIPPED_NAMES = tuple(n for name in SHIPPED_POLICIES for n in (name, name / "model.zip"))
"""The relative names of the shipped policies that work in any directory (``ppo:models/nbv_ppo/model.zip``,
``ppo:models/nbv_ppo_v3``, ``ppo:models/nbv_ppo_v3_blocked``)."""


def policy_sha256(path: Path) -> str:
    """The SHA-256 (hex) of a policy file's bytes: what names its weights in its episodes' ``nbv``
    block, so that a resumed evaluation redoes the episodes another file's weights played."""
    import hashlib
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def policy_path(path: str | Path) -> Path:
    """The ``model.zip`` that ``ppo:PATH`` names (``PATH`` is the file or the run directory); a
    :data:`SHIPPED_NAMES` name that is no file here is that shipped policy (:data:`SHIPPED_POLICIES`)."""
    p = Path(path)
    if not p.exists() and p in SHIPPED_NAMES:
        p = SHIPPED_POLICIES[p.parent if p.name == "model.zip" else p]
    return p / "model.zip" if p.is_dir() else p


def load_policy_config(model_path: str | Path) -> dict:
    """What a policy was trained with: ``{"config": NBVConfig, "mapper": str, "image_budget": int
    or None, "resolution": int or None, "deterministic": bool, "source": Path or None}``, from
    ``nbv_config.json`` beside ``model_path`` (``source``; None when there is none). Missing keys
    come from the ``args.json`` of the policy's training run, else from :data:`ASSUMED` (NBV-v1's
    settings; image budget and resolution None); ``deterministic``, how ``ppo:PATH`` acts by default, is False unless set;
    ``scan_guard_m``, the margin of the scan guard it acts through (:mod:`spatialscout_gym.nbv.scan_guard`), None unless set;
    ``scan_guard_after_blocked``, how many blocked moves an episode sees before the guard also judges
    by the ``scan`` (None, unless set: from the first step)."""
    path = Path(model_path).with_name(CONFIG_FILE)
    saved = json.loads(path.read_text()) if path.is_file() else {}
    args_path = Path(model_path).with_name("args.json")
    train_args = json.loads(args_path.read_text()) if args_path.is_file() else {}
    fields = {f for f in NBVConfig.__dataclass_fields__}
    known = {**ASSUMED, **{k: v for k, v in train_args.items() if k in fields},
             **{k: v for k, v in saved.items() if k in fields}}
    return {"config": NBVConfig(**known),
            "mapper": str(saved.get("mapper", train_args.get("mapper", "oracle"))),
            "image_budget": saved.get("image_budget", train_args.get("image_budget")),
            "resolution": saved.get("resolution", train_args.get("resolution")),
            "deterministic": bool(saved.get("deterministic", False)),
            "scan_guard_m": _guard(saved.get("scan_guard_m"), path),
            "scan_guard_after_blocked": scan_guard_after_blocked(saved.get("scan_guard_after_blocked"),
                                                                 saved.get("scan_guard_m"), path),
            "source": path if path.is_file() else None}


def _guard(value: object, path: Path) -> float | None:
    """``nbv_config.json``'s ``scan_guard_m``: None (no guard) or a margin in metres >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        from spatialscout_gym.core.errors import ConfigError
        raise ConfigError(f"{path}: scan_guard_m must be null or a margin in metres >= 0, got {value!r}")
    return float(value)


def scan_guard_after_blocked(value: object, margin: object, where: object) -> int | None:
    """A ``scan_guard_after_blocked`` setting (from ``nbv_config.json`` or the agent option, named by
    ``where`` in the error): None (null or 0: the scan judges from the first step) or a count of
    blocked moves >= 1. A count needs a scan guard (``margin``, metres) to apply to: with none it
    would be accepted and never applied, so it is refused (:class:`ConfigError`)."""
    from spatialscout_gym.core.errors import ConfigError
    if value is None or (type(value) is int and value == 0):
        return None
    if type(value) is not int or value < 0:
        raise ConfigError(f"{where}: scan_guard_after_blocked must be null or a count of blocked moves >= 0, "
                          f"got {value!r}")
    if margin is None:
        raise ConfigError(f"{where}: scan_guard_after_blocked is {value} but the policy acts through no scan guard "
                          f"(scan_guard_m is null): it says when the scan guard starts judging by the scan, so "
                          f"it needs the guard's margin")
    return value


def load_nbv_config(model_path: str | Path) -> NBVConfig:
    """The :class:`NBVConfig` saved beside ``model_path`` (defaults when there is none)."""
    return load_policy_config(model_path)["config"]


def save_nbv_config(config: NBVConfig, directory: str | Path, *, mapper: str = "oracle",
                    image_budget: int | None = None, resolution: int | None = None,
                    deterministic: bool = False) -> Path:
    """Write ``nbv_config.json`` into ``directory``: the :class:`NBVConfig` fields (``walls``: the
    dynamics) plus the mapper, image budget and resolution the policy is trained with, whether
    ``ppo:PATH`` acts deterministically (most likely action) or samples by default, and ``env_id``,
    the env whose dynamics those are (for the reader; loading reads ``walls``)."""
    from spatialscout_gym.nbv.config import dynamics_env_id
    path = Path(directory) / CONFIG_FILE
    path.write_text(json.dumps({**asdict(config), "mapper": mapper, "image_budget": image_budget,
                                "resolution": resolution, "deterministic": bool(deterministic),
                                "env_id": dynamics_env_id(config)}, indent=2))
    return path


def guess_config_fields(observation_space: object, action_space: object) -> dict:
    """The :class:`NBVConfig` fields a policy's spaces reveal: ``motion`` (and ``headings``) from
    its actions, ``obs_size`` from its image (channel-last or channel-first), ``scan_bins`` from
    its ``scan`` key (0 without one, in a ``dict``-layout policy)."""
    from gymnasium import spaces

    from spatialscout_gym.nbv.config import DISCRETE_MOTIONS
    fields: dict = {}
    if isinstance(action_space, spaces.Box):
        fields["motion"] = "continuous"
    elif isinstance(action_space, spaces.Discrete):
        n, strides = int(action_space.n), len(NBVConfig().strides_m)
        if n == len(DISCRETE_MOTIONS):
            fields["motion"] = "discrete"
        elif n % strides == 0:
            fields.update(motion="heading", headings=n // strides)
    keys = getattr(observation_space, "spaces", {}) or {}
    image = keys.get("image", observation_space if not keys else None)
    shape = tuple(getattr(image, "shape", ()) or ())
    if len(shape) == 3:
        fields["obs_size"] = int(shape[1] if shape[0] == 3 else shape[0])
    if keys and "vector" not in keys:
        fields["scan_bins"] = int(keys["scan"].shape[0]) if "scan" in keys else 0
    return fields


def fix_line(directory: str | Path, fields: dict, *, image_budget: int | None = None,
             resolution: int | None = None) -> str:
    """The one shell line that writes ``nbv_config.json`` into ``directory`` with ``fields`` (the
    :class:`NBVConfig` fields), the image budget and the resolution."""
    args = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    extra = "".join(f", {k}={v!r}" for k, v in (("image_budget", image_budget), ("resolution", resolution))
                    if v is not None)
    return (f"python -c \"from spatialscout_gym.nbv.config import NBVConfig; from spatialscout_gym.nbv.policy_files "
            f"import save_nbv_config; save_nbv_config(NBVConfig({args}), {str(directory)!r}{extra})\"")
