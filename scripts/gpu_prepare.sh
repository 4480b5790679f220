#!/usr/bin/env bash
# Prepare, on a machine with the package registries, what scripts/gpu_check.sh needs on a GPU machine
# that has python3 3.12 with torch, numpy and scipy but no network: the wheels (.whl/) and the
# Vulkan/GL loader packages (.gl/) in the repository root. Both folders are git-ignored; pass them
# to the GPU machine as carried paths and run, there:
#   bash scripts/gpu_check.sh --wheels .whl --debs .gl OUT
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
WHEELS=(sapien==3.0.3 gymnasium farama-notifications transforms3d pyperclip importlib_resources
        stable-baselines3 tyro docstring-parser typeguard shtab cloudpickle)
mkdir -p .whl .gl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${PLAT[@]}" -d .whl "${WHEELS[@]}"
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
mkdir -p /tmp/amd64/partial
# shellcheck disable=SC2086
apt-get $o update -qq
# shellcheck disable=SC2086
(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
# The sapien wheel (about 51 MB) with the repository comes close to what one call to a GPU machine
# carries (64 MiB): repack it unpacked and xz-compressed (about 37 MB); gpu_check.sh unpacks any
# .whl/*.tar.xz into its site folder before installing the remaining wheels.
for w in .whl/sapien-*.whl; do
  [ -e "$w" ] || continue
  tmp=$(mktemp -d); python3 -m zipfile -e "$w" "$tmp"
  tar -cJf ".whl/$(basename "$w" .whl).tar.xz" -C "$tmp" . && rm -rf "$tmp" "$w"
done
du -sh .whl .gl
echo "gpu_prepare: ready; the two folders travel with the repository (under 64 MiB together)"
