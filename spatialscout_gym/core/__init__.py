"""The lowest layer: frames, camera, triangulation, scoring, scene specs (numpy/scipy only)."""
