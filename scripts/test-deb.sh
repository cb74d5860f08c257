#!/usr/bin/env bash
# Builds the Debian packages (cpack -G DEB, cmake/package.cmake) and uses them
# in a clean Debian root, as a user of the packages would:
#   1. a Release build with prefix /usr, shared and static libraries, and
#      `cpack -G DEB` in it: libtapegrad0, libtapegrad-dev,
#      libtapegrad-dist0, libtapegrad-dist-dev, tapegrad;
#   2. an amd64 Debian root made by debootstrap with only a compiler, make,
#      cmake and pkg-config (scripts/debian-root.sh), kept in
#      $TAPEGRAD_AMD64_ROOT (default /var/cache/tapegrad/amd64-<suite>) and
#      made again when missing; each
#      run works in a throwaway overlay of it, so the root stays clean;
#   3. in that overlay, apt installs libtapegrad-dev alone (its Depends come
#      from the archive; the .deb files downloaded are kept in
#      $TAPEGRAD_APT_CACHE, default /var/cache/tapegrad/apt-amd64) and no
#      MPI may come with it; then examples/quickstart.c is built with
#      pkg-config (shared, and static against libtapegrad.a) and the C and
#      C++-only CMake projects of tests/install with find_package(tapegrad),
#      and each runs; then apt
#      installs tapegrad and libtapegrad-dist-dev: seqtask trains a few steps
#      and a find_package(tapegrad COMPONENTS dist) program runs.
# Needs root (or sudo) for debootstrap, mount and chroot; the first run needs
# the network (debootstrap, apt).
# Any failure prints what failed: the output of the command (apt, cmake, a
# program) and the script line or the command in the root that stopped it.
# Runs that share the root or the apt cache wait for each other (flock).
# Usage: scripts/test-deb.sh [build-dir]   (default build/deb)
set -eEuo pipefail
on_err() {
  local rc=$? cmd where=${BASH_LINENO[0]} i
  cmd=$(head -1 <<<"$BASH_COMMAND")
  for ((i = 1; i < ${#FUNCNAME[@]} - 1; i++)); do where+=" in ${FUNCNAME[i]}, called at line ${BASH_LINENO[i]}"; done
  echo "test-deb.sh: exit $rc at line $where: ${cmd:0:150}"
}
trap on_err ERR
cd "$(dirname "$0")/.."
src=$PWD
dir=${1:-build/deb}
start=$(date +%s)
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
scripts/setup.sh debootstrap dpkg-dev

# 1. the packages
mkdir -p "$(dirname "$dir")"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_SHARED_LIBS=ON \
  -DTAPEGRAD_INSTALL_STATIC=ON -DTAPEGRAD_TESTS=OFF >"$dir.configure.log" 2>&1 ||
  { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j"$(nproc 2>/dev/null || echo 2)" >"$dir.build.log" 2>&1 || { tail -40 "$dir.build.log"; exit 1; }
rm -f "$dir"/*.deb
(cd "$dir" && cpack -G DEB) >"$dir.cpack.log" 2>&1 || { cat "$dir.cpack.log"; exit 1; }
debs=$(cd "$dir" && ls ./*.deb)
mpi=$(grep -q "dist/ on MPI: ON" "$dir.configure.log" && echo yes || echo no)
echo "== packages after $(($(date +%s) - start)) s:" $debs

# 2. the clean root (one run at a time makes it or uses the apt cache)
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
archives=${TAPEGRAD_APT_CACHE:-/var/cache/tapegrad/apt-amd64}
$sudo mkdir -p "$archives/partial"
lock=$archives/.test-deb.lock
$sudo touch "$lock" && $sudo chmod a+rw "$lock"
exec 9<>"$lock"
flock -w 1800 9 || { echo "another test-deb.sh run held $lock for 30 min"; exit 1; }
root=$(scripts/debian-root.sh amd64)

work=$(mktemp -d)
mnt=$work/root
cleanup() {
  for m in "$mnt/var/cache/apt/archives" "$mnt/proc" "$mnt/dev" "$mnt" "$work"; do
    if mountpoint -q "$m"; then $sudo umount "$m"; fi
  done
  $sudo rm -rf "$work"
}
trap cleanup EXIT
$sudo mount -t tmpfs -o size=4g,mode=0755 tmpfs "$work"
$sudo mkdir -p "$work/upper" "$work/work" "$mnt"
$sudo mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/work" "$mnt"
$sudo mount --bind /dev "$mnt/dev"
$sudo mount -t proc proc "$mnt/proc"
$sudo mount --bind "$archives" "$mnt/var/cache/apt/archives"
$sudo cp /etc/resolv.conf "$mnt/etc/resolv.conf"
$sudo mkdir -p "$mnt/tmp/tg/install"
$sudo cp "$dir"/*.deb examples/quickstart.c "$mnt/tmp/tg/"
$sudo cp -r tests/install/c tests/install/cxx tests/install/dist "$mnt/tmp/tg/install/"
# bash -e in the root: a command that fails says which it was; no `prog | grep -q`
# (with pipefail, grep -q exiting at its match kills prog with SIGPIPE, and
# the pipeline fails now and then: ldd did), outputs go to files instead
in_root() { $sudo chroot "$mnt" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  DEBIAN_FRONTEND=noninteractive OPENBLAS_NUM_THREADS=1 /bin/bash -eEuo pipefail -c \
  'trap '\''rc=$?; echo "in the root: exit $rc: $BASH_COMMAND"'\'' ERR
  '"$1"; }

echo "== in the root: apt-get install libtapegrad-dev"
in_root '{ apt-get update -qq && apt-get install -y -qq --no-install-recommends \
  /tmp/tg/libtapegrad0_*.deb /tmp/tg/libtapegrad-dev_*.deb; } >/tmp/tg/apt1.log 2>&1 ||
    { cat /tmp/tg/apt1.log; echo "apt-get update/install of libtapegrad-dev failed"; exit 1; }
  cd /tmp/tg
  dpkg -l >dpkg.txt
  if grep -Ei "^ii +(libopenmpi|openmpi|libmpich|mpich)" dpkg.txt; then
    echo "libtapegrad-dev brought MPI"; exit 1; fi
  gradcheck_ok() { local out; out=$("$@"); echo "$out"; grep -q "gradcheck ok" <<<"$out"; }
  cc -std=c11 -Wall -Wextra -Wpedantic -Werror -o qs quickstart.c $(pkg-config --cflags --libs tapegrad)
  ldd qs >ldd.txt
  grep -Eq "libtapegrad\.so\.0 => (/usr)?/lib/x86_64-linux-gnu/" ldd.txt ||
    { cat ldd.txt; echo "qs does not load the packaged libtapegrad.so.0"; exit 1; }
  gradcheck_ok ./qs
  # libtapegrad.a with the shared libraries of its dependencies (what Requires.private
  # and Libs.private name; --static would ask for static OpenBLAS and its Fortran runtime)
  cc -std=c11 -o qs_static quickstart.c $(pkg-config --cflags tapegrad) -l:libtapegrad.a \
    $(pkg-config --libs tapegrad libcjson stb | sed "s/-ltapegrad\b//") -lm -pthread
  ldd qs_static >ldd_static.txt
  if grep -q libtapegrad ldd_static.txt; then cat ldd_static.txt; echo "qs_static loads a shared libtapegrad"; exit 1; fi
  gradcheck_ok ./qs_static
  { cmake -S install/c -B c -DQUICKSTART=/tmp/tg/quickstart.c -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON &&
    cmake --build c; } >c.log 2>&1 || { cat c.log; exit 1; }
  gradcheck_ok c/quickstart
  { cmake -S install/cxx -B cxx -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON && cmake --build cxx; } >cxx.log 2>&1 ||
    { cat cxx.log; exit 1; }
  gradcheck_ok cxx/quickstart_cxx'

echo "== in the root: apt-get install tapegrad libtapegrad-dist-dev"
in_root 'apt-get install -y -qq --no-install-recommends /tmp/tg/libtapegrad-dist0_*.deb \
  /tmp/tg/libtapegrad-dist-dev_*.deb /tmp/tg/tapegrad_*.deb >/tmp/tg/apt2.log 2>&1 ||
    { cat /tmp/tg/apt2.log; echo "apt-get install of tapegrad libtapegrad-dist-dev failed"; exit 1; }
  cd /tmp/tg
  seqtask train --steps 3 --eval-size 20 --out run >train.log 2>&1 || { cat train.log; exit 1; }
  test -s run/model.safetensors
  { cmake -S install/dist -B dist && cmake --build dist; } >dist.log 2>&1 || { cat dist.log; exit 1; }
  out=$(dist/dist_ranks)
  test "$out" = "rank 0 of 1, sum 2.5, mpi '"$mpi"'" || { echo "dist_ranks printed: $out"; exit 1; }'
echo "deb: the packages installed and were used in a clean $suite root in $(($(date +%s) - start)) s"
