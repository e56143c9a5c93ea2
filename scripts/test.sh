#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs the whole suite with ctest.
# Exits non-zero on any failure. Extra arguments go to ctest (e.g. -R store, -L e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "${COLLIE_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j"${COLLIE_TEST_JOBS:-2}" "$@"
