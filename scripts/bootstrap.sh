#!/usr/bin/env bash
# Installs every build/test dependency of collie from Debian packages. Idempotent: packages
# already present are skipped, and `apt-get update` runs at most once per invocation.
# Works as root; uses sudo otherwise. Prints where CUDA/NCCL were found (they are optional).
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git
  libgloo-dev libopenmpi-dev openmpi-bin
  libcli11-dev libyaml-cpp-dev prometheus-cpp-dev libcpp-httplib-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libuv1-dev libfmt-dev libspdlog-dev libbackward-cpp-dev libdw-dev
  prometheus chromium iproute2 procps curl python3 libxml2-utils
  clang libclang-rt-dev llvm   # sanitizer + libFuzzer stage: runtimes, llvm-symbolizer
  clang-format                 # scripts/format.sh --check in the test command
  patchelf debootstrap         # scripts/bundle.sh (rpath) and its test in a bare Debian root
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "bootstrap: not root and no sudo; install: ${PKGS[*]}" >&2; exit 1; }
  SUDO="sudo"
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "bootstrap: all ${#PKGS[@]} packages present"
fi

cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ -f "$cuda/include/cuda_runtime.h" ] && [ -f "$cuda/include/nccl.h" ]; then
  echo "bootstrap: CUDA + NCCL found under $cuda (NCCL backend will be built)"
else
  echo "bootstrap: no CUDA/NCCL under $cuda (NCCL backend will be skipped)"
fi
