#!/usr/bin/env bash
# Valgrind memcheck over every test executable (docs/RELIABILITY.md).
#
# Builds a Debug build without sanitizers (ASan and valgrind do not mix), then
# runs each tests/test_* executable under memcheck with --leak-check=full.
# Criterion runs every test in a worker that it re-executes from the test
# binary (BoxFort: fork + exec), so valgrind follows children
# (--trace-children=yes) and writes one log per process. Criterion ignores a
# worker's exit status once its test has reported, so --error-exitcode alone
# would not fail anything: the verdict comes from the logs, summed per
# executable: memcheck errors (invalid reads/writes, uninitialised values,
# bad frees, ...) and definitely / indirectly / possibly lost bytes must all
# be zero, and the Criterion run itself must pass.
#
# One suppression: a test that calls cr_skip_test() ends its worker at once,
# leaving Criterion's nanomsg reporting socket and thread "possibly lost".
# It matches only stacks that go through libnanomsg, which tapegrad never
# calls, so it cannot hide a tapegrad leak.
#
# Usage: scripts/valgrind.sh [build-dir] [test-name-regex]
#   build-dir defaults to build/valgrind (the suites as float32 and float64
#   programs, test_x and test_x_f64); TAPEGRAD_EXAMPLES=OFF skips the
#   examples (test_train then skips its runs of the seqtask binary, which
#   otherwise run under valgrind too). Exit status 0 only if clean.
set -uo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
dir=${1:-build/valgrind}
filter=${2:-.}
jobs=$(nproc 2>/dev/null || echo 2)

command -v valgrind >/dev/null || {
  echo "valgrind is missing: installing it"
  if [ "$(id -u)" -eq 0 ]; then apt-get install -y valgrind; else sudo apt-get install -y valgrind; fi
} || { echo "cannot install valgrind"; exit 1; }

echo "== configure and build $dir (Debug, no sanitizers, examples=${TAPEGRAD_EXAMPLES:-ON})"
mkdir -p "$dir"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DTAPEGRAD_SANITIZE=OFF -DTAPEGRAD_EXAMPLES="${TAPEGRAD_EXAMPLES:-ON}" \
  >"$dir/valgrind.configure.log" 2>&1 ||
  { cat "$dir/valgrind.configure.log"; exit 1; }
cmake --build "$dir" -j"$jobs" >"$dir/valgrind.build.log" 2>&1 ||
  { tail -40 "$dir/valgrind.build.log"; exit 1; }

logs="$(cd "$dir" && pwd)/valgrind-logs"
rm -rf "$logs"
mkdir -p "$logs"
supp="$logs/criterion.supp"
cat >"$supp" <<'EOF'
{
   criterion-skip-leaves-its-nanomsg-socket
   Memcheck:Leak
   match-leak-kinds: possible
   ...
   obj:*/libnanomsg.so*
}
EOF
export OPENBLAS_NUM_THREADS=1  # as under CTest: no BLAS threads to confuse the leak checker

# Sums "<label>: N bytes" (leaks) or "ERROR SUMMARY: N errors" over logs.
sum_field() { # pattern, files...
  local pat=$1; shift
  grep -h "$pat" "$@" 2>/dev/null | sed -E 's/.*'"$pat"' *([0-9,]+).*/\1/' | tr -d , |
    awk '{s += $1} END {print s + 0}'
}

status=0
printf '%-22s %6s %8s %10s %10s %10s  %s\n' executable procs errors definite indirect possible criterion
for exe in "$dir"/tests/test_*; do
  [ -x "$exe" ] && [ -f "$exe" ] || continue
  name=$(basename "$exe")
  [[ $name =~ $filter ]] || continue
  out="$logs/$name"
  mkdir -p "$out"
  # --jobs 1: one worker at a time keeps memory and log interleaving sane
  (cd "$dir/tests" && valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes --error-exitcode=1 \
    --suppressions="$supp" \
    --trace-children=yes --log-file="$out/%p.log" "./$name" --jobs 1) \
    >"$out/criterion.log" 2>&1
  rc=$?
  synth=$(grep -E "Synthesis:" "$out/criterion.log" | tail -1 | sed -E 's/.*Synthesis: //')
  files=("$out"/*[0-9].log)
  procs=${#files[@]}
  errors=$(sum_field "ERROR SUMMARY:" "${files[@]}")
  definite=$(sum_field "definitely lost:" "${files[@]}")
  indirect=$(sum_field "indirectly lost:" "${files[@]}")
  possible=$(sum_field "possibly lost:" "${files[@]}")
  verdict="$synth"
  if [ "$rc" -ne 0 ] || ! grep -q "Failing: 0 | Crashing: 0" <<<"$synth"; then verdict="FAILED (exit $rc): $synth"; fi
  printf '%-22s %6s %8s %10s %10s %10s  %s\n' "$name" "$procs" "$errors" "$definite" "$indirect" "$possible" "$verdict"
  if [ "$errors" -ne 0 ] || [ "$definite" -ne 0 ] || [ "$indirect" -ne 0 ] || [ "$possible" -ne 0 ] ||
    [[ $verdict == FAILED* ]]; then
    status=1
    grep -l -E "ERROR SUMMARY: [1-9]|lost: [1-9]" "${files[@]}" 2>/dev/null | head -3 |
      while read -r f; do echo "  see $f"; done
  fi
done
echo
if [ $status -eq 0 ]; then echo "valgrind: clean (0 errors, 0 bytes lost)"; else echo "valgrind: NOT clean (logs in $logs)"; fi
exit $status
