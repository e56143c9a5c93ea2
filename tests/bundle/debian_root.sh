#!/usr/bin/env bash
# Prints the path of a bare Debian root (debootstrap --variant=minbase, no -dev packages) made
# once and kept in a cache, so the bundle test costs a download only the first time:
#   ${COLLIE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/collie}/debian-<suite>-minbase
# The root is never written to by the tests (they mount it read-only); delete the folder, or set
# COLLIE_DEBIAN_ROOT_REFRESH=1, to make it again. The mirror is the first Debian one this host's
# apt uses (/etc/apt/sources.list*), else deb.debian.org; COLLIE_DEBIAN_MIRROR overrides it.
# Suite: bookworm (glibc 2.36, the oldest the bundle supports); COLLIE_DEBIAN_SUITE overrides it.
#   usage: debian_root.sh        exit 0 (path on stdout), 77 when it cannot be made here (not
#                                root, no debootstrap, mirror unreachable: the reason on stderr),
#                                1 when debootstrap failed
set -uo pipefail
suite=${COLLIE_DEBIAN_SUITE:-bookworm}
cache=${COLLIE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/collie}
root=$cache/debian-$suite-minbase
stamp=$root/.collie-debian-root

[ "$(id -u)" -eq 0 ] || { echo "debian_root: needs root (debootstrap, chroot)" >&2; exit 77; }
command -v debootstrap >/dev/null ||
  { echo "debian_root: debootstrap is not installed (scripts/bootstrap.sh installs it)" >&2; exit 77; }

mirror() {
  if [ -n "${COLLIE_DEBIAN_MIRROR:-}" ]; then echo "$COLLIE_DEBIAN_MIRROR"; return; fi
  local m
  # deb822 files (URIs: ...) and one-line files (deb URL suite ...); the first Debian archive.
  m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk '/^URIs:/ {print $2}' | grep -v -- '-security' | grep -m1 '/debian/\?$')
  [ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" {print $2}' | grep -v -- '-security' | grep -m1 '/debian/\?$')
  echo "${m:-http://deb.debian.org/debian}"
}

mkdir -p "$cache"
exec 9>"$cache/.debian-$suite.lock"
flock 9  # one maker at a time; the others wait and reuse its root
if [ "${COLLIE_DEBIAN_ROOT_REFRESH:-0}" = 1 ]; then
  rm -rf "$root"
fi
if [ -f "$stamp" ]; then
  echo "$root"
  exit 0
fi

url=$(mirror)
if ! curl -fsS --max-time 20 -o /dev/null "$url/dists/$suite/Release" 2>/dev/null; then
  echo "debian_root: the Debian mirror $url cannot be reached from here and no cached root is" \
       "at $root" >&2
  exit 77
fi
tmp=$root.tmp.$$
rm -rf "$tmp" "$root"
start=$(date +%s)
echo "debian_root: debootstrap --variant=minbase $suite from $url (once; cached in $root)" >&2
if ! debootstrap --variant=minbase "$suite" "$tmp" "$url" >"$cache/debootstrap-$suite.log" 2>&1; then
  echo "debian_root: debootstrap failed; last lines of $cache/debootstrap-$suite.log:" >&2
  tail -5 "$cache/debootstrap-$suite.log" >&2
  rm -rf "$tmp"
  exit 1
fi
rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*_Packages 2>/dev/null
echo "suite=$suite variant=minbase mirror=$url made=$(date -u +%FT%TZ) took=$(( $(date +%s) - start ))s" \
  >"$tmp/.collie-debian-root"
mv "$tmp" "$root"
echo "debian_root: made in $(( $(date +%s) - start )) s" >&2
echo "$root"
