#!/usr/bin/env bash
# The declared floors are true: a virtual environment with the lowest version pyproject.toml allows
# of each core dependency (numpy, scipy, gymnasium, pillow, tqdm: `name>=X` installed as `name==X`),
# then a fast subset of the tests that needs no extra (no SAPIEN, torch, SDKs). Called by
# scripts/test.sh; on its own: `bash scripts/test_floors.sh` (FLOORS_VENV names the venv folder,
# PYTHON the interpreter; the venv is kept and reused). Prints what it installed and its run time.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
VENV="${FLOORS_VENV:-.venv-floors}"
PY="${PYTHON:-python3}"
# `name>=X` of [project] dependencies -> `name==X`, read without tomllib (Python 3.10 has none)
mapfile -t FLOORS < <("$PY" - <<'PYEOF'
import re
text = open("pyproject.toml", encoding="utf-8").read()
deps = re.search(r"^dependencies = \[(.*?)\]", text, re.S | re.M).group(1)
for name, floor in re.findall(r'"([A-Za-z0-9_.-]+)>=([0-9][^",;]*)"', deps):
    print(f"{name}=={floor}")
PYEOF
)
[ "${#FLOORS[@]}" -ge 5 ] || { echo "test_floors.sh: expected the floors of numpy, scipy, gymnasium, pillow, tqdm in pyproject.toml, found: ${FLOORS[*]:-none}" >&2; exit 2; }
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: "${FLOORS[@]}" "pytest>=7" "hypothesis>=6"
"$VENV/bin/python" - "${FLOORS[@]}" <<'PYEOF'
import sys
from importlib.metadata import version
def release(v):  # "1.24" == "1.24.0"
    parts = [int(x) for x in v.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return parts
got = {spec.split("==")[0]: version(spec.split("==")[0]) for spec in sys.argv[1:]}
wrong = [f"{s} (installed {got[s.split('==')[0]]})" for s in sys.argv[1:]
         if release(got[s.split("==")[0]]) != release(s.split("==")[1])]
print("test_floors.sh: at the floors:", ", ".join(f"{k} {v}" for k, v in got.items()))
sys.exit(f"test_floors.sh: not at the floor: {wrong}" if wrong else 0)
PYEOF
# The package from this checkout (PYTHONPATH), not an install: nothing but the floors is resolved.
# Scoring and statistics (scipy), frames, the episode and the fake-renderer env (numpy, gymnasium), the
# codecs and the tool-call wrapper (pillow), the NBV core and vector-env settings (AutoresetMode).
PYTHONPATH="$PWD" "$VENV/bin/python" -m pytest -q -p no:cacheprovider -k "not cli_help" \
  tests/test_scoring.py tests/test_stats.py tests/test_frames.py tests/test_triangulation.py \
  tests/test_camera.py tests/test_episode_tools.py tests/test_env_fake.py tests/test_registration.py \
  tests/test_codecs.py tests/test_nbv_core.py tests/test_nbv_workers.py::test_bad_worker_counts_are_refused_in_one_line \
  "$@"
echo "test_floors.sh: done in $((SECONDS - start)) s"
