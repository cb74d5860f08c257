#!/usr/bin/env bash
# Every example answers --help as seqtask does: "usage: NAME ..." on stdout,
# exit 0; an unknown flag is named on stderr with exit 2, and nothing runs.
# classify's help lists each of its flags, and a bad value is named with
# what was expected.
# Usage: examples_help.sh BIN_DIR
set -euo pipefail
bin=$1
fail() { echo "examples_help: $*" >&2; exit 1; }
names="classify custom_op gradcheck"
[ -x "$bin/cnn" ] && names+=" cnn"  # built when zlib is there
for name in $names; do
  out=$("$bin/$name" --help) || fail "$name --help exits $?"
  head -1 <<<"$out" | grep -q "^usage: $name\b" || fail "$name --help does not start with 'usage: $name': $out"
  rc=0; err=$("$bin/$name" --bogus 2>&1 >/dev/null) || rc=$?
  [ $rc -eq 2 ] || fail "$name --bogus exits $rc, want 2"
  grep -q "^$name: unknown flag --bogus" <<<"$err" || fail "$name --bogus says: $err"
done
help=$("$bin/classify" --help)
for flag in "--mode fused|per-head" "--steps N" "--seed N" "--help"; do
  grep -qF -- "  $flag " <<<"$help" || fail "classify --help does not list $flag"
done
check_bad() { # expected message, args...
  local want=$1 rc=0 err; shift
  err=$("$bin/classify" "$@" 2>&1 >/dev/null) || rc=$?
  [ $rc -eq 2 ] && [ "$err" = "$want" ] || fail "classify $*: exit $rc, '$err', want 2, '$want'"
}
check_bad "classify: --steps needs a value: an integer in [1, 1000000000]" --steps
check_bad "classify: --steps '0' is not allowed: expected an integer in [1, 1000000000]" --steps 0
check_bad "classify: --mode 'x' is not allowed: expected one of fused, per-head" --mode x
check_bad "classify: --seed '-1' is not allowed: expected an integer >= 0" --seed -1
echo "examples_help: ${names// /, } answer --help and refuse an unknown flag"
