"""One rule rebuilds the scene a run was recorded on, for ``verify`` and for the report's figures:
the scene must have the recorded id and content hash; a run without a recorded hash is not
recoverable, and only the expected failures of a wrong name are passed over."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from spatialscout_gym.eval.pages.figures import _resolve_run_scene
from spatialscout_gym.eval.running.runner import SceneNotRecoverable, resolve_recorded_scene
from spatialscout_gym.eval.verification.verify import _Diverged, _resolve
from spatialscout_gym.scenes.catalog import scene_by_name, scene_content_hash


@pytest.fixture(scope="module")
def recorded():
    spec = scene_by_name("procedural:7")
    return spec, {"scene_id": spec.scene_id, "scene_content_hash": scene_content_hash(spec), "catalog_version": "3.0"}


def _recorded(fields: dict) -> SimpleNamespace:
    """What a run record says of its scene (the fields ``resolve_recorded_scene`` reads)."""
    return SimpleNamespace(**fields)


def test_the_recorded_scene_comes_back_by_scene_argument_or_by_its_id(recorded, tmp_path):
    spec, result = recorded
    run = tmp_path / spec.scene_id / "seed_0"
    assert scene_content_hash(resolve_recorded_scene(run, _recorded(result), {})) == result["scene_content_hash"]
    by_arg = resolve_recorded_scene(run, _recorded(result), {spec.scene_id: "procedural:7"})
    assert by_arg.scene_id == spec.scene_id


@pytest.mark.parametrize("change, reason", [
    ({"scene_content_hash": None}, "records no content hash"),
    ({"scene_content_hash": "0" * 64}, "not the same scene"),
    ({"scene_id": "NoSuchRoom_01"}, "cannot be found here"),
])
def test_verify_and_figures_refuse_the_same_runs(recorded, tmp_path, change, reason):
    spec, result = recorded
    result = {**result, **change}
    run = tmp_path / str(result["scene_id"]) / "seed_0"
    with pytest.raises(SceneNotRecoverable, match=reason):
        resolve_recorded_scene(run, _recorded(result), {})
    with pytest.raises(_Diverged, match=reason):
        _resolve(run, _recorded(result), {})
    assert _resolve_run_scene(run, _recorded(result), {}) is None


def test_an_unreadable_spec_file_named_in_scenes_json_is_passed_over(recorded, tmp_path):
    spec, result = recorded
    bad = tmp_path / "edited.json"
    bad.write_text('{"format_version": 99}')
    run = tmp_path / spec.scene_id / "seed_0"
    assert resolve_recorded_scene(run, _recorded(result), {spec.scene_id: str(bad)}).scene_id == spec.scene_id
