#!/usr/bin/env python3
"""Reads `collie perf` stdout the way public nccl-tests parsers read nccl-tests stdout, and checks
that every number round-trips against the -J file of the same run.

The reader is written from nccl-tests' documented table (src/util.cu): '#' lines are comments,
"# Collective test starting: <name>_perf" opens a table, a data line splits on whitespace into
size, count, type, redop, root and then per placement (out-of-place, in-place) time, algbw,
busbw and #wrong; parsers apply float() to time/algbw/busbw of both placements and read the
"# Avg bus bandwidth    : X " line. Only #wrong may be N/A (in-place alltoall(v) and sendrecv).
The alltoallv tables (collie's generated traffic with NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY, and
nccl-tests' matrix-file mode) must read the same way, summary lines included.

usage: nccl_tests_text_reader.py COLLIE_BIN WORKDIR
"""
import json
import os
import re
import subprocess
import sys

COLLECTIVES = ["all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "alltoall",
               "alltoallv", "gather", "scatter", "sendrecv", "barrier"]
UNCHECKED_IN_PLACE = {"alltoall", "alltoallv", "sendrecv"}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def tolerance(cell):
    """Half a unit of the last digit printed in `cell` (fixed or exponent notation)."""
    m = re.fullmatch(r"-?\d+(?:\.(\d+))?(?:e([+-]\d+))?", cell)
    if not m:
        fail("not a number as nccl-tests prints one: %r" % cell)
    decimals = len(m.group(1) or "")
    exp = int(m.group(2) or 0)
    return 0.5 * 10 ** (exp - decimals)


def parse_table(text, per_iter=False):
    """nccl-tests parsers' view of the output: {collective: {"lines": [...], "avg_busbw": x}}.
    With -I (per_iter) every placement has four more cells: i_min, i_max, i_p99, i_cv%."""
    width = 21 if per_iter else 13
    stride = 8 if per_iter else 4
    tables, current = {}, None
    for line in text.splitlines():
        if line.startswith("#"):
            m = re.match(r"# Collective test starting: (\w+)_perf$", line)
            if m:
                current = m.group(1)
                tables[current] = {"lines": [], "avg_busbw": None, "raw": []}
            m = re.match(r"# Avg bus bandwidth\s*: (\S+) $", line)
            if m and current:
                tables[current]["avg_busbw"] = float(m.group(1))
            continue
        if not line.strip():
            continue
        cells = line.split()
        if len(cells) != width:
            fail("data line has %d cells, not %d: %r" % (len(cells), width, line))
        parsed = {"size": int(cells[0]), "count": int(cells[1]), "type": cells[2],
                  "redop": cells[3], "root": int(cells[4]), "cells": cells}
        for name, at in (("out", 5), ("in", 5 + stride)):
            # float() exactly as the public parsers do: an N/A here is what broke them.
            try:
                parsed[name] = {"time": float(cells[at]), "algbw": float(cells[at + 1]),
                                "busbw": float(cells[at + 2]),
                                "wrong": None if cells[at + 3] == "N/A" else float(cells[at + 3])}
                if per_iter:
                    parsed[name]["iter"] = [float(c) for c in cells[at + 4:at + 8]]
            except ValueError as e:
                fail("%s: %s in %r" % (current, e, line))
        tables[current]["lines"].append(parsed)
    return tables


def check_per_iter(collie, work):
    """-I: nccl-tests' i_min / i_max / i_p99 / i_cv% cells against the -J per-iteration stats."""
    jpath = os.path.join(work, "text_reader_iter.json")
    if os.path.exists(jpath):
        os.remove(jpath)
    cmd = [collie, "perf", "all_reduce", "alltoall", "sendrecv", "barrier", "-np", "2", "-b",
           "1K", "-e", "4K", "-f", "4", "-n", "5", "-w", "1", "-I", "1", "-T", "60", "-J", jpath]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("collie perf -I 1 exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    if "# Per-Iteration Report: " not in p.stdout:
        fail("no per-iteration header line with -I")
    tables = parse_table(p.stdout, per_iter=True)
    rows = {}
    for r in json.load(open(jpath))["rows"]:
        rows[(r["collective"], r["size_bytes"], r["placement"])] = r
    n = 0
    for coll, t in tables.items():
        for line in t["lines"]:
            for place, at in (("out", 5), ("in", 13)):
                st = rows[(coll, line["size"], place)]["iter_stats"]
                for off, want in enumerate((st["min_us"], st["max_us"], st["p99_us"],
                                            st["cv"] * 100)):
                    cell = line["cells"][at + 4 + off]
                    if abs(float(cell) - want) > tolerance(cell) * (1 + 1e-9):
                        fail("%s %s -I cell %s vs -J %r" % (coll, place, cell, want))
                    n += 1
    if len(tables) != 4 or n == 0:
        fail("-I tables: %s" % sorted(tables))
    return n


def rows_by_key(jpath):
    """The -J file's rows by (collective, size, dtype, redop, root, placement)."""
    rows = {}
    for r in json.load(open(jpath))["rows"]:
        rows[(r["collective"], r["size_bytes"], r["dtype"], r["redop"], r["root"],
              r["placement"])] = r
    return rows


def round_trip(table, rows, coll):
    """Every cell of one collective's table against the -J rows: (numbers checked, the busbw of
    every cell)."""
    checked, busbws = 0, []
    for line in table["lines"]:
        for place, at in (("out", 5), ("in", 9)):
            key = (coll, line["size"], line["type"], line["redop"], line["root"], place)
            if key not in rows:
                fail("%s: no -J row for %s" % (coll, key))
            row = rows[key]
            got = line[place]
            if line["count"] != row["count"]:
                fail("%s: count %d vs -J %d" % (coll, line["count"], row["count"]))
            for name, field, off in (("time", "time_us", 0), ("algbw", "algbw_gbps", 1),
                                     ("busbw", "busbw_gbps", 2)):
                cell = line["cells"][at + off]
                if abs(got[name] - row[field]) > tolerance(cell) * (1 + 1e-9):
                    fail("%s %s %s: table %s vs -J %r" % (coll, place, name, cell, row[field]))
                checked += 1
            want_na = coll == "barrier" or (place == "in" and coll in UNCHECKED_IN_PLACE)
            if want_na != (got["wrong"] is None):
                fail("%s %s: #wrong is %r" % (coll, place, line["cells"][at + 3]))
            if got["wrong"] is not None and got["wrong"] != row["wrong"]:
                fail("%s %s: #wrong %r vs -J %r" % (coll, place, got["wrong"], row["wrong"]))
            if got["time"] <= 0:
                fail("%s %s: time %r is not a measurement" % (coll, place, got["time"]))
            busbws.append(row["busbw_gbps"])
    return checked, busbws


def check_alltoallv(collie, work):
    """alltoallv as nccl-tests' parsers read it: collie's seeded traffic with the per-rank
    summary lines between rows, and nccl-tests' matrix-file mode (count 0, the size of the
    busiest rank). Returns the numbers round-tripped."""
    n = 0
    matrix = os.path.join(work, "alltoallv_matrix.txt")
    with open(matrix, "w") as f:
        f.write("0 4096 160\n1024 0 0\n48 16 65536\n")
    runs = [
        (["--traffic", "zipf:1.1", "--traffic-seed", "5", "-b", "1K", "-e", "64K", "-f", "4"],
         {"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY": "1"}),
        ([], {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix}),
    ]
    for i, (flags, env) in enumerate(runs):
        jpath = os.path.join(work, "alltoallv_%d.json" % i)
        if os.path.exists(jpath):
            os.remove(jpath)
        cmd = [collie, "perf", "alltoallv", "-np", "3", "-n", "3", "-w", "1", "-T", "60",
               "-J", jpath] + flags
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, **env))
        if p.returncode != 0:
            fail("%s exited %d: %s" % (cmd, p.returncode, p.stderr[-2000:]))
        tables = parse_table(p.stdout)
        if list(tables) != ["alltoallv"] or not tables["alltoallv"]["lines"]:
            fail("alltoallv tables: %s" % p.stdout)
        lines = tables["alltoallv"]["lines"]
        n += round_trip(tables["alltoallv"], rows_by_key(jpath), "alltoallv")[0]
        if "--traffic" in flags:
            if len(lines) != 4:
                fail("1K..64K by 4 gave %d rows" % len(lines))
            # Summary blocks precede each row: a header and one line per rank, per placement.
            if p.stdout.count("# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=collie") != 8 or \
                    p.stdout.count("#   rank=2 send_bytes=") != 8:
                fail("summary lines: %s" % p.stdout)
            if "repeat with --traffic zipf:1.1 --traffic-seed 5" not in p.stdout:
                fail("no repeatable traffic line: %s" % p.stdout)
        else:
            # Matrix mode: one row; count 0; the size is the busiest rank's bytes: rank 2
            # receives 160 + 0 + 65536 = 65696.
            if len(lines) != 1 or lines[0]["count"] != 0 or lines[0]["size"] != 65696:
                fail("matrix mode rows: %r" % [(l["size"], l["count"]) for l in lines])
            if lines[0]["out"]["wrong"] != 0:
                fail("matrix mode #wrong: %r" % lines[0]["out"]["wrong"])
    return n


def main():
    collie, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    jpath = os.path.join(work, "text_reader.json")
    if os.path.exists(jpath):
        os.remove(jpath)
    cmd = [collie, "perf", "all", "-np", "2", "-b", "1K", "-e", "16K", "-f", "4", "-n", "3",
           "-w", "1", "-T", "60", "-J", jpath]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("collie perf exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    tables = parse_table(p.stdout)
    if sorted(tables) != sorted(COLLECTIVES):
        fail("tables found: %s" % sorted(tables))
    rows = rows_by_key(jpath)
    checked = 0
    for coll, t in tables.items():
        if not t["lines"]:
            fail("%s: no data lines" % coll)
        if t["avg_busbw"] is None:
            fail("%s: no '# Avg bus bandwidth    : X ' line" % coll)
        n, busbws = round_trip(t, rows, coll)
        checked += n
        # The table's average is nccl-tests' mean busbw over every cell of the table.
        mean = sum(busbws) / len(busbws)
        if abs(mean - t["avg_busbw"]) > max(1e-6, abs(mean) * 1e-5):
            fail("%s: Avg bus bandwidth %r vs mean of the rows %r" % (coll, t["avg_busbw"], mean))
    checked += check_per_iter(collie, work)
    checked += check_alltoallv(collie, work)
    print("ok: %d collectives, %d numbers round-tripped" % (len(tables), checked))


if __name__ == "__main__":
    main()
