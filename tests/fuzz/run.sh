#!/usr/bin/env bash
# Builds a fuzz target with clang (libFuzzer + ASan + UBSan) straight from
# the library (and seqtask) sources, then runs it.
#
#   tests/fuzz/run.sh [SECONDS] [more libFuzzer flags]     default 60 seconds
#   DOUBLE=1 tests/fuzz/run.sh 600                          a float64 program (tg_real = double)
#   TARGET=data tests/fuzz/run.sh 600                       seqtask --data files
#   TARGET=args tests/fuzz/run.sh 600                       seqtask command lines
#   FUZZ_OUT=dir tests/fuzz/run.sh                          build/work dir
#
# TARGET is safetensors (the default), data or args. The working corpus and
# any crash-* / leak-* / timeout-* artifacts go to $FUZZ_OUT (default
# /tmp/tapegrad-fuzz, or /tmp/tapegrad-fuzz-TARGET for the seqtask targets);
# the seeds (corpus/TARGET) and past findings (corpus/regress) are read,
# never written.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
target=${TARGET:-safetensors}
case $target in
  safetensors) out=${FUZZ_OUT:-/tmp/tapegrad-fuzz}
    srcs=(core/io/read.c core/io/json.c core/io/write.c core/engine/error.c core/engine/alloc.c core/engine/tensor.c core/engine/params.c core/engine/named.c core/io/checksum.c core/io/elements.c core/engine/dtype.c core/engine/version.c)
    extra=(-dict="$here/safetensors.dict") ;;
  data) out=${FUZZ_OUT:-/tmp/tapegrad-fuzz-data}
    srcs=(examples/seqtask/data.c core/engine/alloc.c core/engine/error.c core/engine/version.c)
    extra=() ;;
  args) out=${FUZZ_OUT:-/tmp/tapegrad-fuzz-args}
    srcs=(examples/seqtask/cli.c examples/seqtask/data.c core/engine/alloc.c core/engine/error.c core/engine/version.c)
    extra=(-dict="$here/args.dict") ;;
  *) echo "run.sh: TARGET must be safetensors, data or args, not '$target'" >&2; exit 2 ;;
esac
mkdir -p "$out/corpus" "$out/artifacts" "$out/include"
ln -sfn "$root" "$out/include/tapegrad"  # <tapegrad/...> as in the CMake build tree

clang -std=c11 -g -O1 -D_POSIX_C_SOURCE=200809L ${DOUBLE:+-DTAPEGRAD_DOUBLE} \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
  -I"$out/include" "$here/fuzz_$target.c" "${srcs[@]/#/$root/}" -lcjson -lm -o "$out/fuzz_$target"

exec "$out/fuzz_$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  "${extra[@]}" -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$@" \
  "$out/corpus" "$here/corpus/$target" "$here/corpus/regress"
