"""``cleanrl:PATH``: a next-best-view policy trained by the CleanRL recipe (``examples/cleanrl_ppo.py``),
rebuilt from its ``agent.pt`` and the ``nbv_config.json`` beside it
(:class:`~spatialscout_gym.nbv.training.cleanrl_net.NBVActorCritic`, the recipe's network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from spatialscout_gym.baselines.nbv_agents import NBVAction, TrainedNBVAgent
from spatialscout_gym.baselines.registry import register_agent
from spatialscout_gym.core.errors import ConfigError, ResourceMissingError
from spatialscout_gym.nbv.config import nbv_action_space, nbv_observation_space
from spatialscout_gym.nbv.core import NBVController
from spatialscout_gym.nbv.policy_files import CLEANRL_AGENT_FILE as AGENT_FILE
from spatialscout_gym.nbv.policy_files import CONFIG_FILE, load_policy_config

__all__ = ["CleanRLNBVAgent", "cleanrl_agent_file"]


def cleanrl_agent_file(path: str | Path) -> Path:
    """The ``agent.pt`` that ``cleanrl:PATH`` names (``PATH`` is the file or the recipe's ``save_dir``)."""
    p = Path(path)
    return p / AGENT_FILE if p.is_dir() else p


def _load_weights(p: Path) -> dict[str, Any]:
    """The recipe's saved dict (``state_dict``, ``args``) from ``p``, or a one-line error naming it."""
    import torch
    try:
        saved = torch.load(p, map_location="cpu", weights_only=True)   # tensors and plain values only
    except Exception as exc:   # a zip of another kind, a truncated file, a pickle with code in it
        raise ConfigError(f"cleanrl:PATH: {p} is not an agent.pt saved by the CleanRL recipe "
                          f"(examples/cleanrl_ppo.py): torch.load failed ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else 'no message'})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("state_dict"), dict):
        raise ConfigError(f"cleanrl:PATH: {p} holds no 'state_dict' (the CleanRL recipe saves "
                          f"{{'state_dict': ..., 'args': ...}})")
    return saved


@register_agent("cleanrl:PATH", kind="nbv")
class CleanRLNBVAgent(TrainedNBVAgent):
    """A policy of the CleanRL recipe (``cleanrl:PATH``), acting on the NBV ``dict`` observation.

    Parameters
    ----------
    path : str
        The recipe's ``agent.pt``, or its ``save_dir`` holding it; ``nbv_config.json`` must be
        beside it (the recipe writes it).
    deterministic : bool, optional
        The most likely action instead of a sample; None: as ``nbv_config.json`` says (False if absent).
    walls : bool, optional
        NBV-v2's dynamics (True) or NBV-v1's (False); None: as ``nbv_config.json`` says.
    """

    def __init__(self, path: str, deterministic: bool | None = None, walls: bool | None = None,
                 mapper: str | None = None) -> None:
        p = cleanrl_agent_file(path)
        if not p.is_file():
            raise ResourceMissingError(f"cleanrl:PATH: no {AGENT_FILE} at {p}; train one with "
                                       f"`python examples/cleanrl_ppo.py --save-dir DIR` (it writes DIR/{AGENT_FILE})")
        trained = load_policy_config(p)
        if trained["source"] is None:
            raise ResourceMissingError(f"cleanrl:PATH: no {CONFIG_FILE} beside {p} (the recipe writes it "
                                       f"with the env settings the network's spaces depend on)")
        super().__init__(trained, p, walls=walls, deterministic=deterministic, mapper=mapper)
        if self.scan_guard_m is not None:     # recorded only where it is applied: ppo:PATH acts through it
            raise ConfigError(f"cleanrl:{path}: its nbv_config.json sets scan_guard_m, which only ppo:PATH "
                              "policies act through; set it to null")
        try:
            from spatialscout_gym.nbv.training.cleanrl_net import NBVActorCritic
        except ImportError as exc:  # pragma: no cover - depends on the install
            from spatialscout_gym.core.errors import MissingExtraError, install_command
            raise MissingExtraError(f"cleanrl:PATH needs torch: {install_command('rl')}") from exc
        saved = _load_weights(p)
        action_space = nbv_action_space(self.config)
        if not hasattr(action_space, "n"):
            raise ConfigError(f"cleanrl:PATH: {trained['source']} says motion {self.config.motion!r}; the "
                              f"CleanRL recipe's network needs a discrete one ('heading' or 'discrete')")
        self.net = NBVActorCritic(nbv_observation_space(self.config), int(action_space.n))
        try:
            self.net.load_state_dict(saved["state_dict"])
        except (RuntimeError, KeyError) as exc:   # missing/unexpected keys or other shapes
            first = str(exc).replace("\n", " ").replace("\t", " ")[:300]
            raise ConfigError(f"cleanrl:PATH: the weights in {p} do not fit the recipe's network for the "
                              f"spaces of {trained['source']} ({first})") from None
        self.net.eval()
        self.name = f"cleanrl:{path}"

    @staticmethod
    def policy_file(path: str) -> Path:
        return cleanrl_agent_file(path)

    def begin(self, controller: NBVController, rng: np.random.Generator) -> None:
        import torch
        self._generator = torch.Generator().manual_seed(int(rng.integers(2**31 - 1)))

    def logits(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """The network's action logits for one ``dict`` observation."""
        import torch
        with torch.no_grad():
            return self.net.logits({k: torch.as_tensor(v)[None] for k, v in obs.items()})[0].numpy()

    def act(self, obs: dict[str, np.ndarray], controller: NBVController, rng: np.random.Generator) -> NBVAction:
        import torch
        logits = torch.as_tensor(self.logits(obs))
        if self.deterministic:
            return int(torch.argmax(logits))
        return int(torch.multinomial(torch.softmax(logits, -1), 1, generator=self._generator))
