"""Scene spec files: one directory per scene with

* ``entity_library.json``: the public half (inventory, initial camera, intrinsics, radius);
* ``ground_truth.json``: the scorer's format (``SceneSpec.ground_truth_dict()``), which
  ``spatialscout score`` reads directly;
* ``scene_spec.json``: the full spec (public and private halves), which ``scene_by_name`` and
  ``spatialscout scenes render`` accept.
"""

from __future__ import annotations

from pathlib import Path

from spatialscout_gym.core.files import write_json_atomic, write_text_atomic
from spatialscout_gym.core.run_files import ENTITY_LIBRARY_FILE, GROUND_TRUTH_FILE, SCENE_SPEC_FILE
from spatialscout_gym.core.spec import SceneSpec

__all__ = ["export_scene", "SCENE_FILES"]

SCENE_FILES = (ENTITY_LIBRARY_FILE, GROUND_TRUTH_FILE, SCENE_SPEC_FILE)


def export_scene(spec: SceneSpec, out_dir: Path) -> Path:
    """Write ``spec``'s three files into ``out_dir / spec.scene_id``; returns that directory."""
    d = Path(out_dir) / spec.scene_id
    write_json_atomic(d / ENTITY_LIBRARY_FILE, spec.entity_library_dict(), indent=1)
    write_json_atomic(d / GROUND_TRUTH_FILE, spec.ground_truth_dict(), indent=1)
    write_text_atomic(d / SCENE_SPEC_FILE, spec.to_json() + "\n")
    return d
