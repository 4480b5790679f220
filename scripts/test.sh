#!/usr/bin/env bash
# Run the whole test suite on a fresh Debian machine: installs what it needs first
# (software Vulkan, a virtual environment with every extra the tests exercise), then ruff and pytest.
# Rendering tests run on Mesa's software Vulkan driver (lavapipe); nothing is skipped for lack of a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="render,plots,test,rl,vlm,ray,maniskill" bash scripts/setup.sh
. .venv/bin/activate
ruff check .    # the lint rules are in pyproject.toml ([tool.ruff.lint])
python -m pytest -q -p no:cacheprovider "$@"
