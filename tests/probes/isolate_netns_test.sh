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

cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for ((h = 0; h < HOSTS; h++)); do
    # Whatever still runs in a host (Open MPI's daemonized orted, its ranks) dies with it.
    ip netns pids "${TAG}h$h" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns del "${TAG}h$h" 2>/dev/null
  done
  ip netns del "$BR" 2>/dev/null  # takes the bridges and every veth with it
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 1" INT TERM  # the EXIT trap cleans up

[ "$(id -u)" = 0 ] || skip "needs root (CAP_NET_ADMIN) to create network namespaces"
for t in ip tc unshare hostname timeout; do
  command -v $t >/dev/null || skip "'$t' is not installed"
done
ip netns add "$BR" 2>/dev/null || skip "cannot create network namespaces here (ip netns add failed)"

nsx() { ip netns exec "$@"; }

setup() {
  nsx "$BR" ip link set lo up
  for b in xbc xbd; do
    nsx "$BR" ip link add name $b type bridge || fail "cannot create bridge $b"
    nsx "$BR" ip link set $b up
  done
  for ((h = 0; h < HOSTS; h++)); do
    local ns="${TAG}h$h"
    ip netns add "$ns" || fail "cannot create namespace $ns"
    nsx "$ns" ip link set lo up
    for net in c d; do
      # Created inside the bridge namespace, the peer moved straight into the host namespace.
      ip -n "$BR" link add name "v${net}$h" type veth peer name "eth_$net" netns "$ns" ||
        fail "cannot create veth v${net}$h"
      ip -n "$BR" link set "v${net}$h" master "xb$net" up
      local subnet=0
      [ $net = d ] && subnet=1
      ip -n "$ns" addr add "10.77.$subnet.$((h + 1))/24" dev "eth_$net"
      ip -n "$ns" link set "eth_$net" up
    done
  done
  # No STP on the bridges, so ports forward at once; the store client retries its connect.
}

# run_job NAME TIMEOUT_S ARGS...: starts the 8 ranks of `collie ARGS` (rank r on host r/2);
# rank r's output goes to $WORK/NAME.r.log. Sets JOB_PIDS.
run_job() {
  local name=$1 limit=$2
  shift 2
  local port=$((20000 + RANDOM % 20000))
  JOB_PIDS=()
  for ((r = 0; r < WORLD; r++)); do
    local h=$((r / PER_HOST))
    ip netns exec "${TAG}h$h" unshare --uts sh -c \
      'hostname "$0" && exec "$@"' "host$h" \
      env MASTER_ADDR=10.77.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=$WORLD \
      LOCAL_RANK=$((r % PER_HOST)) LOCAL_WORLD_SIZE=$PER_HOST COLLIE_GLOO_HOST=10.77.1.$((h + 1)) \
      timeout -k 5 "$limit" "$COLLIE" "$@" >"$WORK/$name.$r.log" 2>&1 &
    JOB_PIDS+=($!)
    PIDS+=($!)
  done
}

# wait_job: waits for JOB_PIDS; sets RC0 (rank 0's status).
wait_job() {
  RC0=-1
  for ((r = 0; r < WORLD; r++)); do
    wait "${JOB_PIDS[$r]}"
    local rc=$?
    [ $r = 0 ] && RC0=$rc
  done
}

show() { echo "----- $1 (rank 0) -----"; cat "$WORK/$1.0.log"; }
expect_in() {  # expect_in JOB PATTERN WHAT
  grep -qE -- "$2" "$WORK/$1.0.log" || { show "$1"; fail "$3"; }
}

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
