#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then configures, builds and runs a separate
# CMake project that uses find_package(collie). Args: SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1" build="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/lib/cmake/collie/collieConfig.cmake" || test -f "$tmp/prefix/lib/x86_64-linux-gnu/cmake/collie/collieConfig.cmake"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib/x86_64-linux-gnu" "$tmp/consumer/consumer"
