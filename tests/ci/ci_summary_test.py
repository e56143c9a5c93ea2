#!/usr/bin/env python3
"""scripts/ci_summary.py on inputs written here: what a reader of CI's last lines sees."""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "ci_summary.py")

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite tests="4">
 <testcase name="a" status="run"/>
 <testcase name="b" status="run"/>
 <testcase name="c" status="fail"><failure message="x"/></testcase>
 <testcase name="d" status="run"><skipped/><system-out>SKIP: no CUDA device
</system-out></testcase>
</testsuite>
"""
PASSING = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite tests="1"><testcase name="a" status="run"/></testsuite>
"""

failures = []


def check(cond, what, out):
    if not cond:
        failures.append(f"{what}\n--- output ---\n{out}")


def run(args):
    p = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)
    check(p.returncode == 0, "ci_summary.py exits 0", p.stdout + p.stderr)
    return p.stdout


with tempfile.TemporaryDirectory() as d:
    junit = os.path.join(d, "suite.xml")
    ok = os.path.join(d, "asan.xml")
    fuzz = os.path.join(d, "results.txt")
    with open(junit, "w") as f:
        f.write(JUNIT)
    with open(ok, "w") as f:
        f.write(PASSING)
    with open(fuzz, "w") as f:
        f.write("fuzz_dump clean 87881\n"
                "fuzz_torch_dump FAIL UndefinedBehaviorSanitizer: undefined-behavior stl_vector.h\n")

    # A fuzz target crashed in the sanitize stage while every ctest test passed: the run that CI
    # once summarised as "ci: 1544 passed, 0 failed" with exit 1.
    out = run(["--stages", "build=4 sanitize=9", "--failed", " sanitize=1",
               "--fuzz", fuzz, f"asan={ok}", f"tsan={os.path.join(d, 'missing.xml')}"])
    lines = out.splitlines()
    check(len(lines) == 2, "two lines", out)
    check("asan: 1 tests, 1 passed, 0 failed, 0 skipped" in out, "asan counted", out)
    check("tsan: not run" in out, "a missing JUnit file is named", out)
    check("fuzz: 2 targets, 1 clean, 1 failed (fuzz_torch_dump: UndefinedBehaviorSanitizer: "
          "undefined-behavior stl_vector.h)" in out, "the fuzz target and its report", out)
    check(lines[-1] == "ci: 1 passed, 0 failed, 0 skipped; FAILED: stage sanitize (exit 1), "
          "fuzz target fuzz_torch_dump", "the closing line names what failed", out)
    check("time: build 4 s, sanitize 9 s" in out, "stage times", out)

    # Failed tests and skips with their reason; nothing failed outside ctest.
    out = run(["--stages", "suite=3", f"suite={junit}"])
    check("suite: 4 tests, 2 passed, 1 failed (c), 1 skipped (d: no CUDA device)" in out,
          "counts, the failed test and the skip reason", out)
    check(out.splitlines()[-1] == "ci: 2 passed, 1 failed, 1 skipped", "plain closing line", out)

    # A stage that stopped the run before any test (format): named, with no JUnit file at all.
    out = run(["--stages", "bootstrap=1 format=2", "--failed", "format=1",
               f"suite={os.path.join(d, 'none.xml')}"])
    check(out.splitlines()[-1] == "ci: 0 passed, 0 failed, 0 skipped; FAILED: stage format "
          "(exit 1)", "a failed stage without tests", out)

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("ci.summary: 3 scenarios as expected")
