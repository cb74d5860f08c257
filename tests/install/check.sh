#!/usr/bin/env bash
# Installs the built tapegrad into a temporary prefix and uses it as a user
# would: the README's quickstart (examples/quickstart.c) built with the
# README's `pkg-config --cflags --libs tapegrad` line and with
# find_package(tapegrad), the same program as C++ both ways, and every
# installed header compiled alone as C and as C++. It checks whichever library
# the build made; scripts/test.sh builds float32 static and double shared
# (BUILD_SHARED_LIBS=ON), so CI covers both.
# Usage: check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2")
flags=${SANITIZE_FLAGS:-}  # the sanitizer build needs its runtime in the programs too
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "install check: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$prefix" >/dev/null

libdir=$(realpath "$(dirname "$(find "$prefix" -name tapegrad.pc)")/..")
if [ -e "$libdir/libtapegrad.so" ]; then
  kind=shared
  soname=$(readelf -d "$libdir/libtapegrad.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = libtapegrad.so.0 ] || fail "soname is '$soname', want libtapegrad.so.0"
  [ -e "$libdir/libtapegrad.so.0" ] || fail "no libtapegrad.so.0"
  export LD_LIBRARY_PATH=$libdir  # for the pkg-config builds (CMake sets an rpath)
else
  kind=static
  [ -e "$libdir/libtapegrad.a" ] || fail "neither libtapegrad.so nor libtapegrad.a in $libdir"
fi

# Headers: only include/tapegrad, no internal header, each one self-contained
# in C and C++, and every one that declares something inside extern "C".
[ "$(ls "$prefix/include")" = tapegrad ] || fail "include/ holds more than tapegrad/"
for h in blas.h gemm.h vmath.h internal.h json.h; do
  [ -z "$(find "$prefix/include" -name "$h")" ] || fail "internal header $h installed"
done
cflags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags tapegrad)
while IFS= read -r h; do
  rel=${h#"$prefix/include/"}
  # shellcheck disable=SC2086
  echo "#include <$rel>" | cc -std=c11 -fsyntax-only -Werror $cflags -x c - || fail "$rel does not compile alone as C"
  # shellcheck disable=SC2086
  echo "#include <$rel>" | c++ -fsyntax-only -Werror $cflags -x c++ - || fail "$rel does not compile alone as C++"
  if grep -qE '^[a-z].*\(' "$h" && ! grep -q 'extern "C"' "$h"; then fail "$rel declares functions without extern \"C\""; fi
done < <(find "$prefix/include" -name '*.h')

if [ -e "$build/seqtask" ]; then
  "$prefix/bin/seqtask" --help >/dev/null || fail "bin/seqtask missing or does not run"
fi

expect_ok() { # program: runs it; the gradcheck at its end must pass
  local out
  out=$("$@") || fail "$* failed: $out"
  grep -q "gradcheck ok" <<<"$out" || fail "$*: no 'gradcheck ok' in: $out"
  if [ $kind = shared ]; then
    local lib
    lib=$(ldd "$1" | awk '$1 == "libtapegrad.so.0" { print $3 }')
    [ -n "$lib" ] && [ "$(realpath "$lib")" = "$(realpath "$libdir/libtapegrad.so.0")" ] ||
      fail "$1 loads '$lib', not $libdir/libtapegrad.so.0"
  elif ldd "$1" | grep -q libtapegrad; then
    fail "$1 loads a shared libtapegrad"
  fi
}

# find_package(tapegrad)
cmake -S "$src/tests/install" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DQUICKSTART="$src/examples/quickstart.c" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "find_package configure failed"; }
cmake --build "$tmp/cmake" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "find_package build failed"; }
expect_ok "$tmp/cmake/quickstart"
expect_ok "$tmp/cmake/quickstart_cxx"

# The README's line, as written (no --static)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046,SC2086
cc -std=c11 -o "$tmp/quickstart_pc" "$src/examples/quickstart.c" $(pkg-config --cflags --libs tapegrad) $flags
expect_ok "$tmp/quickstart_pc"
# shellcheck disable=SC2046,SC2086
c++ -o "$tmp/quickstart_pc_cxx" "$src/tests/install/quickstart.cpp" $(pkg-config --cflags --libs tapegrad) $flags
expect_ok "$tmp/quickstart_pc_cxx"
echo "install check ($kind): quickstart via pkg-config and find_package, as C and C++, ran; headers compile alone as C and C++"
