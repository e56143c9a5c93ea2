#!/usr/bin/env python3
"""Every folder README names the files it has.

For each folder of the repository that holds a README.md (but the root and docs/, which are
indexes of pages, not of code), each source or script file directly in that folder must be
named in the README:
  - by its name (`dtype.h`, `src/core/dtype.h`), or
  - as one module, by its header or implementation (naming `x.h` names `x.cpp` and the reverse),
    by `x.{h,cpp}`, or by the module's name alone in backquotes (`tcp_store`), or
  - by a glob the README states in backquotes (`cmd_*.cpp`, `fuzz_*.cpp`, `collectives/<name>.cpp`
    does not count: only `*`, `?` and `{a,b}` are globs).
Subfolders are the business of their own README (or of none).

Usage: folder_readmes.py REPO_ROOT
Prints one line per file a README does not name and exits 1; exits 0 when every README is true.
"""
import fnmatch
import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".sh", ".py")
SKIP_DIRS = {".git", "Testing", "third_party-local", "out"}
MODULE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".c", ".cu")


def brace_expand(pattern):
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out = []
    for alt in m.group(1).split(","):
        out.extend(brace_expand(pattern[: m.start()] + alt + pattern[m.end():]))
    return out


def readme_names(text):
    """The file names, module names and globs a README states (each reduced to its last path
    component)."""
    names = set()
    stems = set()
    globs = []
    for span in re.findall(r"`([^`\n]+)`", text):
        for word in re.split(r"[\s,;()]+", span):
            if not word:
                continue
            for expanded in brace_expand(word):
                base = expanded.rstrip(".:").split("/")[-1]
                if any(c in base for c in "*?"):
                    globs.append(base)
                elif "." in base:
                    names.add(base)
                elif base and not expanded.startswith("/"):  # not a URL path like /metrics
                    stems.add(base)
    # Names written without backquotes count too.
    for word in re.findall(r"[\w./{},-]+\.[A-Za-z]+", text):
        for expanded in brace_expand(word):
            names.add(expanded.rstrip(".").split("/")[-1])
    return names, stems, globs


def module_stem(name):
    stem, ext = os.path.splitext(name)
    return stem if ext in MODULE_SUFFIXES else None


def is_named(name, names, stems, globs):
    if name in names:
        return True
    stem = module_stem(name)
    if stem is not None and (stem in stems or any(module_stem(n) == stem for n in names)):
        return True
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def check(root):
    problems = []
    folders = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith(".")
                             and not (rel == "." and d.startswith("build")))
        if rel in (".", "docs") or "README.md" not in filenames:
            continue
        folders += 1
        with open(os.path.join(dirpath, "README.md"), encoding="utf-8") as f:
            names, stems, globs = readme_names(f.read())
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES) and not is_named(name, names, stems, globs):
                problems.append(f"{rel}/README.md does not name {name}")
    return folders, problems


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: folder_readmes.py REPO_ROOT", file=sys.stderr)
        return 2
    folders, problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if folders == 0:
        print(f"no folder README found under {sys.argv[1]}", file=sys.stderr)
        return 1
    print(f"{folders} folder READMEs checked, {len(problems)} files not named")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
