#!/usr/bin/env bash
# Isolation at (small) scale across real hosts: 6 "hosts" as network namespaces, 2 ranks each,
# a real Gloo job over env:// rendezvous (the topology of tests/e2e/probes_netns_test.sh).
#   usage: isolate_netns_test.sh COLLIE_BINARY SCENARIO
#   SCENARIO: slow_host  host2's data link is rate-limited (tc tbf): `collie probe pairwise`
#                        names exactly host2, HOST_SLOW CRIT, confirmed against known-good
#                        partners, exit 1; the same with --schedule full
#             busy       healthy cluster while a busy loop occupies one core: verdict OK,
#                        nothing named, exit 0, 3 runs in a row
#             starved    healthy cluster while 4 busy loops (2 per core of a 2-core machine)
#                        starve its 12 ranks: no host or link named WARN or CRIT, exit 0 or 6
#                        (INCONCLUSIVE: what the CPU wait explains decides nothing), 3 runs of 3;
#                        an inconclusive finding, or the survey's INCONCLUSIVE line when most of
#                        its pairs were starved, says its ranks waited for a CPU
#             slow_starved  the same starved cluster with host2 slowed as in slow_host: no run
#                        exits 0 (a starved survey cannot clear it), host2 found
#                        (HOST_INCONCLUSIVE or HOST_SLOW) in at least 1 of 3 runs, and no other
#                        host or link named WARN or CRIT in any
#             flapping_link  host2 slowed as in slow_host, and the link host1 <-> host4 flaps:
#                        down in its 1st, 3rd, 5th ... measurement, up in the others (the
#                        injector below). `collie accept` (pairwise check, default options but
#                        a survey rotation that pairs host1 with host4) rejects, naming exactly
#                        host2 HOST_SLOW CRIT and host1 <-> host4 LINK_FLAPPING CRIT, both
#                        confirmed by re-measurement
# Namespaces, bridges and interfaces carry the prefix c18 (the helpers' naming rule) and are
# removed on every exit. Exit: 0 pass, 1 fail, 77 skipped (no root / no namespaces / no tc
# qdisc; the reason is printed; under CI=true these fail instead, tests/support/skip.sh).
set -u
COLLIE=${1:?collie binary}
SCENARIO=${2:?scenario}
HOSTS=6
PER_HOST=2
WORLD=$((HOSTS * PER_HOST))
TAG="c18i$$"
BR="${TAG}br"
WORK=$(mktemp -d /tmp/collie_isolate_netns.XXXXXX)
PIDS=()

fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../support/skip.sh"

source "$(dirname "$0")/../support/netns_cluster.sh"

slow_host_data_link() {  # rate-limit host $1's data link in both directions
  local h=$1
  ip netns exec "${TAG}h$h" tc qdisc add dev eth_d root tbf rate 100mbit burst 64kb latency 200ms ||
    fail "tc tbf is not available"
  ip netns exec "$BR" tc qdisc add dev "vd$h" root tbf rate 100mbit burst 64kb latency 200ms
}

# The flapping link: a deterministic fault per *measurement* of the link, not per second (a timer
# can put every re-measurement in the same state by chance). Every measurement of a pair opens a
# new TCP connection between the two hosts' measuring ranks, from one side or the other. A gate
# on both hosts' data links drops the SYNs between them (HTB: unclassified traffic goes straight
# through, SYNs to the peer into a class whose queue holds nothing), so every new connection waits
# in SYN-SENT. The injector sees it there, counts it as the link's next measurement and decides:
# odd ones stay down (the connect fails at the step timeout: a failed measurement), even ones
# are let through (the SYN retransmitted after 1 s connects, and the measurement runs on an
# unshaped link). The decision is made while the measurement cannot have started, so the state
# never changes under a running one, and no timing decides which measurements are down.
FLAP_GATE_PRIO=1000
flap_gate() {  # flap_gate HOST PEER: SYNs from host HOST's data link to PEER's are held
  local peer=$2 ns="${TAG}h$1"
  nsx "$ns" tc qdisc add dev eth_d root handle 1: htb || skip "the kernel has no tc htb qdisc"
  nsx "$ns" tc class add dev eth_d parent 1: classid 1:1 htb rate 100mbit quantum 1514
  nsx "$ns" tc class add dev eth_d parent 1: classid 1:99 htb rate 100mbit quantum 1514
  nsx "$ns" tc qdisc add dev eth_d parent 1:99 handle 99: pfifo limit 0
  # IPv4 without options (IHL 5), TCP, flags SYN without ACK (byte 33 = TCP byte 13).
  nsx "$ns" tc filter add dev eth_d parent 1: protocol ip prio $FLAP_GATE_PRIO u32 \
    match ip dst 10.77.1.$((peer + 1))/32 match ip protocol 6 0xff match u8 0x05 0x0f at 0 \
    match u8 0x02 0x12 at 33 flowid 1:99 || skip "the kernel has no tc u32 classifier"
}
# flap_injector A B LOG: runs until $WORK/flap.stop exists; one line per measurement in LOG.
# It polls each host's TCP sockets through /proc/PID/net/tcp of a process in that namespace: no
# process per poll, and none at all while a measurement runs (forking `ip netns exec ss` ten
# times a second, or removing a pass while its connection measured, loaded the 2 shared cores
# enough to slow the very measurement the link was up for).
flap_injector() {
  local a=$1 b=$2 log=$3 m=0 h peer sport dport k line
  local -a lines f
  declare -A held now holder hexip
  for h in $a $b; do
    # Not nsx: a backgrounded function is a subshell here (its pid in the root namespace).
    ip netns exec "${TAG}h$h" sleep 600 &
    holder[$h]=$!
    hexip[$h]=$(printf '%02X%02X%02X%02X' $((h + 1)) 1 77 10)  # 10.77.1.h+1 as /proc shows it
  done
  while [ ! -e "$WORK/flap.stop" ]; do
    now=()
    for h in $a $b; do
      peer=$b
      [ $h = $b ] && peer=$a
      mapfile -t lines <"/proc/${holder[$h]}/net/tcp"
      for line in "${lines[@]:1}"; do
        read -r -a f <<<"$line"
        # f: slot, local IP:port, remote IP:port, state (02 = SYN-SENT), all in hex
        [ "${f[3]}" = 02 ] && [ "${f[2]%:*}" = "${hexip[$peer]}" ] || continue
        sport=$((16#${f[1]#*:}))
        dport=$((16#${f[2]#*:}))
        k=$h:$sport:$dport
        now[$k]=1
        [ -n "${held[$k]:-}" ] && continue
        held[$k]=1
        m=$((m + 1))
        if [ $((m % 2)) = 1 ]; then
          echo "$(date +%T.%N) measurement $m: host$h port $sport: down" >>"$log"
        else
          # Lets this connection's SYN through (its data never matches the gate). The pass stays:
          # removing it would cost a process while the measurement runs, and it matches both
          # ports, which no later connection reuses in the test's time.
          nsx "${TAG}h$h" tc filter add dev eth_d parent 1: protocol ip prio $m u32 \
            match ip dst 10.77.1.$((peer + 1))/32 match u16 "$sport" 0xffff at 20 \
            match u16 "$dport" 0xffff at 22 match u8 0x02 0x12 at 33 flowid 1:1
          echo "$(date +%T.%N) measurement $m: host$h port $sport: up" >>"$log"
        fi
      done
    done
    # A connection that left SYN-SENT (connected, or given up) is done with the gate.
    for k in "${!held[@]}"; do
      [ -n "${now[$k]:-}" ] || unset "held[$k]"
    done
    sleep 0.1
  done
  kill "${holder[@]}" 2>/dev/null
}

starve() {  # 4 busy loops: 2 per core of a 2-core machine, with the 12 ranks
  for _ in 1 2 3 4; do
    sh -c 'while :; do :; done' &
    PIDS+=($!)
  done
}

setup
start=$(date +%s)
case "$SCENARIO" in
  slow_host)
    slow_host_data_link 2
    for sched in quick full; do
      run_job pw_$sched 90 probe pairwise --schedule $sched --rotation 0 --bytes 256K -n 3 -T 5 \
        -J "$WORK/pw_$sched.json"
      wait_job pw_$sched
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
      wait_job pw$run
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
  starved)
    starve
    for run in 1 2 3; do
      run_job pw$run 120 probe pairwise --bytes 256K -n 3 -T 10 -J "$WORK/pw$run.json"
      wait_job pw$run
      show pw$run
      case "$RC0" in
        0) expect_in pw$run "^OK: nothing named" "starved run $run: no OK line" ;;
        6) expect_in pw$run "^INCONCLUSIVE (HOST|LINK|SURVEY): .*waited for a CPU" \
             "starved run $run: exit 6 without an inconclusive finding that says why" ;;
        *) fail "starved run $run: exit $RC0, expected 0 or 6 (a healthy cluster named)" ;;
      esac
      python3 - "$WORK/pw$run.json" <<'PY' || fail "starved run $run: JSON"
import json, sys
j = json.load(open(sys.argv[1]))
f = j["isolation"]["findings"]
assert j["verdict"] in ("OK", "INCONCLUSIVE"), j["verdict"]
assert all(x["severity"] == "INCONCLUSIVE" for x in f), [(x["code"], x["severity"]) for x in f]
print("starved: verdict", j["verdict"], [(x["code"], x["reason"][:160]) for x in f])
PY
    done
    ;;
  slow_starved)
    slow_host_data_link 2
    starve
    found=0
    for run in 1 2 3; do
      run_job pw$run 120 probe pairwise --bytes 256K -n 3 -T 10 -J "$WORK/pw$run.json"
      wait_job pw$run
      show pw$run
      # Never OK: a run whose survey was starved cannot clear the slowed host (INCONCLUSIVE SURVEY).
      case "$RC0" in 1 | 6) ;; *) fail "slow_starved run $run: exit $RC0, expected 6 or 1" ;; esac
      python3 - "$WORK/pw$run.json" <<'PY' > "$WORK/found$run" || fail "slow_starved run $run: JSON"
import json, sys
j = json.load(open(sys.argv[1]))
f = j["isolation"]["findings"]
other = [(x["code"], x["who"]) for x in f
         if x["severity"] != "INCONCLUSIVE" and not (x["kind"] == "host" and x["who"].startswith("host2"))]
assert not other, f"named besides host2: {other}"
host2 = [x for x in f if x["kind"] == "host" and x["who"].startswith("host2")]
assert not host2 or host2[0]["code"] in ("HOST_INCONCLUSIVE", "HOST_SLOW"), host2[0]["code"]
print(1 if host2 else 0)
PY
      found=$((found + $(cat "$WORK/found$run")))
      echo "slow_starved run $run: exit $RC0, host2 found: $(cat "$WORK/found$run")"
    done
    [ $found -ge 1 ] || fail "slow_starved: host2 found in none of 3 runs"
    ;;
  flapping_link)
    slow_host_data_link 2
    flap_gate 1 4
    flap_gate 4 1
    flap_injector 1 4 "$WORK/flap.log" &
    injector=$!
    PIDS+=($injector)
    # A pairwise check alone (the other checks would open connections over the gated link too)
    # with the default message size and count, the sample spec's slow_threshold and a rule for
    # links as well. rotation 0: the survey (tournament rounds 0-2 of 6 hosts) pairs host1 with
    # host4, and neither of them meets host2, so both stay known-good and the bad pair is
    # re-measured as a link (a quick survey sees only the links it pairs; docs/acceptance.md).
    cat >"$WORK/spec.yaml" <<'EOF'
name: flapping link
backend: gloo
timeout: 5s
checks:
  - probe: pairwise
    slow_threshold: 0.5
    rotation: 0
    rules:
      max_slow_hosts: 0
      max_slow_links: 0
EOF
    run_job accept 150 accept --spec "$WORK/spec.yaml" -J "$WORK/report.json"
    wait_job accept
    touch "$WORK/flap.stop"
    wait "$injector"
    show accept
    echo "----- injector -----"
    cat "$WORK/flap.log"
    [ "$RC0" = 1 ] || fail "accept exit $RC0, expected 1 (rejected)"
    expect_in accept "^SLOW HOST: host2 \(ranks 4, 5\) \[HOST_SLOW CRIT\]: .*bad in ([0-9]+) of \1 re-measurements against known-good partners" \
      "host2 not named HOST_SLOW CRIT, bad in every re-measurement"
    expect_in accept "^FLAPPING LINK: host1 \(ranks 2, 3\) <-> host4 \(ranks 8, 9\) \[LINK_FLAPPING CRIT\]: the bad ones failed .*; bad in [0-9]+ of [0-9]+ re-measurements re-measuring the link itself" \
      "host1 <-> host4 not named LINK_FLAPPING CRIT"
    named=$(grep -cE "^(SLOW|DEAD|FLAPPING) (HOST|LINK)" "$WORK/accept.0.log")
    [ "$named" = 2 ] || fail "$named findings, expected exactly host2 and host1 <-> host4"
    python3 - "$WORK/report.json" "$WORK/flap.log" <<'PY' || fail "JSON evidence"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["verdict"] == "CRIT" and j["passed"] is False, (j["verdict"], j["passed"])
(pw,) = [c for c in j["checks"] if c["kind"] == "pairwise"]
got = sorted((f["code"], f["severity"], f["who"]) for f in pw["findings"])
assert got == [("HOST_SLOW", "CRIT", "host2 (ranks 4, 5)"),
               ("LINK_FLAPPING", "CRIT", "host1 (ranks 2, 3) <-> host4 (ranks 8, 9)")], got
iso = pw["details"]["isolation"]
f = {x["code"]: x for x in iso["findings"]}
assert sorted(f) == ["HOST_SLOW", "LINK_FLAPPING"], sorted(f)
host, link = f["HOST_SLOW"], f["LINK_FLAPPING"]
assert host["confirmations"] >= 2 and host["confirmations"] == host["remeasured"], host
partners = {e["partner"] for e in host["evidence"] if e["round"] > 0}
assert len(partners) >= 2 and not any(p.startswith("host2") for p in partners), partners
# Confirmed flapping: bad in some re-measurements (failed: the link was down), fine in others.
re = [e for e in link["evidence"] if e["round"] > 0]
bad = [e for e in re if e["bad"]]
assert link["confirmations"] == len(bad) >= 2 and link["remeasured"] == len(re) > len(bad), link
assert all(e["gbps"] == 0 for e in bad) and all(e["gbps"] > 0 for e in re if not e["bad"]), re
# Every measurement of host1 <-> host4 is one connection, so the injector's log is the link's
# history: the survey pair first (down), the link's own re-measurements last; in between, when
# noise made host1 or host4 a suspect, their re-pairing may have met the other.
survey = [e for e in link["evidence"] if e["round"] == 0]
assert len(survey) == 1 and survey[0]["bad"], survey
inj = [l.split(": ")[-1].strip() for l in open(sys.argv[2])]
assert inj == ["down" if i % 2 == 0 else "up" for i in range(len(inj))], inj
assert len(inj) >= 1 + len(re), (inj, len(re))
assert [e["bad"] for e in re] == [s == "down" for s in inj[len(inj) - len(re):]], (re, inj)
PY
    ;;
  *) fail "unknown scenario '$SCENARIO'" ;;
esac
echo "PASS: $SCENARIO in $(($(date +%s) - start)) s"
