#!/usr/bin/env bash
# The README's example is examples/quickstart.c, byte for byte, and it runs.
# Usage: readme_example.sh SOURCE_DIR QUICKSTART_BINARY
set -euo pipefail
src=$1 bin=$2
awk '/^```c$/{on=1; next} /^```$/{if(on) exit} on' "$src/README.md" > "${TMPDIR:-/tmp}/readme_example.$$.c"
trap 'rm -f "${TMPDIR:-/tmp}/readme_example.$$.c"' EXIT
diff -u "$src/examples/quickstart.c" "${TMPDIR:-/tmp}/readme_example.$$.c"
# the output in a variable, not piped to grep -q: grep stopping early would
# make the program's later writes fail (SIGPIPE) and pipefail fail the test
out=$("$bin")
printf '%s\n' "$out"
grep -q "gradcheck ok" <<<"$out"
