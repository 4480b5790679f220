"""``rllib:PATH``: a next-best-view policy trained with RLlib, run from its RLModule checkpoint
(:mod:`spatialscout_gym.nbv.training.rllib` trains it and finds its checkpoint and settings)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from spatialscout_gym.baselines.nbv_agents import (NBVAction, NBVAgent, misfit_message, space_mismatch,
                                                   trained_episode_settings)
from spatialscout_gym.baselines.registry import register_agent
from spatialscout_gym.nbv.training.rllib import module_checkpoint, rllib_policy_config
from spatialscout_gym.nbv.config import layout_observation, layout_observation_space, nbv_action_space
from spatialscout_gym.nbv.core import NBVController

__all__ = ["RLlibNBVAgent", "rllib_agent"]


@register_agent("rllib:PATH", kind="nbv")
class RLlibNBVAgent(NBVAgent):
    """A PPO policy trained with RLlib (``rllib:PATH``), run from its RLModule checkpoint alone
    (``RLModule.from_checkpoint``: no Ray cluster, no algorithm).

    Parameters
    ----------
    path : str
        A run directory of ``spatialscout train-nbv --backend rllib``, one of its checkpoints, or an
        RLModule checkpoint with ``nbv_config.json`` in or above it.
    deterministic : bool, optional
        The most likely action instead of a sample; None: as ``nbv_config.json`` says (False if absent).
    walls : bool, optional
        NBV-v2's dynamics (True) or NBV-v1's (False); None: as ``nbv_config.json`` says (False if absent).
    """

    def __init__(self, path: str, deterministic: bool | None = None, walls: bool | None = None,
                 mapper: str | None = None) -> None:
        module_dir = module_checkpoint(path)
        trained = rllib_policy_config(path)
        config = trained["config"] if walls is None else dataclasses.replace(trained["config"], walls=bool(walls))
        super().__init__(config, mapper=trained["mapper"] if mapper is None else mapper)
        self.episode_settings = trained_episode_settings(trained)
        """The image budget and resolution the policy was trained with (the CLI adopts them)."""
        self.obs_layout = trained["obs_layout"]
        try:
            import torch  # noqa: F401
            from ray.rllib.core.rl_module.rl_module import RLModule
        except ImportError as exc:  # pragma: no cover - depends on the install
            from spatialscout_gym.core.errors import MissingExtraError, install_command
            raise MissingExtraError(f"rllib:PATH needs RLlib and torch ({exc}): {install_command('rl,ray')}") from exc
        self.module = RLModule.from_checkpoint(str(module_dir))
        self.module.eval()  # type: ignore[attr-defined]  # a TorchRLModule (a torch Module); from_checkpoint returns the framework-neutral base type
        want_obs = layout_observation_space(self.config, self.obs_layout)
        want_act = nbv_action_space(self.config)
        if self.module.observation_space != want_obs or self.module.action_space != want_act:
            from spatialscout_gym.core.errors import ConfigError
            differs = space_mismatch(self.module.observation_space, self.module.action_space, want_obs, want_act) \
                or f"spaces {self.module.observation_space} (policy) vs {want_obs} (env)"
            where = Path(path) if trained["source"] is None else trained["source"].parent
            raise ConfigError(misfit_message(where, trained, differs, self.module.observation_space,
                                             self.module.action_space))
        self.name = f"rllib:{path}"
        self.deterministic = bool(trained["deterministic"] if deterministic is None else deterministic)

    @staticmethod
    def trained_settings(path: str) -> dict[str, int]:
        """The image budget and resolution the policy at ``path`` was trained with, which ``run`` and
        ``evaluate`` adopt; {} when no policy is there (reported when the agent is built)."""
        from spatialscout_gym.core.errors import ResourceMissingError
        try:
            return trained_episode_settings(rllib_policy_config(path))
        except ResourceMissingError:
            return {}

    def begin(self, controller: NBVController, rng: np.random.Generator) -> None:
        import torch
        self._generator = torch.Generator().manual_seed(int(rng.integers(2**31 - 1)))

    def logits(self, obs: dict) -> np.ndarray:
        """The action logits of the policy for one ``dict`` observation."""
        import torch
        x = layout_observation(obs, self.obs_layout)
        batch = ({k: torch.as_tensor(v)[None] for k, v in x.items()} if isinstance(x, dict)
                 else torch.as_tensor(x)[None])
        with torch.no_grad():
            out = self.module.forward_inference({"obs": batch})
        return out["action_dist_inputs"][0].numpy()

    def act(self, obs: dict[str, np.ndarray], controller: NBVController, rng: np.random.Generator) -> NBVAction:
        import torch
        logits = torch.as_tensor(self.logits(obs))
        if self.deterministic:
            return int(torch.argmax(logits))
        return int(torch.multinomial(torch.softmax(logits, -1), 1, generator=self._generator))


def rllib_agent(path: str, deterministic: bool | None = None) -> NBVAgent:
    """An :class:`RLlibNBVAgent` (``rllib:PATH``; RLlib is imported only when one is built)."""
    return RLlibNBVAgent(path, deterministic=deterministic)
