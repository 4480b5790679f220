"""Named scene splits (``train``, ``val``, ``test``): every listed scene belongs to its split;
``evaluate --scenes split:...`` expands them; ``train-nbv`` and the recipes refuse a val or test
scene in one line before anything is built or written."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import pytest

from spatialscout_gym.cli.main import main
from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.eval.running.evaluate import expand_scenes
from spatialscout_gym.scenes.catalog import catalog_scene_ids
from spatialscout_gym.scenes.splits import SPLITS, check_training_scene, split_of, split_scenes

ROOT = Path(__file__).resolve().parents[1]


def test_each_split_lists_only_its_own_scenes():
    for split in SPLITS:
        scenes = split_scenes(split, 5)
        assert len(scenes) == 5 and {split_of(s) for s in scenes} == {split}, (split, scenes)
    assert split_scenes("test") == catalog_scene_ids()                      # the whole benchmark
    assert split_scenes("val", 2) == ["procedural:10000000", "procedural:10000001"]
    assert [split_of(s) for s in ("procedural", "procedural:9999999", "procedural:19999999", "procedural:20000000",
                                  "Kitchen_01@2.0", "scene_spec.json")] == ["train", "train", "val", "train",
                                                                             "test", None]
    with pytest.raises(ConfigError, match="split:val:<n>"):
        split_scenes("val")
    with pytest.raises(ConfigError, match="unknown split 'dev'"):
        split_scenes("dev", 3)


def test_evaluate_takes_a_named_split():
    assert expand_scenes(["split:val:2", "split:test:1"]) == ["procedural:10000000", "procedural:10000001",
                                                              catalog_scene_ids()[0]]
    assert expand_scenes(["split:test"]) == expand_scenes(["catalog"])
    with pytest.raises(ConfigError, match="number of scenes"):
        expand_scenes(["split:val:two"])


def test_nbv_results_validates_on_the_val_split():
    spec = importlib.util.spec_from_file_location("nbv_results", ROOT / "benchmarks" / "nbv_results.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert [f"procedural:{m.VALIDATION_SEED + i}" for i in range(3)] == split_scenes("val", 3)


@pytest.mark.parametrize("scene,split", [("Kitchen_01", "test"), ("procedural:10000003", "val"),
                                         ("split:test", "test"), ("split:val:4", "val")])
def test_training_refuses_a_held_out_scene(tmp_path, scene, split):
    printed = io.StringIO()
    out = tmp_path / "runs"
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(["train-nbv", "--scenes", scene, "--total-timesteps", "64", "--out", str(out)])
    text = printed.getvalue().strip()
    assert code == 2 and len(text.splitlines()) == 1 and scene in text and split in text, text
    assert not out.exists()                           # refused before a run directory was made
    for recipe, argv in (("cleanrl_ppo", None), ("sb3_ppo", ["--scenes", scene, "--save", str(tmp_path / "m")])):
        ex_spec = importlib.util.spec_from_file_location(recipe, ROOT / "examples" / f"{recipe}.py")
        ex = importlib.util.module_from_spec(ex_spec)
        sys.modules[recipe] = ex                      # its dataclasses look their module up there
        ex_spec.loader.exec_module(ex)
        with pytest.raises(ConfigError, match=split):
            ex.main(ex.Args(scenes=scene, save_dir=str(tmp_path / "c")) if argv is None else argv)
    assert check_training_scene("split:train") == "procedural"
    assert check_training_scene("procedural:20000000") == "procedural:20000000"
