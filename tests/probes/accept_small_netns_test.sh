#!/usr/bin/env bash
# Acceptance verdicts on 2 and 3 hosts (issue 26), where the survey's reference comes from the bad
# link itself: network-namespace "hosts" (tests/support/netns_cluster.sh), 2 ranks each, started
# with plain env:// variables as a scheduler prolog would (MASTER_ADDR MASTER_PORT RANK
# WORLD_SIZE; no COLLIE_GLOO_HOST: Gloo binds the route to MASTER_ADDR, the control bridge), and
# `collie probe pairwise` / `collie accept` with their default options.
#   usage: accept_small_netns_test.sh COLLIE_BINARY SCENARIO [REPEATS]
#   SCENARIO: ingress2  2 hosts, host1's ingress at 40 Mbit/s (tc tbf on the bridge side of its
#                       veths: traffic toward host1): pairwise exits 1 naming the link
#                       LINK_SLOW CRIT, direction host0 -> host1, and that which host is at
#                       fault cannot be separated; the same by the reverse direction alone
#                       (--capacity-fraction 0); accept with the sample spec rejects (exit 1)
#             egress2   2 hosts, host1's egress at 40 Mbit/s (tbf on host1's own interfaces):
#                       the same, direction host1 -> host0
#             ingress3  3 hosts, host1's ingress slow: pairwise names exactly host1 HOST_SLOW
#                       CRIT, confirmed against both other hosts; accept rejects
#             egress3   3 hosts, host1's egress slow: the same
#             ingress6, egress6  the same on 6 hosts (as tests/probes/isolate_netns_test.sh)
#             busy      healthy 2-, 3- and 6-host clusters while a busy loop spins inside host1:
#                       pairwise exits 0, "OK: nothing named", REPEATS runs of each (default 5)
# Namespaces carry the prefix "acs" and are removed on every exit.
# Exit: 0 pass, 1 fail, 77 skipped outside CI (no root / no namespaces; the reason is printed);
# under CI=true those are failures (tests/support/skip.sh).
set -u
COLLIE=${1:?collie binary}
SCENARIO=${2:?scenario}
REPEATS=${3:-5}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PER_HOST=2
case "$SCENARIO" in
  *2) HOSTS=2 ;;
  *3) HOSTS=3 ;;
  *6) HOSTS=6 ;;
  busy) HOSTS=6 ;;  # the 2- and 3-host runs use the first hosts
  *) echo "FAIL: unknown scenario '$SCENARIO'"; exit 1 ;;
esac
WORLD=$((HOSTS * PER_HOST))
TAG="acs$$"
BR="${TAG}br"
WORK=$(mktemp -d /tmp/collie_accept_small.XXXXXX)
PIDS=()

fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../support/skip.sh"

source "$(dirname "$0")/../support/netns_cluster.sh"

PORT_BASE=$((20000 + RANDOM % 10000))
JOBS=0
# run_plain NAME HOSTS TIMEOUT_S ARGS...: `collie ARGS` on the first HOSTS hosts, 2 ranks each,
# with only the env:// variables a scheduler sets. Output: $WORK/NAME.r.log; sets JOB_PIDS and
# WORLD (wait_job waits for WORLD ranks).
run_plain() {
  local name=$1 hosts=$2 limit=$3
  shift 3
  # A fresh port per job, below the ephemeral range: a random one per job once hit a port an
  # earlier job's connection still held (1 listen failure in 100 jobs).
  local port=$((PORT_BASE + JOBS))
  JOBS=$((JOBS + 1))
  WORLD=$((hosts * PER_HOST))
  JOB_PIDS=()
  for ((r = 0; r < WORLD; r++)); do
    local h=$((r / PER_HOST))
    ip netns exec "${TAG}h$h" unshare --uts sh -c 'hostname "$0" && exec "$@"' "host$h" \
      env MASTER_ADDR=10.77.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=$WORLD \
      timeout -k 5 "$limit" "$COLLIE" "$@" >"$WORK/$name.$r.log" 2>&1 &
    JOB_PIDS+=($!)
    PIDS+=($!)
  done
}

# run_check NAME HOSTS TIMEOUT_S RC ARGS...: run_plain, wait, show rank 0's output and its verdict
# lines; fails unless rank 0 exited RC.
run_check() {
  local name=$1 hosts=$2 limit=$3 rc=$4
  shift 4
  run_plain "$name" "$hosts" "$limit" "$@"
  wait_job "$name"
  show "$name"
  verdict_lines "$name"
  [ "$RC0" = "$rc" ] || fail "$name ($*): exit $RC0, expected $rc"
}

shape() {  # shape HOST in|out: 40 Mbit/s toward the host (in) or from it (out), both interfaces
  local h=$1 dir=$2 net
  for net in c d; do
    if [ "$dir" = in ]; then
      nsx "$BR" tc qdisc add dev "v$net$h" root tbf rate 40mbit burst 64kb latency 200ms ||
        fail "tc tbf is not available"
    else
      nsx "${TAG}h$h" tc qdisc add dev "eth_$net" root tbf rate 40mbit burst 64kb latency 200ms ||
        fail "tc tbf is not available"
    fi
  done
}

verdict_lines() {  # the lines a user acts on, for the test log
  grep -E "^(SLOW|DEAD|FLAPPING|INCONCLUSIVE) (HOST|LINK)|^OK: |^VERDICT: |^(ACCEPTED|REJECTED|INCONCLUSIVE)|^(PASS|FAIL|WARN|INCONCLUSIVE) pairwise" \
    "$WORK/$1.0.log" | sed "s/^/[$1] /"
}

count_findings() { grep -cE "^(SLOW|DEAD|FLAPPING|INCONCLUSIVE) (HOST|LINK)" "$WORK/$1.0.log"; }

# The sample spec's connectivity and pairwise checks (its perf/stragglers checks measure CPU
# more than the link and take long over 40 Mbit/s).
sed -n '/^checks:/q;p' "$SRC/docs/accept-spec.yaml" >"$WORK/spec.yaml"
cat >>"$WORK/spec.yaml" <<'EOF'
checks:
  - probe: connectivity
    rules:
      all_reachable: true
  - probe: pairwise
    bytes: 1M
    iters: 3
    slow_threshold: 0.5
    rules:
      max_slow_hosts: 0
EOF

setup
start=$(date +%s)
case "$SCENARIO" in
  ingress2 | egress2)
    dir=in from=host0 to=host1
    [ "$SCENARIO" = egress2 ] && dir=out from=host1 to=host0
    shape 1 $dir
    run_check pw 2 120 1 probe pairwise -J "$WORK/pw.json"
    expect_in pw "^SLOW LINK: host0 \(ranks 0, 1\) <-> host1 \(ranks 2, 3\) \[LINK_SLOW CRIT\]: $from -> $to [0-9.e-]+ GB/s \(reverse [0-9.]+ GB/s\), .*bad in ([0-9]+) of \1 re-measurements re-measuring the link itself; no known-good host to test host0 and host1 against, so which of them is at fault cannot be separated \($from's egress, $to's ingress or the path between them\)" \
      "the link is not named LINK_SLOW CRIT with its slow direction $from -> $to"
    [ "$(count_findings pw)" = 1 ] || fail "$(count_findings pw) findings, expected the link only"
    expect_in pw "^    next step: run the probe again with a known-good host added" "no next step"
    python3 - "$WORK/pw.json" "$from" "$to" <<'PY' || fail "pairwise JSON"
import json, sys
j = json.load(open(sys.argv[1]))
(f,) = j["isolation"]["findings"]
assert j["verdict"] == "CRIT" and f["code"] == "LINK_SLOW" and f["severity"] == "CRIT", f
assert f["direction"].startswith(sys.argv[2]) and sys.argv[3] in f["direction"], f["direction"]
assert f["separated"] is False and f["effect"] > 0.9, f
assert f["rule"] in ("capacity", "reverse"), f["rule"]
# The survey matrix itself: the slow direction far below its reverse. 40 Mbit/s is ~0.005 GB/s
# and an idle veth ~1 GB/s (200x), but the reverse is one timed message on a loaded machine: a
# CI run measured it at 0.45 GB/s (95x; 0.60-1.35 in the re-measurements). The verdict's own
# rule is 10x below what the hosts can do; the matrix must show at least twice that.
m = j["bandwidth_gbps"]
a, b = (0, 2) if sys.argv[2] == "host0" else (2, 0)
assert m[a][b] * 20 < m[b][a], (m[a][b], m[b][a])
PY
    # The reverse direction alone (what the hosts can do not measured) names it too.
    run_check rev 2 120 1 probe pairwise --capacity-fraction 0 --bytes 1M -n 3
    expect_in rev "^SLOW LINK: .*\[LINK_SLOW CRIT\]: $from -> $to [0-9.e-]+ GB/s, [0-9]+% below the reverse direction" \
      "without the capacity rule the link is not named by its reverse direction"
    run_check accept 2 120 1 accept --spec "$WORK/spec.yaml" -J "$WORK/report.json"
    expect_in accept "^REJECTED: 1 of 2 checks failed" "accept did not reject for the pairwise check"
    expect_in accept "^  rule broken: link host0 \(ranks 0, 1\) <-> host1 \(ranks 2, 3\) is far below" \
      "the far-below rule is not the broken rule"
    expect_in accept "^  rule broken: host host0 \(ranks 0, 1\) <-> host1 \(ranks 2, 3\) named \(LINK_SLOW, one of its two hosts is bad; max_slow_hosts allows 0\)" \
      "max_slow_hosts is not broken by the unseparated link"
    ;;
  ingress3 | egress3 | ingress6 | egress6)
    dir=in
    case "$SCENARIO" in egress*) dir=out ;; esac
    shape 1 $dir
    run_check pw $HOSTS 150 1 probe pairwise -J "$WORK/pw.json"
    expect_in pw "^SLOW HOST: host1 \(ranks 2, 3\) \[HOST_SLOW CRIT\]: .*bad in ([0-9]+) of \1 re-measurements against known-good partners" \
      "host1 not named HOST_SLOW CRIT"
    [ "$(count_findings pw)" = 1 ] || fail "$(count_findings pw) findings, expected host1 only"
    python3 - "$WORK/pw.json" $HOSTS <<'PY' || fail "pairwise JSON"
import json, sys
j = json.load(open(sys.argv[1]))
(f,) = j["isolation"]["findings"]
assert f["code"] == "HOST_SLOW" and f["who"].startswith("host1"), f
partners = {e["partner"] for e in f["evidence"] if e["round"] > 0}
if sys.argv[2] == "3":
    # host1's two partners were each bad in one pair, with host1: explained, not suspects.
    assert j["isolation"]["suspect_units"] == 1, j["isolation"]["phases"]
    assert partners == {"host0 (ranks 0, 1)", "host2 (ranks 4, 5)"}, partners
else:
    assert len(partners) >= 2 and not any(p.startswith("host1") for p in partners), partners
PY
    run_check accept $HOSTS 150 1 accept --spec "$WORK/spec.yaml" -J "$WORK/report.json"
    expect_in accept "^  host host1 \(ranks 2, 3\): .*\[HOST_SLOW CRIT\]" "accept does not name host1"
    ;;
  busy)
    ip netns exec "${TAG}h1" sh -c 'while :; do :; done' &
    busy=$!
    PIDS+=($busy)
    for hosts in 2 3 6; do
      for ((run = 1; run <= REPEATS; run++)); do
        name=busy${hosts}_$run
        run_plain $name $hosts 90 probe pairwise -J "$WORK/$name.json"
        wait_job $name
        verdict_lines $name
        grep -h "survey" "$WORK/$name.0.log" | sed "s/^/[$name] /"
        if [ "$RC0" != 0 ] || [ "$(count_findings $name)" != 0 ]; then
          show $name
          fail "$hosts hosts, busy run $run: exit $RC0, expected 0 with nothing named"
        fi
        expect_in $name "^OK: nothing named" "$hosts hosts, busy run $run: no OK line"
        expect_in $name "^# schedule quick: $hosts hosts" "not $hosts hosts"
      done
    done
    kill "$busy" 2>/dev/null
    echo "busy: $REPEATS runs each on 2, 3 and 6 hosts, all OK"
    ;;
esac
echo "PASS: $SCENARIO in $(($(date +%s) - start)) s"
