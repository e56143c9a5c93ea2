#!/usr/bin/env bash
# scripts/gpu_check.sh on machines that have a GPU (a fake nvidia-smi on PATH lists one) where
# the check must not pass (issue 40):
#   unusable   collie (this build) cannot use the GPU, and nvidia-smi hangs when asked for its
#              full report (a wedged driver): exit 1, summary.md says first that no GPU step ran
#              and why, and the script ends within its budget (every probe under timeout)
#   skipped    collie says the GPU is usable, but the GPU test programs skip every test (a
#              stand-in collie and gtest programs): exit 1, summary.md says first which program
#              skipped everything
#   usage: gpu_check_test.sh SOURCE_DIR COLLIE_BINARY
# Each case runs gpu_check.sh in a bundle-shaped folder of links, with a small GPU_CHECK_BUDGET_S
# (15 s: the probes get 1 s each, the steps nothing; 30 s for the stand-ins, which end at once).
set -u
src=${1:?source dir}
collie=$(readlink -f "${2:?collie binary}")
work=$(mktemp -d /tmp/collie_gpu_check.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$work/path"
cat >"$work/path/nvidia-smi" <<'SH'
#!/bin/sh
# One GPU in the list; every other question hangs, as a wedged driver's nvidia-smi does.
[ "${1:-}" = -L ] && { echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-fake)"; exit 0; }
exec sleep 600
SH
chmod +x "$work/path/nvidia-smi"

# bundle DIR COLLIE: the layout gpu_check.sh reads (bin/collie, libexec/, scripts/).
bundle() {
  mkdir -p "$1/bin" "$1/libexec" "$1/scripts/bench"
  ln -s "$2" "$1/bin/collie"
  ln -s "$src/scripts/gpu_check.sh" "$src/scripts/frozen_rank_job.sh" "$1/scripts/"
}

# check CASE BUNDLE BUDGET REASON_REGEX: runs the check, expects exit 1 within the budget and
# REASON as the first line after summary.md's title.
check() {
  local name=$1 dir=$2 budget=$3 want=$4 rc=0 start took first
  start=$(date +%s)
  PATH="$work/path:$PATH" OUT="$work/out-$name" GPU_CHECK_BUDGET_S=$budget \
    timeout 120 bash "$dir/scripts/gpu_check.sh" "$dir" >"$work/$name.log" 2>&1 || rc=$?
  took=$(($(date +%s) - start))
  [ -f "$work/out-$name/summary.md" ] || { cat "$work/$name.log"; fail "$name: no summary.md"; }
  first=$(sed -n 3p "$work/out-$name/summary.md")
  echo "$name: exit $rc in $took s; summary.md: $first"
  [ $rc = 1 ] || { cat "$work/$name.log"; fail "$name: exit $rc, expected 1"; }
  [ $took -le $((budget + 10)) ] || fail "$name: took $took s, over its ${budget} s budget"
  grep -Eq "$want" <<<"$first" || { cat "$work/out-$name/summary.md"; fail "$name: no /$want/ first"; }
}

bundle "$work/unusable" "$collie"
check unusable "$work/unusable" 15 \
  '^\*\*FAIL\*\*: no GPU step ran although nvidia-smi -L lists 1 GPU\(s\): .+'
grep -q "no answer in the time it had" "$work/out-unusable/0-env.log" ||
  fail "unusable: the hanging nvidia-smi was not cut short (0-env.log)"

# A collie that says the GPU is usable, and GPU test programs that skip every test.
mkdir -p "$work/fake"
cat >"$work/fake/collie" <<'SH'
#!/bin/sh
case "$1" in
  info) printf 'Backends:\n  gloo  built\n  nccl  built\n\nall_reduce  yes  yes\n' ;;
  probe) printf '# env: 1 ranks\n#   gpu.count                    1\n#   gpu.cuda ok\n' ;;
  *) echo "stand-in collie: $*" ;;
esac
SH
chmod +x "$work/fake/collie"
bundle "$work/skipped" "$work/fake/collie"
for t in nccl_backend_test cuda_device_test; do
  cat >"$work/skipped/libexec/$t" <<'SH'
#!/bin/sh
echo "[==========] 4 tests from 1 test suite ran. (1 ms total)"
echo "tests/backends/nccl/nccl_backend_test.cpp:60: Skipped"
echo "no CUDA device: cudaGetDeviceCount says 0"
echo "[  PASSED  ] 0 tests."
echo "[  SKIPPED ] 4 tests, listed below:"
SH
  chmod +x "$work/skipped/libexec/$t"
done
check skipped "$work/skipped" 30 \
  '^\*\*FAIL\*\*: 1 nccl_backend_test \(conformance, one GPU\) skipped every test: .*no CUDA device'
grep -q 'FAIL: every test skipped, on a machine with 1 GPU(s) (PASSED 0 SKIPPED 4 )' \
  "$work/out-skipped/summary.md" || fail "skipped: the step's row does not say it"
echo PASS
