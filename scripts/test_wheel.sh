#!/usr/bin/env bash
# The package as a user installs it: builds the sdist and, from it, the wheel (`python -m build`),
# installs the wheel with the rl extra (torch pinned first, as scripts/setup.sh does) into a fresh
# virtual environment in a temporary directory, and from a directory outside the checkout runs the
# demo episode, the shipped policy and `view`, and checks that install hints name the installed
# package. Called by scripts/test.sh (SKIP_WHEEL=1 skips); on its own: `bash scripts/test_wheel.sh`
# (PYTHON names the interpreter; WHEEL_TMP the parent of the temporary directory). Prints its run time.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
PY="${PYTHON:-python3}"
WORK="$(mktemp -d "${WHEEL_TMP:-${TMPDIR:-/tmp}}/spatialscout-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
unset PYTHONPATH            # nothing from the checkout may be imported by what runs below
say() { printf 'test_wheel.sh: %s\n' "$*"; }
pip_q() { "$@" -q --disable-pip-version-check; }

# ---- build: the sdist, then the wheel from the sdist (what an index would serve) -----------------
"$PY" -m venv "$WORK/tools"
pip_q "$WORK/tools/bin/python" -m pip install "build>=1.2"
# from a copy of the checkout's files (tracked and not ignored), so that no build output lands in it
mkdir "$WORK/src"
git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -cf - -T - 2>/dev/null | tar -xf - -C "$WORK/src"
[ -f "$WORK/src/pyproject.toml" ] || { say "could not copy the checkout's files"; exit 1; }
"$WORK/tools/bin/python" -m build --outdir "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 \
  || { tail -n 30 "$WORK/build.log"; say "python -m build failed (log above)"; exit 1; }
WHEEL="$(ls "$WORK"/dist/*.whl)"
say "built $(basename "$WHEEL") and $(basename "$WORK"/dist/*.tar.gz)"

# ---- a fresh environment with the wheel: torch pinned first (an unpinned torch is a CUDA build) --
"$PY" -m venv "$WORK/venv"
V="$WORK/venv/bin"
pip_q "$V/python" -m pip install "torch==2.13.0"
pip_q "$V/python" -m pip install "$WHEEL[rl]" "torch==2.13.0"

# ---- from outside the checkout -------------------------------------------------------------------
mkdir "$WORK/user" && cd "$WORK/user"
"$V/python" - "$WORK" <<'PYEOF'
import sys
import spatialscout_gym
from spatialscout_gym.core.errors import install_command
from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY
assert spatialscout_gym.__file__.startswith(sys.argv[1]), f"imported {spatialscout_gym.__file__}, not the installed wheel"
assert (SHIPPED_POLICY / "model.zip").is_file(), f"no shipped policy in the installed package ({SHIPPED_POLICY})"
hint = install_command("vlm")
assert hint == "pip install 'spatialscout-gym[vlm]'", f"install hint for a wheel install: {hint}"
try:                               # the inspect extra is not installed here: one line naming it
    import spatialscout_gym.integrations.inspect_task  # noqa: F401
except ImportError as exc:
    assert "'inspect' extra" in str(exc) and "\n" not in str(exc), str(exc)
else:
    raise AssertionError("the Inspect task imported without the inspect extra")
print("test_wheel.sh: installed package, shipped policy and install hints ok")
PYEOF
SCENE="$("$V/python" -c 'from spatialscout_gym.scenes.catalog import catalog_scene_ids; print(catalog_scene_ids()[0])')"
say "at $((SECONDS - start)) s: the demo episode"
# the demo episode (scripts/demo.sh, the README's first command)
"$V/spatialscout" run --agent oracle-click --scene "$SCENE" --out demo
"$V/python" -c 'import json; r = json.load(open("demo/result.json")); assert r["status"] == "ok", r["status"]'
say "at $((SECONDS - start)) s: the shipped policy"
# the shipped policy by its documented name, which works from any directory
"$V/spatialscout" evaluate --agent ppo:models/nbv_ppo/model.zip --scenes "$SCENE" --out ppo
"$V/python" -c 'import json; e = json.load(open("ppo/report.json"))["episodes"]; assert e["completed"] == e["total"] == 1, e'
say "at $((SECONDS - start)) s: view"
# the viewer's static page, served from package data
"$V/spatialscout" view demo --out site
[ -s site/index.html ] || { say "view wrote no site/index.html"; exit 1; }
say "done in $((SECONDS - start)) s"
