#!/usr/bin/env bash
# One real episode on the first scene of the default offline catalog: installs what it needs,
# runs a reference agent, prints the score and writes images, a trace and a result to runs/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="render,plots" bash scripts/setup.sh
. .venv/bin/activate
SCENE="${SCENE:-$(python -c 'from spatialscout_gym.scenes.catalog import catalog_scene_ids; print(catalog_scene_ids()[0])')}"
AGENT="${AGENT:-oracle-click}"
spatialscout run --agent "$AGENT" --scene "$SCENE" --out runs/demo --overwrite "$@"
spatialscout scenes render "$SCENE" --out runs/demo/scene
echo "Images: runs/demo/frames/*.png, runs/demo/scene/*.png; trace: runs/demo/trace.jsonl"
