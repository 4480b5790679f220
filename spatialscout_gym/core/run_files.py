"""The names of the files a run directory and a scene directory hold (docs/protocol.md section 7).

The one definition of these names: every writer and reader imports them from here, and no other
module of the package spells one as a string (``tests/test_one_home.py`` reads the source for
that). An evaluation directory's own files (``evaluate.json``, ``scenes.json``, ...) belong to its
reader, :mod:`spatialscout_gym.eval.layout`.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.types import natural_number

__all__ = ["frame_file_name", "RESULT_FILE", "TRACE_FILE", "PREDICTIONS_FILE", "GROUND_TRUTH_FILE", "ENTITY_LIBRARY_FILE",
           "SCENE_SPEC_FILE", "HARNESS_FILE", "PROMPT_FILE", "DELIVERED_FILE", "FRAMES_DIR", "FRAME_HASHES_FILE",
           "ATTEMPTS_DIR", "RUN_FILES"]
# the seed folder's name (SEED_DIR_PREFIX, seed_dir_name, seed_of_dir) is defined at the end and
# exported by its reader, spatialscout_gym.eval.layout

RESULT_FILE = "result.json"
"""Status, the scorer's metrics, scene id, agent, seed, counters (docs/protocol.md section 7)."""
TRACE_FILE = "trace.jsonl"
"""Every trace event of the episode, one JSON object a line."""
PREDICTIONS_FILE = "predictions.json"
"""``{"positions": {id: [x, y, z]}}``: the final accepted map (task frame, m)."""
GROUND_TRUTH_FILE = "ground_truth.json"
"""The scene's target table, so a directory re-scores on its own (docs/protocol.md section 6)."""
ENTITY_LIBRARY_FILE = "entity_library.json"
"""The public half of the scene (what an agent could know)."""
SCENE_SPEC_FILE = "scene_spec.json"
"""A whole scene spec (``scenes export``, imported scenes)."""
HARNESS_FILE = "harness.json"
"""What a model agent was sent and how: prompt and role, tool schema, budgets, request settings."""
PROMPT_FILE = "prompt.txt"
"""A model agent's prompt as plain text."""
DELIVERED_FILE = "delivered_sha256.json"
"""SHA-256 of each image as the model received it (written by model agents, checked by ``verify``)."""
FRAMES_DIR = "frames"
"""Every captured RGB frame, ``frame_000.png``, ..."""


def frame_file_name(frame_id: int) -> str:
    """The file of frame ``frame_id`` inside :data:`FRAMES_DIR` (``frame_003.png``): the one spelling
    of a frame's name, for writers and readers alike."""
    return f"frame_{frame_id:03d}.png"


FRAME_HASHES_FILE = f"{FRAMES_DIR}/sha256.json"
"""SHA-256 of every raw RGB frame (``image.tobytes()``, H x W x 3 uint8) and the renderer that drew
them, for ``spatialscout verify --images``."""
ATTEMPTS_DIR = "attempts"
"""``evaluate`` only: earlier failed attempts of the episode, ``attempts/NN/``."""

RUN_FILES = (RESULT_FILE, TRACE_FILE, PREDICTIONS_FILE, GROUND_TRUTH_FILE, ENTITY_LIBRARY_FILE, SCENE_SPEC_FILE,
             HARNESS_FILE, PROMPT_FILE, DELIVERED_FILE, FRAME_HASHES_FILE)
"""Every file name above (the directories aside)."""


SEED_DIR_PREFIX = "seed_"
"""An evaluation directory's episode folders are ``<scene dir>/seed_<k>``: the one spelling of that name."""


def seed_dir_name(seed: int) -> str:
    """``seed_<k>``: the directory of agent seed ``k`` (a non-negative integer, written in decimal
    without leading zeros) in an evaluation directory; :func:`seed_of_dir` reads it back."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"an agent seed must be a non-negative integer, got {seed!r}")
    return f"{SEED_DIR_PREFIX}{int(seed)}"


def seed_of_dir(name: str) -> int | None:
    """The seed ``k`` of a directory named exactly as :func:`seed_dir_name` writes it, else None
    (``seed_01``, ``seed_-1``, ``seed_²``, ``seed_0.failed.json`` are not seed directories)."""
    if not name.startswith(SEED_DIR_PREFIX):
        return None
    k = natural_number(name[len(SEED_DIR_PREFIX):])
    return k if k is not None and name == seed_dir_name(k) else None
