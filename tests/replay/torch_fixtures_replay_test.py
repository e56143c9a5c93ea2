#!/usr/bin/env python3
"""`collie replay` on PyTorch's own flight-recorder dumps, built the way PyTorch's
test/distributed/flight_recorder/test_fr_analysis.py builds them (the builders of
tests/debug/torch_fixtures_test.py: create_one_entry over a per-rank template whose pg_config
ranks are strings, seq ids decimal strings, dtypes one string, a group "1" of each rank's own),
pickled with Python's pickle into nccl_trace_rank_<rank>. The ops use torch's names
(_allgather_base, all_to_all_single with uneven totals, all_reduce_barrier, send/recv with
"send 0->1" profiling names, a coalescing marker) and carry duration_ms.

Checks: the plan replays what it can, says what it cannot and what it assumes, the call whose
recorded duration is far from its replayed time comes first among the differences, and hostile
or unusable dumps are one line and exit 2.

  usage: torch_fixtures_replay_test.py COLLIE_BINARY      exit 0 pass, 1 fail
"""
import json
import os
import pickle
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "debug"))
from torch_fixtures_test import create_one_entry, template, write  # noqa: E402

WORLD = 2


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def p2p_entry(record_id, name, size, p2p_seq_id):
    e = create_one_entry(record_id, name, [[size]], [[size]], p2p_seq_id=p2p_seq_id)
    e["is_p2p"] = True
    return e


def job():
    """Two ranks. Rank r's durations are 0.01 ms except all_reduce #1, recorded at 5000 ms."""
    d = template(WORLD)
    for r in range(WORLD):
        e = d[r]["entries"]
        e.append(create_one_entry(0, "all_reduce", [[4, 4]], [[4, 4]], collective_seq_id=1))
        e.append(create_one_entry(1, "_allgather_base", [[8]], [[16]], collective_seq_id=2))
        # Uneven: rank 0 sends 3 and receives 5 elements, rank 1 sends 7 and receives 5.
        e.append(create_one_entry(2, "all_to_all_single", [[3 + 4 * r]], [[5]],
                                  collective_seq_id=3))
        e.append(create_one_entry(3, "coalesced", [[1]], [[1]], collective_seq_id=4))
        e.append(create_one_entry(4, "broadcast", [[6]], [[6]], collective_seq_id=5))
        peer = 1 - r
        e.append(p2p_entry(5, f"send {r}->{peer}", 10, 1))
        e.append(p2p_entry(6, f"recv {r}<-{peer}", 10, 2))
        e.append(create_one_entry(7, "all_reduce_barrier", [[1]], [[1]], collective_seq_id=6))
        # Each rank's own sub group "1" (ranks "[r]").
        e.append(create_one_entry(8, "all_reduce", [[5]], [[5]], collective_seq_id=1,
                                  pg_info=("1", "sub_pg")))
        for entry in e:
            entry["duration_ms"] = 0.01
        e[0]["duration_ms"] = 5000.0
    return d


def replay(collie, directory, *flags):
    out = os.path.join(directory, "replay.json")
    if os.path.exists(out):
        os.remove(out)
    cmd = [collie, "replay", directory, "-n", "1", "-w", "0", "-T", "60", "-J", out] + list(flags)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    doc = json.load(open(out)) if p.returncode == 0 else None
    return p, doc


def refused(collie, directory, words):
    p = subprocess.run([collie, "replay", directory, "-T", "20"], capture_output=True, text=True,
                       timeout=60)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 2 or len(lines) != 1 or words not in p.stderr or p.stdout:
        fail("%s: expected exit 2 and one line with %r, got %d: %r / %r"
             % (directory, words, p.returncode, p.stderr, p.stdout[:300]))


def main():
    collie = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="collie_torch_replay_") as tmp:
        good = os.path.join(tmp, "job")
        write(job(), good, pickle.HIGHEST_PROTOCOL)
        p, doc = replay(collie, good, "--top", "3")
        if p.returncode != 0:
            fail("replay exited %d: %s" % (p.returncode, p.stderr[-2000:]))
        calls = doc["calls"]
        kinds = sorted((c["group"], c["kind"], c["count"]) for c in calls)
        want = sorted([("0", "all_reduce", 16), ("0", "all_gather", 8), ("0", "alltoallv", 0),
                       ("0", "broadcast", 6), ("0", "sendrecv", 10), ("0", "sendrecv", 10),
                       ("0", "barrier", 0), ("1", "all_reduce", 5), ("1", "all_reduce", 5)])
        if kinds != want:
            fail("calls %r, want %r" % (kinds, want))
        # The uneven all_to_all: every rank gets its recorded totals.
        a2a = next(c for c in calls if c["kind"] == "alltoallv")
        for part in a2a["ranks"]:
            r = part["rank"]
            if sum(part["input_splits"]) != 3 + 4 * r or sum(part["output_splits"]) != 5:
                fail("all_to_all splits of rank %d: %r" % (r, part))
        notes = json.dumps(doc["notes"])
        for words in ("2 ops: coalescing marker 'coalesced'",
                      "1 op: root not recorded (PyTorch's dumps): replayed with root 0",
                      "3 ops: reduce op not recorded (PyTorch's dumps): replayed as sum",
                      "all_to_all splits are not recorded"):
            if words not in notes:
                fail("notes lack %r: %s" % (words, notes))
        # The 5000 ms recording of all_reduce #1 differs most from its replay.
        if not doc["largest_differences"]:
            fail("no call has a recorded duration: %s" % json.dumps(calls)[:500])
        first = calls[doc["largest_differences"][0]]
        if (first["group"], first["recorded_op"], first["seq"]) != ("0", "all_reduce", 1) or \
                first["recorded_us"] != 5000000.0:
            fail("largest difference: %r" % first)
        if "all_reduce #1 of group 0 'default_pg', float32 x 16 (64 B): replayed" not in p.stdout:
            fail("text report: %s" % p.stdout)
        if "# Collective test starting: sendrecv_perf" not in p.stdout:
            fail("no sendrecv table: %s" % p.stdout)

        # Unusable: a missing rank, a hostile size, a pickle that is not a dump.
        missing = os.path.join(tmp, "missing")
        write({0: job()[0]}, missing, 2)
        refused(collie, missing, "no dump of rank 1")
        # Sizes no buffer has: past 2^50 elements, or past --max-bytes (1G by default).
        for name, sizes, words in (("overflow", [[1 << 40, 1 << 30]], "at most 2^50 elements"),
                                   ("huge", [[1 << 40]], "a replayed op may have (--max-bytes)")):
            hostile = os.path.join(tmp, name)
            h = job()
            h[1]["entries"][0]["input_sizes"] = sizes
            write(h, hostile, 2)
            refused(collie, hostile, words)
        junk = os.path.join(tmp, "junk")
        write({0: job()[0], 1: ["not", "a", "dict"]}, junk, 2)
        refused(collie, junk, "nccl_trace_rank_1")
    print("ok: %d calls replayed from PyTorch fixtures" % len(calls))


if __name__ == "__main__":
    main()
