#!/usr/bin/env bash
# A user without Criterion configures the library: cmake succeeds, warns that
# the tests are not built, and generates no test targets. Criterion is hidden
# by giving pkg-config only the library's own dependencies.
# Usage: no_criterion.sh SOURCE_DIR
set -euo pipefail
src=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/pc"
for m in openblas libcjson stb; do
  ln -s "$(pkg-config --variable=pcfiledir "$m")/$m.pc" "$tmp/pc/$m.pc"
done
PKG_CONFIG_LIBDIR=$tmp/pc PKG_CONFIG_PATH='' cmake -S "$src" -B "$tmp/build" -DTAPEGRAD_EXAMPLES=OFF \
  >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "no_criterion: configure failed"; exit 1; }
grep -q "Criterion not found: the tests are not built" "$tmp/log" || { cat "$tmp/log"; echo "no_criterion: no warning"; exit 1; }
if grep -q "test_tensor" "$tmp/build/Makefile"; then echo "no_criterion: test targets generated"; exit 1; fi
echo "no_criterion: configured without Criterion, with the warning and no tests"
