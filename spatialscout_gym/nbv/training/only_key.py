"""Fine-tune only what reads one observation key (``train-nbv --train-only-blocked``).

A policy widened from one without ``blocked`` (:mod:`~spatialscout_gym.nbv.training.init_weights`)
acts exactly as its starting policy while ``blocked`` is all zero, which it is on every step but the
one after a blocked move. Training only the policy's weights on that key's columns (in the first
layer after the features extractor) keeps that: the fine-tuned policy differs from where it started
only on the step after a blocked move. The value function (which never chooses an action) trains
whole, so the advantages it gives the policy stay fitted to the new reward.

The frozen parameters stop taking gradients; the first policy layer keeps taking them, masked to the
key's columns, so Adam's update is exactly zero on every other column (its moments start at zero:
the optimizer state a whole-loaded ``--init-model`` brings is cleared)."""

from __future__ import annotations

from typing import Any

import torch

from spatialscout_gym.nbv.training.init_weights import feature_columns

__all__ = ["VALUE_PARTS", "train_only_key"]

VALUE_PARTS = ("mlp_extractor.value_net.", "value_net.")
"""Parameter name prefixes of SB3's actor-critic value function (they never change an action); its
own features extractor (``vf_features_extractor.``) too when the policy does not share one."""

FIRST_POLICY_LAYER = "mlp_extractor.policy_net.0.weight"


def train_only_key(policy: Any, key: str) -> list[str]:
    """Freeze every parameter of ``policy`` (an SB3 ``MultiInputActorCriticPolicy``, MaskablePPO's
    too) but the value function's and the first policy layer's columns of observation ``key``.
    Returns the names of the parameters that still train, sorted. A policy without ``key`` or with
    no first policy layer after its features extractor is a ValueError."""
    columns = feature_columns(policy)
    if key not in columns:
        raise ValueError(f"the policy observes no {key!r} (its keys: {', '.join(columns)})")
    params = dict(policy.named_parameters())
    first = params.get(FIRST_POLICY_LAYER)
    if first is None or first.dim() != 2 or first.shape[1] != int(policy.features_extractor.features_dim):
        raise ValueError(f"the policy has no {FIRST_POLICY_LAYER} over its features (net_arch with no policy layer?)")
    start, stop = columns[key]
    mask = torch.zeros_like(first)
    mask[:, start:stop] = 1.0
    first.register_hook(lambda grad: grad * mask)
    optimizer = getattr(policy, "optimizer", None)
    if optimizer is not None:   # a moment carried over would move the frozen columns
        optimizer.state.clear()
    value = VALUE_PARTS if getattr(policy, "share_features_extractor", True) else (*VALUE_PARTS, "vf_features_extractor.")
    training = sorted(name for name in params if name == FIRST_POLICY_LAYER or name.startswith(value))
    for p in params.values():
        p.requires_grad_(False)
    for name in training:
        params[name].requires_grad_(True)
    return training
