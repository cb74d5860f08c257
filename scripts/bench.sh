#!/usr/bin/env bash
# Runs every benchmark in one go and prints one table: tapegrad,
# PyTorch and their ratio per row, with the targets. See docs/PERF.md.
#
# Usage: scripts/bench.sh [options]
#   --quick          fewer repetitions, shorter sweep (a smoke run)
#   --no-torch       skip the PyTorch side even when it is installed
#   --no-sweep       skip the sweeps (MHA over L and B, toy model over L)
#   --no-train       skip the time-to-99% training runs
#   --build DIR      build directory (default build/bench)
#   --write-docs     also put the table into docs/PERF.md (between the
#                    "bench:begin" / "bench:end" markers) and redraw
#                    docs/perf_scaling.png (the MHA sweeps) and
#                    docs/perf_lsweep.png (the toy model's L sweep)
#   --section NAME   with --write-docs: the markers "bench-NAME:begin" /
#                    "bench-NAME:end" instead (e.g. a run with another
#                    OPENBLAS_CORETYPE), and no plot
# Environment: OPENBLAS_CORETYPE (e.g. Cooperlake) is passed on to both
# tapegrad and PyTorch (both use the system OpenBLAS); the table says which
# OpenBLAS kernel ran.
#
# The PyTorch side runs only if `/usr/bin/python3 -c "import torch"` works
# (Debian python3-torch). Every tapegrad / PyTorch pair runs back to back,
# each configuration in its own process (peak RSS is per process). The raw
# "ROW key=value" lines are kept in DIR/bench_rows.txt, the table in
# DIR/perf_table.md.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

quick=0 torch=1 sweep=1 train=1 write_docs=0 build=build/bench section=""
cmdline="scripts/bench.sh${*:+ $*}"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --no-torch) torch=0 ;;
    --no-sweep) sweep=0 ;;
    --no-train) train=0 ;;
    --write-docs) write_docs=1 ;;
    --build) build=$2; shift ;;
    --section) section=$2; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "${OPENBLAS_CORETYPE:-}" ] && cmdline="OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE $cmdline"

py=/usr/bin/python3
if [ $torch -eq 1 ] && ! $py -c "import torch" 2>/dev/null; then
  echo "bench.sh: PyTorch not importable with $py (Debian python3-torch): tapegrad side only" >&2
  torch=0
fi

load0=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load0" 'BEGIN { exit !(l > 1.0) }'; then
  echo "bench.sh: the load average is $load0 on $(nproc) cores: other work is running, the timings will be noisy" >&2
fi
echo "== build (Release) in $build" >&2
mkdir -p "$build"
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTAPEGRAD_TESTS=OFF >"$build/configure.log" 2>&1 ||
   ! cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1; then
  tail -30 "$build/configure.log" "$build/build.log" >&2
  exit 1
fi

rows=$build/bench_rows.txt
: >"$rows"
# run LABEL CMD...: appends the command's ROW lines to $rows, progress to stderr.
run() {
  local label=$1; shift
  printf '  %-40s' "$label" >&2
  local out
  if ! out=$("$@" 2>"$build/last_err.log"); then
    echo " FAILED: $(tail -3 "$build/last_err.log")" >&2
    return 1
  fi
  grep '^ROW' <<<"$out" >>"$rows"
  grep '^ROW' <<<"$out" | grep -o ' ms=[0-9.]*\| seconds_to_99=[0-9.a-z_]*\| gflops=[0-9.]*' | head -4 | tr -d '\n' >&2
  echo >&2
}

if [ $quick -eq 1 ]; then reps=5 greps=3 budget=2 sreps=3 rounds=1; else reps=30 greps=15 budget=10 sreps=7 rounds=3; fi
bin=$build


# seqtask train --help lists every flag as "  --name VALUES  help [default]",
# a long help continued on lines indented further (joined here). The
# warmup's default follows --steps in both programs.
margs=()
if [ -x "$bin/seqtask" ]; then
  while read -r name def; do
    case $name in
      symbols|min-len|max-len|layers|d-model|heads|d-head|d-ff|mode|dropout|batch|steps|lr|\
      schedule|optimizer|weight-decay|clip|seed|eval-every|eval-size|target-acc) margs+=("--$name" "$def") ;;
    esac
  done < <("$bin/seqtask" train --help 2>&1 |
    awk '/^   / { sub(/^ +/, " "); line = line $0; next } { if (NR > 1) print line; line = $0 } END { print line }' |
    sed -n 's/^  --\([a-z-]*\) .*\[\([^]]*\)\]$/\1 \2/p')
  echo "== seqtask train's defaults: ${margs[*]}" >&2
else
  echo "== no seqtask binary: bench_model's built-in defaults" >&2
fi

# The step benchmarks run in $rounds rounds; the table takes the median of the
# rounds' medians (and the best repetition of all), so one disturbed process
# does not decide a row.
shapes=("toy 32 16 64 4" "small 32 64 128 4" "large 16 128 512 8")
for ((round = 1; round <= rounds; round++)); do
  echo "== round $round of $rounds: sgemm ceiling" >&2
  run "sgemm 2048^3" "$bin/bench_sgemm" --reps "$sreps"
  run "tapegrad's own sgemm 2048^3" "$bin/bench_gemm" --only square --reps "$sreps"
  echo "== round $round of $rounds: MHA step (causal self-attention, forward + backward + Adam)" >&2
  for s in "${shapes[@]}"; do
    read -r tag B L D H <<<"$s"
    a=(--B "$B" --L "$L" --D "$D" --H "$H" --reps "$reps" --budget "$budget")
    run "tapegrad fused    $tag" "$bin/bench_mha" "${a[@]}" --tag "$tag" --mode fused
    run "tapegrad per_head $tag" "$bin/bench_mha" "${a[@]}" --tag "$tag" --mode per_head
    run "tapegrad fused 1 thread $tag" "$bin/bench_mha" "${a[@]}" --tag "${tag}_t1" --mode fused --threads 1
    if [ $torch -eq 1 ]; then
      run "torch manual      $tag" $py bench/torch/bench_mha.py "${a[@]}" --tag "$tag" --impl manual
      run "torch nn.MHA      $tag" $py bench/torch/bench_mha.py "${a[@]}" --tag "$tag" --impl nn_mha
      run "torch manual 1 thread $tag" env OPENBLAS_NUM_THREADS=1 $py bench/torch/bench_mha.py "${a[@]}" \
        --tag "${tag}_t1" --impl manual --threads 1
    fi
  done
  echo "== round $round of $rounds: toy-model step (seqtask's defaults, reverse task)" >&2
  m=("${margs[@]}" --reps "$reps" --budget "$budget")
  run "tapegrad model step" "$bin/bench_model" "${m[@]}"
  run "tapegrad model step 1 thread" "$bin/bench_model" "${m[@]}" --threads 1 --tag step_t1
  if [ $torch -eq 1 ]; then
    run "torch model step" $py bench/torch/bench_model.py --step "${m[@]}"
    run "torch model step 1 thread" env OPENBLAS_NUM_THREADS=1 $py bench/torch/bench_model.py --step "${m[@]}" \
      --threads 1 --tag step_t1
  fi
  echo "== round $round of $rounds: GPT-2-style step (d_model 256, 4 layers, 4 heads, d_ff 1024, vocab 64; copy)" >&2
  # B x T = 16 x 64 and 64 x 32: copy examples of exactly 31 and 15 symbols (T = 2 n + 2)
  for s in "16 31 gpt_b16" "64 15 gpt_b64"; do
    read -r gB gn gtag <<<"$s"
    g=(--task copy --symbols 60 --min-len "$gn" --max-len "$gn" --batch "$gB" --d-model 256 --layers 4 --heads 4
       --d-ff 1024 --optimizer adamw --schedule constant --warmup 0 --clip 0 --reps "$greps" --budget "$budget")
    run "tapegrad gpt2 B=$gB" "$bin/bench_model" "${g[@]}" --tag "$gtag"
    run "tapegrad gpt2 B=$gB 1 thread" "$bin/bench_model" "${g[@]}" --threads 1 --tag "${gtag}_t1"
    [ $torch -eq 1 ] && run "torch gpt2 B=$gB" $py bench/torch/bench_model.py --step "${g[@]}" --tag "$gtag"
    # the same step with the forward under bfloat16 autocast, right after it (B=16)
    if [ "$gB" = 16 ]; then
      run "tapegrad gpt2 B=$gB bf16" "$bin/bench_model" "${g[@]}" --precision bf16 --tag "${gtag}_bf16"
      # both precisions step by step on one model: their ratio, which a shared host's noise moves least
      run "tapegrad gpt2 B=$gB f32 vs bf16, alternating" "$bin/bench_model" "${g[@]}" --precision both \
        --tag "${gtag}_both"
      run "tapegrad gpt2 B=$gB f32 vs bf16, alternating, 1 thread" "$bin/bench_model" "${g[@]}" --precision both \
        --threads 1 --tag "${gtag}_both_t1"
      [ $torch -eq 1 ] && run "torch gpt2 B=$gB bf16" $py bench/torch/bench_model.py --step "${g[@]}" --precision bf16 \
        --tag "${gtag}_bf16"
    fi
    # the same step with RoPE in every layer instead of learned positions, right after it
    [ "$gB" = 16 ] && run "tapegrad gpt2 B=$gB rope" "$bin/bench_model" "${g[@]}" --pos rope --tag "${gtag}_rope"
  done
done

echo "== bfloat16: tg_gemm_half at the GPT-2-style step's GEMM shapes (and tg_sgemm's), and this CPU's bf16 peak" >&2
run "bf16 GEMM, the GPT-2 step's shapes" "$bin/bench_gemm" --dtype bf16 --only gpt_ --reps "$greps" --budget 3
run "register-only peaks (FMA, bf16)" "$bin/bench_peak"

echo "== charlm's default model (B 32 x T 64, d_model 128, 4 layers) next to its PyTorch twin, gpt2 and llama" >&2
# log_ms_row BENCH TAG LOG: a ROW of the ms column of a training run's log.csv,
# steps 6..25 (the first 5 warm up): the median and the best
log_ms_row() {
  tail -n +7 "$3" | cut -d, -f5 | sort -g | awk -v b="$1" -v a="$2" '{ ms[++n] = $1 }
    END { printf "ROW bench=%s impl=tapegrad tag=%s ms=%s min_ms=%s\n", b, a, n % 2 ? ms[(n + 1) / 2] : (ms[n / 2] + ms[n / 2 + 1]) / 2, ms[1] }'
}
charlm_step() {
  local dir=$build/charlm-$1
  "$bin/charlm" train --arch "$1" --steps 25 --warmup 2 --eval-every 0 --save-every 0 --overwrite --out "$dir" \
    >/dev/null 2>&1 || return 1
  log_ms_row charlm "$1" "$dir/log.csv"
}
if [ -x "$bin/charlm" ]; then
  for round in $(seq "$rounds"); do
    for a in gpt2 llama; do
      run "tapegrad charlm $a step" charlm_step "$a"
      [ $torch -eq 1 ] && run "torch charlm $a step" $py bench/torch/charlm_twin.py --step --arch "$a" --charlm "$bin/charlm"
    done
  done
fi

echo "== cnn's default network (batch 64 of Fashion-MNIST) next to its PyTorch twin" >&2
cnn_step() {
  # (not $build/cnn: that is the program)
  "$bin/cnn" --steps 25 --limit 2000 --overwrite --out "$build/cnn-default" >/dev/null 2>&1 || return 1
  log_ms_row cnn default "$build/cnn-default/log.csv"
}
if [ -x "$bin/cnn" ]; then
  for round in $(seq "$rounds"); do
    run "tapegrad cnn step" cnn_step
    [ $torch -eq 1 ] && run "torch cnn step" $py bench/torch/cnn_twin.py
  done
fi

echo "== long sequences: seqtask copy at --max-len 250 and 500 (batch 8, 2 steps, 4 held-out examples)" >&2
# The peak RSS of the whole run (/usr/bin/time), its second step's ms (log.csv)
# and the wall time of `seqtask eval` on 4 held-out examples with the model it wrote.
seqtask_long() {
  local N=$1 dir=$build/seqtask-len$1 rss step t0 t1
  rm -rf "$dir"
  /usr/bin/time -f '%M' -o "$dir.rss" "$bin/seqtask" train --task copy --min-len "$N" --max-len "$N" --batch 8 \
    --steps 2 --warmup 1 --eval-size 4 --save-every 0 --out "$dir" >/dev/null || return 1
  rss=$(tail -1 "$dir.rss")
  step=$(awk -F, 'NR == 3 { print $5 }' "$dir/log.csv")
  t0=$(date +%s%N)
  "$bin/seqtask" eval --model "$dir/model.safetensors" --eval-size 4 --show 0 >/dev/null || return 1
  t1=$(date +%s%N)
  echo "ROW bench=seqtask impl=tapegrad tag=len$N N=$N step_ms=$step eval4_ms=$(( (t1 - t0) / 1000000 )) peak_rss_mib=$((rss / 1024))"
}
if [ -x "$bin/seqtask" ] && [ -x /usr/bin/time ]; then
  for N in 250 500; do run "seqtask copy --max-len $N" seqtask_long "$N"; done
fi

echo "== decoding with the KV cache: multi-head, grouped-query and multi-query attention at the same d_model" >&2
# bench_decode: 4 rows prefilled with 502 positions, then decoded one position at a time to 1,003.
decodes=("64 4 4" "64 4 2" "64 4 1" "256 8 8" "256 8 2" "256 8 1")
for cfg in "${decodes[@]}"; do
  read -r D H KV <<<"$cfg"
  run "decode D=$D heads=$H kv-heads=$KV" "$bin/bench_decode" --d-model "$D" --heads "$H" --kv-heads "$KV" \
    --reps "$reps" --budget 3 --tag "D${D}_kv$KV"
done

echo "== time to 99% on reverse" >&2
if [ $train -eq 1 ] && [ -x "$bin/seqtask" ]; then
  # seqtask's own clock: from the first step to the evaluation that reaches --target-acc
  seqtask_train() {
    local out line steps secs acc
    out=$("$bin/seqtask" train --task reverse --overwrite --out "$build/seqtask-reverse" --save-every 0 2>/dev/null) || return 1
    line=$(grep -m1 '^step [0-9]*, [0-9.]* s: held-out exact-sequence accuracy' <<<"$out") || return 1
    read -r steps secs acc < <(sed -E 's/^step ([0-9]+), ([0-9.]+) s: held-out exact-sequence accuracy ([0-9.]+)%.*/\1 \2 \3/' <<<"$line")
    local target=0.99
    for ((i = 0; i < ${#margs[@]}; i++)); do [ "${margs[i]}" = --target-acc ] && target=${margs[i+1]}; done
    if awk -v a="$acc" -v t="$target" 'BEGIN { exit !(a / 100 >= t) }'; then
      echo "ROW bench=model impl=tapegrad tag=train task=reverse steps=$steps seconds=$secs acc=$acc steps_to_99=$steps seconds_to_99=$secs"
    else
      echo "ROW bench=model impl=tapegrad tag=train task=reverse steps=$steps seconds=$secs acc=$acc steps_to_99=not_reached seconds_to_99=not_reached"
    fi
  }
  run "tapegrad time to 99% (reverse)" seqtask_train
  [ $torch -eq 1 ] && run "torch time to 99% (reverse)" $py bench/torch/bench_model.py --train --task reverse "${margs[@]}"
fi

if [ $sweep -eq 1 ]; then
  echo "== scaling sweep, large MHA (D=512 H=8), fused" >&2
  if [ $quick -eq 1 ]; then Ls="32 128 512" Bs="1 16 64" sb=1; else Ls="32 64 128 256 512 1024" Bs="1 2 4 8 16 32 64" sb=5; fi
  sw=(--D 512 --H 8 --reps 10 --warmup 1 --budget "$sb")
  for L in $Ls; do
    run "tapegrad L=$L B=16" "$bin/bench_mha" "${sw[@]}" --B 16 --L "$L" --tag sweepL
    [ $torch -eq 1 ] && run "torch    L=$L B=16" $py bench/torch/bench_mha.py "${sw[@]}" --B 16 --L "$L" --tag sweepL
  done
  for B in $Bs; do
    run "tapegrad B=$B L=128" "$bin/bench_mha" "${sw[@]}" --B "$B" --L 128 --tag sweepB
    [ $torch -eq 1 ] && run "torch    B=$B L=128" $py bench/torch/bench_mha.py "${sw[@]}" --B "$B" --L 128 --tag sweepB
  done
fi

if [ $sweep -eq 1 ]; then
  echo "== L sweep, toy model (batch 4, d_model 64, 2 layers, 4 heads, T = L): training step" >&2
  if [ $quick -eq 1 ]; then Ms="64 256 1024 4096" sb=1; else Ms="64 128 256 512 1024 2048 4096" sb=5; fi
  for L in $Ms; do
    mw=(--batch 4 --d-model 64 --layers 2 --heads 4 --min-len $((L / 2 - 1)) --max-len $((L / 2 - 1))
        --reps 5 --burn-in 1 --budget "$sb" --tag sweepM)
    run "tapegrad model L=$L" "$bin/bench_model" "${mw[@]}"
    [ $torch -eq 1 ] && run "torch    model L=$L" $py bench/torch/bench_model.py --step "${mw[@]}"
  done
fi

echo "== sgemm ceiling again (the best repetition of all sgemm runs is the ceiling)" >&2
run "sgemm 2048^3" "$bin/bench_sgemm" --reps "$sreps"

# ---- the table -----------------------------------------------------------------
cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
# bfloat16 instructions of this CPU (none: the half GEMMs widen to float32, no bfloat16 peak to compare with)
bf16_isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -x 'avx512_bf16\|amx_bf16\|amx_tile' | tr '\n' ' ')
cores=$(nproc)
core=$("$bin/bench_sgemm" --n 64 --reps 1 | sed -n 's/^# OpenBLAS \([^,]*\),.*/\1/p')
torchv=$([ $torch -eq 1 ] && $py -c "import torch; print(torch.__version__)" || echo "not run")
table=$build/perf_table.md
{
  echo "Machine: $cpu, $cores cores; OpenBLAS kernel: $core; PyTorch $torchv (2 threads)."
  echo "Command: \`$cmdline\` — $(date -u '+%Y-%m-%d %H:%M UTC'); load average $load0 before the build, $(cut -d' ' -f1 /proc/loadavg) at the end."
  echo
  awk -v bf16_isa="${bf16_isa% }" -f - "$rows" <<'AWK'
function fmt(x) { return x == "" ? "—" : (x + 0 >= 100 ? sprintf("%.0f", x) : (x + 0 >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x))) }
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "" : a / b }
function verdict(x, target, higher,   r) {
  if (x == "") return "not measured"
  if (higher) return x + 0 >= target ? "met" : sprintf("missed (%.2f of %g)", x, target)
  return x + 0 <= target ? "met" : sprintf("missed (%.2f vs %g)", x, target)
}
# spb (global): the speedup on the best repetitions, printed by and reset in row()
function row(name, tg, th, sp, target, status) {
  printf "| %s | %s | %s | %s | %s | %s | %s |\n", name, tg, th, sp == "" ? "—" : sprintf("%.2fx", sp),
    spb == "" ? "—" : sprintf("%.2fx", spb), target, status
  spb = ""
}
function best(k1, k2) { spb = ratio(v[k1, "min_ms"], v[k2, "min_ms"]) }
function pc(x) { return x == "" ? "—" : sprintf("%.0f%%", 100 * x) }
# a speedup target on both the medians (sp) and the best repetitions (spb)
function verdict_mb(sp, b, target) {
  if (sp == "" || b == "") return "not measured"
  if (sp + 0 >= target && b + 0 >= target) return "met on the medians and the best repetitions"
  if (sp + 0 >= target) return sprintf("met on the medians, missed on the best repetitions (%.2f of %g)", b, target)
  if (b + 0 >= target) return sprintf("missed on the medians (%.2f of %g), met on the best repetitions", sp, target)
  return sprintf("missed (medians %.2f, best %.2f, of %g)", sp, b, target)
}
# GEMM GFLOP/s of row k at its median (and, in gb, at its best repetition)
function gemm_rate(k) { gb = (v[k, "gflops"] == "" || v[k, "min_ms"] + 0 == 0) ? "" : v[k, "gflops"] * v[k, "ms"] / v[k, "min_ms"]; return v[k, "gflops"] }
# "cpu / wall (ratio)" ms per step of row k
function cpu_wall(k) {
  if (v[k, "cpu_ms"] == "" || v[k, "wall_ms"] + 0 == 0) return "—"
  return sprintf("%s / %s (%.2f)", fmt(v[k, "cpu_ms"]), fmt(v[k, "wall_ms"]), v[k, "cpu_ms"] / v[k, "wall_ms"])
}
/^ROW / {
  delete kv
  for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
  # the ceiling: the best sgemm repetition of the whole run (a peak, so noise can only lower it)
  if (kv["bench"] == "sgemm" && kv["name"] ~ /^square/) {
    g = kv["min_ms"] + 0 > 0 ? 2 * kv["M"] * kv["N"] * kv["K"] / (kv["min_ms"] * 1e6) : kv["gflops"] + 0
    if (g > ceil) ceil = g
    if (kv["name"] == "square_t1" && g > ceil1) ceil1 = g
    next
  }
  # bfloat16 GEMM rows: the time-weighted rate over the shapes (sum of flops / sum of times), f32 alike
  if (kv["bench"] == "gemm_bf16") {
    f = 2 * kv["M"] * kv["N"] * kv["K"]; bk = kv["half_kernel"]; bflop += f
    for (t = 1; t <= 2; t++) { bs[t] += kv["half_t" t] + 0 > 0 ? f / kv["half_t" t] : 0; fs[t] += kv["tg_t" t] + 0 > 0 ? f / kv["tg_t" t] : 0 }
    next
  }
  # the bfloat16 peak: the best repetition of vdpbf16ps or tdpbf16ps, per thread count (none: unsupported)
  if (kv["bench"] == "peak") {
    if (kv["name"] ~ /bf16ps/ && kv["best_gflops"] + 0 > bpeak[kv["threads"]]) bpeak[kv["threads"]] = kv["best_gflops"] + 0
    next
  }
  # tapegrad's own sgemm (core/kernels/gemm.c), the best repetition, for reference
  if (kv["bench"] == "gemm" && kv["name"] == "square") {
    if (kv["best_tg_t2"] + 0 > tgceil) tgceil = kv["best_tg_t2"] + 0
    if (kv["best_tg_t1"] + 0 > tgceil1) tgceil1 = kv["best_tg_t1"] + 0
    if (kv["best_tg_t1"] + 0 > tgceil) tgceil = kv["best_tg_t1"] + 0
    next
  }
  k = kv["bench"] "|" kv["impl"] "|" kv["tag"]
  if (kv["tag"] == "sweepM") kv["L"] = kv["T"]
  if (kv["tag"] ~ /^sweep/) k = k "|" kv["B"] "|" kv["L"]
  for (f in kv) v[k, f] = kv[f]
  if (!(k in nr)) keys[++n_keys] = k
  nr[k]++
  ms_[k, nr[k]] = kv["ms"]; cpu_[k, nr[k]] = kv["cpu_ms"]; wall_[k, nr[k]] = kv["wall_ms"]
  # bench_model --precision both: its own medians and ratio, per round
  np = split("ms_f32 ms_bf16 speedup speedup_q1 speedup_q3", pf, " ")
  for (j = 1; j <= np; j++) pair_[k, pf[j], nr[k]] = kv[pf[j]]
  if (kv["min_ms"] != "" && (!((k, "min_ms") in best_) || kv["min_ms"] + 0 < best_[k, "min_ms"])) best_[k, "min_ms"] = kv["min_ms"] + 0
  if (kv["tag"] ~ /^sweep[LB]/ && !((kv["tag"], kv["B"], kv["L"]) in seen)) {
    seen[kv["tag"], kv["B"], kv["L"]] = 1; order[++n_sw] = kv["tag"] "|" kv["B"] "|" kv["L"]
  }
  if (kv["tag"] == "sweepM" && !(kv["L"] in seenM)) { seenM[kv["L"]] = 1; orderM[++n_m] = kv["L"] }
}
function median_of(m, k, n,   i, j, t, a) {
  for (i = 1; i <= n; i++) a[i] = m[k, i] + 0
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
  # several rounds of a row: the median of the medians, the best repetition, GFLOP/s scaled alike
  for (i = 1; i <= n_keys; i++) {
    k = keys[i]
    if (nr[k] < 2 || v[k, "ms"] == "") continue
    med = median_of(ms_, k, nr[k])
    if (v[k, "cpu_ms"] != "") { v[k, "cpu_ms"] = median_of(cpu_, k, nr[k]); v[k, "wall_ms"] = median_of(wall_, k, nr[k]) }
    if (v[k, "gflops"] != "") v[k, "gflops"] = v[k, "gflops"] * v[k, "ms"] / med
    if (v[k, "speedup"] != "") for (j = 1; j <= np; j++) {
      for (r = 1; r <= nr[k]; r++) pm[k, r] = pair_[k, pf[j], r]
      v[k, pf[j]] = median_of(pm, k, nr[k])
    }
    v[k, "ms"] = med; v[k, "min_ms"] = best_[k, "min_ms"]; v[k, "rounds"] = nr[k]
  }
  print "| benchmark | tapegrad | PyTorch | speedup (PyTorch / tapegrad), medians | speedup, best repetitions | target | status (on the medians unless it says otherwise) |"
  print "| --- | ---: | ---: | ---: | ---: | --- | --- |"
  row("sgemm 2048³ ceiling (best repetition of all sgemm runs), GFLOP/s", fmt(ceil), "", "", "", "")
  row("sgemm 2048³ on 1 thread (best repetition), GFLOP/s", fmt(ceil1), "", "", "", "")
  row("tapegrad's own sgemm (core/kernels/gemm.c) 2048³, 2 threads / 1 thread (best repetition), GFLOP/s",
      fmt(tgceil) " / " fmt(tgceil1), "", "", "(reference)", "")
  split("toy:B=32 L=16 D=64 H=4:4,small:B=32 L=64 D=128 H=4:3,large:B=16 L=128 D=512 H=8:1.5", S, ",")
  for (i = 1; i <= 3; i++) {
    split(S[i], s, ":"); tag = s[1]
    f = v["mha|tapegrad_fused|" tag, "ms"]; ph = v["mha|tapegrad_per_head|" tag, "ms"]
    th = v["mha|torch_manual|" tag, "ms"]; nm = v["mha|torch_nn_mha|" tag, "ms"]
    sp = ratio(th, f)
    best("mha|torch_manual|" tag, "mha|tapegrad_fused|" tag)
    row("MHA step " tag " (" s[2] "), fused, ms", fmt(f), fmt(th), sp, "≥ " s[3] "x", verdict(sp, s[3], 1))
    best("mha|torch_manual|" tag, "mha|tapegrad_per_head|" tag)
    row("MHA step " tag ", per-head, ms", fmt(ph), fmt(th), ratio(th, ph), "", "")
    t1 = v["mha|tapegrad_fused|" tag "_t1", "ms"]
    best("mha|torch_nn_mha|" tag, "mha|tapegrad_fused|" tag)
    row("MHA step " tag ", PyTorch nn.MultiheadAttention, ms", "", fmt(nm), ratio(nm, f), "(reference)", "")
    p1 = v["mha|torch_manual|" tag "_t1", "ms"]
    best("mha|torch_manual|" tag "_t1", "mha|tapegrad_fused|" tag "_t1")
    row("MHA step " tag ", both on 1 thread (tapegrad fused / PyTorch manual), ms", fmt(t1), fmt(p1), ratio(p1, t1), "(reference)", "")
  }
  f = v["mha|tapegrad_fused|large", "ms"]; ph = v["mha|tapegrad_per_head|large", "ms"]
  r = ratio(ph, f)
  row("large: per-head / fused time", fmt(r), "", "", "≤ 1.5", verdict(r, 1.5, 0))
  g = v["mha|tapegrad_fused|large", "gflops"]; gt = v["mha|torch_manual|large", "gflops"]
  pct = ratio(g, ceil)
  row("large fused: effective GFLOP/s", fmt(g), fmt(gt), "", "", "")
  row("large fused: share of sgemm ceiling", pct == "" ? "—" : sprintf("%.0f%%", 100 * pct),
      (gt == "" || ceil == 0) ? "—" : sprintf("%.0f%%", 100 * gt / ceil), "", "≥ 90%", verdict(pct, 0.9, 1))
  pct = ratio(g, tgceil)
  row("large fused: share of tapegrad's own sgemm 2048³", pct == "" ? "—" : sprintf("%.0f%%", 100 * pct),
      (gt == "" || tgceil == 0) ? "—" : sprintf("%.0f%%", 100 * gt / tgceil), "", "(reference)", "")
  g1 = v["mha|tapegrad_fused|large_t1", "gflops"]; gt1 = v["mha|torch_manual|large_t1", "gflops"]; pct = ratio(g1, ceil1)
  row("large fused, both on 1 thread: share of the 1-thread sgemm", pct == "" ? "—" : sprintf("%.0f%% (%s GFLOP/s)", 100 * pct, fmt(g1)),
      (gt1 == "" || ceil1 == 0) ? "—" : sprintf("%.0f%% (%s GFLOP/s)", 100 * gt1 / ceil1, fmt(gt1)), "", "(reference)", "")
  m = v["model|tapegrad|step", "ms"]; mt = v["model|torch|step", "ms"]; sp = ratio(mt, m)
  best("model|torch|step", "model|tapegrad|step")
  row("toy-model step (reverse defaults), ms", fmt(m), fmt(mt), sp, "≥ 3x, medians and best", verdict_mb(sp, spb, 3))
  t1 = v["model|tapegrad|step_t1", "ms"]
  p1 = v["model|torch|step_t1", "ms"]
  best("model|torch|step_t1", "model|tapegrad|step_t1"); sp = ratio(p1, t1)
  row("toy-model step, both on 1 thread, ms", fmt(t1), fmt(p1), sp, "≥ 3x, medians and best", verdict_mb(sp, spb, 3))
  m = v["model|tapegrad|train", "seconds_to_99"]; mt = v["model|torch|train", "seconds_to_99"]
  ms = v["model|tapegrad|train", "steps_to_99"]; mts = v["model|torch|train", "steps_to_99"]
  sp = (m ~ /^[0-9.]+$/ && mt ~ /^[0-9.]+$/) ? ratio(mt, m) : ""
  row("time to 99% exact match on reverse, s (steps)", m == "" ? "—" : fmt(m) " (" ms ")",
      mt == "" ? "—" : fmt(mt) " (" mts ")", sp, "≥ 5x", verdict(sp, 5, 1))
  g = gemm_rate("model|tapegrad|step"); pct = ratio(g, ceil)
  row("toy-model step: GEMM GFLOP/s, share of the sgemm ceiling (median; best repetition)",
      pct == "" ? "—" : sprintf("%s (%.0f%%; best %s)", fmt(g), 100 * pct, pc(ratio(gb, ceil))), "", "", "≥ 60%", verdict(pct, 0.6, 1))
  g1 = gemm_rate("model|tapegrad|step_t1"); pct = ratio(g1, ceil1)
  row("toy-model step on 1 thread: share of the 1-thread sgemm (median; best repetition)",
      pct == "" ? "—" : sprintf("%s (%.0f%%; best %s)", fmt(g1), 100 * pct, pc(ratio(gb, ceil1))), "", "", "(reference)", "")
  # the GPT-2-style shape: d_model 256, 4 layers, 4 heads, d_ff 1024, vocab 64 (copy, AdamW, constant lr, no clipping)
  split("gpt_b16:B=16 T=64,gpt_b64:B=64 T=32", G, ",")
  for (i = 1; i <= 2; i++) {
    split(G[i], s, ":"); k2 = "model|tapegrad|" s[1]; k1 = k2 "_t1"; kp = "model|torch|" s[1]
    best(kp, k2)
    row("GPT-2-style step " s[2] " (d_model 256, 4 layers, 4 heads, d_ff 1024, vocab 64; copy, AdamW, constant lr, no clipping), ms",
        fmt(v[k2, "ms"]), fmt(v[kp, "ms"]), ratio(v[kp, "ms"], v[k2, "ms"]), "(reference)", "")
    g = gemm_rate(k2); pct = ratio(g, ceil); gt = v[kp, "ms"] == "" || g == "" ? "" : g * v[k2, "ms"] / v[kp, "ms"]
    row("GPT-2-style " s[2] ": GEMM GFLOP/s, share of the sgemm ceiling (median; best repetition)",
        pct == "" ? "—" : sprintf("%s (%.0f%%; best %s)", fmt(g), 100 * pct, pc(ratio(gb, ceil))),
        gt == "" ? "" : sprintf("%s (%s)", fmt(gt), pc(ratio(gt, ceil))), "", "≥ 80%", verdict(pct, 0.8, 1))
    g1 = gemm_rate(k1); pct = ratio(g1, ceil1)
    row("GPT-2-style " s[2] ", 1 thread: GEMM GFLOP/s, share of the 1-thread sgemm (median; best repetition); ms",
        pct == "" ? "—" : sprintf("%s (%.0f%%; best %s); %s ms", fmt(g1), 100 * pct, pc(ratio(gb, ceil1)), fmt(v[k1, "ms"])),
        "", "", "≥ 80%", verdict(pct, 0.8, 1))
  }
  # RoPE's cost: the B=16 step with --pos rope against learned positions, same run
  m = v["model|tapegrad|gpt_b16", "ms"]; mr = v["model|tapegrad|gpt_b16_rope", "ms"]
  r = ratio(mr, m); r = r == "" ? "" : r - 1
  row("GPT-2-style B=16 T=64 with RoPE (--pos rope) / learned positions - 1, 2 threads, ms",
      mr == "" ? "—" : sprintf("%s / %s (%+.1f%%)", fmt(mr), fmt(m), 100 * r), "", "", "< 3%",
      verdict(r, 0.03, 0))
  # bfloat16 autocast (the forward's products on bfloat16 operands) against float32, same run
  k2 = "model|tapegrad|gpt_b16"; kp = "model|torch|gpt_b16"
  a = ratio(v[k2 "_bf16", "ms"], v[k2, "ms"]); b = ratio(v[kp "_bf16", "ms"], v[kp, "ms"])
  row("GPT-2-style B=16: bf16 step / f32 step (tapegrad; PyTorch), 2 threads, ms",
      a == "" ? "—" : sprintf("%.2f (%s / %s)", a, fmt(v[k2 "_bf16", "ms"]), fmt(v[k2, "ms"])),
      b == "" ? "—" : sprintf("%.2f (%s / %s)", b, fmt(v[kp "_bf16", "ms"]), fmt(v[kp, "ms"])), "", "(reported)", "")
  hk = v[k2 "_bf16", "half_kernel"]
  # the same from steps alternating on one model (bench_model --precision both), the target of mixed precision
  txt = ""; sp2 = v[k2 "_both", "speedup"]
  for (t = 2; t >= 1; t--) {
    kb = k2 (t == 2 ? "_both" : "_both_t1")
    txt = txt (t == 2 ? "" : "; 1 thread ") (v[kb, "speedup"] == "" ? "—" : sprintf("%.2fx (%.2f-%.2f; %s / %s ms)",
      v[kb, "speedup"], v[kb, "speedup_q1"], v[kb, "speedup_q3"], fmt(v[kb, "ms_f32"]), fmt(v[kb, "ms_bf16"])))
  }
  hb = v[k2 "_both", "half_kernel"]; if (hb == "") hb = hk
  tgt = hb ~ /emulated/ ? "" : hb ~ /^amx/ ? 2.5 : hb ~ /^avx512bf16/ ? 1.5 : ""
  row("GPT-2-style B=16: f32 step / bf16 step, alternating on one model (median of the pairs, quartiles), 2 threads; 1 thread",
      txt, "", "", tgt == "" ? "(reported)" : sprintf("≥ %.1fx (%s)", tgt, hb), tgt == "" ? "" : verdict(sp2, tgt, 1))
  row("bfloat16 GEMM kernel that ran (core/kernels/gemm_half.h); bfloat16 peak of this CPU",
      (hk == "" ? "—" : hk) "; " (bf16_isa == "" ? "none: no avx512_bf16 / amx_bf16 in /proc/cpuinfo" : "instructions: " bf16_isa),
      "", "", "(reported)", "")
  # the bfloat16 GEMM at the GPT-2-style step's shapes (bench_gemm --dtype bf16 --only gpt_) against this CPU's bf16 peak
  txt = ""
  for (t = 2; t >= 1; t--) {
    g = bs[t] > 0 ? bflop / bs[t] : ""; pk = bpeak[t] > 0 ? bpeak[t] : ""; r = ratio(g, pk)
    txt = txt sprintf("%s%s / %s%s", t == 2 ? "" : "; 1 thread ", fmt(g), fmt(pk), r == "" ? "" : sprintf(" (%.0f%%)", 100 * r))
  }
  row("bf16 GEMM at the step's shapes / bf16 peak of this CPU, GFLOP/s, 2 threads; 1 thread (" (bk == "" ? "not run" : bk) ")",
      txt, "", "", "(reported)", "")
  a = bs[2] > 0 && fs[2] > 0 ? fs[2] / bs[2] : ""; b = bs[1] > 0 && fs[1] > 0 ? fs[1] / bs[1] : ""
  row("bf16 GEMM / tapegrad's f32 GEMM at the step's shapes, same run, 2 threads; 1 thread",
      a == "" ? "—" : sprintf("%.2f; %.2f (f32 %s; %s GFLOP/s)", a, b, fmt(bflop / fs[2]), fmt(bflop / fs[1])), "", "", "(reported)", "")
  # examples/charlm's default model, both families, against bench/torch/charlm_twin.py (same batches, same init)
  split("gpt2:GPT-2 (tied head),llama:LLaMA-style (RMSNorm, SwiGLU, RoPE, 2 key/value heads)", C, ",")
  for (i = 1; i <= 2; i++) {
    split(C[i], s, ":"); k2 = "charlm|tapegrad|" s[1]; kp = "charlm|torch|" s[1]
    best(kp, k2); sp = ratio(v[kp, "ms"], v[k2, "ms"])
    row("charlm default step, " s[2] ", B=32 T=64 d_model 128, 4 layers, 2 threads, ms", fmt(v[k2, "ms"]), fmt(v[kp, "ms"]),
        sp, "> 1x (faster than the twin)", sp == "" ? "not measured" : (sp + 0 > 1 ? "met" : sprintf("missed (%.2fx)", sp)))
  }
  # examples/cnn's default network against bench/torch/cnn_twin.py (the same network, batch and optimizer)
  k2 = "cnn|tapegrad|default"; kp = "cnn|torch|default"
  best(kp, k2); sp = ratio(v[kp, "ms"], v[k2, "ms"])
  row("cnn default step (two 5x5 convolutions, batch 64 of Fashion-MNIST, Adam), 2 threads, ms", fmt(v[k2, "ms"]),
      fmt(v[kp, "ms"]), sp, "> 1x (faster than the twin)",
      sp == "" ? "not measured" : (sp + 0 > 1 ? "met" : sprintf("missed (%.2fx)", sp)))
  # CPU time per step (every thread of the process, user + system) next to wall time: a spinning pool shows
  split("step:toy-model step,gpt_b16:GPT-2-style B=16 T=64,gpt_b64:GPT-2-style B=64 T=32", G, ",")
  for (i = 1; i <= 3; i++) {
    split(G[i], s, ":")
    row(s[2] ", 2 threads: CPU time / wall time per step, ms (all threads; means)", cpu_wall("model|tapegrad|" s[1]),
        cpu_wall("model|torch|" s[1]), "", "(reported)", "")
  }
  # every MHA row's share of the sgemm ceiling with the same threads
  for (i = 1; i <= 3; i++) {
    split(S[i], s, ":"); tag = s[1]
    a = ratio(v["mha|tapegrad_fused|" tag, "gflops"], ceil); b = ratio(v["mha|tapegrad_per_head|" tag, "gflops"], ceil)
    c1 = ratio(v["mha|tapegrad_fused|" tag "_t1", "gflops"], ceil1)
    row("MHA step " tag ": share of the sgemm ceiling, fused / per-head / fused on 1 thread (of the 1-thread sgemm)",
        sprintf("%s / %s / %s", a == "" ? "—" : sprintf("%.0f%%", 100 * a), b == "" ? "—" : sprintf("%.0f%%", 100 * b),
                c1 == "" ? "—" : sprintf("%.0f%%", 100 * c1)), "", "", "(reported)", "")
  }
  # threads never slow a step: 1-thread time / 2-thread time >= 1 at every shape
  for (i = 1; i <= 4; i++) {
    if (i <= 3) { split(S[i], s, ":"); k2 = "mha|tapegrad_fused|" s[1]; k1 = k2 "_t1"; nm = "MHA step " s[1] }
    else { k2 = "model|tapegrad|step"; k1 = "model|tapegrad|step_t1"; nm = "toy-model step" }
    r = ratio(v[k1, "ms"], v[k2, "ms"])
    row(nm ": 1-thread time / 2-thread time", r == "" ? "—" : sprintf("%.2f (%s / %s ms)", r, fmt(v[k1, "ms"]), fmt(v[k2, "ms"])),
        "", "", "≥ 1", verdict(r, 1, 1))
  }
  row("same bits on 1 and 2 threads", "checked by tests/test_parallel.c (scripts/test.sh), not here", "", "", "", "")
  # long sequences: seqtask copy at --max-len 250 and 500
  a = v["seqtask|tapegrad|len250", "peak_rss_mib"]; b = v["seqtask|tapegrad|len500", "peak_rss_mib"]; r = ratio(b, a)
  row("seqtask --max-len 500 / 250: peak RSS", r == "" ? "—" : sprintf("%.2f (%s / %s MiB)", r, fmt(b), fmt(a)), "", "", "≤ 2.5", verdict(r, 2.5, 0))
  a = v["seqtask|tapegrad|len500", "eval4_ms"]; b = v["seqtask|tapegrad|len500", "step_ms"]; r = ratio(a, b)
  row("seqtask --max-len 500: evaluating 4 examples / one training step (batch 8)",
      r == "" ? "—" : sprintf("%.2f (%s / %s ms)", r, fmt(a), fmt(b)), "", "", "< 1", r == "" ? "not measured" : (r < 1 ? "met" : sprintf("missed (%.2f vs 1)", r)))
  # decoding: per D, the step time and cache of each number of key/value heads
  split("64:4 2 1,256:8 2 1", DC, ",")
  for (i = 1; i <= 2; i++) {
    split(DC[i], d, ":"); nkv = split(d[2], kvs, " "); txt = ""
    for (j = 1; j <= nkv; j++) {
      k = "decode|tapegrad|D" d[1] "_kv" kvs[j]
      txt = txt (j > 1 ? "; " : "") sprintf("%s: %s us, %s MiB", j == 1 ? "MHA" : (kvs[j] == 1 ? "MQA" : "GQA " kvs[j]), fmt(v[k, "step_us"]), fmt(v[k, "cache_row_mib"]))
    }
    row("decoding at --max-len 500 (4 rows, positions 502-1002), D=" d[1] ", " kvs[1] " heads: time per step, cache per row", txt, "", "", "(reported)", "")
  }
  # the L sweep's largest L
  if (n_m > 0) {
    Lm = orderM[n_m]; kt = "model|tapegrad|sweepM|4|" Lm; kp = "model|torch|sweepM|4|" Lm
    r = ratio(v[kt, "peak_rss_mib"], v[kp, "peak_rss_mib"])
    row("L sweep, L=" Lm ": peak RSS, MiB (target: tapegrad / PyTorch)", fmt(v[kt, "peak_rss_mib"]) (r == "" ? "" : sprintf(" (%.2f of PyTorch's)", r)),
        fmt(v[kp, "peak_rss_mib"]), "", "≤ 0.25", verdict(r, 0.25, 0))
    r = ratio(v[kt, "ms"], v[kp, "ms"])
    row("L sweep, L=" Lm ": step time, ms (target: tapegrad / PyTorch)", fmt(v[kt, "ms"]), fmt(v[kp, "ms"]),
        ratio(v[kp, "ms"], v[kt, "ms"]), "≤ 1", verdict(r, 1, 0))
  }
  worst = ""
  for (i = 1; i <= 3; i++) {
    split(S[i], s, ":")
    split("tapegrad_fused tapegrad_per_head", M, " ")
    for (j = 1; j <= 2; j++) { a = v["mha|" M[j] "|" s[1], "allocs_per_step"]; if (a != "" && (worst == "" || a + 0 > worst + 0)) worst = a }
  }
  a = v["model|tapegrad|step", "allocs_per_step"]; if (a != "" && (worst == "" || a + 0 > worst + 0)) worst = a
  row("heap allocations per step after the first (worst row)", worst == "" ? "—" : worst, "", "", "0", verdict(worst, 0, 0))
  split("mha|tapegrad_fused|large:large fused,mha|tapegrad_per_head|large:large per-head,model|tapegrad|step:toy model", R, ",")
  for (i = 1; i <= 3; i++) {
    split(R[i], s, ":")
    rr = v[s[1], "rss_ratio"]
    tgm = v[s[1], "rss_delta_mib"]; need = v[s[1], "need_mib"]; ar = v[s[1], "arena_peak_mib"]
    fl = v[s[1], "flight_mib"]; r0 = ratio(tgm, need - fl)  # the ratio without the grads in flight
    tk = s[1]; sub(/tapegrad_fused|tapegrad_per_head/, "torch_manual", tk); sub(/model\|tapegrad/, "model|torch", tk)
    row("peak RSS growth / need (params+grads+Adam+saved activations+grads in flight), " s[2],
        rr == "" ? "—" : sprintf("%.2f (%s of %s MiB, %s of it grads in flight: %.2f without them; arena %s)",
                                 rr, fmt(tgm), fmt(need), fmt(fl), r0, fmt(ar)),
        v[tk, "rss_delta_mib"] == "" ? "—" : fmt(v[tk, "rss_delta_mib"]) " MiB", "", "≤ 1.3", verdict(rr, 1.3, 0))
  }
  if (n_sw > 0) {
    print ""
    print "Scaling, large MHA (D=512, H=8), fused, causal: ms/step and peak RSS growth (MiB)."
    print ""
    print "| sweep | B | L | tapegrad ms | PyTorch ms | speedup | tapegrad GFLOP/s | tapegrad MiB | PyTorch MiB |"
    print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for (i = 1; i <= n_sw; i++) {
      split(order[i], o, "|"); kt = "mha|tapegrad_fused|" order[i]; kp = "mha|torch_manual|" order[i]
      sp = ratio(v[kp, "ms"], v[kt, "ms"])
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", o[1] == "sweepL" ? "L" : "B", o[2], o[3],
        fmt(v[kt, "ms"]), fmt(v[kp, "ms"]), sp == "" ? "—" : sprintf("%.2fx", sp), fmt(v[kt, "gflops"]),
        fmt(v[kt, "rss_delta_mib"]), fmt(v[kp, "rss_delta_mib"])
    }
  }
  if (n_m > 0) {
    print ""
    print "L sweep, toy model (batch 4, d_model 64, 2 layers, 4 heads, T = L): training step ms and peak RSS (MiB)."
    print ""
    print "| L | tapegrad ms | PyTorch ms | speedup | tapegrad GFLOP/s | tapegrad peak RSS | PyTorch peak RSS | RSS ratio |"
    print "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for (i = 1; i <= n_m; i++) {
      kt = "model|tapegrad|sweepM|4|" orderM[i]; kp = "model|torch|sweepM|4|" orderM[i]
      sp = ratio(v[kp, "ms"], v[kt, "ms"]); r = ratio(v[kt, "peak_rss_mib"], v[kp, "peak_rss_mib"])
      printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", orderM[i], fmt(v[kt, "ms"]), fmt(v[kp, "ms"]),
        sp == "" ? "—" : sprintf("%.2fx", sp), fmt(v[kt, "gflops"]), fmt(v[kt, "peak_rss_mib"]), fmt(v[kp, "peak_rss_mib"]),
        r == "" ? "—" : sprintf("%.2f", r)
    }
  }
}
AWK
} >"$table"

echo
cat "$table"

if [ $write_docs -eq 1 ]; then
  doc=docs/PERF.md mark=bench${section:+-$section}
  if [ -f "$doc" ] && grep -q "<!-- $mark:begin -->" "$doc" && grep -q "<!-- $mark:end -->" "$doc"; then
    awk -v tf="$table" -v b="<!-- $mark:begin -->" -v e="<!-- $mark:end -->" '
      $0 == b { print; while ((getline l < tf) > 0) print l; skip = 1; next }
      $0 == e { skip = 0 }
      !skip' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
    echo "bench.sh: table written into $doc ($mark)" >&2
  else
    echo "bench.sh: $doc has no $mark:begin / $mark:end markers; the table is in $table" >&2
  fi
  if [ $sweep -eq 1 ] && [ -z "$section" ]; then
    "$bin/bench_plot" "$rows" docs
  fi
fi
