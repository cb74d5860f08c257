#!/usr/bin/env bash
# The README's example is examples/quickstart.c, byte for byte, and it runs;
# the README's "Your own op" block is a verbatim piece of examples/custom_op.c.
# Usage: readme_example.sh SOURCE_DIR QUICKSTART_BINARY
set -euo pipefail
src=$1 bin=$2
tmp="${TMPDIR:-/tmp}/readme_example.$$"
trap 'rm -f "$tmp.c" "$tmp.op.c"' EXIT
awk '/^```c$/{on=1; next} /^```$/{if(on) exit} on' "$src/README.md" > "$tmp.c"
diff -u "$src/examples/quickstart.c" "$tmp.c"
awk '/^## Your own op/{sec=1} sec && /^```c$/{on=1; next} on && /^```$/{exit} on' "$src/README.md" > "$tmp.op.c"
test -s "$tmp.op.c"
op=$(cat "$tmp.op.c") whole=$(cat "$src/examples/custom_op.c")
[[ "$whole" == *"$op"* ]] || { echo "README's 'Your own op' block is not a piece of examples/custom_op.c"; exit 1; }
# the output in a variable, not piped to grep -q: grep stopping early would
# make the program's later writes fail (SIGPIPE) and pipefail fail the test
out=$("$bin")
printf '%s\n' "$out"
grep -q "gradcheck ok" <<<"$out"
