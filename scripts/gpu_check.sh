#!/usr/bin/env bash
# Every GPU check of collie in one command, run from the bundle (scripts/bundle.sh) on a GPU
# machine with no Debian packages (the device machine: CUDA toolkit, NCCL from pip, PyTorch):
#   1. collie info; the NCCL backend's conformance on one GPU and the CudaDevice cases
#   2. collie perf --backend nccl, every collective, -b 8 -e 1G -f 4 -c 1 -M 1; then -G 1; then
#      -d all -o all on 1K..1M
#   3. collie probe env --backend nccl; an op that cannot complete (NCCL timeout and abort), its
#      dump and collie analyze; two ranks on one GPU (NCCL refuses them: the line it gives).
#      Multi-rank NCCL cases (DETAIL mismatch, hang across ranks with dumps + analyze) need >= 2
#      GPUs and run over nccl when there are; otherwise over gloo on the host as a stand-in that
#      checks the case itself
#   4. host CPUs: scripts/bench/overhead.sh (collie vs raw Gloo; MPI when mpirun is present);
#      torch's own fr_trace over collie's COLLIE_FR_DUMP_FORMAT=torch dumps; torch.distributed
#      Gloo all_reduce beside collie perf on the same sizes
#   5. NVIDIA nccl-tests (built by hand, kept in the git-ignored third_party-local/) with the
#      flags of step 2, busbw side by side with collie's
# Every command, the probes of the machine included (nvidia-smi, collie info, the env probe, the
# torch import), runs under `timeout` within a total budget (GPU_CHECK_BUDGET_S, default 450 s:
# the script ends within 8 minutes); step 5 runs after step 2, so the host-only step 4 is what a
# slow machine loses first. A step that needs a GPU when none is usable is one line saying
# why (the reason `collie info` gives). Results: $OUT/summary.md, one log per step, and
# results.tar.gz (JSON results, dumps, raw outputs): 8 files at most.
#   usage: scripts/gpu_check.sh [BUNDLE_DIR]     (default: the bundle this script is in, else
#          the newest build/bundle/collie-*); env: OUT (default ./gpu-check-out),
#          NCCL_TESTS_DIR (default third_party-local/nccl-tests/build), GPU_CHECK_BUDGET_S
#   exit 0 when every step that ran passed, 1 otherwise, 2 on bad usage. On a machine that has a
#   GPU (`nvidia-smi -L` lists one) it is also 1 when collie could not use it (no GPU step ran) or
#   a GPU test program skipped every test: the reason is the first line of summary.md.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -n ${1:-} ]]; then
  bundle=$(cd "$1" 2>/dev/null && pwd) || { echo "gpu_check: no folder $1" >&2; exit 2; }
elif [[ -x $here/../bin/collie ]]; then
  bundle=$(cd "$here/.." && pwd)
else
  bundle=$(ls -d "$here"/../build/bundle/collie-*-linux-*/ 2>/dev/null | tail -1)
  bundle=${bundle%/}
fi
if [[ -z $bundle || ! -x $bundle/bin/collie ]]; then
  echo "gpu_check: no bundle at '${bundle:-build/bundle}'; make one with scripts/bundle.sh" >&2
  exit 2
fi
collie=$bundle/bin/collie
libexec=$bundle/libexec
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d /tmp/gpu_check.XXXXXX)
trap 'rm -rf "$work"' EXIT
budget=${GPU_CHECK_BUDGET_S:-450}
t0=$(date +%s)
failed=0
: >"$work/steps"
: >"$work/reasons"  # why the check failed on a machine with a GPU: summary.md's first lines

# ---- helpers ---------------------------------------------------------------------------------
# budget_left: seconds of the budget left for one more command (5 s kept for the summary).
budget_left() { echo $((budget - ($(date +%s) - t0) - 5)); }
# bounded CAP CMD...: a probe of the machine (not a step) under timeout: CAP s, at most a tenth
# of the budget and what is left of it (at least 1 s); its status is CMD's, 124 when it ran out
# of time.
bounded() {
  local cap=$1 l
  shift
  l=$(budget_left)
  ((l > budget / 10)) && l=$((budget / 10))
  ((l < 1)) && l=1
  ((cap > l)) && cap=$l
  timeout -k 2 "$cap" "$@"
}
# note LOG NAME TEXT: a step that did not run, one line in its log and in the summary.
note() {
  echo "### $2: $3" >>"$1"
  echo "| $2 | $3 | | $(basename "$1") |" >>"$work/steps"
}
# run LOG CAP NAME CMD...: CMD under timeout (CAP s, or what is left of the budget); its output
# goes to LOG and to $work/last. ok when the exit status is $EXPECT_RC (default 0; "any": any
# status but a timeout) and, with $EXPECT_TEXT, the output matches that extended regex.
run() {
  local log=$1 cap=$2 name=$3
  shift 3
  local left
  left=$(budget_left)
  if ((left < 10)); then
    note "$log" "$name" "not run: the ${budget} s budget is spent"
    return 99
  fi
  ((cap > left)) && cap=$left
  { echo; echo "### $name"; echo "\$ $*"; } >>"$log"
  local start rc took status
  start=$(date +%s)
  timeout -k 5 "$cap" "$@" >"$work/last" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  cat "$work/last" >>"$log"
  if ((rc == 124 || rc == 137)); then
    status="FAIL: timed out after ${cap} s"
  elif [[ ${EXPECT_RC:-0} != any && $rc != "${EXPECT_RC:-0}" ]]; then
    status="FAIL: exit $rc (expected ${EXPECT_RC:-0})"
  elif [[ -n ${EXPECT_TEXT:-} ]] && ! grep -Eq "$EXPECT_TEXT" "$work/last"; then
    status="FAIL: no /$EXPECT_TEXT/ in the output"
  else
    status="ok"
  fi
  # gtest's counts, when the step was a test binary.
  local counts
  counts=$(grep -Eo '^\[  (PASSED|SKIPPED|FAILED) +\] [0-9]+' "$work/last" | sed 's/\[  //; s/ *\]//' |
    tr '\n' ' ')
  # A GPU test program ($GPU_TESTS set) that skipped every test, on a machine with a GPU, tested
  # nothing: a failure.
  if [[ -n ${GPU_TESTS:-} && $status == ok && $counts =~ SKIPPED\ [1-9] && ! $counts =~ PASSED\ [1-9] ]] &&
    ((hw_gpus > 0)); then
    status="FAIL: every test skipped, on a machine with $hw_gpus GPU(s)"
    # gtest's reason is the line after its first "...: Skipped".
    local why
    why=$(grep -m1 -A1 ': Skipped$' "$work/last" | sed -n 2p | cut -c1-200)
    echo "$name skipped every test: ${why:-(no reason given)}" >>"$work/reasons"
  fi
  [[ -n $counts ]] && status="$status ($counts)"
  [[ $status == ok* ]] || failed=1
  echo "# -> $status in ${took} s" >>"$log"
  echo "| $name | $status | ${took} s | $(basename "$log") |" >>"$work/steps"
  [[ $status == ok* ]]
}
# The first line of $work/last that looks like an error, for the summary.
first_error() { grep -m1 -Ei 'error|fail|refus|could not|invalid' "$work/last" | cut -c1-240; }

# ---- environment ------------------------------------------------------------------------------
# libcudart and libnccl stay outside the bundle: pip's NCCL first, then the CUDA toolkit.
ld=()
if nccl_py=$(bounded 30 python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' \
  2>/dev/null) && [[ -d $nccl_py ]]; then
  ld+=("$nccl_py")
fi
cuda_lib=${CUDA_HOME:-/usr/local/cuda}/lib64
[[ -d $cuda_lib ]] && ld+=("$cuda_lib")
gpu_ld=$(IFS=:; echo "${ld[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH=$gpu_ld
# torch brings its own CUDA libraries: python runs without ours.
py() { env -u LD_LIBRARY_PATH python3 "$@"; }
export -f py
# The GPUs the machine has, whatever collie makes of them (the driver's own list).
hw_gpus=0
if command -v nvidia-smi >/dev/null; then
  hw_gpus=$(bounded 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
fi

env_log=$OUT/0-env.log
{
  echo "# gpu_check $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs, budget ${budget} s"
  echo "bundle: $bundle"
  head -4 "$bundle/BUNDLE.txt" 2>/dev/null
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "python3: $(python3 --version 2>&1); torch: $(bounded 60 env -u LD_LIBRARY_PATH python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -1)"
  if command -v nvidia-smi >/dev/null; then
    bounded 20 nvidia-smi 2>&1 || echo "nvidia-smi: exit $? (124: no answer in the time it had)"
  else
    echo "nvidia-smi: not installed"
  fi
  echo "GPUs nvidia-smi -L lists: $hw_gpus"
} >"$env_log"

# One line: why the nccl backend cannot run here (libraries, driver, device), empty when it can.
info=$(bounded 30 "$collie" info 2>/dev/null)
info_rc=$?
gpu_why=$(sed -n '/^Cannot run on this host:/,/^$/s/^  nccl *//p' <<<"$info")
grep -Eq '^  nccl +not built' <<<"$info" &&
  gpu_why="this collie was built without CUDA (no nccl backend)"
((info_rc == 124)) && gpu_why="collie info gave no answer within the time it had"
gpus=0
if [[ -z $gpu_why ]]; then  # usable: how many GPUs (CUDA's count, as the env probe reports it)
  gpus=$(bounded 60 "$collie" probe env --backend nccl -np 1 2>/dev/null | awk '$2 == "gpu.count" {print $3}')
  [[ $gpus =~ ^[0-9]+$ ]] || gpus=$hw_gpus
  ((gpus > 0)) || gpu_why="collie sees no GPU"
fi
gpu_model=""
((hw_gpus > 0)) &&
  gpu_model=$(bounded 20 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# A machine with a GPU that collie cannot use ran no GPU step: that is what the check is for.
if ((hw_gpus > 0 && gpus == 0)); then
  echo "no GPU step ran although nvidia-smi -L lists $hw_gpus GPU(s): $gpu_why" >>"$work/reasons"
  failed=1
fi
echo "gpus usable by collie: $gpus${gpu_why:+ ($gpu_why)}" >>"$env_log"
needs_gpu() {  # needs_gpu LOG NAME: true when a GPU is usable, else the one-line note
  ((gpus > 0)) && return 0
  note "$1" "$2" "not run: nccl cannot run here: $gpu_why"
  return 1
}

# ---- 1. collie info, the NCCL and CUDA device tests -------------------------------------------
log=$OUT/1-info-device-tests.log
EXPECT_TEXT='all_reduce' run "$log" 30 "1 collie info" "$collie" info
if needs_gpu "$log" "1 nccl_backend_test (conformance, one GPU)"; then
  GPU_TESTS=1 run "$log" 120 "1 nccl_backend_test (conformance, one GPU)" \
    "$libexec/nccl_backend_test" --gtest_filter='-*CannotComplete*'
  GPU_TESTS=1 run "$log" 60 "1 cuda_device_test (CudaDevice, loader)" "$libexec/cuda_device_test"
fi

# ---- 2. collie perf --backend nccl --------------------------------------------------------------
log=$OUT/2-perf-nccl.log
sweep=(-b 8 -e 1G -f 4 -c 1)
ok_rows='Out of bounds values : 0 OK'
if needs_gpu "$log" "2 collie perf --backend nccl (sweep -M 1, -G 1, -d all -o all)"; then
  EXPECT_TEXT=$ok_rows run "$log" 150 "2 collie perf all --backend nccl ${sweep[*]} -M 1" \
    "$collie" perf all --backend nccl -np 1 "${sweep[@]}" -M 1 -J "$work/perf-nccl.json"
  EXPECT_TEXT=$ok_rows run "$log" 120 "2 ... -G 1 (CUDA graph)" \
    "$collie" perf all --backend nccl -np 1 "${sweep[@]}" -G 1 -J "$work/perf-nccl-graph.json"
  EXPECT_TEXT=$ok_rows run "$log" 60 "2 ... -d all -o all, 1K..1M" \
    "$collie" perf all --backend nccl -np 1 -b 1K -e 1M -f 32 -c 1 -n 5 -w 1 -d all -o all
fi

# ---- 5. nccl-tests, the anchor: right after step 2, whose rows it is compared with -----------
log=$OUT/5-nccl-tests.log
nt=""
for d in "${NCCL_TESTS_DIR:-}" "$PWD/third_party-local/nccl-tests/build" \
  "$here/../third_party-local/nccl-tests/build"; do
  [[ -n $d && -x $d/all_reduce_perf ]] && { nt=$(cd "$d" && pwd); break; }
done
nt_colls=(all_reduce all_gather broadcast reduce reduce_scatter alltoall gather scatter sendrecv)
if [[ -z $nt ]]; then
  note "$log" "5 nccl-tests" "not run: no nccl-tests build in \$NCCL_TESTS_DIR or third_party-local/nccl-tests/build (docs/gpu.md says how to build it by hand)"
elif ((gpus == 0)); then
  # Show that the binaries are found and start; without a GPU they stop at CUDA's first call.
  EXPECT_RC=any run "$log" 20 "5 nccl-tests found at $nt: all_reduce_perf without a GPU" \
    "$nt/all_reduce_perf" -b 8 -e 8 -g 1
  note "$log" "5 nccl-tests vs collie" "not run: nccl cannot run here: $gpu_why (all_reduce_perf said: $(first_error))"
else
  for c in "${nt_colls[@]}"; do
    [[ -x $nt/${c}_perf ]] || { note "$log" "5 ${c}_perf" "not run: not in $nt"; continue; }
    run "$log" 40 "5 nccl-tests ${c}_perf ${sweep[*]} -g 1" \
      "$nt/${c}_perf" "${sweep[@]}" -g 1 -J "$work/nccl-tests-$c.json"
  done
fi

# ---- 3. probe env, timeout/abort, multi-rank cases ----------------------------------------------
log=$OUT/3-probe-timeout-ranks.log
EXPECT_TEXT='gpu\.cuda' run "$log" 30 "3 collie probe env --backend nccl" \
  "$collie" probe env --backend nccl -np 1
if needs_gpu "$log" "3 NCCL op that cannot complete: timeout, abort, dump"; then
  mkdir -p "$work/dumps-nccl-timeout"
  GPU_TESTS=1 run "$log" 60 "3 NCCL op that cannot complete: timeout, abort, dump" \
    env COLLIE_FR_DUMP_DIR="$work/dumps-nccl-timeout" \
    "$libexec/nccl_backend_test" --gtest_filter='*CannotComplete*'
  # A hang found is exit 1 (collie analyze's "problem found"); the verdict names the op.
  EXPECT_RC=1 EXPECT_TEXT='all_reduce #1' run "$log" 20 "3 collie analyze (NCCL timeout dump)" \
    "$collie" analyze "$work/dumps-nccl-timeout"
fi
if ((gpus == 1)); then
  # NCCL refuses two ranks on one device in one communicator: a clear failure, not a hang.
  EXPECT_RC=any run "$log" 60 "3 two ranks on one GPU (expected: refused, not a hang)" \
    "$collie" perf --backend nccl -np 2 -b 8 -e 8 -n 1 -w 0 -c 0 -T 30
  note "$log" "3 two ranks on one GPU: first error line" "$(first_error)"
fi
if ((gpus >= 2)); then
  mb=nccl mnp=2 mlabel="nccl, 2 GPUs"
else
  mb=gloo mnp=2 mlabel="gloo stand-in: needs >= 2 GPUs for nccl"
fi
# DETAIL mismatch: rank 1 calls all_gather where rank 0 calls all_reduce.
mismatch() {
  local port pids=() rc=0
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  for r in 0 1; do
    local coll=all_reduce
    ((r == 1)) && coll=all_gather
    COLLIE_DEBUG=DETAIL MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r LOCAL_RANK=$r \
      WORLD_SIZE=2 "$1" perf $coll --backend "$2" -b 1K -e 1K -n 3 -w 1 -T 20 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  return $rc
}
# Hang across ranks: rank 1 is frozen (SIGSTOP) mid-sweep, so rank 0's op cannot complete within
# -T; rank 0 dumps; collie analyze must name rank 1 (and exit 1: a problem found).
hang() {
  mkdir -p "$3"
  COLLIE_FR_DUMP_DIR=$3 bash "$bundle/scripts/frozen_rank_job.sh" "$1" --backend "$2" -np 2 -T 5 \
    -b 1K -e 1K -n 100 -w 1 -N 0
  echo "dumps: $(ls "$3" | tr '\n' ' ')"
  "$1" analyze "$3"
}
# Dumps of every rank in torch's format too: rank 1 held by the stall test hook, so rank 0 times
# out and asks every rank to dump (which rank fr_trace then blames depends on the timing).
torch_dumps() {
  mkdir -p "$2"
  touch "$2/stall"
  COLLIE_FR_DUMP_DIR=$2 COLLIE_FR_DUMP_FORMAT=json,torch COLLIE_ENABLE_TEST_HOOKS=1 \
    COLLIE_PERF_TEST_STALL=1:$2/stall "$1" perf --backend gloo -np 2 -T 3 -b 1K -e 1K -n 5 -w 1
  rm -f "$2/stall"
  ls "$2"
  [[ -e $2/nccl_trace_rank_0 && -e $2/nccl_trace_rank_1 ]]
}
export -f mismatch hang torch_dumps
export bundle
EXPECT_RC=4 EXPECT_TEXT='Detected mismatch between collectives' \
  run "$log" 60 "3 DETAIL mismatch across ranks ($mlabel)" bash -c 'mismatch "$@"' _ "$collie" $mb
EXPECT_RC=1 EXPECT_TEXT='rank 1 left no flight-recorder dump' run "$log" 60 "3 hang across ranks, dumps, analyze ($mlabel)" \
  bash -c 'hang "$@"' _ "$collie" $mb "$work/dumps-hang-$mb"

# ---- 4. host CPUs ---------------------------------------------------------------------------------
log=$OUT/4-host-cpu.log
np=2
(($(nproc) >= 16)) && np=8
# Exit 1 means some size missed the overhead target: a measurement, reported, not a failure.
EXPECT_RC=any EXPECT_TEXT='size\(s\) over target' \
  run "$log" 100 "4 overhead.sh: collie vs raw Gloo, $np ranks" \
  env NP=$np PIN=1 ITERS=100 ROUNDS=2 MAX=1048576 "$bundle/scripts/bench/overhead.sh" "$bundle" &&
  note "$log" "4 overhead verdict" "$(grep -m1 -o '[0-9]* size(s) over target.*' "$work/last")"
if command -v mpirun >/dev/null; then
  note "$log" "4 overhead_mpi.sh" "not run: the bundle carries no overhead_mpi (build from source)"
else
  note "$log" "4 overhead_mpi.sh" "not run: no mpirun on this host"
fi
if torch_err=$(bounded 60 env -u LD_LIBRARY_PATH python3 -c 'import torch.distributed.flight_recorder.fr_trace' 2>&1); then
  tdir=$work/dumps-torch-format
  run "$log" 40 "4 torch-format dumps of a gloo hang" bash -c 'torch_dumps "$@"' _ "$collie" "$tdir"
  run "$log" 60 "4 torch fr_trace over collie's torch-format dumps" \
    bash -c 'py -m torch.distributed.flight_recorder.fr_trace "$1"' _ "$tdir"
  run "$log" 120 "4 torch.distributed gloo all_reduce, $np ranks" \
    bash -c 'py "$1" --np "$2" -b 8 -e 16M -f 8 -n 50 -w 5 >"$3"' _ \
    "$bundle/scripts/bench/torch_gloo_allreduce.py" $np "$work/torch-gloo.txt"
  cat "$work/torch-gloo.txt" >>"$log"
  run "$log" 90 "4 collie perf all_reduce --backend gloo, $np ranks" \
    "$collie" perf all_reduce --backend gloo -np $np -b 8 -e 16M -f 8 -n 50 -w 5 -c 0 \
    --placement in -J "$work/collie-gloo.json"
else
  note "$log" "4 torch fr_trace and torch.distributed vs collie" \
    "not run: torch cannot be imported: $(echo "$torch_err" | tail -1 | cut -c1-160)"
fi

# ---- summary --------------------------------------------------------------------------------------
{
  echo "# collie GPU check"
  echo
  if [[ -s $work/reasons ]]; then
    sed 's/^/**FAIL**: /' "$work/reasons"
    echo
  fi
  echo "$(date -u +%FT%TZ), $(hostname), $(nproc) CPUs, GPU: ${gpu_model:-none} (usable: $gpus)," \
    "$(($(date +%s) - t0)) s of a ${budget} s budget."
  [[ -n $gpu_why ]] && echo "No GPU step ran: $gpu_why"
  echo
  echo "| step | result | time | log |"
  echo "|---|---|---|---|"
  cat "$work/steps"
  echo
  timeout -k 2 30 python3 - "$work" <<'PY'
import glob, json, os, sys
work = sys.argv[1]

def rows(path):  # collie.perf.v1 rows, or nccl-tests' version-3 results, as (coll, size) -> row
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        return {}
    out = {}
    if doc.get("schema") == "collie.perf.v1":
        for r in doc["rows"]:
            if r["placement"] == "out":
                out.setdefault((r["collective"], r["size_bytes"]),
                               (r["time_us"], r["algbw_gbps"], r["busbw_gbps"]))
    else:
        for r in doc.get("results", []):
            oop = r.get("out_of_place") or {}
            if oop:
                out.setdefault((None, int(r["size"])), (oop["time"], oop["alg_bw"], oop["bus_bw"]))
    return out

plain = rows(os.path.join(work, "perf-nccl.json"))
graph = rows(os.path.join(work, "perf-nccl-graph.json"))
if plain:
    print("## collie perf --backend nccl: out-of-place time (us) and busbw (GB/s), -G 0 vs -G 1\n")
    print("| collective | size (B) | time | busbw | time -G 1 | busbw -G 1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for (c, s), (t, a, b) in sorted(plain.items()):
        g = graph.get((c, s))
        gt = f"{g[0]:.2f} | {g[2]:.2f}" if g else "- | -"
        print(f"| {c} | {s} | {t:.2f} | {b:.2f} | {gt} |")
    print()
nt = {}
for path in sorted(glob.glob(os.path.join(work, "nccl-tests-*.json"))):
    c = os.path.basename(path)[len("nccl-tests-"):-len(".json")]
    for (_, s), v in rows(path).items():
        nt[(c, s)] = v
if nt:
    print("## nccl-tests vs collie perf, same flags, out-of-place (us, GB/s)\n")
    print("| collective | size (B) | nccl-tests time | collie time | nccl-tests algbw | collie algbw "
          "| nccl-tests busbw | collie busbw |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (c, s), (t, a, b) in sorted(nt.items()):
        m = plain.get((c, s))
        ct, ca, cb = (f"{m[0]:.2f}", f"{m[1]:.2f}", f"{m[2]:.2f}") if m else ("-", "-", "-")
        print(f"| {c} | {s} | {t:.2f} | {ct} | {a:.2f} | {ca} | {b:.2f} | {cb} |")
    print()
torch = {}
try:
    for line in open(os.path.join(work, "torch-gloo.txt")):
        if line.strip() and not line.startswith("#"):
            s, us = line.split()
            torch[int(s)] = float(us)
except OSError:
    pass
col_in = {}
try:
    for r in json.load(open(os.path.join(work, "collie-gloo.json")))["rows"]:
        col_in.setdefault(r["size_bytes"], r["time_us"])
except (OSError, ValueError, KeyError):
    pass
if torch:
    print("## torch.distributed (gloo) vs collie perf --backend gloo, all_reduce float sum in place\n")
    print("| size (B) | torch (us) | collie (us) | collie / torch |")
    print("|---:|---:|---:|---:|")
    for s, t in sorted(torch.items()):
        c = col_in.get(s)
        print(f"| {s} | {t:.1f} | {c:.1f} | {c / t:.3f} |" if c else f"| {s} | {t:.1f} | - | - |")
    print()
PY
} >"$OUT/summary.md"
tar -C "$work" -czf "$OUT/results.tar.gz" --exclude=last --exclude=steps . 2>/dev/null
cat "$OUT/summary.md"
echo
echo "gpu_check: $(ls "$OUT" | wc -l) files in $OUT"
exit $failed
