#!/usr/bin/env bash
# Every repository path that the docs (README.md, docs/*.md) or a comment in
# the code names exists, so a moved or renamed file cannot leave a stale
# reference behind. Usage: doc_paths.sh SOURCE_DIR
#
# A path is a token with a slash ending in a source or doc extension whose
# first directory is one of the tree's own (core/, nn/, tests/, ...; core's
# folders may be named from inside core: "ops/internal.h"); <tapegrad/x.h>
# is the installed spelling of x.h. Globs (examples/*.c, mask.[ch]) must
# match a file; templates (core/ops/<family>.c) are not checked.
set -euo pipefail
src=$(cd "$1" && pwd)
cd "$src"

files() {
  find . \( -path ./build -o -path ./.git -o -path ./tests/fixtures \) -prune -o -type f -print |
    sed 's|^\./||' | sort
}

# The text to read in a file: all of a doc or Python file, the comments of
# C and of shell and CMake (a path in code is a string the code builds, often
# in a temporary directory).
text() {
  case $1 in
    *.md|*.py) cat "$1" ;;
    *.c|*.h|*.cpp) awk '{ s = $0; out = ""
        while (s != "") {
          if (inc) { e = index(s, "*/"); if (!e) { out = out " " s; s = "" } else { out = out " " substr(s, 1, e - 1); s = substr(s, e + 2); inc = 0 } }
          else { b = index(s, "/*"); l = index(s, "//")
                 if (l && (!b || l < b)) { out = out " " substr(s, l + 2); s = "" }
                 else if (b) { s = substr(s, b + 2); inc = 1 } else s = "" } }
        print out }' "$1" ;;
    *) grep '#' "$1" | sed 's/^[^#]*#//' || true ;;
  esac
}

top=" $(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name build -printf '%f ') "
core=" $(find core -mindepth 1 -maxdepth 1 -type d -printf '%f ') "
bad=0
while IFS= read -r f; do
  case $f in
    README.md|docs/*.md|*.c|*.h|*.cpp|*.sh|*.cmake|*.py|CMakeLists.txt|*/CMakeLists.txt) ;;
    *) continue ;;
  esac
  while IFS= read -r p; do
    q=$p
    while :; do
      case $q in
        '<'*) q=${q#<} ;;
        ./*) q=${q#./} ;;
        ../*) q=${q#../} ;;
        /*) q=${q#/} ;;
        *) break ;;
      esac
    done
    q=${q#tapegrad/}
    case $q in *'<'*|*'>'*|*/*) ;; *) continue ;; esac
    case $q in *'<'*|*'>'*) continue ;; esac
    first=${q%%/*}
    if [[ $top == *" $first "* ]]; then
      path=$q
    elif [[ $core == *" $first "* ]]; then
      path=core/$q
    else
      continue
    fi
    if ! compgen -G "$path" >/dev/null; then
      echo "$f names $p, which is not in the tree"
      bad=1
    fi
  done < <(text "$f" | grep -oE '[][A-Za-z0-9_.*<>/+-]+' | sed 's/[.]*$//' |
             grep -E '/.*\.(c|h|md|sh|cmake|cpp|py|supp|txt|in|\[[a-z]+\])$' | sort -u)
done < <(files)
exit $bad
