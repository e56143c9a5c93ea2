#!/usr/bin/env python3
"""Runs the commands the user docs show, as a user would paste them on one machine.

A fenced block whose info string is `sh docs-test` or `bash docs-test` (GitHub and other
renderers read only the first word, so readers see an ordinary shell block) is run with bash in
a fresh temporary folder, the collie under test first on PATH and no COLLIE_STORE_SECRET
exported. Every command of the block must exit 0, unless the block says which fail:
`docs-test fails=3,1` means exactly two commands fail, the first with status 3 and the next
with 1 (a verdict or a timeout the page shows on purpose). `timeout=N` (seconds, default 120)
bounds the block. Statuses alone cannot tell a right answer from a wrong one, so every block
also says what its output must show: each line `#> TEXT` in it (a comment to bash, shown to
readers as the output to look for) must equal a line of the block's output (stdout and stderr,
surrounding spaces ignored; TEXT ending in `...` matches a line that starts with the rest), in
the order the `#>` lines come. A block that runs longer, fails otherwise, misses an expected line
or has none, or a page named on the command line with no block at all, makes the test fail,
naming the page and line.

usage: doc_commands_test.py COLLIE_BINARY SOURCE_DIR PAGE.md [PAGE.md ...]
"""
import os
import re
import signal
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(?:sh|bash)\s+docs-test\b(?P<opts>.*)$")


def blocks(path):
    """(line number, options, script) of every marked block of the page."""
    out, cur, start, opts = [], None, 0, ""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if cur is None:
                m = FENCE.match(line)
                if m:
                    cur, start, opts = [], n, m.group("opts")
            elif line.startswith("```"):
                out.append((start, opts, "\n".join(cur) + "\n"))
                cur = None
            else:
                cur.append(line)
    if cur is not None:
        raise SystemExit(f"{path}:{start}: docs-test block never closed")
    return out


def parse_opts(where, opts):
    fails, timeout = [], 120
    for word in opts.split():
        key, _, value = word.partition("=")
        if key == "fails" and value:
            fails = [int(v) for v in value.split(",")]
        elif key == "timeout" and value:
            timeout = int(value)
        else:
            raise SystemExit(f"{where}: unknown docs-test option '{word}'")
    return fails, timeout


def expected_lines(script):
    """The `#> TEXT` lines of a block, in order."""
    return [line.strip()[2:].strip() for line in script.splitlines()
            if line.strip().startswith("#>")]


def missing_output(expected, output):
    """The first expected line the output does not show (in order), or None."""
    lines = iter(line.strip() for line in output.splitlines())
    for want in expected:
        prefix = want[:-3] if want.endswith("...") else None
        if not any((line.startswith(prefix) if prefix is not None else line == want)
                   for line in lines):
            return want
    return None


def run(where, opts, script, env):
    fails_expected, timeout = parse_opts(where, opts)
    expected = expected_lines(script)
    if not expected:
        return f"{where}: no '#> TEXT' line: the block checks exit statuses only"
    with tempfile.TemporaryDirectory(prefix="collie_docs_") as tmp:
        record = os.path.join(tmp, ".docs-test-fails")
        # Each failing command (status, text) is recorded; the block goes on, as a user's
        # shell would, so the statuses after it are checked too.
        prologue = (
            "set -E -o pipefail\n"
            f"trap 'echo \"$? $BASH_COMMAND\" >> {record}' ERR\n"
        )
        p = subprocess.Popen(["bash", "-c", prologue + script], cwd=tmp, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        try:
            output, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            output, _ = p.communicate()
            return f"{where}: still running after {timeout} s\n{output}"
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # whatever the block left in the background
            except ProcessLookupError:
                pass
        failed = []
        if os.path.exists(record):
            with open(record, encoding="utf-8") as f:
                failed = [line.rstrip("\n").split(" ", 1) for line in f if line.strip()]
        got = [int(s) for s, _ in failed]
        if got != fails_expected:
            said = "; ".join(f"'{c}' exited {s}" for s, c in failed) or "every command exited 0"
            want = ", ".join(map(str, fails_expected)) or "none"
            return (f"{where}: expected failing statuses [{want}], but {said}\n"
                    f"--- block ---\n{script}--- output ---\n{output}")
        missing = missing_output(expected, output)
        if missing is not None:
            return (f"{where}: no output line '{missing}' (in the order the #> lines give)\n"
                    f"--- block ---\n{script}--- output ---\n{output}")
    return None


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    collie, source, pages = sys.argv[1], sys.argv[2], sys.argv[3:]
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(collie)) + os.pathsep + env.get("PATH", "")
    env.pop("COLLIE_STORE_SECRET", None)
    errors, ran = [], 0
    for page in pages:
        path = os.path.join(source, page)
        found = blocks(path)
        if not found:
            errors.append(f"{page}: no docs-test block (the page's commands are not checked)")
        for line, opts, script in found:
            where = f"{page}:{line}"
            print(f"running {where}", flush=True)
            err = run(where, opts, script, env)
            ran += 1
            if err:
                errors.append(err)
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{ran} blocks from {len(pages)} pages, {len(errors)} failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
