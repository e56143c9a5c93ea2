#!/usr/bin/env python3
"""`collie analyze` on PyTorch's own flight-recorder dumps (issue 15).

The dumps are built the way PyTorch's test/distributed/flight_recorder/test_fr_analysis.py
builds them (create_one_event / create_one_entry over a per-rank template with pg_config ranks
as a string, seq ids as decimal strings, dtypes as one string) and pickled with Python's own
pickle, one file per rank named nccl_trace_rank_<rank>, as torch's writer names them. Written
from the documented layout; no PyTorch code is copied or needed.

  usage: torch_fixtures_test.py COLLIE_BINARY      exit 0 pass, 1 fail
"""
import json
import os
import pickle
import subprocess
import sys
import tempfile

BACKEND = "nccl"


def create_one_event(collective_name, pg_info, input_sizes, output_sizes, state="scheduled",
                     collective_seq_id=0, p2p_seq_id=0, output_dtypes="float32"):
    return {
        "profiling_name": f"{BACKEND}:{collective_name}",
        "state": state,
        "process_group": pg_info,
        "input_sizes": input_sizes,
        "output_sizes": output_sizes,
        "input_dtypes": "float32",
        "output_dtypes": output_dtypes,
        "collective_seq_id": str(collective_seq_id),
        "p2p_seq_id": str(p2p_seq_id),
        "time_created_ns": 0,
        "frames": [],
    }


def create_one_entry(record_id, collective_name, input_sizes, output_sizes, state="completed",
                     collective_seq_id=0, p2p_seq_id=0, output_dtypes="float32",
                     pg_info=("0", "default")):
    event = create_one_event(collective_name, pg_info, input_sizes, output_sizes, state,
                             collective_seq_id, p2p_seq_id, output_dtypes)
    event.update({"record_id": record_id})
    event.update({"is_p2p": False})
    return event


def template(world):
    """LOADED_FR_DETAIL_TEMPLATE for `world` ranks: the default group and a group per rank."""
    ranks = list(range(world))
    return {
        r: {
            "entries": [],
            "pg_config": {
                "0": {"name": "0", "desc": "default_pg", "ranks": f"{ranks}"},
                "1": {"name": "1", "desc": "sub_pg", "ranks": f"{[r]}"},
            },
            "version": "2.8",
        }
        for r in ranks
    }


def healthy(world):
    """Every rank: all_reduce #1, all_gather #2, broadcast #3, then an all_reduce on its own
    one-rank sub group; all completed."""
    d = template(world)
    for r in range(world):
        e = d[r]["entries"]
        e.append(create_one_entry(0, "all_reduce", [[4, 4]], [[4, 4]], collective_seq_id=1))
        e.append(create_one_entry(1, "all_gather", [[4]], [[4 * world]], collective_seq_id=2))
        e.append(create_one_entry(2, "broadcast", [[8]], [[8]], collective_seq_id=3))
        e.append(create_one_entry(3, "all_reduce", [[5, 5]], [[5, 5]], collective_seq_id=1,
                                  pg_info=("1", "sub_pg")))
    return d


def skipped(world, culprit):
    """`culprit` never reaches all_reduce #3, which every other rank has started."""
    d = template(world)
    for r in range(world):
        e = d[r]["entries"]
        e.append(create_one_entry(0, "all_reduce", [[4, 4]], [[4, 4]], collective_seq_id=1))
        e.append(create_one_entry(1, "broadcast", [[8]], [[8]], collective_seq_id=2))
        if r != culprit:
            e.append(create_one_entry(2, "all_reduce", [[4, 4]], [[4, 4]], state="started",
                                      collective_seq_id=3))
    return d


def wrong_op(world, culprit):
    """`culprit` calls broadcast as collective #2 where every other rank calls all_reduce."""
    d = template(world)
    for r in range(world):
        e = d[r]["entries"]
        e.append(create_one_entry(0, "all_reduce", [[4, 4]], [[4, 4]], collective_seq_id=1))
        op = "broadcast" if r == culprit else "all_reduce"
        e.append(create_one_entry(1, op, [[4, 4]], [[4, 4]], state="started", collective_seq_id=2))
    return d


def write(details, directory, protocol):
    os.makedirs(directory, exist_ok=True)
    for rank, dump in details.items():
        with open(os.path.join(directory, f"nccl_trace_rank_{rank}"), "wb") as f:
            pickle.dump(dump, f, protocol=protocol)


def analyze(collie, directory):
    p = subprocess.run([collie, "analyze", directory, "--json"], capture_output=True, text=True,
                       timeout=60)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except json.JSONDecodeError:
        return p.returncode, None, p.stdout + p.stderr


def main():
    collie = sys.argv[1]
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="collie_torch_fixtures_") as tmp:
        cases = 0
        for protocol in (2, 4, pickle.HIGHEST_PROTOCOL):
            for world in (2, 3, 4):
                d = os.path.join(tmp, f"healthy_p{protocol}_w{world}")
                write(healthy(world), d, protocol)
                code, out, err = analyze(collie, d)
                check(code == 0 and out is not None and out["culprits"] == "" and
                      out["findings"] == [] and out["world_size"] == world,
                      f"healthy {world} ranks (protocol {protocol}): "
                      f"[{code}] {out['summary'] if out else err}")
                cases += 1

                culprit = world - 1 if world > 2 else 1
                d = os.path.join(tmp, f"skipped_p{protocol}_w{world}")
                write(skipped(world, culprit), d, protocol)
                code, out, err = analyze(collie, d)
                kinds = {f["kind"] for f in out["findings"]} if out else set()
                states = {v["ranks"]: v["state"] for v in out["states"]} if out else {}
                check(code == 1 and out["culprits"] == str(culprit) and "NOT_ALL_JOINED" in kinds and
                      states.get(str(culprit)) == "straggler",
                      f"rank {culprit} of {world} skipped all_reduce #3 (protocol {protocol}): "
                      f"named [{code}] {out['summary'] if out else err}")

                d = os.path.join(tmp, f"wrong_op_p{protocol}_w{world}")
                write(wrong_op(world, culprit), d, protocol)
                code, out, err = analyze(collie, d)
                kinds = {f["kind"] for f in out["findings"]} if out else set()
                if world > 2:  # with 2 ranks there is no majority to tell the culprit by
                    check(code == 1 and out["culprits"] == str(culprit) and
                          "COLLECTIVE_TYPE_MISMATCH" in kinds,
                          f"rank {culprit} of {world} called broadcast for all_reduce #2 "
                          f"(protocol {protocol}): named [{code}] {out['summary'] if out else err}")

        # Bad input: one line, exit 2, never a crash.
        d = os.path.join(tmp, "evil")
        os.makedirs(d)
        with open(os.path.join(d, "nccl_trace_rank_0"), "wb") as f:
            f.write(b"\x80\x02cos\nsystem\n(S'echo pwned'\ntR.")
        code, out, err = analyze(collie, d)
        check(code == 2 and "not plain data" in err and "pwned" not in err and
              len(err.strip().splitlines()) == 1,
              f"a pickle with GLOBAL/REDUCE is refused, not run [{code}] {err.strip()}")
    print(f"{cases} (protocol, world) combinations; {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
