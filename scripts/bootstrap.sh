#!/usr/bin/env bash
# Installs every build/test dependency of collie from Debian packages. Idempotent: packages
# already present are skipped, and `apt-get update` runs at most once per invocation.
# Works as root; uses sudo otherwise. Prints where CUDA/NCCL were found (they are optional).
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git
  libgloo-dev libopenmpi-dev openmpi-bin
  libcli11-dev libyaml-cpp-dev prometheus-cpp-dev libcpp-httplib-dev nlohmann-json3-dev
  libsimdjson-dev              # collie analyze: JSON dumps at GB/s (src/debug/dump_reader.cpp)
  libgtest-dev libgmock-dev libuv1-dev libfmt-dev libspdlog-dev libbackward-cpp-dev libdw-dev
  prometheus chromium iproute2 procps curl python3 libxml2-utils
  clang libclang-rt-dev llvm   # sanitizer + libFuzzer stage: runtimes, llvm-symbolizer
  clang-format                 # scripts/format.sh --check in the test command
  patchelf debootstrap         # scripts/bundle.sh (rpath) and its test in a bare Debian root
  # e2e.slurm: a real two-node cluster (tests/support/slurm_cluster.sh); the basic plugins carry
  # Slurm's pmix MPI plugin (srun --mpi=pmix), built against libpmix2.
  munge slurm-wlm slurmctld slurmd slurm-client slurm-wlm-basic-plugins libpmix2
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
  # Keep the packages' own services (munge, slurmctld, slurmd on /etc config) from starting: the
  # tests start their own (tests/support/slurm_cluster.sh), and a stray slurmctld would hold port 6817.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
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
