#!/usr/bin/env bash
# Installs the built tapegrad into a temporary prefix, then builds and runs a
# tiny outside program against it twice: with find_package(tapegrad) and with
# pkg-config. Usage: check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
flags=${SANITIZE_FLAGS:-}  # the sanitizer build needs its runtime in the app too
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/tests/install" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$tmp/cmake" >/dev/null
"$tmp/cmake/app"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig:$tmp/prefix/lib/x86_64-linux-gnu/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -o "$tmp/app_pc" "$src/tests/install/app.c" $(pkg-config --cflags tapegrad) \
   $(pkg-config --libs --static tapegrad) $flags
"$tmp/app_pc"
echo "install check: find_package and pkg-config builds both ran"
