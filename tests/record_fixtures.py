"""Run records for tests that need a ``result.json`` without running an episode: built through the
record types of :mod:`spatialscout_gym.core.records` (so each one loads strictly, as a live run's
does), never hand-written dicts."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from spatialscout_gym.core.records import CenterError, Counters, IoUView, ModelFigures, RunRecord
from spatialscout_gym.core.run_files import RESULT_FILE


def model_figures(**changes: Any) -> ModelFigures:
    """A model block of a run with no calls yet; ``changes`` set its fields."""
    base = ModelFigures(
        provider="openai", name="m", custom_endpoint=False, api_mode="chat", reasoning_effort=None,
        reasoning_effort_source=None, reasoning_effort_refused=[], reasoning_effort_sent={},
        max_output_tokens=None, max_output_tokens_source=None, prompt_style="plain", image_max_side_px=None,
        warnings=[], mode=None, model_call_budget=None, image_history=None, model_calls=0, http_attempts=0,
        attempt_failures=[], rate_limit_waits=0, rate_limit_wait_s=0.0, waits=[],
        usage={"input_tokens": 0, "output_tokens": 0}, cached_input_tokens=0, cache_write_input_tokens=0,
        cost_usd=0.0)
    return dataclasses.replace(base, **changes)


def run_record(scene_id: str, seed: int = 0, status: str = "ok", mean_iou: float = 0.5,
               model: ModelFigures | None = None, **changes: Any) -> RunRecord:
    """A run record of ``scene_id``: a scored episode (every target's IoU ``mean_iou``) or, with
    ``status="failed"``, a failed one; ``changes`` set other fields."""
    counters = Counters(tool_calls=1, images_used=1, images_left=9, calls_left=None, done=status == "ok",
                        end_reason="submitted" if status == "ok" else None)
    fields: dict[str, Any] = dict(
        status=status, scene_id=scene_id, agent="openai:m" if model is not None else "reference", seed=seed,
        catalog_version="v1", scene_content_hash="0" * 64, resolution=32, end_reason=counters.end_reason,
        counters=counters, image_budget=10, tool_call_budget=None, model=model)
    if status == "ok":
        view = IoUView(mean_iou=mean_iou, gt_0=1.0, gt_50=float(mean_iou >= 0.5), gt_90=float(mean_iou >= 0.9))
        fields.update(num_targets=1, num_submitted=1, coverage=1.0, all=view, submitted=view,
                      center_error_m=CenterError(mean=0.1, median=0.1, rmse=0.1), full_scene_loss_m=0.1)
    else:
        fields.update(error="RuntimeError: the episode failed", error_type="RuntimeError")
    fields.update(changes)
    return RunRecord(**fields)


def write_record(run_dir: Path, record: RunRecord) -> Path:
    """``run_dir/result.json`` holding ``record`` (the directory is made)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / RESULT_FILE
    path.write_text(json.dumps(record.to_json()))
    return path


def model_json(**changes: Any) -> dict:
    """:func:`model_figures` in the JSON form ``result.json`` writes (its ``model`` block)."""
    return run_record("x", model=model_figures(**changes)).to_json()["model"]
