#!/usr/bin/env python3
"""Loads collie's PyTorch-format flight-recorder dumps the way PyTorch's analyzer does and checks
them against collie's JSON dumps of the same ranks (issue 15).

What torch's fr_trace needs (torch/distributed/flight_recorder/components/loader.py, builder.py,
types.py, utils.py; REFERENCE.md), re-implemented here from that documented behaviour:
  - the common file-name prefix is inferred from every name in the directory that ends in
    digits (exactly one prefix); the rank is the rest of the name after it;
  - each file is one pickle of a dict (plain data only: this loader refuses any class);
  - version is a str "major.minor", the same on every rank, >= 2.7 for the newer matching path;
  - pg_config[name] = {name, desc, ranks: a str such as "[0, 1]"}; a group has the same desc
    and members on every rank; every member rank has a dump;
  - every entry has the keys builder.py / types.py read, with torch's types; process_group[0]
    names a group of pg_config; profiling_name is "<backend>:<op>" with backend in nccl, ncclx,
    gloo, xccl and op a collective torch knows, or "send a->b" / "recv a<-b" in group ranks;
  - record_id grows within a rank (align_trace_from_beginning relies on it).
Then every number of every entry is compared with collie_fr_rank_<rank>.json in the same
directory; profiling_name's backend must be nccl (collie's default for torch files, the one every
fr_trace accepts), or the JSON dump's when COLLIE_FR_TORCH_BACKEND=group.

  usage: torch_dump_check.py DUMP_DIR        exit 0 pass, 1 fail
"""
import ast
import io
import json
import os
import pickle
import re
import sys
from collections import defaultdict

BACKENDS = {"nccl", "ncclx", "gloo", "xccl"}
# What the job was run with: the torch files' backend follows it (default nccl).
TORCH_BACKEND = os.environ.get("COLLIE_FR_TORCH_BACKEND", "nccl") or "nccl"
COLLECTIVES = {"broadcast", "reduce", "all_gather", "all_reduce", "reduce_scatter", "gather",
               "scatter", "all_to_all", "barrier", "all_reduce_barrier", "_all_gather_base",
               "_reduce_scatter_base", "all_to_all_single", "coalesced"}
P2P = {"send", "recv"}
DTYPES = {"int8": "Char", "uint8": "Byte", "int32": "Int", "uint32": "UInt32", "int64": "Long",
          "uint64": "UInt64", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
          "float64": "Double"}
ENTRY_TYPES = {
    "record_id": int, "pg_id": int, "process_group": tuple, "collective_seq_id": int,
    "p2p_seq_id": int, "op_id": int, "profiling_name": str, "time_created_ns": int,
    "input_sizes": list, "input_dtypes": list, "output_sizes": list, "output_dtypes": list,
    "state": str, "time_discovered_started_ns": (int, type(None)),
    "time_discovered_completed_ns": (int, type(None)), "retired": bool, "timeout_ms": int,
    "is_p2p": bool, "frames": list, "thread_id": str, "thread_name": str,
}


class PlainData(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing class {module}.{name}: dumps are plain data")


def infer_prefix(files):
    prefixes = defaultdict(set)
    for f in files:
        m = re.search(r"([\w\-\_]*?)(\d+)$", f)
        if m:
            prefixes[m.group(1)].add(int(m.group(2)))
    if len(prefixes) != 1:
        raise AssertionError(f"cannot infer one common prefix from {sorted(files)}: {dict(prefixes)}")
    return next(iter(prefixes))


def load(directory):
    files = [f for f in os.listdir(directory) if not f.startswith(".")]
    prefix = infer_prefix(files)
    dumps = {}
    for f in files:
        offset = f.find(prefix)
        if offset == -1:
            continue
        rank = int(f[offset + len(prefix):])
        with open(os.path.join(directory, f), "rb") as fh:
            data = fh.read()
        assert data[:1] == b"\x80", f"{f}: not a pickle"
        dumps[rank] = PlainData(io.BytesIO(data)).load()
    assert dumps, f"no files with prefix {prefix}"
    return prefix, dumps


def check_dump(rank, d, errors):
    def err(what):
        errors.append(f"rank {rank}: {what}")

    if not isinstance(d, dict):
        return err(f"the pickle is a {type(d).__name__}, not a dict")
    for key in ("entries", "version", "pg_config"):
        if key not in d:
            err(f"no '{key}'")
    v = d.get("version")
    if not (isinstance(v, str) and re.fullmatch(r"\d+\.\d+", v)):
        err(f"version {v!r} is not a str 'major.minor'")
    elif tuple(map(int, v.split("."))) < (2, 7):
        err(f"version {v} is older than 2.7")
    members = {}
    for name, c in d.get("pg_config", {}).items():
        if not isinstance(name, str) or c.get("name") != name or not isinstance(c.get("desc"), str):
            err(f"pg_config[{name!r}] = {c!r}: name/desc")
        if not isinstance(c.get("ranks"), str):
            err(f"pg_config[{name!r}] ranks {c.get('ranks')!r} is not a str")
            continue
        members[name] = (c["desc"], sorted(ast.literal_eval(c["ranks"])))
    last = -1
    for i, e in enumerate(d.get("entries", [])):
        where = f"entry {i}"
        for key, t in ENTRY_TYPES.items():
            if key not in e:
                err(f"{where}: no '{key}'")
            elif type(e[key]) is bool and t is int or not isinstance(e[key], t):
                err(f"{where}: {key} = {e[key]!r} is not {t}")
        if "duration_ms" in e and not isinstance(e["duration_ms"], float):
            err(f"{where}: duration_ms {e['duration_ms']!r} is not a float")
        pg = e.get("process_group", ("?", "?"))
        if len(pg) != 2 or pg[0] not in members:
            err(f"{where}: process_group {pg!r} names no group of pg_config")
            continue
        backend, _, name = e["profiling_name"].partition(":")
        op, _, meta = name.partition(" ")
        if backend not in BACKENDS:
            err(f"{where}: profiling_name backend {backend!r} not in {sorted(BACKENDS)}")
        if op not in COLLECTIVES | P2P:
            err(f"{where}: op {op!r} is not one torch knows")
        if op in P2P:
            m = re.fullmatch(r"(\d+)(->|<-)(\d+)", meta)
            size = len(members[pg[0]][1])
            if not m or m.group(2) != ("->" if op == "send" else "<-") or \
                    int(m.group(1)) >= size or int(m.group(3)) >= size:
                err(f"{where}: {e['profiling_name']!r} is not '{op} a{'->' if op == 'send' else '<-'}b' "
                    f"in group ranks below {size}")
        if e["state"] not in ("scheduled", "started", "completed"):
            err(f"{where}: state {e['state']!r}")
        if e["record_id"] <= last:
            err(f"{where}: record_id {e['record_id']} does not grow")
        last = e["record_id"]
    return members


def compare(rank, t, j, errors):
    def err(what):
        errors.append(f"rank {rank} vs collie_fr_rank_{rank}.json: {what}")

    if len(t["entries"]) != len(j["entries"]):
        return err(f"{len(t['entries'])} entries, JSON has {len(j['entries'])}")
    for i, (a, b) in enumerate(zip(t["entries"], j["entries"])):
        if b.get("failed"):
            # torch retires an entry only when its work completes: a failed op is in flight there.
            b = dict(b, state="started", time_discovered_completed_ns=None, retired=False,
                     duration_ms=None)
        for key in ("record_id", "collective_seq_id", "p2p_seq_id", "op_id", "time_created_ns",
                    "time_discovered_started_ns", "time_discovered_completed_ns", "state",
                    "retired", "timeout_ms", "is_p2p", "input_sizes", "output_sizes",
                    "thread_name"):
            if a.get(key, "<missing>") != b[key]:
                err(f"entry {i} {key}: {a.get(key, '<missing>')!r} != {b[key]!r}")
        if str(a["thread_id"]) != str(b["thread_id"]):
            err(f"entry {i} thread_id {a['thread_id']!r} != {b['thread_id']!r}")
        if list(a["process_group"]) != b["process_group"]:
            err(f"entry {i} process_group {a['process_group']!r} != {b['process_group']!r}")
        for key in ("input_dtypes", "output_dtypes"):
            if a[key] != [DTYPES[x] for x in b[key]]:
                err(f"entry {i} {key}: {a[key]!r} vs {b[key]!r}")
        # The op must match; the backend is nccl whatever the group's (the one every fr_trace
        # release accepts), or the group's own under COLLIE_FR_TORCH_BACKEND=group.
        t_backend, _, t_op = a["profiling_name"].split(" ")[0].partition(":")
        j_backend, _, j_op = b["profiling_name"].split(" ")[0].partition(":")
        want_backend = "nccl" if TORCH_BACKEND != "group" else j_backend
        if t_op != j_op or t_backend != want_backend:
            err(f"entry {i} op: {a['profiling_name']!r} vs {b['profiling_name']!r} "
                f"(backend {want_backend} expected)")
        if (b["duration_ms"] is None) == ("duration_ms" in a) or \
                ("duration_ms" in a and abs(a["duration_ms"] - b["duration_ms"]) > 1e-9):
            err(f"entry {i} duration_ms {a.get('duration_ms')!r} vs {b['duration_ms']!r}")
    uid_name = {str(e["pg_id"]): e["process_group"][0] for e in t["entries"]}
    for uid, st in t.get("pg_status", {}).items():
        name = uid_name.get(uid)
        if name is None:
            continue
        for key, value in st.items():
            if j["pg_status"][name][key] != value:
                err(f"pg_status {name} {key}: {value} != {j['pg_status'][name][key]}")
    for name, c in t["pg_config"].items():
        if isinstance(c.get("ranks"), str) and \
                ast.literal_eval(c["ranks"]) != rank_ranges(j["pg_config"][name]["ranks"]):
            err(f"pg_config {name} ranks {c['ranks']} != {j['pg_config'][name]['ranks']}")


def rank_ranges(text):
    """collie's JSON dumps list a group's ranks as ranges, "0-3,5" (a list before version 2)."""
    if isinstance(text, list):
        return text
    out = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def main():
    directory = sys.argv[1]
    errors = []
    prefix, dumps = load(directory)
    versions = {d.get("version") for d in dumps.values()}
    if len(versions) != 1:
        errors.append(f"ranks disagree on the version: {versions}")
    groups = {}
    for rank, d in sorted(dumps.items()):
        for name, (desc, ranks) in check_dump(rank, d, errors).items():
            if name in groups and groups[name] != (desc, ranks) and len(ranks) > 1:
                errors.append(f"group {name}: rank {rank} says {(desc, ranks)}, another {groups[name]}")
            groups.setdefault(name, (desc, ranks))
            missing = set(ranks) - set(dumps)
            if missing:
                errors.append(f"group {name}: no dump from ranks {sorted(missing)}")
    entries = 0
    for rank, d in sorted(dumps.items()):
        with open(os.path.join(directory, f"collie_fr_rank_{rank}.json")) as f:
            compare(rank, d, json.load(f), errors)
        entries += len(d["entries"])
    for e in errors:
        print("FAIL", e)
    print(f"prefix {prefix!r}, ranks {sorted(dumps)}, version {versions.pop()}, {entries} entries, "
          f"{len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
