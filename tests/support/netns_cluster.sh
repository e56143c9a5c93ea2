# Sourced by the network-namespace tests (tests/e2e/probes_netns_test.sh,
# tests/probes/isolate_netns_test.sh): HOSTS "hosts" as network namespaces, each with a control
# interface eth_c on bridge xbc (10.77.0.H+1/24, the store; MASTER_ADDR = host0) and a data
# interface eth_d on bridge xbd (10.77.1.H+1/24, Gloo via COLLIE_GLOO_HOST), so a broken data link
# leaves the store reachable. The bridges live in their own namespace $BR; the root namespace is
# never touched.
# Before sourcing, set: COLLIE HOSTS PER_HOST WORLD TAG BR WORK PIDS=(), and define fail() and
# skip() (tests/support/skip.sh: exit 77 with the reason, or a failure under CI=true). Sourcing
# installs the cleanup traps, checks root and the tools, and creates $BR; call setup to build
# the hosts.
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

# wait_job NAME: waits for JOB_PIDS; sets RCS (every rank's status) and RC0 (rank 0's), and fails
# the test, naming the rank, when another rank's status is not what the command promises:
# `collie probe` and `collie accept` exit with rank 0's verdict on every rank
# (src/cli/rank_status.h, docs/acceptance.md), so any launcher reports it. So a rank
# that crashed, hung past its timeout (124) or failed on its own is never hidden behind rank 0.
wait_job() {
  local name=${1:-job}
  RCS=()
  for ((r = 0; r < WORLD; r++)); do
    wait "${JOB_PIDS[$r]}"
    RCS+=($?)
  done
  RC0=${RCS[0]}
  local want=$RC0 why="every rank exits with rank 0's verdict"
  for ((r = 1; r < WORLD; r++)); do
    if [ "${RCS[$r]}" != "$want" ]; then
      show "$name" "$r"
      fail "$name: rank $r exited ${RCS[$r]}, expected $want (rank 0 exited $RC0; $why)"
    fi
  done
}

show() { echo "----- $1 (rank ${2:-0}) -----"; cat "$WORK/$1.${2:-0}.log"; }
expect_in() {  # expect_in JOB PATTERN WHAT
  grep -qE -- "$2" "$WORK/$1.0.log" || { show "$1"; fail "$3"; }
}
