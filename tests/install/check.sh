#!/usr/bin/env bash
# Installs the built tapegrad into a temporary prefix and uses it as a user
# would, from a C project and from a C++-only one (project(x CXX)):
#   - the README's quickstart (examples/quickstart.c) and its C++ form built
#     with the README's `pkg-config --cflags --libs tapegrad` line and with
#     find_package(tapegrad), -Wall -Wextra -Wpedantic -Werror, and run;
#   - all of it with MPI out of sight: pkg-config sees only tapegrad's own
#     dependencies and CMake's find_package(MPI) is disabled, and no program
#     loads libmpi: a program that does not use dist/ never needs MPI;
#   - a shared install runs as it is: no LD_LIBRARY_PATH, the programs find
#     libtapegrad.so.0 through the rpath of the pkg-config line or CMake's;
#   - the data-parallel layer through find_package(tapegrad COMPONENTS dist)
#     (a C++-only project) and `pkg-config tapegrad-dist`, with MPI visible;
#   - every installed header compiles alone as C and as C++.
# It checks whichever library the build made; scripts/test.sh builds float32
# static and double shared (BUILD_SHARED_LIBS=ON), so CI covers both.
# Usage: check.sh BUILD_DIR SOURCE_DIR WITH_MPI(ON|OFF)
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2") with_mpi=$3
flags=${SANITIZE_FLAGS:-}  # the sanitizer build needs its runtime in the programs too
warn="-Wall -Wextra -Wpedantic -Werror"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "install check: $*" >&2; exit 1; }
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$prefix" >/dev/null

libdir=$(realpath "$(dirname "$(find "$prefix" -name tapegrad.pc)")/..")
if [ -e "$libdir/libtapegrad.so" ]; then
  kind=shared
  soname=$(readelf -d "$libdir/libtapegrad.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = libtapegrad.so.0 ] || fail "soname is '$soname', want libtapegrad.so.0"
  [ -e "$libdir/libtapegrad.so.0" ] || fail "no libtapegrad.so.0"
  [ -e "$libdir/libtapegrad-dist.so.0" ] || fail "no libtapegrad-dist.so.0"
else
  kind=static
  [ -e "$libdir/libtapegrad.a" ] || fail "neither libtapegrad.so nor libtapegrad.a in $libdir"
  [ -e "$libdir/libtapegrad-dist.a" ] || fail "no libtapegrad-dist.a"
fi
# MPI belongs to the dist library alone
mpi_re='\b(mpi|ompi|mpich)|-lmpi|libmpi'
for f in pkgconfig/tapegrad.pc cmake/tapegrad/tapegradTargets.cmake; do
  ! grep -Eiq "$mpi_re" "$libdir/$f" || fail "$f mentions MPI: $(grep -Ei "$mpi_re" "$libdir/$f")"
done
if [ $kind = shared ] && readelf -d "$libdir/libtapegrad.so.0" | grep -q 'libmpi'; then fail "libtapegrad.so.0 needs libmpi"; fi

# Headers: only include/tapegrad, no internal header, each one self-contained
# in C and C++, and every one that declares something inside extern "C".
[ "$(ls "$prefix/include")" = tapegrad ] || fail "include/ holds more than tapegrad/"
for h in blas.h gemm.h vmath.h internal.h json.h elements.h named.h spin.h; do
  [ -z "$(find "$prefix/include" -name "$h")" ] || fail "internal header $h installed"
done
cflags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags tapegrad)
while IFS= read -r h; do
  rel=${h#"$prefix/include/"}
  # (a declaration after it: core/engine/f64_names.h alone holds only macros)
  for dt in "" -DTAPEGRAD_DOUBLE; do
    # shellcheck disable=SC2086
    printf '#include <%s>\ntypedef int header_check;\n' "$rel" | cc -std=c11 -fsyntax-only $warn $cflags $dt -x c - ||
      fail "$rel does not compile alone as C ${dt:+with $dt}"
    # shellcheck disable=SC2086
    printf '#include <%s>\ntypedef int header_check;\n' "$rel" | c++ -fsyntax-only $warn $cflags $dt -x c++ - ||
      fail "$rel does not compile alone as C++ ${dt:+with $dt}"
  done
  if grep -qE '^[a-z].*\(' "$h" && ! grep -q 'extern "C"' "$h"; then fail "$rel declares functions without extern \"C\""; fi
done < <(find "$prefix/include" -name '*.h')

if [ -e "$build/seqtask" ]; then
  "$prefix/bin/seqtask" --help >/dev/null || fail "bin/seqtask missing or does not run"
fi

loads() { # program, library: whether the program loads it
  ldd "$1" | awk -v l="$2" 'index($1, l) == 1 { found = 1 } END { exit !found }'
}
expect_ok() { # program: runs it; the gradcheck at its end must pass
  local out
  out=$("$@") || fail "$* failed: $out"
  grep -q "gradcheck ok" <<<"$out" || fail "$*: no 'gradcheck ok' in: $out"
  if [ $kind = shared ]; then
    local lib
    lib=$(ldd "$1" | awk '$1 == "libtapegrad.so.0" { print $3 }')
    [ -n "$lib" ] && [ "$(realpath "$lib")" = "$(realpath "$libdir/libtapegrad.so.0")" ] ||
      fail "$1 loads '$lib', not $libdir/libtapegrad.so.0"
  elif loads "$1" libtapegrad; then
    fail "$1 loads a shared libtapegrad"
  fi
  if loads "$1" libmpi; then fail "$1 loads libmpi"; fi
}
consumer() { # name, project dir, cmake args...: configure and build a CMake project
  local name=$1 dir=$2; shift 2
  cmake -S "$dir" -B "$tmp/$name" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="$warn $flags" -DCMAKE_CXX_FLAGS="$warn $flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" "$@" \
    >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; fail "$name: find_package configure failed"; }
  cmake --build "$tmp/$name" >>"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; fail "$name: build failed"; }
}

# pkg-config sees tapegrad and its own dependencies only (no MPI, nothing else)
mkdir "$tmp/pc"
for m in openblas libcjson stb; do
  ln -s "$(pkg-config --variable=pcfiledir "$m")/$m.pc" "$tmp/pc/$m.pc"
done
nompi_pc() { PKG_CONFIG_LIBDIR=$tmp/pc PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config "$@"; }

# find_package(tapegrad) from C and from C++ alone, MPI not findable
consumer c "$src/tests/install/c" -DQUICKSTART="$src/examples/quickstart.c" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
consumer cxx "$src/tests/install/cxx" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
expect_ok "$tmp/c/quickstart"
expect_ok "$tmp/cxx/quickstart_cxx"

# The README's line, as written (no --static)
libs=$(nompi_pc --cflags --libs tapegrad) || fail "pkg-config tapegrad needs more than openblas, libcjson, stb"
if [ $kind = shared ]; then
  grep -q -- "-Wl,-rpath," <<<"$libs" || fail "no rpath in pkg-config --libs tapegrad: $libs"
fi
# shellcheck disable=SC2086
cc -std=c11 $warn -o "$tmp/quickstart_pc" "$src/examples/quickstart.c" $libs $flags
expect_ok "$tmp/quickstart_pc"
# shellcheck disable=SC2086
c++ $warn -o "$tmp/quickstart_pc_cxx" "$src/tests/install/cxx/quickstart.cpp" $libs $flags
expect_ok "$tmp/quickstart_pc_cxx"

# The data-parallel layer, MPI visible: alone it is rank 0 of 1
want="rank 0 of 1, sum 2.5, mpi $([ "$with_mpi" = ON ] && echo yes || echo no)"
consumer dist "$src/tests/install/dist"
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046,SC2086
c++ $warn -o "$tmp/ranks_pc" "$src/tests/install/dist/ranks.cpp" $(pkg-config --cflags --libs tapegrad-dist) $flags
for p in "$tmp/dist/dist_ranks" "$tmp/ranks_pc"; do
  out=$("$p") || fail "$p failed: $out"
  [ "$out" = "$want" ] || fail "$p says '$out', want '$want'"
done
echo "install check ($kind): quickstart via pkg-config and find_package, from C and C++-only projects, with MPI" \
  "hidden, ran; dist via both with MPI $with_mpi ran; headers compile alone as C and C++"
