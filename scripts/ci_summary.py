#!/usr/bin/env python3
"""One-line summary of a test.sh run, from the JUnit files ctest wrote (--output-junit).

  ci_summary.py --stages "bootstrap=3 format=2 ..." [--failed "sanitize=1 ..."]
                [--fuzz RESULTS] [--note TEXT] LABEL=JUNIT ...

Prints two lines: the summary (per JUnit file: tests, passed, failed, skipped with each skip's
reason and the tests that gave it; each fuzz target's result from scripts/fuzz.sh's RESULTS file;
the time of every stage), then the closing line "ci: N passed, N failed, N skipped" over all
files, followed by "; FAILED: ..." naming each stage that exited non-zero and each fuzz target
that failed, so a red run never reads as all passed. A JUnit file that does not exist (its stage
did not run) is named as such. Reasons come from the test's output: the shell tests'
"SKIP: reason" line, GoogleTest's "Skipped" message, or "disabled"/"not run" from ctest itself.
"""
import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET


def reason_of(case):
    out = "".join(e.text or "" for e in case.iter("system-out"))
    m = re.search(r"^SKIP: (.*)$", out, re.M)
    if m:
        return m.group(1).strip()
    m = re.search(r"^(?:.*: )?Skipped\s*\n(.+)$", out, re.M)  # GoogleTest: "file:line: Skipped\nwhy"
    if m:
        return m.group(1).strip()
    for e in case.iter("skipped"):
        if e.get("message"):
            return e.get("message")
    return case.get("status") or "no reason printed"


def read(path):
    cases = ET.parse(path).getroot().iter("testcase")
    passed, failed, skipped = 0, [], []
    for c in cases:
        status = c.get("status", "")
        if c.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped.append((c.get("name"), reason_of(c)))
        elif c.find("failure") is not None or c.find("error") is not None or status == "fail":
            failed.append(c.get("name"))
        else:
            passed += 1
    return passed, failed, skipped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", default="")
    ap.add_argument("--failed", default="")
    ap.add_argument("--fuzz", default="")
    ap.add_argument("--note", default="")
    ap.add_argument("runs", nargs="*")
    a = ap.parse_args()
    total = [0, 0, 0]
    parts = []
    for run in a.runs:
        label, _, path = run.partition("=")
        if not os.path.exists(path):
            parts.append(f"{label}: not run")
            continue
        try:
            passed, failed, skipped = read(path)
        except ET.ParseError as e:
            parts.append(f"{label}: unreadable JUnit ({e})")
            continue
        total[0] += passed
        total[1] += len(failed)
        total[2] += len(skipped)
        text = f"{label}: {passed + len(failed) + len(skipped)} tests, {passed} passed, "
        text += f"{len(failed)} failed"
        if failed:
            text += " (" + ", ".join(failed[:5]) + (", ..." if len(failed) > 5 else "") + ")"
        text += f", {len(skipped)} skipped"
        if skipped:
            by_reason = {}
            for name, why in skipped:
                by_reason.setdefault(why, []).append(name.split("  #")[0])
            text += " (" + "; ".join(
                f"{names[0]}{f' and {len(names) - 1} more' if len(names) > 1 else ''}: {why}"
                for why, names in by_reason.items()) + ")"
        parts.append(text)
    fuzz_failed = []
    if a.fuzz and os.path.exists(a.fuzz):
        clean, lines = [], []
        with open(a.fuzz, encoding="utf-8", errors="replace") as f:
            lines = [line.split(" ", 2) for line in f.read().splitlines() if line.strip()]
        for fields in lines:
            if len(fields) >= 2 and fields[1] == "clean":
                clean.append(fields[0])
            else:
                fuzz_failed.append(f"{fields[0]}: {fields[2] if len(fields) > 2 else 'failed'}")
        text = f"fuzz: {len(lines)} targets, {len(clean)} clean, {len(fuzz_failed)} failed"
        if fuzz_failed:
            text += " (" + "; ".join(fuzz_failed) + ")"
        parts.append(text)
    stages = ", ".join(f"{k} {v} s" for k, v in (s.split("=") for s in a.stages.split() if "=" in s))
    line = "test.sh summary: " + "; ".join(parts)
    if a.note:
        line += "; " + a.note
    line += f"; time: {stages}"
    print(line)
    closing = f"ci: {total[0]} passed, {total[1]} failed, {total[2]} skipped"
    failed = [f"stage {k} (exit {v})" for k, v in (s.split("=") for s in a.failed.split() if "=" in s)]
    failed += [f"fuzz target {t.split(':')[0]}" for t in fuzz_failed]
    if failed:
        closing += "; FAILED: " + ", ".join(failed)
    print(closing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
