#!/usr/bin/env bash
# Builds the safetensors fuzz target with clang (libFuzzer + ASan + UBSan)
# straight from the library sources, then runs it.
#
#   tests/fuzz/run.sh [SECONDS] [more libFuzzer flags]     default 60 seconds
#   DOUBLE=1 tests/fuzz/run.sh 600                          tg_real = double
#   FUZZ_OUT=dir tests/fuzz/run.sh                          build/work dir
#
# The working corpus and any crash-* / leak-* / timeout-* artifacts go to
# $FUZZ_OUT (default /tmp/tapegrad-fuzz); the seeds (corpus/safetensors) and
# past findings (corpus/regress) are read, never written.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
out=${FUZZ_OUT:-/tmp/tapegrad-fuzz}
mkdir -p "$out/corpus" "$out/artifacts"

srcs=(core/io.c core/io_json.c core/io_write.c core/error.c core/alloc.c core/tensor.c core/params.c)
clang -std=c11 -g -O1 -D_POSIX_C_SOURCE=200809L ${DOUBLE:+-DTAPEGRAD_DOUBLE} \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
  -I"$root" "$here/fuzz_safetensors.c" "${srcs[@]/#/$root/}" -lcjson -lm -o "$out/fuzz_safetensors"

exec "$out/fuzz_safetensors" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -dict="$here/safetensors.dict" -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$@" \
  "$out/corpus" "$here/corpus/safetensors" "$here/corpus/regress"
