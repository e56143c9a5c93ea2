#!/usr/bin/env python3
"""Reads `collie perf -I 1 -J FILE` as a reader of nccl-tests' version-3 JSON does, and checks
that the numbers round-trip against collie's own keys in the same file.

Written from the documented layout (nccl-tests src/util.cu; the keys NVIDIA's
tools/analyze_perf_json.py --all reads): it runs the same analyses on the same keys (overview,
consistency of times_us with per_process_max_times_us, per-iteration stats, per-process
straggler, spikes, iteration 0, per-node grouping by config.devices[].hostname) using only the
standard library. Then it strips collie's keys and has `collie report render` read what is left,
as it would read a file nccl-tests wrote.

usage: nccl_tests_json_reader.py COLLIE_BIN WORKDIR
"""
import json
import os
import statistics
import subprocess
import sys

TOP = ["version", "start_time", "args", "env", "nccl_version", "config", "results",
       "out_of_bounds", "average_bus_bandwidth", "end_time"]
CONFIG = ["nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor", "warmup_iters",
          "iterations", "aggregated_iterations", "validation", "graph", "blocking_collectives",
          "per_iter_timing", "per_iter_skip", "parallel_init", "devices"]
DEVICE = ["rank", "group", "pid", "hostname", "device", "device_hex", "device_info"]
RESULT = ["size", "count", "type", "redop", "root", "out_of_place", "in_place",
          "actual_iterations", "experiment_name"]
PLACEMENT = ["time", "alg_bw", "bus_bw", "nwrong"]
PER_ITER = ["skipped_iterations", "min_us", "max_us", "avg_us", "p99_us", "stdev_us", "cv_pct",
            "times_us", "per_process_max_times_us"]
COLLIE_KEYS = ["schema", "run", "rows", "complete", "summary"]
NP = 3
ITERS = 6


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def need(obj, keys, where):
    for k in keys:
        if k not in obj:
            fail("%s: missing key %r" % (where, k))


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def analyze(data, key):
    """What analyze_perf_json.py --all computes for one placement; returns a few results."""
    out = {"stats": 0, "straggler": 0, "spikes": 0, "iter0": 0, "nodes": 0}
    results = data["results"]
    first = results[0].get(key, {})
    nprocs = len(first.get("per_process_max_times_us", []))
    # Consistency: times_us is the max over the process rows, iteration by iteration.
    for r in results:
        p = r.get(key, {})
        rows_ = p.get("per_process_max_times_us", [])
        t = p.get("times_us", [])
        if rows_ and t:
            n = min(len(x) for x in rows_)
            expect = [max(x[i] for x in rows_) for i in range(n)]
            if len(t) != len(expect) or any(abs(a - b) >= 0.001 for a, b in zip(t, expect)):
                fail("%s size %d: times_us is not the max over per_process_max_times_us"
                     % (key, r["size"]))
    devices = data.get("config", {}).get("devices", [])
    for r in results:
        p = r.get(key)
        if not p:
            continue
        spike = p["max_us"] / p["avg_us"] if p["avg_us"] > 0 else 0  # stats table
        _ = spike > 1.5 or p["cv_pct"] > 5
        out["stats"] += 1
        procs = p.get("per_process_max_times_us", [])
        stats = []
        for i, times in enumerate(procs):  # straggler
            avg = sum(times) / len(times)
            std = statistics.stdev(times) if len(times) > 1 else 0
            stats.append((i, avg, min(times), max(times), (std / avg * 100) if avg > 0 else 0))
        if stats:
            stats.sort(key=lambda x: x[1])
            _ = (stats[-1][1] - stats[0][1]) / stats[0][1] * 100
            out["straggler"] += 1
        for pi in range(len(procs)):  # spikes
            for i, t in enumerate(procs[pi]):
                if t > p["avg_us"] * 1.5:
                    out["spikes"] += 1
        times = p.get("times_us", [])
        if len(times) >= 2:  # iteration 0
            steady = times[1:]
            _ = times[0] / (sum(steady) / len(steady))
            _ = statistics.stdev(times) / (sum(times) / len(times))
            out["iter0"] += 1
        if len(devices) >= nprocs and all("hostname" in d for d in devices[:nprocs]):  # nodes
            by_host = {}
            for proc, dev in enumerate(devices[:nprocs]):
                by_host.setdefault(dev["hostname"], []).append(proc)
            for procs_of_node in by_host.values():
                _ = [sum(procs[i]) / len(procs[i]) for i in procs_of_node]
            out["nodes"] += 1
    return out, nprocs


def main():
    collie, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    jpath = os.path.join(work, "json_reader.json")
    for f in (jpath, jpath + ".nccl-tests.json"):
        if os.path.exists(f):
            os.remove(f)
    cmd = [collie, "perf", "all", "-np", str(NP), "-b", "1K", "-e", "16K", "-f", "4", "-n",
           str(ITERS), "-K", "1", "-w", "1", "-I", "1", "-T", "60", "-J", jpath]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("collie perf exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    data = json.load(open(jpath))

    # Every key of nccl-tests' version-3 layout.
    need(data, TOP, "top level")
    if data["version"] != 3:
        fail("version is %r" % data["version"])
    need(data["config"], CONFIG, "config")
    if data["config"]["per_iter_timing"] != "true" or data["config"]["per_iter_skip"] != 1:
        fail("config does not record -I 1 -K 1: %r" % data["config"])
    if len(data["config"]["devices"]) != NP:
        fail("%d devices for %d ranks" % (len(data["config"]["devices"]), NP))
    for d in data["config"]["devices"]:
        need(d, DEVICE, "a device")
    need(data["out_of_bounds"], ["count", "okay"], "out_of_bounds")
    need(data["average_bus_bandwidth"], ["bandwidth", "okay"], "average_bus_bandwidth")

    # Round trip against collie's keys in the same file.
    need(data, COLLIE_KEYS, "collie's keys")
    rows = data["rows"]
    if [d["hostname"] for d in data["config"]["devices"]] != data["run"]["hosts"]:
        fail("device hostnames differ from run.hosts")
    seen, numbers = set(), 0
    for r in data["results"]:
        need(r, RESULT, "a result")
        coll = r["collie"]["collective"]
        seen.add(coll)
        if r["experiment_name"] != coll + "_perf":
            fail("experiment_name %r for %s" % (r["experiment_name"], coll))
        for key, place in (("out_of_place", "out"), ("in_place", "in")):
            obj = r[key]
            if obj is None:
                fail("%s size %d: %s is null (collie measures both placements)"
                     % (coll, r["size"], key))
            need(obj, PLACEMENT, key)
            row = rows[r["collie"]["rows"][key]]
            if row["placement"] != place or row["collective"] != coll:
                fail("%s: result points at the wrong row" % coll)
            for a, b in ((r["size"], row["size_bytes"]), (r["count"], row["count"]),
                         (r["type"], row["dtype"]), (r["redop"], row["redop"]),
                         (int(r["root"]), row["root"]), (r["actual_iterations"], row["iters"])):
                if a != b:
                    fail("%s %s: %r != %r" % (coll, key, a, b))
            if len(r["root"]) != 6:
                fail("root %r is not nccl-tests' %%6i cell" % r["root"])
            for a, b in ((obj["time"], row["time_us"]), (obj["alg_bw"], row["algbw_gbps"]),
                         (obj["bus_bw"], row["busbw_gbps"])):
                if not close(a, b):
                    fail("%s %s: %r != %r" % (coll, key, a, b))
                numbers += 1
            if (obj["nwrong"] is None) != (row["wrong"] is None):
                fail("%s %s: nwrong %r vs wrong %r" % (coll, key, obj["nwrong"], row["wrong"]))
            if obj["nwrong"] is not None and obj["nwrong"] != row["wrong"]:
                fail("%s %s: nwrong %r vs wrong %r" % (coll, key, obj["nwrong"], row["wrong"]))
            it = r.get(key + "_per_iter")
            if it is None:
                fail("%s: no %s_per_iter block with -I 1" % (coll, key))
            need(it, PER_ITER, key + "_per_iter")
            times = it["times_us"]
            if times != row["samples_us"]:
                fail("%s %s: times_us differ from samples_us" % (coll, key))
            if len(times) != ITERS - 1 or it["skipped_iterations"] != 1:
                fail("%s %s: %d times with -n %d -K 1" % (coll, key, len(times), ITERS))
            procs = it["per_process_max_times_us"]
            if len(procs) != NP or any(len(x) != len(times) for x in procs):
                fail("%s %s: per_process_max_times_us is not %d rows of %d"
                     % (coll, key, NP, len(times)))
            if not close(it["avg_us"], sum(times) / len(times), 1e-9):
                fail("%s %s: avg_us %r" % (coll, key, it["avg_us"]))
            if it["min_us"] != min(times) or it["max_us"] != max(times):
                fail("%s %s: min/max" % (coll, key))
            if not close(it["cv_pct"], statistics.pstdev(times) / it["avg_us"] * 100, 1e-6):
                fail("%s %s: cv_pct %r" % (coll, key, it["cv_pct"]))
            if not close(it["stdev_us"], statistics.pstdev(times), 1e-6):
                fail("%s %s: stdev_us %r" % (coll, key, it["stdev_us"]))
            for k in range(NP):  # each rank's mean over the kept iterations <= its row mean time
                if min(procs[k]) <= 0:
                    fail("%s %s: rank %d has a non-positive iteration time" % (coll, key, k))
            numbers += len(times)
    if len(seen) != 11:
        fail("collectives in results: %s" % sorted(seen))
    s = data["summary"]
    if data["out_of_bounds"]["count"] != s["wrong_total"] or data["out_of_bounds"]["okay"] != "true":
        fail("out_of_bounds %r vs wrong_total %r" % (data["out_of_bounds"], s["wrong_total"]))
    if not close(data["average_bus_bandwidth"]["bandwidth"], s["avg_busbw_gbps"]):
        fail("average_bus_bandwidth %r" % data["average_bus_bandwidth"])

    # The analyses of analyze_perf_json.py --all, on both placements.
    for key in ("out_of_place_per_iter", "in_place_per_iter"):
        out, nprocs = analyze(data, key)
        if nprocs != NP or out["stats"] != len(data["results"]) or out["straggler"] == 0 or \
                out["iter0"] == 0 or out["nodes"] == 0:
            fail("%s: analyses found nothing to analyze: %r" % (key, out))

    # What nccl-tests itself would have written (collie's keys removed) reads in collie report.
    plain = {k: v for k, v in data.items() if k not in COLLIE_KEYS}
    for r in plain["results"]:
        del r["collie"]
    ppath = jpath + ".nccl-tests.json"
    json.dump(plain, open(ppath, "w"))
    for f in (jpath, ppath):
        p = subprocess.run([collie, "report", "render", f, "--format", "csv"], capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            fail("collie report render %s exited %d: %s" % (f, p.returncode, p.stderr))
        lines = [x for x in p.stdout.splitlines() if x and not x.startswith("collective,")]
        if len(lines) != len(rows):
            fail("report render of %s gave %d rows, the run had %d" % (f, len(lines), len(rows)))
    print("ok: %d results, %d numbers round-tripped, analyses ran on both placements"
          % (len(data["results"]), numbers))


if __name__ == "__main__":
    main()
