#!/usr/bin/env bash
# Cross-compiles the float build for aarch64 and runs its CTest suite under
# qemu-user, from scratch on Debian 12 x86-64, installing what is missing:
#   1. gcc-aarch64-linux-gnu, qemu-user-static, debootstrap (host packages);
#   2. qemu-aarch64 registered with binfmt_misc (on hosts where nothing does it at boot);
#   3. an arm64 Debian root with the build's libraries unpacked inside it
#      (scripts/debian-root.sh; Debian's libcriterion-dev is not multiarch
#      co-installable: installing libcriterion-dev:arm64 on the host would
#      remove the native one). It is kept in $TAPEGRAD_ARM64_ROOT
#      (default /var/cache/tapegrad/arm64-<suite>) and made again when it is
#      missing or incomplete;
#   4. cmake with cmake/aarch64-linux-gnu.cmake against that root, then ctest
#      (each test binary runs through qemu-aarch64-static).
# Usage: scripts/test-aarch64.sh [build-dir] [ctest args...]
#   default build dir build/aarch64; extra args go to ctest (e.g. -R tensor).
#   TAPEGRAD_TEST_F64=OFF in the environment builds no float64 twins of the suites.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/aarch64}
shift || true
start=$(date +%s)
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

scripts/setup.sh gcc-aarch64-linux-gnu qemu-user-static debootstrap

# 2, 3. binfmt_misc and the arm64 root
root=$(scripts/debian-root.sh arm64)

# 4. cross build and test. QEMU_LD_PREFIX: arm64 programs the tests start
#    (seqtask, Criterion's workers) run through binfmt_misc with the root's
#    loader and libraries.
mkdir -p "$(dirname "$dir")"
export QEMU_LD_PREFIX=$root
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DTAPEGRAD_SYSROOT="$root" \
  -DCMAKE_BUILD_TYPE=Release -DTAPEGRAD_TEST_F64="${TAPEGRAD_TEST_F64:-ON}" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j"$(nproc 2>/dev/null || echo 2)" >"$dir.build.log" 2>&1 ||
  { tail -40 "$dir.build.log"; exit 1; }
echo "== aarch64: built after $(($(date +%s) - start)) s; test"
status=0
(cd "$dir" && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@") || status=1
echo "aarch64: $([ $status -eq 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s"
exit $status
