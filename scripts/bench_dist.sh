#!/usr/bin/env bash
# Data-parallel scaling of `seqtask train` on the machine it runs on (docs/PERF.md):
# ms per step and time to 99% held-out accuracy on reverse, for the toy
# model and a larger one, at 1 rank x 1 thread, 1 rank x 2 threads and
# 2 ranks x 1 thread; then the all-reduce alone (bench_allreduce).
#
# Usage: scripts/bench_dist.sh [--build DIR] [--reps N] [--train-models "toy large" | --no-train]
#   ms/step: the median of the log's ms column (steps 6..40, rank 0: forward,
#   backward, all-reduce, optimizer), median over N runs (default 3).
#   time to 99%: one run of the defaults until --target-acc 0.99 (wall time
#   seqtask prints, evaluations included).
# Every row says the 1-minute load average when it started.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release reps=3 train=1 train_models="toy large"
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift ;;
    --reps) reps=$2; shift ;;
    --no-train) train=0 ;;
    --train-models) train_models=$2; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target seqtask bench_allreduce >/dev/null
seqtask=$(pwd)/$build/seqtask
root_flag=""
[ "$(id -u)" -eq 0 ] && root_flag="--allow-run-as-root"
mpirun="mpirun --oversubscribe $root_flag"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1

load() { cut -d' ' -f1 /proc/loadavg; }
# launch CONFIG: the command prefix and --threads of 1x1, 1x2, 2x1
launch() {
  case $1 in
    1x1) echo "$seqtask train --threads 1" ;;
    1x2) echo "$seqtask train --threads 2" ;;
    2x1) echo "$mpirun -np 2 $seqtask train --threads 1" ;;
  esac
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

declare -A models=([toy]="" [large]="--d-model 256 --layers 4")
echo "| model | ranks x threads | ms/step | load |"
echo "| --- | --- | --- | --- |"
for m in toy large; do
  for cfg in 1x1 1x2 2x1; do
    l=$(load)
    for r in $(seq "$reps"); do
      $(launch $cfg) ${models[$m]} --steps 40 --warmup 5 --eval-every 0 --eval-size 10 --target-acc 0 \
        --overwrite --out "$tmp/$m-$cfg" >/dev/null 2>&1
      tail -n +7 "$tmp/$m-$cfg/log.csv" | cut -d, -f5 | median
    done | median | xargs printf "| %s | %s | %.2f | $l |\n" "$m" "$cfg"
  done
done

if [ "$train" -eq 1 ]; then
  echo
  echo "| model | ranks x threads | steps to 99% | seconds | load |"
  echo "| --- | --- | --- | --- | --- |"
  for m in $train_models; do
    for cfg in 1x1 1x2 2x1; do
      l=$(load)
      line=$($(launch $cfg) ${models[$m]} --out "$tmp/t-$m-$cfg" 2>/dev/null | grep "held-out" || true)
      steps=$(sed -E 's/^step ([0-9]+),.*/\1/' <<<"$line")
      secs=$(sed -E 's/^step [0-9]+, ([0-9.]+) s.*/\1/' <<<"$line")
      acc=$(sed -E 's/.*exact-sequence accuracy ([0-9.]+)%.*/\1/' <<<"$line")
      echo "| $m | $cfg | $steps ($acc%) | $secs | $l |"
    done
  done
fi

echo
echo "all-reduce of the grad buffer, 2 ranks (load $(load)):"
$mpirun -np 2 "$build/bench_allreduce" --reps 50
