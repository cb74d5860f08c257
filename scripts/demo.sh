#!/usr/bin/env bash
# The README's main command (about a minute on 2 cores): installs what is
# missing, builds tapegrad in Release (build/release), trains a 2-layer
# transformer on the reverse task with seqtask's defaults into out/reverse/,
# prints the held-out accuracy and where the pictures are, then draws the
# attention of the trained model for one more input with `seqtask attn`.
# Usage: scripts/demo.sh [extra seqtask train flags, e.g. --mode per-head]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build=build/release
mkdir -p build out
echo "== build (Release, $build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTAPEGRAD_TESTS=OFF >build/release.configure.log 2>&1 ||
  { cat build/release.configure.log; exit 1; }
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target seqtask >build/release.build.log 2>&1 ||
  { tail -40 build/release.build.log; exit 1; }

echo "== train: reverse a sequence of 4-12 symbols (seqtask train --task reverse --overwrite --out out/reverse)"
summary=$("$build/seqtask" train --task reverse --overwrite --out out/reverse "$@")
echo "$summary"

input="3 14 1 5 9 2 6 11"
echo "== attention of the trained model for the input: $input"
"$build/seqtask" attn --model out/reverse/model.safetensors --input "$input" \
  --png out/reverse/attn_example.png

echo
echo "final: $(grep -o 'held-out exact-sequence accuracy [0-9.]*%' <<<"$summary")"
echo "loss and accuracy curves   out/reverse/loss.png"
echo "attention, held-out input  out/reverse/attention.png"
echo "attention, '$input'  out/reverse/attn_example.png"
echo "in the second layer the rows after SEP attend to the source read backwards: the anti-diagonal"
echo "more: $build/seqtask eval --model out/reverse/model.safetensors    (and generate, attn, heads; --help)"
