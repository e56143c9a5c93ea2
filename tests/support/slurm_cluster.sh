#!/usr/bin/env bash
# A throwaway two-node Slurm cluster on this one host, for tests/e2e/slurm_test.sh: munged,
# slurmctld and two slurmd, node1 and node2, each in its own network namespace (cs-node1/2, on
# bridge csbr0, 10.231.0.11/.12; the controller on the bridge, 10.231.0.1) with its own hostname
# and an /etc/hosts that maps the node's own name to 127.0.1.1 first, as a stock Debian install
# does. So a 2-node job crosses a real (virtual) network and meets the pitfall users meet.
#   usage: slurm_cluster.sh up|down
#   up     starts it (or, when the cluster recorded in the state folder is still running, only
#          waits for idle nodes), runs a test job, prints "cluster up: nodes node1 node2 ...".
#          Exit 0; 77 when this machine cannot have it (not root, Slurm or munge not installed,
#          no network namespaces; the reason on stderr); 1 when it failed to start (see the logs).
#   down   stops what up started (only the PIDs it recorded, checked against their names),
#          cancels the cluster's jobs, deletes the namespaces, the bridge and the state folder.
# The packages come from scripts/bootstrap.sh (munge slurm-wlm slurmctld slurmd slurm-client
# slurm-wlm-basic-plugins libpmix2); this script installs nothing. Everything else lives in
# $COLLIE_SLURM_DIR (default /tmp/collie-slurm): slurm.conf, the munge key and socket, state,
# logs, spool. Jobs find the configuration through SLURM_CONF=$COLLIE_SLURM_DIR/etc/slurm.conf.
# No cgroups (process tracking by /proc parentage), no accounting; CPUs per node: 2, declared
# (config_overrides), whatever this machine has.
set -euo pipefail

BASE=${COLLIE_SLURM_DIR:-/tmp/collie-slurm}
CONF=$BASE/etc/slurm.conf
SUBNET=10.231.0
BRIDGE=csbr0
NODES="node1 node2"
export SLURM_CONF=$CONF
say() { printf 'slurm_cluster: %s\n' "$*"; }
cannot() { printf 'slurm_cluster: cannot run here: %s\n' "$*" >&2; exit 77; }
die() { printf 'slurm_cluster: error: %s (logs: %s/log)\n' "$*" "$BASE" >&2; exit 1; }

# alive PIDFILE COMM: prints the PID recorded in PIDFILE when that process is still COMM.
alive() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(tr -dc 0-9 <"$1")
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && echo "$pid"
}

running() {  # the recorded cluster is up: munged, slurmctld and both slurmd
  alive "$BASE/pids/munged.pid" munged >/dev/null &&
    alive "$BASE/pids/slurmctld.pid" slurmctld >/dev/null &&
    alive "$BASE/pids/slurmd-node1.pid" slurmd >/dev/null &&
    alive "$BASE/pids/slurmd-node2.pid" slurmd >/dev/null
}

down() {
  [ -d "$BASE" ] || { say "nothing to tear down ($BASE absent)"; return 0; }
  if alive "$BASE/pids/slurmctld.pid" slurmctld >/dev/null && [ -f "$CONF" ]; then
    local jobs
    jobs=$(timeout 10 squeue -h -o %A 2>/dev/null | tr '\n' ' ' || true)
    if [ -n "${jobs// /}" ]; then
      # shellcheck disable=SC2086  # a list of job ids
      timeout 10 scancel $jobs 2>/dev/null || true
      for _ in $(seq 30); do
        [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null | tr -d ' \n')" ] && break
        sleep 1
      done
    fi
  fi
  local f comm pid
  # The slurmd first (they reap their job steps), then the controller, then munge.
  for f in "$BASE"/pids/slurmd-*.pid "$BASE/pids/slurmctld.pid" "$BASE/pids/munged.pid"; do
    comm=$(basename "$f" .pid)
    comm=${comm%%-*}
    pid=$(alive "$f" "$comm") || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
  done
  for n in $NODES; do ip netns del "cs-$n" 2>/dev/null || true; done
  ip link del "$BRIDGE" 2>/dev/null || true
  # A symlink an older cluster script made at /etc/slurm/slurm.conf to this configuration.
  [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$CONF" ] && rm -f /etc/slurm/slurm.conf
  rm -rf "$BASE"
  say "down ($BASE removed)"
}

network() {  # the bridge on the host, one namespace and veth per node
  ip link add "$BRIDGE" type bridge &&
    ip addr add "$SUBNET.1/24" dev "$BRIDGE" &&
    ip link set "$BRIDGE" up || return 1
  local i
  for i in 1 2; do
    ip netns add "cs-node$i" &&
      ip link add "csv$i" type veth peer name cseth0 netns "cs-node$i" &&
      ip link set "csv$i" master "$BRIDGE" up &&
      ip -n "cs-node$i" link set lo up &&
      ip -n "cs-node$i" addr add "$SUBNET.1$i/24" dev cseth0 &&
      ip -n "cs-node$i" link set cseth0 up || return 1
  done
}

write_conf() {
  local host=$1 mem=$2
  cat >"$CONF" <<EOF
# written by collie's tests/support/slurm_cluster.sh
ClusterName=collie
SlurmctldHost=$host($SUBNET.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$BASE/munge/munge.socket.2
StateSaveLocation=$BASE/ctld
SlurmdSpoolDir=$BASE/spool/%n
SlurmctldPidFile=$BASE/pids/slurmctld.pid
SlurmdPidFile=$BASE/pids/slurmd-%n.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=300
# The nodes share this host's /tmp: each its own TmpFS, or two slurmstepd of one --mpi=pmix
# step collide on /tmp/spmix_appdir_<uid>_<job>.<step>.
TmpFS=$BASE/tmp/%n
NodeName=node1 NodeAddr=$SUBNET.11 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=$mem State=UNKNOWN
NodeName=node2 NodeAddr=$SUBNET.12 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  chmod 644 "$CONF"
}

start() {
  local host mem n
  host=$(hostname -s)
  mkdir -p "$BASE"/{etc,munge,ctld,log,pids,spool,tmp}
  chmod 755 "$BASE" "$BASE/spool" "$BASE/munge"  # munged wants its socket folder searchable
  # What runs, so a later up or down (from another checkout too) finds this cluster.
  printf 'ST_WANTED="2"\nST_NODES="%s"\nST_NETNS="cs-node1 cs-node2"\nST_BRIDGE="%s"\n' \
    "$NODES" "$BRIDGE" >"$BASE/state"
  if ! network 2>"$BASE/log/net.err"; then
    local why
    why=$(head -1 "$BASE/log/net.err")
    down >/dev/null
    cannot "no network namespaces, veth or bridge here ($why)"
  fi
  mem=$((($(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) - 512) / 2))
  write_conf "$host" "$mem"
  for n in $NODES; do
    mkdir -p "$BASE/nodes/$n" "$BASE/spool/$n" "$BASE/tmp/$n"
    chmod 755 "$BASE/spool/$n"
    chmod 1777 "$BASE/tmp/$n"
    printf '127.0.0.1 localhost\n127.0.1.1 %s\n%s.1 %s\n%s.11 node1\n%s.12 node2\n' \
      "$n" "$SUBNET" "$host" "$SUBNET" "$SUBNET" >"$BASE/nodes/$n/hosts"
  done
  dd if=/dev/urandom of="$BASE/munge/munge.key" bs=128 count=1 status=none
  chmod 400 "$BASE/munge/munge.key"
  munged --key-file="$BASE/munge/munge.key" --socket="$BASE/munge/munge.socket.2" \
    --pid-file="$BASE/pids/munged.pid" --log-file="$BASE/log/munged.log" \
    --seed-file="$BASE/munge/munged.seed" || die "munged did not start"
  for _ in $(seq 50); do [ -S "$BASE/munge/munge.socket.2" ] && break; sleep 0.1; done
  munge -n --socket="$BASE/munge/munge.socket.2" |
    unmunge --socket="$BASE/munge/munge.socket.2" >/dev/null || die "munge round trip failed"
  slurmctld -f "$CONF" || die "slurmctld did not start"
  for n in $NODES; do
    # nsenter, not `ip netns exec`, which remounts /sys and hides /sys/fs/cgroup from slurmd.
    # Private mount and UTS namespaces give the node its hostname and /etc/hosts.
    nsenter --net="/run/netns/cs-$n" unshare --uts --mount --propagation private sh -c \
      "hostname $n && mount --bind $BASE/nodes/$n/hosts /etc/hosts && exec slurmd -f $CONF -N $n" ||
      die "slurmd $n did not start"
  done
}

up() {
  [ "$(id -u)" = 0 ] || cannot "needs root (network namespaces, slurmd, munged)"
  local t
  for t in munged munge unmunge slurmctld slurmd srun sinfo squeue scancel nsenter unshare ip; do
    command -v "$t" >/dev/null ||
      cannot "'$t' is not installed (scripts/bootstrap.sh installs Slurm and munge)"
  done
  if [ -f "$BASE/state" ] && running; then
    say "already up ($BASE)"
  else
    [ -d "$BASE" ] && down >/dev/null
    start
  fi
  for n in $NODES; do
    for _ in $(seq 50); do alive "$BASE/pids/slurmd-$n.pid" slurmd >/dev/null && break; sleep 0.2; done
    alive "$BASE/pids/slurmd-$n.pid" slurmd >/dev/null || die "slurmd $n is not running"
  done
  local states=""
  for _ in $(seq 60); do
    states=$(sinfo -h -N -o '%t' 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$states" = "idle " ] && break
    sleep 1
  done
  [ "$states" = "idle " ] || die "nodes not idle after 60 s (states: ${states:-none})"
  local out
  out=$(timeout 60 srun -N 2 -n 2 -t 1 hostname 2>&1) || die "the test job failed: $out"
  say "cluster up: nodes $NODES, test job ran on: $(echo "$out" | sort | tr '\n' ' ')"
  say "SLURM_CONF=$CONF; MPI plugins: $(srun --mpi=list 2>&1 | tr -s ' \t\n' ' ')"
}

case "${1:-}" in
  up) up ;;
  down)
    [ "$(id -u)" = 0 ] || { echo "slurm_cluster: down needs root" >&2; exit 1; }
    down
    ;;
  *)
    echo "usage: slurm_cluster.sh up|down" >&2
    exit 2
    ;;
esac
