"""Which recorded episodes are one episode (docs/verify.md, "Repeated conversations").

A model run's **conversation identity** is the ordered sequence of its replies' text and tool calls
(name and arguments): what the model said, not what the service counted (usage, HTTP attempts,
clocks). Within one scene of an evaluation:

* every planned seed holds one identity: the scene is **repeated**, what an honest deterministic
  model produces. Its episodes verify as ``repeated`` and count as **one** episode (the lowest seed)
  in means, intervals and ranks (:func:`counted_once`), so a copied best seed scores as a one-seed run;
* only some seeds share an identity: those are one conversation filed under several seeds, and
  every one of them is ``diverged`` (every pair is compared; none is skipped because another was
  caught first).

Two scene folders of one evaluation whose records name one scene (a look-alike folder name holding
a copy) are refused, whatever the agent (:func:`same_scene_folders`).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

from spatialscout_gym.core.run_files import RESULT_FILE, TRACE_FILE
from spatialscout_gym.eval.layout import Attempt, EvalDir, EvalDirError, load_trace, read_record, split_episode_key

__all__ = ["conversation_identity", "repeated_and_shared", "counted_once", "counted_once_keys", "same_scene_folders",
           "REPEATED"]

REPEATED = "repeated"
"""The verdict on the episodes of a scene whose every planned seed holds one conversation."""


def conversation_identity(run_dir: Path) -> str | None:
    """The SHA-256 of the replies' text and tool calls in order; None for a run without replies
    or whose trace cannot be read."""
    try:
        replies = load_trace(run_dir / TRACE_FILE).model_responses
    except EvalDirError:
        return None
    if not replies:
        return None
    said = [[e.text or "", [[c.get("name"), c.get("arguments")] for c in e.tool_calls if isinstance(c, dict)]]
            for e in replies]
    return hashlib.sha256(json.dumps(said, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def repeated_and_shared(done: Iterable[tuple[str, Path]], planned: Sequence[str]) -> tuple[set[str], dict[str, list[str]]]:
    """``(repeated, shared)``: the keys of the scenes whose every planned seed (two or more) holds
    one conversation, and for every other key that shares its conversation with other seeds of its
    scene, those other keys."""
    by_scene: dict[str, dict[str, str | None]] = defaultdict(dict)
    for key, run_dir in done:
        by_scene[split_episode_key(key)[0]][key] = conversation_identity(run_dir)
    planned_by_scene: dict[str, set[str]] = defaultdict(set)
    for key in planned:
        planned_by_scene[split_episode_key(key)[0]].add(key)
    repeated: set[str] = set()
    shared: dict[str, list[str]] = {}
    for scene, ids in by_scene.items():
        groups: dict[str, list[str]] = defaultdict(list)
        for key, ident in ids.items():
            if ident is not None:
                groups[ident].append(key)
        want = planned_by_scene.get(scene) or set(ids)
        for keys in groups.values():
            if len(keys) < 2:
                continue
            if set(keys) == want:
                repeated.update(keys)
            else:
                for k in keys:
                    shared[k] = sorted(x for x in keys if x != k)
    return repeated, shared


def counted_once(keys: Iterable[str], repeated: set[str]) -> set[str]:
    """The keys of ``repeated`` that are left out of aggregates: every seed of a repeated scene
    but its lowest."""
    lowest: dict[str, tuple[int, str]] = {}
    for k in keys:
        if k in repeated:
            scene, seed = split_episode_key(k)
            cand = (seed if seed is not None else -1, k)
            lowest[scene] = min(lowest.get(scene, cand), cand)
    return {k for k in repeated if lowest[split_episode_key(k)[0]][1] != k}


def counted_once_keys(ev: EvalDir, completed: Sequence[tuple[str, Attempt]]) -> set[str]:
    """The completed episodes of ``ev`` that aggregates leave out: the further seeds of its repeated
    scenes (the pages' one rule, the same as ``verify``'s)."""
    if ev.is_run_dir:
        return set()
    done = [(k, a.run_dir) for k, a in completed]
    return counted_once((k for k, _ in done), repeated_and_shared(done, ev.planned())[0])


def same_scene_folders(done: Iterable[tuple[str, Path]]) -> dict[str, str]:
    """For each episode whose scene folder holds the same scene (its recorded content hash) as
    another scene folder of the evaluation, that other folder's name."""
    folders: dict[str, set[str]] = defaultdict(set)
    of_key: dict[str, tuple[str, str]] = {}
    for key, run_dir in done:
        try:
            digest = read_record(run_dir / RESULT_FILE).scene_content_hash
        except EvalDirError:
            continue
        folder = split_episode_key(key)[0]
        folders[digest].add(folder)
        of_key[key] = (digest, folder)
    return {key: sorted(folders[digest] - {folder})[0] for key, (digest, folder) in of_key.items()
            if len(folders[digest]) > 1}
