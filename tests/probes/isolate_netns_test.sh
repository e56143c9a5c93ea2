#!/usr/bin/env bash
# Isolation at (small) scale across real hosts: 6 "hosts" as network namespaces, 2 ranks each,
# a real Gloo job over env:// rendezvous (the topology of tests/e2e/probes_netns_test.sh).
#   usage: isolate_netns_test.sh COLLIE_BINARY SCENARIO
#   SCENARIO: slow_host  host2's data link is rate-limited (tc tbf): `collie probe pairwise`
#                        names exactly host2, HOST_SLOW CRIT, confirmed against known-good
#                        partners, exit 1; the same with --schedule full
#             busy       healthy cluster while a busy loop occupies one core: verdict OK,
#                        nothing named, exit 0, 3 runs in a row
# Namespaces, bridges and interfaces carry the prefix c18 (the helpers' naming rule) and are
# removed on every exit. Exit: 0 pass, 1 fail, 77 skipped (no root / no namespaces).
set -u
COLLIE=${1:?collie binary}
SCENARIO=${2:?scenario}
SKIP=77
HOSTS=6
PER_HOST=2
WORLD=$((HOSTS * PER_HOST))
TAG="c18i$$"
BR="${TAG}br"
WORK=$(mktemp -d /tmp/collie_isolate_netns.XXXXXX)
PIDS=()

skip() { echo "SKIP: $*"; exit $SKIP; }
fail() { echo "FAIL: $*"; exit 1; }

source "$(dirname "$0")/../support/netns_cluster.sh"

slow_host_data_link() {  # rate-limit host $1's data link in both directions
  local h=$1
  ip netns exec "${TAG}h$h" tc qdisc add dev eth_d root tbf rate 100mbit burst 64kb latency 200ms ||
    fail "tc tbf is not available"
  ip netns exec "$BR" tc qdisc add dev "vd$h" root tbf rate 100mbit burst 64kb latency 200ms
}


setup
start=$(date +%s)
case "$SCENARIO" in
  slow_host)
    slow_host_data_link 2
    for sched in quick full; do
      run_job pw_$sched 90 probe pairwise --schedule $sched --rotation 0 --bytes 256K -n 3 -T 5 \
        -J "$WORK/pw_$sched.json"
      wait_job
      show pw_$sched
      [ "$RC0" = 1 ] || fail "$sched: exit $RC0, expected 1 (CRIT)"
      expect_in pw_$sched "^SLOW HOST: host2 \(ranks 4, 5\) \[HOST_SLOW CRIT\]: .*bad in [0-9]+ of [0-9]+ re-measurements against known-good partners" \
        "$sched: host2 not named HOST_SLOW CRIT with its confirmations"
      named=$(grep -cE "^(SLOW|DEAD|FLAPPING) (HOST|LINK)" "$WORK/pw_$sched.0.log")
      [ "$named" = 1 ] || fail "$sched: $named findings, expected exactly host2"
      expect_in pw_$sched "^    next step: drain the host" "$sched: no next step"
      python3 - "$WORK/pw_$sched.json" <<'PY' || fail "$sched: JSON evidence"
import json, sys
j = json.load(open(sys.argv[1]))
f = j["isolation"]["findings"]
assert j["verdict"] == "CRIT", j["verdict"]
assert len(f) == 1 and f[0]["code"] == "HOST_SLOW" and f[0]["who"].startswith("host2"), f
assert f[0]["confirmations"] >= 2 and f[0]["confirmations"] == f[0]["remeasured"], f[0]
assert f[0]["effect"] > 0.5 and f[0]["noise_gbps"] >= 0, f[0]
partners = {e["partner"] for e in f[0]["evidence"] if e["round"] > 0}
assert len(partners) >= 2 and not any(p.startswith("host2") for p in partners), partners
PY
    done
    ;;
  busy)
    sh -c 'while :; do :; done' &
    busy=$!
    PIDS+=($busy)
    for run in 1 2 3; do
      run_job pw$run 90 probe pairwise --bytes 256K -n 3 -T 5 -J "$WORK/pw$run.json"
      wait_job
      show pw$run
      [ "$RC0" = 0 ] || fail "busy run $run: exit $RC0, expected 0"
      if grep -qE "^(SLOW|DEAD|FLAPPING) (HOST|LINK)" "$WORK/pw$run.0.log"; then
        fail "busy run $run named something on a healthy cluster"
      fi
      expect_in pw$run "^OK: nothing named" "busy run $run: no OK line"
      expect_in pw$run "^# schedule quick: 6 hosts" "busy run $run: not 6 hosts"
    done
    kill "$busy" 2>/dev/null
    ;;
  *) fail "unknown scenario '$SCENARIO'" ;;
esac
echo "PASS: $SCENARIO in $(($(date +%s) - start)) s"
