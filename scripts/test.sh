#!/usr/bin/env bash
# Run the whole test suite on a fresh Debian machine: installs what it needs first
# (software Vulkan, a virtual environment with every extra the tests exercise), then ruff, mypy and pytest.
# Rendering tests run on Mesa's software Vulkan driver (lavapipe); nothing is skipped for lack of a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="render,plots,test,rl,vlm,ray,maniskill,inspect" bash scripts/setup.sh
. .venv/bin/activate
# ---- headless browser for the viewer/play tests (tests/test_viewer.py, tests/test_play.py) -----
if ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  echo "test.sh: installing chromium chromium-driver (browser tests)"
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq chromium chromium-driver \
    || echo "test.sh: could not install chromium; the browser tests will skip"
fi
ruff check .    # the lint rules are in pyproject.toml ([tool.ruff.lint])
mypy            # types of the whole package; the strictness is stated in pyproject.toml ([tool.mypy])
# TEST_WORKERS pytest processes (pytest-xdist; default 2): each test file runs whole on one of them,
# the Ray files one after another on one (tests/conftest.py); TEST_WORKERS=0 runs in this process
python -m pytest -q -p no:cacheprovider --durations=10 -n "${TEST_WORKERS:-2}" --dist loadgroup "$@"   # and the ten slowest tests
# the declared dependency floors are true: their own venv at the floors, a fast subset (SKIP_FLOORS=1 skips)
[ "${SKIP_FLOORS:-0}" = 1 ] || bash scripts/test_floors.sh
# the built wheel installs into a fresh venv and runs the demo, the shipped policy and `view` from
# outside the checkout (SKIP_WHEEL=1 skips)
[ "${SKIP_WHEEL:-0}" = 1 ] || bash scripts/test_wheel.sh
