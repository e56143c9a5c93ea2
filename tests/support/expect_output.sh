#!/usr/bin/env bash
# expect_output.sh STATUS REGEX COMMAND...: runs COMMAND with its output on this script's stdout,
# then passes only when its exit status is STATUS (a number, or "nonzero") AND its whole output
# (stdout and stderr, newlines included: `.*` spans lines) matches the extended REGEX.
# For ctest tests that check output: PASS_REGULAR_EXPRESSION alone ignores the exit status, so a
# command that printed the right lines and then failed would pass.
set -u -o pipefail
want=${1:?STATUS}
regex=${2:?REGEX}
shift 2
[ $# -gt 0 ] || { echo "expect_output.sh: no command" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
status_ok=""
case $want in
  nonzero) [ "$rc" != 0 ] && status_ok=1 ;;
  *) [ "$rc" = "$want" ] && status_ok=1 ;;
esac
if [ -z "$status_ok" ]; then
  echo "FAIL: exit status $rc, expected $want: $*"
  exit 1
fi
if ! grep -Ezq -- "$regex" "$out"; then
  echo "FAIL: the output does not match /$regex/: $*"
  exit 1
fi
echo "PASS: exit status $rc and the output matches /$regex/"
