"""What a user of the installed package meets outside a clone: the shipped policy by its documented
name from any directory, install hints that fit how the package was installed, and a one-line
error naming the extra when the Inspect task is imported without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from spatialscout_gym.core import errors
from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY, load_policy_config, policy_path

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_policy_is_found_by_its_documented_name_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert SHIPPED_POLICY.is_relative_to(ROOT / "spatialscout_gym")          # package data, installed with it
    for name in ("models/nbv_ppo/model.zip", "models/nbv_ppo", "./models/nbv_ppo/"):
        assert policy_path(name) == SHIPPED_POLICY / "model.zip", name
    trained = load_policy_config(policy_path("models/nbv_ppo/model.zip"))
    assert trained["source"] is not None and trained["image_budget"] == 20   # its nbv_config.json is read
    assert not policy_path("models/other/model.zip").exists()                 # only the shipped names
    own = tmp_path / "models" / "nbv_ppo"
    own.mkdir(parents=True)
    (own / "model.zip").write_bytes(b"mine")
    assert policy_path("models/nbv_ppo/model.zip") == Path("models/nbv_ppo/model.zip")   # a file here wins


def test_install_hint_fits_how_the_package_was_installed(tmp_path, monkeypatch):
    assert errors.install_command("rl") == f"pip install -e '{ROOT}[rl]'"     # from this checkout
    installed = tmp_path / "site-packages" / "spatialscout_gym" / "core" / "errors.py"
    monkeypatch.setattr(errors, "__file__", str(installed))                  # as from a wheel
    assert errors.install_command("rl,ray") == "pip install 'spatialscout-gym[rl,ray]'"


def test_inspect_task_without_the_extra_is_one_line_naming_it():
    code = ("import sys; sys.modules['inspect_ai'] = None\n"
            "try:\n    import spatialscout_gym.integrations.inspect_task\n"
            "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    line = run.stdout.strip()
    assert "\n" not in line and line.startswith("MissingExtraError ")
    assert "'inspect' extra" in line and "[inspect]" in line
