#!/usr/bin/env bash
# The README's test command: installs what is missing, then builds and runs
# the whole suite twice (release, and ASan/UBSan; each build runs the library's
# suites as float32 and as float64 programs: tests/CMakeLists.txt), then
# the multi-threaded test under ThreadSanitizer (the library and that test
# only: under a minute), and ends with one "N passed, N failed" line per
# build. Exit status 0 only if all pass.
# Usage: scripts/test.sh [build-root]   (default: ./build)
set -uo pipefail
cd "$(dirname "$0")/.."
root=${1:-build}
scripts/setup.sh || { echo "setup failed"; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)

declare -A summary
status=0
run_build() { # name, cmake flags...
  local name=$1; shift
  local dir="$root/$name"
  echo "== $name: configure and build ($dir)"
  if ! cmake -S . -B "$dir" "$@" >"$dir.configure.log" 2>&1; then
    cat "$dir.configure.log"; summary[$name]="0 passed, 1 failed"; status=1; return
  fi
  if ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
    tail -40 "$dir.build.log"; summary[$name]="0 passed, 1 failed"; status=1; return
  fi
  echo "== $name: test"
  (cd "$dir" && ctest --output-on-failure -j"$jobs") | tee "$dir.test.log"
  local line passed failed total
  line=$(grep -E "tests passed, [0-9]+ tests failed out of" "$dir.test.log" | tail -1)
  if [ -z "$line" ]; then summary[$name]="0 passed, 1 failed"; status=1; return; fi
  failed=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
  passed=$((total - failed))
  summary[$name]="$passed passed, $failed failed"
  [ "$failed" -eq 0 ] || status=1
}

mkdir -p "$root"
# The suites save checkpoints by the thousand, each flushed with fsync (the
# allocation-failure walk saves one per allocation it fails): in a tmpfs a
# flush costs nothing, which cuts the longest suites to a third. /dev/shm
# when it has room (a container's may have 64 MiB), unless TMPDIR is set.
shm_kib=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -z "${TMPDIR:-}" ] && [ "${shm_kib:-0}" -ge 4194304 ] && TMPDIR=$(mktemp -d /dev/shm/tapegrad-tests.XXXXXX); then
  export TMPDIR
  trap 'rm -rf "$TMPDIR"' EXIT
fi
run_build release -DCMAKE_BUILD_TYPE=Release
# -g1: line tables, all a sanitizer's report needs, and a fifth less compile time than -g
debug_lines=-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
run_build sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo "$debug_lines" -DTAPEGRAD_SANITIZE=ON -DTAPEGRAD_EXAMPLES=ON
run_build tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo "$debug_lines" -DTAPEGRAD_TSAN=ON -DTAPEGRAD_EXAMPLES=OFF

echo
for name in release sanitize tsan; do echo "$name: ${summary[$name]}"; done
exit $status
