"""Start a policy from a saved one whose observation has fewer keys (``train-nbv --init-model``
from an NBV-v2 policy into NBV-v3, which adds ``blocked``).

SB3's ``MultiInputPolicy`` encodes each observation key on its own (a NatureCNN for the image, a
flatten for the rest) and concatenates the codes in key order; the first layers after that
concatenation are the only parameters whose shape depends on the set of keys. Every other
parameter is copied as it is; in those first layers the columns of the keys both policies have are
copied and the columns of the new keys are set to zero, so the started policy computes exactly
the old one's action distribution and value whatever the new keys hold. Training then learns
their weights."""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.preprocessing import get_flattened_obs_dim

__all__ = ["feature_columns", "copy_widened"]


def feature_columns(policy: Any) -> dict[str, tuple[int, int]]:
    """``{key: (start, stop)}``: the columns each observation key occupies in the output of
    ``policy``'s (combined) features extractor, in its concatenation order."""
    extractor = policy.features_extractor
    spaces = policy.observation_space.spaces
    columns, start = {}, 0
    for key, module in extractor.extractors.items():
        width = int(getattr(module, "features_dim", 0) or get_flattened_obs_dim(spaces[key]))
        columns[key] = (start, start + width)
        start += width
    if start != int(extractor.features_dim):   # an extractor this module does not know how to read
        raise ValueError(f"features extractor of {start} columns by key but {extractor.features_dim} in all")
    return columns


def copy_widened(new_policy: Any, old_policy: Any) -> list[str]:
    """Copy ``old_policy``'s parameters into ``new_policy``, whose observation keys are the old ones
    plus some new ones (returned, sorted); the new keys' input columns start at zero. A key the
    old policy has and the new one lacks, or a parameter that differs otherwise, is a ValueError."""
    new_cols, old_cols = feature_columns(new_policy), feature_columns(old_policy)
    if set(old_cols) - set(new_cols):
        raise ValueError(f"the new policy lacks observation keys of the old one: {sorted(set(old_cols) - set(new_cols))}")
    for key in old_cols:
        if old_cols[key][1] - old_cols[key][0] != new_cols[key][1] - new_cols[key][0]:
            raise ValueError(f"observation {key!r} is encoded in {old_cols[key][1] - old_cols[key][0]} columns "
                             f"in the old policy and {new_cols[key][1] - new_cols[key][0]} in the new one")
    old_state, new_state = old_policy.state_dict(), new_policy.state_dict()
    width_old, width_new = old_policy.features_extractor.features_dim, new_policy.features_extractor.features_dim
    out = {}
    for name, target in new_state.items():
        source = old_state.get(name)
        if source is not None and source.shape == target.shape:
            out[name] = source.clone()
        elif source is not None and source.dim() == 2 and (source.shape[1], target.shape[1]) == (width_old, width_new) \
                and source.shape[0] == target.shape[0]:
            widened = torch.zeros_like(target)   # the new keys' columns: zero
            for key, (a, b) in old_cols.items():
                c, d = new_cols[key]
                widened[:, c:d] = source[:, a:b]
            out[name] = widened
        elif source is None and name.split(".")[0].endswith("features_extractor"):
            out[name] = target   # a new key's own encoder (an image key's CNN): its output meets zeros
        else:
            raise ValueError(f"parameter {name}: shape {tuple(target.shape)} in the new policy, "
                             f"{None if source is None else tuple(source.shape)} in the old one")
    new_policy.load_state_dict(out)
    return sorted(set(new_cols) - set(old_cols))
