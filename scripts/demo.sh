#!/usr/bin/env bash
# The main job on its embedded defaults: `collie perf` = 4 local ranks over Gloo, all_reduce,
# 8 B .. 64 MiB, nccl-tests table. Installs dependencies and builds first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >&2
bash scripts/build.sh >&2
exec "${COLLIE_BUILD_DIR:-build}/src/cli/collie" perf "$@"
