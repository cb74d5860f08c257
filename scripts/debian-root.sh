#!/usr/bin/env bash
# A Debian root of this host's suite for the tests that need one, made by
# debootstrap when it is missing or was made with other packages, and kept:
#   arm64  libc6-dev, libopenblas-dev, libcjson-dev, libstb-dev,
#          libcriterion-dev: the sysroot of the aarch64 cross build and the
#          libraries qemu-user runs its tests with (scripts/test-aarch64.sh).
#          Only unpacked: debootstrap's first stage fetches the packages,
#          then each is unpacked here, natively, and the links its
#          maintainer script would make with update-alternatives (the BLAS
#          and LAPACK ones) are made directly, relative. Nothing is
#          configured (no dpkg database, no ld.so.cache; the loader's default
#          paths are the multiarch ones): a sysroot needs none of it, and
#          debootstrap's second stage, dpkg under qemu, took about 4 minutes
#          of two cores' time where this takes under one. Also registers
#          qemu-aarch64 with binfmt_misc (on hosts where nothing does it at
#          boot): the tests that start seqtask exec an arm64 binary.
#   amd64  a compiler, make, cmake and pkg-config, fully installed: the clean
#          root the Debian packages are installed into with apt
#          (scripts/test-deb.sh).
# The root is $TAPEGRAD_ARM64_ROOT / $TAPEGRAD_AMD64_ROOT (default
# /var/cache/tapegrad/<arch>-<suite>); prints its path on stdout. A root is
# made in <root>.tmp and renamed when complete, under a lock: runs for the
# same root wait for each other, so .ci/run can start one in the background
# and the test script that needs it takes it when it is ready. Needs root or
# sudo, and the network the first time.
# Usage: scripts/debian-root.sh arm64|amd64
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-}
start=$(date +%s)
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
case $arch in
  arm64)
    pkgs=libc6-dev,libopenblas-dev,libcjson-dev,libstb-dev,libcriterion-dev
    root=${TAPEGRAD_ARM64_ROOT:-/var/cache/tapegrad/arm64-$suite}
    scripts/setup.sh qemu-user-static debootstrap >&2
    binfmt=/proc/sys/fs/binfmt_misc
    [ -e $binfmt/register ] || $sudo mount -t binfmt_misc binfmt_misc $binfmt
    [ -e $binfmt/qemu-aarch64 ] || $sudo sh -c "cat /usr/lib/binfmt.d/qemu-aarch64.conf > $binfmt/register" ;;
  amd64)
    pkgs=gcc,g++,libc6-dev,make,cmake,pkg-config
    root=${TAPEGRAD_AMD64_ROOT:-/var/cache/tapegrad/amd64-$suite}
    scripts/setup.sh debootstrap >&2 ;;
  *) echo "usage: scripts/debian-root.sh arm64|amd64" >&2; exit 2 ;;
esac

$sudo mkdir -p "$(dirname "$root")"
lock=$root.lock
$sudo touch "$lock" && $sudo chmod a+rw "$lock"
exec 9<>"$lock"
flock -w 1800 9 || { echo "another run held $lock for 30 min" >&2; exit 1; }
stamp="$root/.tapegrad-root"
if [ "$(cat "$stamp" 2>/dev/null)" != "$pkgs" ]; then
  echo "== $arch root: debootstrap $suite into $root (several minutes)" >&2
  $sudo rm -rf "$root" "$root.tmp"
  $sudo mkdir -p "$root.tmp"
  foreign=()
  [ "$arch" = arm64 ] && foreign=(--foreign)
  $sudo debootstrap "${foreign[@]}" --arch="$arch" --variant=minbase --include="$pkgs" "$suite" "$root.tmp" \
    "${TAPEGRAD_DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; echo "debootstrap failed (log: $root.log)" >&2; exit 1; }
  if [ "$arch" = arm64 ]; then
    r=$root.tmp
    for deb in "$r"/var/cache/apt/archives/*.deb; do
      # (tar keeps the merged /usr's /lib -> usr/lib: dpkg-deb -x would not)
      dpkg-deb --fsys-tarfile "$deb" | $sudo tar -x --keep-directory-symlink -C "$r"
      # "update-alternatives --install LINK NAME PATH PRIO [--slave LINK NAME PATH]..."
      dpkg-deb --ctrl-tarfile "$deb" | { tar -xO ./postinst 2>/dev/null || true; } |
        sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
        awk '$1 == "update-alternatives" { for (i = 2; i <= NF; i++)
               if ($i == "--install") { print $(i + 1), $(i + 3); i += 4 }
               else if ($i == "--slave") { print $(i + 1), $(i + 3); i += 3 } }'
    done | while read -r link target; do
      case $link$target in *'$'*) continue ;; esac # (a path the script computes: not followed)
      $sudo mkdir -p "$(dirname "$r$link")"
      $sudo ln -sfn "$(realpath -m -s --relative-to="$(dirname "$r$link")" "$r$target")" "$r$link"
    done
    $sudo rm -rf "$r/var/cache/apt/archives/"*.deb "$r/debootstrap"
    # Packages' absolute links (libz.so -> /lib/...) would point into the
    # host outside a chroot. Relative links work for both the cross linker
    # and qemu.
    $sudo find "$r/usr/lib" -type l -lname '/*' -print0 |
      while IFS= read -r -d '' link; do
        target=$(readlink "$link")
        $sudo ln -sfn "$(realpath -m -s --relative-to="$(dirname "$link")" "$r$target")" "$link"
      done
  fi
  echo "$pkgs" | $sudo tee "$root.tmp/.tapegrad-root" >/dev/null
  $sudo mv "$root.tmp" "$root"
fi
echo "== $arch root ready ($root) after $(($(date +%s) - start)) s" >&2
echo "$root"
