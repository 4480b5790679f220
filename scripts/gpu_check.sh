#!/usr/bin/env bash
# The GPU path in one call: install, doctor, batched-render and NBV tests on the GPU, a pixel check of
# the camera-group render against one-camera-at-a-time rendering, the NBV speed benchmark for 16, 64
# and 256 envs (one process, and worker processes), and a short train-nbv on the GPU. Every figure and
# log goes into OUT; OUT/summary.json lists each step's exit code, seconds and log.
#
#   bash scripts/gpu_check.sh OUT                       # a machine with one NVIDIA GPU (< 8 min on 16 cores)
#   bash scripts/gpu_check.sh --wheels W --debs D OUT   # same, offline: wheels and loader .debs carried in
#   bash scripts/gpu_check.sh --dry-run OUT             # the same steps on the CPU (lavapipe), small sizes
#
# Online, it installs with the project's own scripts/setup.sh (extras render,test,rl); a machine with
# an NVIDIA GPU needs no Mesa. Offline (--wheels DIR: the wheels of sapien, gymnasium and the rest;
# --debs DIR: the Vulkan/GL loader .debs), it installs the wheels into a private folder and unpacks the
# loaders, using the machine's own python3 with its torch, numpy and scipy. See the README's Speed
# section for the exact command. Steps keep going after a failure; the exit code is 0 only when
# every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"

DRY=0 WHEELS="" DEBS="" OUT=""
usage() { echo "usage: bash scripts/gpu_check.sh [--dry-run] [--wheels DIR] [--debs DIR] OUT" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --wheels) [ $# -ge 2 ] || usage; WHEELS="$2"; shift ;;
    --debs) [ $# -ge 2 ] || usage; DEBS="$2"; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu_check: unknown option $1" >&2; usage ;;
    *) [ -z "$OUT" ] || usage; OUT="$1" ;;
  esac
  shift
done
[ -n "$OUT" ] || usage
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
say() { printf 'gpu_check: %s\n' "$*"; }

# ---- install ---------------------------------------------------------------------------------
if [ -n "$DEBS" ]; then
  say "unpacking the loader packages in $DEBS"
  for f in "$DEBS"/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [ -n "$WHEELS" ]; then
  PY=python3
  SITE="${TMPDIR:-/tmp}/spatialscout-site"
  say "installing the wheels in $WHEELS into $SITE"
  mkdir -p "$SITE"
  for t in "$WHEELS"/*.tar.xz; do   # wheels gpu_prepare.sh repacked smaller (unpacked wheels, xz)
    [ -e "$t" ] && { tar -xJf "$t" -C "$SITE" || { echo "gpu_check: cannot unpack $t" >&2; exit 1; }; }
  done
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    "$WHEELS"/*.whl > "$OUT/install.log" 2>&1 || { tail -n 20 "$OUT/install.log"; exit 1; }
  export PYTHONPATH="$REPO:$SITE${PYTHONPATH:+:$PYTHONPATH}"
  CLI=("$PY" -c "from spatialscout_gym.cli.main import main; raise SystemExit(main())")
else
  EXTRAS="render,test,rl" bash scripts/setup.sh > "$OUT/install.log" 2>&1 || { tail -n 20 "$OUT/install.log"; exit 1; }
  PY="$REPO/.venv/bin/python"
  CLI=("$REPO/.venv/bin/spatialscout")
fi
# The NVIDIA Vulkan driver of a container image may sit outside the loader's default search path.
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ "$DRY" = 0 ] && [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ]; then
  export VK_DRIVER_FILES="$icd" __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi

# ---- sizes ------------------------------------------------------------------------------------
TESTS=(tests/test_batched_render.py tests/test_nbv_workers.py)
if [ "$DRY" = 1 ]; then  # the test files run whole in the suite; one test here checks the wiring
  DEVICE=""; TORCH_DEVICE=cpu; ENVS=(2); WORKERS=2; SECONDS_ROW=1; PIX_ENVS=2; PIX_STEPS=4
  TRAIN_STEPS=256; TRAIN_ENVS=2; TESTS=(tests/test_batched_render.py::test_batched_equals_single_envs_for_the_same_seeds)
else
  DEVICE=cuda; TORCH_DEVICE=cuda; ENVS=(16 64 256); WORKERS=8; SECONDS_ROW=5; PIX_ENVS=16; PIX_STEPS=24
  TRAIN_STEPS=16384; TRAIN_ENVS=64
fi
export SPATIALSCOUT_TEST_RENDER_DEVICE="$DEVICE"

# ---- steps ------------------------------------------------------------------------------------
STEPS_JSON="$OUT/steps.jsonl"; : > "$STEPS_JSON"; FAILED=0
step() {  # step NAME COMMAND...: run, log to OUT/NAME.log, record rc and seconds
  local name="$1"; shift
  local t0; t0=$(date +%s.%N)
  say "$name: $*"
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local dt; dt=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  printf '{"step": "%s", "rc": %d, "seconds": %s, "log": "%s.log"}\n' "$name" "$rc" "$dt" "$name" >> "$STEPS_JSON"
  [ "$rc" = 0 ] || { FAILED=1; say "$name failed (rc $rc): tail of $OUT/$name.log"; tail -n 15 "$OUT/$name.log"; }
}

step doctor "${CLI[@]}" doctor
step tests "$PY" -m pytest -q -p no:cacheprovider "${TESTS[@]}" --junitxml="$OUT/tests.xml"
step pixels "$PY" scripts/gpu_pixel_check.py ${DEVICE:+--render-device "$DEVICE"} --num-envs "$PIX_ENVS" \
  --steps "$PIX_STEPS" --out "$OUT/pixels.json"
step bench_one_process "$PY" benchmarks/bench_nbv.py ${DEVICE:+--render-device "$DEVICE"} --batched-render on \
  --resolutions 64 --num-envs "${ENVS[@]}" --async-envs 0 --seconds "$SECONDS_ROW" --out "$OUT/bench_nbv.json"
step bench_workers "$PY" benchmarks/bench_nbv.py ${DEVICE:+--render-device "$DEVICE"} --batched-render on \
  --resolutions 64 --num-envs "${ENVS[@]}" --async-envs 0 --workers "$WORKERS" --seconds "$SECONDS_ROW" \
  --out "$OUT/bench_nbv_workers.json"
step train "${CLI[@]}" train-nbv --total-timesteps "$TRAIN_STEPS" --num-envs "$TRAIN_ENVS" --num-steps 64 \
  --batch-size 256 --device "$TORCH_DEVICE" ${DEVICE:+--render-device "$DEVICE"} --no-progress-bar \
  --out "$OUT/train" --run-name gpu_check

"$PY" - "$OUT" "$DRY" <<'EOF'
import json, platform, sys
from pathlib import Path
out, dry = Path(sys.argv[1]), sys.argv[2] == "1"
steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines() if line.strip()]
summary = {"dry_run": dry, "machine": platform.platform(), "steps": steps,
           "passed": all(s["rc"] == 0 for s in steps)}
for name in ("pixels", "bench_nbv", "bench_nbv_workers"):
    f = out / f"{name}.json"
    if f.is_file():
        summary[name] = json.loads(f.read_text())
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(f"gpu_check: {'passed' if summary['passed'] else 'FAILED'}; figures in {out / 'summary.json'}")
EOF
exit "$FAILED"
