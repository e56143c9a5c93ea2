#!/usr/bin/env bash
# Multi-host probes on one machine: 4 "hosts" as network namespaces, 2 ranks each, real Gloo
# jobs over env:// rendezvous across namespaces, and real Open MPI jobs across them.
#   usage: probes_netns_test.sh COLLIE_BINARY SOURCE_DIR SCENARIO [MPIRUN]
#   SCENARIO: healthy   accept passes on a healthy cluster
#             slow_link host2's data link is rate-limited (tc tbf): pairwise and accept name it
#             slow_warn the same slow host under a spec whose pairwise crit_drop is 1 (warn on
#                       slow hosts, reject only dead ones): accept exits 5, ACCEPTED WITH
#                       WARNINGS, host2 named HOST_SLOW WARN in the text, JSON and JUnit reports
#             link_down host3's data link goes down mid-run: connectivity names its pairs
#             mpi       one Open MPI job of 8 ranks across the 4 hosts (mpirun in host0, its rsh
#                       launch agent enters the other namespaces): connectivity and accept with
#                       --backend mpi pass (needs MPIRUN, given when the MPI backend is built)
# Topology (all inside namespaces this script creates; the root namespace is never touched):
#   control bridge "xbc" 10.77.0.0/24 carries the store (MASTER_ADDR = host0),
#   data bridge "xbd" 10.77.1.0/24 carries Gloo (COLLIE_GLOO_HOST), so a broken data link
#   leaves the store reachable and the probe can still collect every rank's results.
# Exit: 0 pass, 1 fail, 77 skipped (no root / no namespaces; the reason is printed; under CI=true
# these fail instead, tests/support/skip.sh).
set -u
COLLIE=${1:?collie binary}
SRC=${2:?source dir}
SCENARIO=${3:?scenario}
MPIRUN=${4:-}
HOSTS=4
PER_HOST=2
WORLD=$((HOSTS * PER_HOST))
TAG="cp$$"
BR="${TAG}br"
WORK=$(mktemp -d /tmp/collie_probes_netns.XXXXXX)
PIDS=()

fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../support/skip.sh"

if [ "$SCENARIO" = mpi ] && { [ -z "$MPIRUN" ] || [ ! -x "$MPIRUN" ]; }; then
  skip "this build has no MPI backend (no mpirun given)"
fi
source "$(dirname "$0")/../support/netns_cluster.sh"

# run_mpi NAME TIMEOUT_S ARGS...: `collie ARGS` as one Open MPI job, 2 ranks on each host.
# mpirun runs in host0; for the other hosts its rsh agent ($WORK/agent.sh) enters the host's
# namespace, as ssh would log into a node. Open MPI's control traffic stays on the control
# bridge, its TCP BTL on the data bridge; the MPI backend's store is rank 0's on host0, found
# through the addresses rank 0 broadcasts (no COLLIE_MPI_STORE_HOST). Each
# "host" has 2 slots, so Open MPI would busy-poll; the 8 ranks share 2 real cores, so they yield.
# The job's output goes to $WORK/NAME.0.log; sets RC0.
run_mpi() {
  local name=$1 limit=$2
  shift 2
  local hostlist=""
  for ((h = 0; h < HOSTS; h++)); do hostlist+="${hostlist:+,}10.77.0.$((h + 1)):$PER_HOST"; done
  timeout -k 5 "$limit" ip netns exec "${TAG}h0" unshare --uts sh -c \
    'hostname host0 && exec "$@"' sh \
    "$MPIRUN" --allow-run-as-root --oversubscribe -np $WORLD --host "$hostlist" \
    --mca plm_rsh_agent "$WORK/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include 10.77.0.0/24 \
    --mca btl self,vader,tcp --mca btl_tcp_if_include 10.77.1.0/24 \
    --mca mpi_yield_when_idle 1 \
    "$COLLIE" "$@" >"$WORK/$name.0.log" 2>&1 &
  local pid=$!
  PIDS+=($pid)
  wait $pid
  RC0=$?
}

# Open MPI's launch agent: `agent.sh 10.77.0.N COMMAND...` runs COMMAND (one shell line, as ssh
# passes it) in host N-1's namespace under that host's name.
write_agent() {
  cat >"$WORK/agent.sh" <<EOF
#!/bin/sh
n=\${1##*.}
shift
h=\$((n - 1))
exec ip netns exec "${TAG}h\$h" unshare --uts sh -c 'hostname "\$0" && exec sh -c "\$1"' "host\$h" "\$*"
EOF
  chmod +x "$WORK/agent.sh"
}

slow_host_data_link() {  # rate-limit host $1's data link in both directions
  local h=$1
  ip netns exec "${TAG}h$h" tc qdisc add dev eth_d root tbf rate 100mbit burst 64kb latency 200ms ||
    fail "tc tbf is not available"
  ip netns exec "$BR" tc qdisc add dev "vd$h" root tbf rate 100mbit burst 64kb latency 200ms
}

setup
SPEC="$SRC/docs/accept-spec.yaml"
start=$(date +%s)
case "$SCENARIO" in
  healthy)
    run_job accept 60 accept --spec "$SPEC" -J "$WORK/report.json" --junit "$WORK/report.xml"
    wait_job accept
    show accept
    [ "$RC0" = 0 ] || fail "accept rejected a healthy cluster (exit $RC0)"
    expect_in accept "ACCEPTED: all 5 checks passed" "no ACCEPTED line"
    expect_in accept "8 ranks on 4 hosts" "the report does not see 4 hosts"
    grep -q '"passed": true' "$WORK/report.json" || fail "JSON report does not say passed"
    grep -q 'failures="0"' "$WORK/report.xml" || fail "JUnit report has failures"
    ;;
  slow_link)
    slow_host_data_link 2
    run_job pairwise 60 probe pairwise --bytes 256K -n 3 -T 5 -J "$WORK/pairwise.json"
    wait_job pairwise
    show pairwise
    [ "$RC0" = 1 ] || fail "pairwise exit $RC0, expected 1 (slow host found)"
    expect_in pairwise "SLOW HOST: host2 \(ranks 4, 5\)" "pairwise did not name host2"
    [ "$(grep -c 'SLOW HOST' "$WORK/pairwise.0.log")" = 1 ] || fail "pairwise named more than one host"
    run_job accept 90 accept --spec "$SPEC" --md "$WORK/report.md"
    wait_job accept
    show accept
    [ "$RC0" = 1 ] || fail "accept exit $RC0, expected 1 (rejected)"
    expect_in accept "FAIL pairwise" "accept did not fail the pairwise check"
    expect_in accept "host host2 \(ranks 4, 5\): median cross-host link" "accept did not name host2"
    expect_in accept "PASS connectivity" "connectivity should pass on a slow (not broken) link"
    grep -q "host2 (ranks 4, 5)" "$WORK/report.md" || fail "Markdown report does not name host2"
    ;;
  slow_warn)
    slow_host_data_link 2
    # The operator's "warn, do not reject" spec: the sample spec with crit_drop 1 on pairwise.
    sed 's/^\(    slow_threshold: .*\)$/\1\n    crit_drop: 1/' "$SPEC" >"$WORK/warn-spec.yaml"
    grep -q "^    crit_drop: 1$" "$WORK/warn-spec.yaml" || fail "could not derive the WARN spec"
    run_job accept 90 accept --spec "$WORK/warn-spec.yaml" -J "$WORK/report.json" \
      --junit "$WORK/report.xml"
    wait_job accept
    show accept
    [ "$RC0" = 5 ] || fail "accept exit $RC0, expected 5 (accepted with warnings)"
    expect_in accept "^ACCEPTED WITH WARNINGS: all 5 checks passed, 1 with warnings" \
      "no ACCEPTED WITH WARNINGS line"
    expect_in accept "WARN pairwise" "the pairwise check is not WARN"
    expect_in accept "warning: host host2 \(ranks 4, 5\) named \(HOST_SLOW; max_slow_hosts allows 0\)" \
      "the warning does not name host2"
    python3 - "$WORK/report.json" "$WORK/report.xml" <<'PY' || fail "WARN reports"
import json, sys
import xml.etree.ElementTree as ET
j = json.load(open(sys.argv[1]))
assert j["verdict"] == "WARN" and j["passed"] is True, (j["verdict"], j["passed"])
pw = [c for c in j["checks"] if c["name"].startswith("pairwise")]
assert len(pw) == 1 and pw[0]["passed"] and pw[0]["warnings"], pw
f = pw[0]["findings"]
assert len(f) == 1 and f[0]["code"] == "HOST_SLOW" and f[0]["severity"] == "WARN", f
assert f[0]["who"].startswith("host2"), f
root = ET.parse(sys.argv[2]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
assert sum(int(s.get("failures", 0)) for s in suites) == 0, "a WARN check is no JUnit failure"
out = "".join(t.text or "" for t in root.iter("system-out"))
assert "host2" in out and "warning" in out, out[:500]
PY
    ;;
  link_down)
    run_job conn 90 probe connectivity --repeats 3 --interval 1 -T 1 -J "$WORK/conn.json"
    # Take host3's data link down once the first (healthy) pass is complete.
    for i in $(seq 200); do
      grep -q "pass 1/3 done" "$WORK/conn.0.log" 2>/dev/null && break
      sleep 0.1
    done
    grep -q "pass 1/3 done" "$WORK/conn.0.log" || { show conn; fail "first pass did not finish"; }
    ip -n "${TAG}h3" link set eth_d down
    down_at=$(date +%s)
    wait_job conn
    show conn
    [ "$RC0" = 1 ] || fail "connectivity exit $RC0, expected 1"
    for a in 0 1 2 3 4 5; do
      for b in 6 7; do
        expect_in conn "^  $a \(host$((a / 2))\) <-> $b \(host3\): " "pair $a <-> $b not reported broken"
      done
    done
    if grep -E "^  [0-5] \(host[0-2]\) <-> [0-5] " "$WORK/conn.0.log"; then
      fail "a pair between healthy hosts was reported broken"
    fi
    expect_in conn "host host3 \(ranks 6, 7\) reaches no other host" "host3 not named as isolated"
    took=$(($(date +%s) - down_at))
    [ $took -le 60 ] || fail "connectivity took ${took}s after the link went down"
    ;;
  mpi)
    write_agent
    run_mpi conn 60 probe connectivity --backend mpi -T 5 -J "$WORK/conn.json"
    show conn
    [ "$RC0" = 0 ] || fail "connectivity over Open MPI across namespaces: exit $RC0"
    expect_in conn "^# connectivity: 8 ranks on 4 hosts" "the MPI job does not span 4 hosts"
    expect_in conn "^OK: all 28 pairs reachable" "not every pair reachable over MPI"
    run_mpi accept 90 accept --backend mpi --spec "$SPEC" -J "$WORK/report.json"
    show accept
    [ "$RC0" = 0 ] || fail "accept --backend mpi rejected a healthy cluster (exit $RC0)"
    expect_in accept "ACCEPTED: all 5 checks passed" "no ACCEPTED line"
    expect_in accept "8 ranks on 4 hosts, backend mpi" "the report does not see the MPI job"
    grep -q '"passed": true' "$WORK/report.json" || fail "JSON report does not say passed"
    ;;
  *) fail "unknown scenario '$SCENARIO'" ;;
esac
echo "PASS: $SCENARIO in $(($(date +%s) - start)) s"
