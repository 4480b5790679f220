#!/usr/bin/env bash
# Idempotent setup for a fresh Debian/Ubuntu machine with only Python:
#   1. a Vulkan driver SAPIEN can use (Mesa lavapipe >= 24.3; bookworm-backports on Debian 12),
#   2. .venv with the package installed editable: pip install -e ".[$EXTRAS]" (default render,plots,test).
# Quiet and fast when everything is present. Usage: scripts/setup.sh  (from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'setup: %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO="none"; fi
fi
apt_get() {
  if [ "$SUDO" = "none" ]; then say "need root for: apt-get $*  (run it as root, then rerun)"; return 1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "$@"
}
codename="$( . /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-}")"

# ---- 1. Vulkan driver -------------------------------------------------------------------
mesa_ok() {
  command -v vulkaninfo >/dev/null 2>&1 || return 1
  local v
  v="$(vulkaninfo --summary 2>/dev/null | grep -o 'Mesa [0-9][0-9]*\.[0-9][0-9]*' | head -1 | cut -d' ' -f2)"
  [ -n "$v" ] || return 1
  local major="${v%%.*}" minor="${v#*.}"
  [ "$major" -gt 24 ] || { [ "$major" -eq 24 ] && [ "$minor" -ge 3 ]; }
}
has_gpu() { command -v vulkaninfo >/dev/null 2>&1 && vulkaninfo --summary 2>/dev/null | grep -q 'PHYSICAL_DEVICE_TYPE_\(DISCRETE\|INTEGRATED\)_GPU'; }

if mesa_ok || has_gpu; then
  :  # a usable Vulkan device is already there
elif command -v apt-get >/dev/null 2>&1; then
  if [ "$codename" = "bookworm" ]; then
    src=/etc/apt/sources.list.d/backports.sources
    if ! grep -qs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null; then
      say "adding bookworm-backports ($src): bookworm's Mesa 22.3 is too old for SAPIEN"
      printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        | { if [ -n "$SUDO" ] && [ "$SUDO" != none ]; then $SUDO tee "$src"; else tee "$src"; fi; } >/dev/null
    fi
    say "installing mesa-vulkan-drivers libvulkan1 vulkan-tools from bookworm-backports"
    apt_get update -qq
    apt_get install -y -qq -t bookworm-backports mesa-vulkan-drivers libvulkan1 vulkan-tools
  else
    say "installing mesa-vulkan-drivers libvulkan1 vulkan-tools"
    apt_get update -qq
    apt_get install -y -qq mesa-vulkan-drivers libvulkan1 vulkan-tools
  fi
else
  say "no apt-get: install a Mesa Vulkan driver >= 24.3 (lavapipe) or a GPU Vulkan driver yourself"
fi

# ---- 2. virtual environment and the package ------------------------------------------------
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  if ! python3 -m venv .venv 2>/dev/null; then
    rm -rf .venv
    say "python3 -m venv failed; installing python3-venv"
    apt_get update -qq && apt_get install -y -qq python3-venv
    python3 -m venv .venv
  fi
fi
# EXTRAS picks the optional dependency groups (pyproject.toml). One stamp per installed extra and
# pyproject.toml's content makes reruns free until pyproject.toml changes or a new extra is asked for.
EXTRAS="${EXTRAS:-render,plots,test}"
tag="$(sha256sum pyproject.toml | cut -c1-16)"
missing=""
for extra in ${EXTRAS//,/ }; do
  [ -f ".venv/.installed-$extra-$tag" ] || missing="$missing $extra"
done
if [ -n "$missing" ] || ! .venv/bin/python -c "import spatialscout_gym" >/dev/null 2>&1; then
  log=.venv/pip-install.log
  say "installing spatialscout-gym with extras $EXTRAS (pip's output: $log)"
  pip_install() {
    if ! .venv/bin/python -m pip install -q "$@" >>"$log" 2>&1; then
      tail -n 30 "$log"; say "pip install $* failed; the whole output is in $log"; exit 1
    fi
  }
  : >"$log"
  pip_install --upgrade pip
  case ",$EXTRAS," in
    # torch first and pinned: an unpinned torch (pulled by stable-baselines3) is a multi-GB CUDA build.
    *,rl,*) pip_install "torch==2.13.0" ;;
  esac
  pip_install -e ".[$EXTRAS]"
  find .venv -maxdepth 1 -name ".installed-*" ! -name "*-$tag" -delete
  for extra in ${EXTRAS//,/ }; do touch ".venv/.installed-$extra-$tag"; done
fi
say "ready: . .venv/bin/activate && spatialscout doctor"
