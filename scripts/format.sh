#!/usr/bin/env bash
# clang-format over every C++ file git tracks or would add (untracked files that .gitignore does
# not exclude count too, so a new file is checked before its first commit; .clang-format at the
# root: Google style, 100 columns).
#   scripts/format.sh          rewrite the files in place
#   scripts/format.sh --check  change nothing; list the files that differ and exit 1 if any do
# The test command runs --check, so a change that is not formatted fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=${CLANG_FORMAT:-clang-format}
command -v "$fmt" >/dev/null || { echo "format.sh: $fmt not found (bootstrap installs clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' | sort -u |
  while read -r f; do [ -f "$f" ] && echo "$f"; done)
if [ "${1:-}" = --check ]; then
  # One clang-format run over all files; each difference is a "<file>:<line>:<col>: ..." line.
  out=$("$fmt" --dry-run "${files[@]}" 2>&1) || {
    echo "format.sh: $fmt failed: $(printf '%s\n' "$out" | tail -1)" >&2
    exit 2
  }
  mapfile -t bad < <(printf '%s\n' "$out" | grep -E '^[^ :]+:[0-9]+:[0-9]+: ' | cut -d: -f1 | sort -u)
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format.sh: ${#bad[@]} of ${#files[@]} files are not clang-formatted ($("$fmt" --version)):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "format.sh: run scripts/format.sh to fix them" >&2
    exit 1
  fi
  echo "format.sh: all ${#files[@]} files formatted"
elif [ $# -eq 0 ]; then
  "$fmt" -i "${files[@]}"
else
  echo "usage: scripts/format.sh [--check]" >&2
  exit 2
fi
