#!/usr/bin/env bash
# scripts/bundle.sh from a build that has the collie command but none of the test programs the
# bundle also carries (nccl_backend_test, cuda_device_test, raw_gloo_allreduce): it makes the
# bundle without them, saying so once per program, instead of failing in patchelf on a glob that
# matched nothing (issue 40). Cost: a few seconds (ldd, patchelf and tar over collie's libraries).
#   usage: bundle_script_test.sh SOURCE_DIR BUILD_DIR
set -u
src=${1:?source dir}
build=${2:?build dir}
source "$src/tests/support/skip.sh"
for tool in patchelf ldd readelf; do
  command -v $tool >/dev/null || skip "$tool is not installed (scripts/bootstrap.sh installs it)"
done
work=$(mktemp -d /tmp/collie_bundle_script.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  head -40 "$work/log"
  exit 1
}
# A build folder with only what bundle.sh reads: the cache (for the version) and the command.
mkdir -p "$work/build/src/cli"
grep '^CMAKE_PROJECT_VERSION:' "$build/CMakeCache.txt" >"$work/build/CMakeCache.txt"
cp "$build/src/cli/collie" "$work/build/src/cli/collie"
bash "$src/scripts/bundle.sh" "$work/build" "$work/out" >"$work/log" 2>&1 ||
  fail "bundle.sh exited $? without the test programs"
tree=$(tail -2 "$work/log" | head -1)
[ -x "$tree/bin/collie" ] || fail "no bin/collie in $tree"
[ -z "$(ls -A "$tree/libexec")" ] || fail "libexec/ is not empty: $(ls "$tree/libexec")"
for t in nccl_backend_test cuda_device_test raw_gloo_allreduce; do
  [ "$(grep -c "the bundle has no $t" "$work/log")" = 1 ] || fail "no one line saying $t is missing"
done
grep -qi patchelf "$work/log" && fail "patchelf complained"
"$tree/bin/collie" --version >/dev/null || fail "the bundled collie does not run"
echo "PASS: bundle without test programs: $(tail -3 "$work/log" | head -1)"
