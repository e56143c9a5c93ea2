#!/usr/bin/env bash
# The relocatable bundle on a host with none of collie's dependencies: scripts/bundle.sh makes it
# from the build; its tarball is unpacked in a bare Debian root (debian_root.sh: debootstrap
# minbase, no -dev packages, cached) entered with chroot in fresh mount, PID and network
# namespaces (only loopback), the root itself mounted read-only. There:
#   - collie info prints the backend table, and says nccl cannot run: libcudart is not there;
#   - collie perf -np 2 (gloo) validates every size;
#   - collie perf --backend nccl is refused in one line naming libcudart and LD_LIBRARY_PATH (or,
#     from a build without CUDA, saying nccl is not in this build);
#   - a hang (rank 1 of 3 frozen by scripts/frozen_rank_job.sh) leaves the other ranks'
#     flight-recorder dumps, and collie analyze on them names rank 1.
#   usage: bundle_test.sh SOURCE_DIR BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip outside CI (not root; no cached root and the mirror cannot be
# reached); under CI=true those are failures (tests/support/skip.sh).
set -u
src=${1:?source dir}
build=${2:?build dir}
work=$(mktemp -d /tmp/collie_bundle.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/out/*; do [ -f "$f" ] && { echo "----- $(basename "$f")"; head -40 "$f"; }; done
  exit 1
}

start=$(date +%s)
root=$(bash "$src/tests/bundle/debian_root.sh")
rc=$?
source "$src/tests/support/skip.sh"
[ $rc -eq 77 ] && skip "no bare Debian root here (reason above)"
[ $rc -eq 0 ] || fail "debian_root.sh failed ($rc)"
root_s=$(($(date +%s) - start))
echo "debian root: $root ($(cut -d' ' -f1-4 "$root/.collie-debian-root"); ready in ${root_s} s)"

# The root is bare: none of collie's libraries, no development package.
for lib in libgloo libfmt libyaml-cpp libmpi libdw libprometheus-cpp libcpp-httplib libcudart; do
  ls "$root"/usr/lib/x86_64-linux-gnu/$lib.so* >/dev/null 2>&1 && fail "the root has $lib"
done
# The package list first, checked: a dpkg-query that fails or lists nothing must not read as
# "no -dev package".
pkgs=$(chroot "$root" dpkg-query -W -f='${Package}\n') || fail "dpkg-query failed in the root"
[ "$(wc -l <<<"$pkgs")" -ge 20 ] || fail "dpkg-query listed too few packages: $pkgs"
dev=$(grep -- '-dev$' <<<"$pkgs")
[ -z "$dev" ] || fail "the root has -dev packages: $dev"

bundle_start=$(date +%s)
bash "$src/scripts/bundle.sh" "$build" "$work/bundle" >"$work/bundle.log" 2>&1 ||
  { cat "$work/bundle.log"; fail "scripts/bundle.sh failed"; }
tarball=$(tail -1 "$work/bundle.log")
name=$(basename "$tarball" .tar.gz)
echo "$(tail -3 "$work/bundle.log" | head -1) ($(($(date +%s) - bundle_start)) s)"

# What runs inside the root (as /tmp/run.sh): every output goes to /tmp/out.
cat >"$work/run.sh" <<'RUN'
set -u
B=/tmp/$1/bin/collie
mkdir -p /tmp/out /tmp/dumps
cd /tmp
"$B" info >out/info.txt 2>&1; echo $? >out/info.rc
"$B" perf -np 2 -b 8 -e 1M -f 32 -c 1 -T 60 >out/perf.txt 2>&1; echo $? >out/perf.rc
"$B" perf --backend nccl -np 1 -b 8 -e 8 >out/nccl.txt 2>out/nccl.err; echo $? >out/nccl.rc
COLLIE_FR_DUMP_DIR=/tmp/dumps timeout 60 bash /tmp/$1/scripts/frozen_rank_job.sh "$B" \
  -np 3 -T 3 -b 1K -e 1K -n 100 -w 1 -N 0 >out/hang.txt 2>&1; echo $? >out/hang.rc
ls /tmp/dumps >out/dumps.txt
"$B" analyze /tmp/dumps >out/analyze.txt 2>&1; echo $? >out/analyze.rc
RUN
run_start=$(date +%s)
unshare --mount --pid --net --fork bash -s "$root" "$tarball" "$work" "$name" <<'INNER'
set -eu
root=$1 tarball=$2 work=$3 name=$4
mnt=$work/mnt
mkdir -p "$mnt"
mount --bind "$root" "$mnt"
mount -o remount,bind,ro "$mnt"
mount -t tmpfs tmpfs "$mnt/tmp"
mount -t proc proc "$mnt/proc"
mount --rbind /dev "$mnt/dev"
ip link set lo up
tar -C "$mnt/tmp" -xzf "$tarball"
cp "$work/run.sh" "$mnt/tmp/run.sh"
chroot "$mnt" /bin/bash /tmp/run.sh "$name" || true
cp -r "$mnt/tmp/out" "$work/out"
INNER
[ -d "$work/out" ] || fail "nothing came back from the root"
out=$work/out
echo "in the root: $(($(date +%s) - run_start)) s"

[ "$(cat "$out/info.rc")" = 0 ] || fail "collie info exited $(cat "$out/info.rc")"
grep -Eq '^all_reduce +yes' "$out/info.txt" || fail "collie info printed no backend table"
# A build without CUDA (no toolkit on the build host) has no nccl backend to refuse.
if sed -n '/^Not built:/,$p' "$out/info.txt" | grep -Eq '^  nccl '; then
  nccl_line='backend .nccl. is not available in this build'
else
  nccl_line='libcudart\.so\.[0-9]+ could not be loaded.*LD_LIBRARY_PATH'
  grep -Eq '^  nccl +libcudart\.so\.[0-9]+ could not be loaded' "$out/info.txt" ||
    fail "collie info does not say that nccl cannot run without libcudart"
fi
echo "collie info: ok; $(grep -E '^  nccl +(libcudart|not built)' "$out/info.txt" | cut -c1-90)..."

[ "$(cat "$out/perf.rc")" = 0 ] || fail "collie perf -np 2 exited $(cat "$out/perf.rc")"
grep -q 'Out of bounds values : 0 OK' "$out/perf.txt" || fail "collie perf found wrong values"
echo "collie perf -np 2: $(grep -c '^ *[0-9]' "$out/perf.txt") sizes, $(grep 'Avg bus' "$out/perf.txt")"

[ "$(cat "$out/nccl.rc")" = 2 ] || fail "--backend nccl exited $(cat "$out/nccl.rc"), expected 2"
[ "$(wc -l <"$out/nccl.err")" = 1 ] || fail "--backend nccl: not one line on stderr"
grep -Eq "$nccl_line" "$out/nccl.err" || fail "--backend nccl does not say /$nccl_line/"
echo "--backend nccl: exit 2, $(cut -c1-100 "$out/nccl.err")..."

case "$(cat "$out/hang.rc")" in
  0) fail "the job with a frozen rank exited 0" ;;
  99) fail "rank 1 was never frozen" ;;
  124) fail "the job with a frozen rank did not end within 60 s" ;;
esac
grep -q 'collie_fr_rank_0.json' "$out/dumps.txt" && grep -q 'collie_fr_rank_2.json' "$out/dumps.txt" ||
  fail "no dump from ranks 0 and 2: $(cat "$out/dumps.txt")"
[ "$(cat "$out/analyze.rc")" = 1 ] ||
  fail "collie analyze exited $(cat "$out/analyze.rc"), expected 1 (a problem found)"
# Rank 1's missing dump is the evidence; under load another rank caught one op behind the
# frozen one may be named beside it ("Culprit ranks: 0, 1").
grep -q 'rank 1 left no flight-recorder dump' "$out/analyze.txt" &&
  grep -Eq '^Culprit ranks?: ([0-9]+, )*1(,|$)' "$out/analyze.txt" ||
  fail "collie analyze does not name rank 1"
echo "hang: dumps $(tr '\n' ' ' <"$out/dumps.txt"); analyze: $(grep 'Culprit' "$out/analyze.txt")"
echo "PASS in $(($(date +%s) - start)) s"
