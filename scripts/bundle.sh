#!/usr/bin/env bash
# Makes the relocatable bundle collie-<version>-linux-<arch>: a folder and a .tar.gz that run on
# any x86-64 Linux with glibc >= 2.36 and none of collie's dependencies installed (a cluster where
# you cannot install packages, the GPU check's device machine):
#   bin/collie                the command
#   libexec/                  what scripts/gpu_check.sh runs: the NCCL and CUDA device tests
#                             (nccl_backend_test, cuda_device_test) and raw_gloo_allreduce
#   lib/                      every shared library those need except glibc's own, found with ldd
#                             on this build host (libstdc++ and libgcc_s included)
#   scripts/                  gpu_check.sh, frozen_rank_job.sh, bench/overhead.sh,
#                             bench/torch_gloo_allreduce.py
#   BUNDLE.txt                version, commit, the glibc it needs, the files, what stays outside
# Executables get RUNPATH $ORIGIN/../lib, libraries $ORIGIN (patchelf), so the folder works
# wherever it is unpacked. libcudart and libnccl stay outside (libnccl alone is ~200 MiB): the
# NCCL backend loads them from the host at run time (docs/gpu.md) and says in one line when they
# are missing. The folder must stay under 64 MiB (the device machine's carry limit).
#   usage: scripts/bundle.sh [BUILD_DIR [OUT_DIR]]     (defaults: build, BUILD_DIR/bundle)
#   exit 0: made (the paths on the last two lines); 1: a check failed; 2: bad usage / not built
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$repo/build}")
out=$(realpath -m "${2:-$build/bundle}")
limit_mib=64
die() { echo "bundle.sh: $*" >&2; exit "${2:-1}"; }

[ -f "$build/CMakeCache.txt" ] || die "$build is not a build folder (run scripts/build.sh)" 2
[ -x "$build/src/cli/collie" ] || die "$build/src/cli/collie is not built (run scripts/build.sh)" 2
for tool in patchelf ldd readelf tar gzip; do
  command -v $tool >/dev/null || die "$tool is not installed (scripts/bootstrap.sh installs it)" 2
done
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || die "no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt" 2
name=collie-$version-linux-$(uname -m)
tree=$out/$name

# glibc's own libraries: present on every host the bundle targets, and never to be copied (a
# libc of another version than the host's ld.so breaks every program).
system_lib() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.*) return 0 ;;
  esac
  return 1
}
# Loaded from the host at run time (src/backends/nccl/dynload.h); the driver is the host's.
host_only_lib() {
  case "$1" in libcudart.so.* | libnccl.so.* | libcuda.so.* | libnvidia-*) return 0 ;; esac
  return 1
}

rm -rf "$tree" "$out/$name.tar.gz"
mkdir -p "$tree/bin" "$tree/libexec" "$tree/lib" "$tree/scripts/bench"
cp "$build/src/cli/collie" "$tree/bin/"
for t in tests/backends/nccl/nccl_backend_test tests/backends/nccl/cuda_device_test \
  scripts/bench/raw_gloo_allreduce; do
  if [ -x "$build/$t" ]; then
    cp "$build/$t" "$tree/libexec/"
  else
    echo "bundle.sh: $t is not built; the bundle has no $(basename "$t")" >&2
  fi
done
cp "$repo/scripts/gpu_check.sh" "$repo/scripts/frozen_rank_job.sh" "$tree/scripts/"
cp "$repo/scripts/bench/overhead.sh" "$repo/scripts/bench/torch_gloo_allreduce.py" \
  "$tree/scripts/bench/"

# Every shared library the executables load, transitively (ldd resolves the whole tree). A glob
# that matches nothing (no test program was built, so libexec/ is empty) is no file at all.
shopt -s nullglob
executables=("$tree"/bin/* "$tree"/libexec/*)
declare -A copied=()
for exe in "${executables[@]}"; do
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    system_lib "$soname" && continue
    host_only_lib "$soname" && die "$exe needs $soname at load time; it must be loaded at run time"
    [ -f "$path" ] || die "$exe: $soname was not found on this host ($path)"
    [ -n "${copied[$soname]:-}" ] && continue
    cp -L "$path" "$tree/lib/$soname"
    chmod u+w "$tree/lib/$soname"
    copied[$soname]=$path
  done < <(ldd "$exe")
done
for exe in "${executables[@]}"; do patchelf --set-rpath '$ORIGIN/../lib' "$exe"; done
for lib in "$tree"/lib/*; do patchelf --set-rpath '$ORIGIN' "$lib"; done

# Checks: every library resolves inside the tree (nothing from the build host), none of the
# host-only ones is needed, and the newest glibc symbol version used is at most 2.36.
for f in "${executables[@]}" "$tree"/lib/*; do
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    system_lib "$soname" && continue
    case "$(realpath -m "$path")" in
      "$tree"/lib/*) ;;
      *) die "$(basename "$f") resolves $soname to $path, outside the bundle" ;;
    esac
  done < <(env -u LD_LIBRARY_PATH ldd "$f")
done
glibc=$(for f in "${executables[@]}" "$tree"/lib/*; do readelf -V --wide "$f"; done |
  grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2,2n -u | tail -1)
glibc=${glibc#GLIBC_}
if [ "$(printf '%s\n2.36\n' "$glibc" | sort -V | tail -1)" != 2.36 ]; then
  die "the bundle needs glibc $glibc, newer than the 2.36 it promises (build on Debian 12)"
fi

commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "collie $version (commit $commit), linux $(uname -m), made $(date -u +%FT%TZ)"
  echo "needs: glibc >= $glibc (x86-64 Linux); nothing else for gloo"
  echo "outside (loaded from the host at run time, --backend nccl only):" \
    "libcudart.so.13 and libnccl.so.2 via LD_LIBRARY_PATH, CUDA_HOME or NCCL_HOME; the NVIDIA driver"
  echo "mpi: lib/ has Debian 12's Open MPI 4.1 libraries; --backend mpi needs that Open MPI's" \
    "mpirun and plugins on the host (or build collie against your site's MPI)"
  echo
  (cd "$tree" && find . -type f ! -name BUNDLE.txt | sort | while read -r f; do
    printf '%10d  %s\n' "$(stat -c %s "$f")" "${f#./}"
  done)
} >"$tree/BUNDLE.txt"

bytes=$(du -sb "$tree" | cut -f1)
[ "$bytes" -lt $((limit_mib * 1024 * 1024)) ] ||
  die "$tree is $((bytes / 1024 / 1024)) MiB, over the $limit_mib MiB limit"
tar -C "$out" --sort=name --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz" "$name"
echo "bundle.sh: $(ls "$tree/lib" | wc -l) libraries; folder $((bytes / 1024 / 1024)) MiB," \
  "tarball $(($(stat -c %s "$out/$name.tar.gz") / 1024 / 1024)) MiB; needs glibc >= $glibc"
echo "$tree"
echo "$out/$name.tar.gz"
