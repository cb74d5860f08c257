#!/usr/bin/env bash
# The library's #include "..." graph keeps docs/DESIGN.md's layers and has no
# cycle. Usage: include_layers.sh SOURCE_DIR
#
# Layers, higher first (a file includes only from its own folder or a lower
# layer; folders of one rank do not include each other):
#   tapegrad.h > viz > nn, optim, dist > io, ops > kernels > engine
# Inside core/ops: a family's sources may include any ops header (../internal.h,
# ../ops.h, family headers); a family header (core/ops/<family>/*.h) only
# family headers, never ops.h or internal.h, which sit above the families.
# No file includes a .c file, and an installed header no internal one.
# Cycles: a source and the header it implements (its first include, when
# that is in its own folder: the project's convention) are one unit, and the units'
# includes must not loop (checksum.c's json.h including io.h, which read.c
# implements, while read.c includes json.h, is such a loop).
set -euo pipefail
src=$(cd "$1" && pwd)
cd "$src"

# the headers cmake/install.cmake leaves out
internal_names=" blas.h gemm.h openblas.h gemm_half.h half.h bf16_emu.h bf16_pack.h vmath.h internal.h json.h elements.h named.h spin.h "

# sets R (rank) and F (folder) of a path
place() {
  case $1 in
    tapegrad.h) R=6 ;;
    viz/*) R=5 ;;
    nn/*|optim/*|dist/*) R=4 ;;
    core/io/*|core/ops/*) R=3 ;;
    core/kernels/*) R=2 ;;
    core/engine/*) R=1 ;;
    *) R=0 ;;
  esac
  case $1 in
    core/*/*) F=${1#core/}; F=core/${F%%/*} ;;
    */*) F=${1%%/*} ;;
    *) F=. ;;
  esac
}
installed() { [[ $1 == *.h && $1 != tests/* && $internal_names != *" ${1##*/} "* ]]; }

fail=0
bad() { echo "include_layers: $1 -> $2: $3"; fail=1; }

files=$( { echo tapegrad.h; find core nn optim dist viz -name '*.[ch]'; } | sort)
edges=$(mktemp)
units=$(mktemp)
trap 'rm -f "$edges" "$edges.raw" "$units"' EXIT

# every include as "file target", the target resolved from the file's folder
for f in $files; do
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
    while IFS= read -r inc; do echo "$f $(dirname "$f")/$inc"; done
done > "$edges.raw"
paste -d' ' <(cut -d' ' -f1 "$edges.raw") \
  <(cut -d' ' -f2 "$edges.raw" | xargs realpath -m --relative-to="$src") > "$edges"

while read -r f to; do
  if [ ! -f "$to" ]; then bad "$f" "$to" "no such file"; continue; fi
  [[ $to == *.c ]] && bad "$f" "$to" "includes a source file"
  installed "$f" && ! installed "$to" && bad "$f" "$to" "an installed header includes an internal one"
  place "$f"; ff=$F rf=$R
  place "$to"; ft=$F rt=$R
  if [ "$ff" != "$ft" ]; then
    [ "$rt" -lt "$rf" ] || bad "$f" "$to" "points up or across a layer ($ff does not include $ft)"
    continue
  fi
  if [ "$ff" = core/ops ] && [[ $f == core/ops/*/*.h ]] && [[ $to != core/ops/*/* ]]; then
    bad "$f" "$to" "a family header includes $(basename "$to"), which sits above the families"
  fi
done < "$edges"

# The unit of a file: a header is its own; a source is its first include
# when that is a header of its own folder (the header it implements), else
# its own.
unit() {
  local first
  case $1 in *.h) echo "$1"; return ;; esac
  first=$(sed -n '/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]/{s/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"/]*\)".*/\1/p;q}' "$1")
  if [ -n "$first" ] && [ -f "$(dirname "$1")/$first" ]; then echo "$(dirname "$1")/$first"; else echo "$1"; fi
}
declare -A unit_of
for f in $files; do unit_of[$f]=$(unit "$f"); done

while read -r a b; do
  ua=${unit_of[$a]} ub=${unit_of[$b]:-$b}
  [ "$ua" != "$ub" ] && echo "$ua $ub"
done < "$edges" | sort -u > "$units"

# an include closes a cycle when the unit it reaches leads back to its own
declare -A next
while read -r a b; do next[$a]+=" $b"; done < "$units"
reaches() {  # reaches FROM TO: a path of unit includes FROM ... TO
  local -A seen=()
  local todo=("$1") u v
  while [ ${#todo[@]} -gt 0 ]; do
    u=${todo[-1]}; unset 'todo[-1]'
    [ "$u" = "$2" ] && return 0
    [ -n "${seen[$u]:-}" ] && continue
    seen[$u]=1
    for v in ${next[$u]:-}; do todo+=("$v"); done
  done
  return 1
}
if ! tsort "$units" > /dev/null 2>&1; then
  while read -r a b; do
    ua=${unit_of[$a]} ub=${unit_of[$b]:-$b}
    if [ "$ua" != "$ub" ] && reaches "$ub" "$ua"; then
      why=""; [ "$a" != "$ua" ] && why=" ($a implements $ua)"
      bad "$a" "$b" "closes a cycle: $ub leads back to $ua$why"
    fi
  done < "$edges"
fi

n=$(wc -l < "$edges")
[ "$n" -gt 100 ] || { echo "include_layers: only $n includes found"; exit 1; }
[ $fail = 0 ] && echo "include_layers: $n includes, every one down a layer, no cycle"
exit $fail
