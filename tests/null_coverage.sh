#!/usr/bin/env bash
# Every function of the installed headers is given NULL for a pointer it
# needs: the ops (every tg_tensor *tg_xxx( of core/ops' headers, which
# tests/test_op_cases.c requires a row for, and what a row calls) by the
# op-case rows, every other function by tests/test_null.c. A function added
# without a NULL check fails here, by name. Usage: null_coverage.sh CC
# SOURCE_DIR (CC a GCC: its -aux-info lists the prototypes the headers declare).
set -euo pipefail
cc=$1
src=$(cd "$2" && pwd)

# Functions test_null.c need not call: no pointer argument, or a pointer
# whose NULL means "none" as in C's own library.
allowed=(
  # no pointer argument
  tg_malloc tg_calloc tg_pages_map tg_alloc_count tg_alloc_fail_at
  tg_gradcheck_defaults tg_gradcheck_defaults_for tg_version tg_dtype_name tg_dtype_size tg_dtype_is_float tg_dtype_is_half
  tg_half_to_double tg_half_from_double tg_params_new_dtype tg_st_dtype_name
  tg_threads_set tg_threads_get tg_parallel_chunks tg_parallel_pays
  tg_linear_init_bound tg_xavier_bound tg_calculate_gain tg_schedule_constant tg_schedule_cosine tg_schedule_linear
  tg_grad_scaler_defaults
  tg_optim_kind_name tg_text_height tg_viridis tg_heatmap_label_step
  tg_dist_finalize tg_dist_available tg_dist_rank tg_dist_size tg_dist_barrier
  # NULL is nothing to free or unmap (free's rule)
  tg_free tg_realloc tg_pages_unmap tg_headers_free tg_headers_release
  # NULL is the empty store: it owns nothing
  tg_headers_own
  # NULL is no note to add
  tg_dist_set_timeout
  # NULL argc/argv: MPI_Init's own convention
  tg_dist_init
  # ends the process: no failure to return
  tg_dist_abort
  # a printf format, checked by the compiler (format attribute)
  tg_error_set
)

# the installed headers (cmake/install.cmake: the internal ones stay out)
headers=("$src/tapegrad.h" "$src/dist/dist.h")
while IFS= read -r h; do headers+=("$h"); done < <(
  find "$src/core" "$src/nn" "$src/optim" "$src/viz" -name '*.h' \
    ! -name blas.h ! -name gemm.h ! -name openblas.h ! -name gemm_half.h ! -name half.h ! -name vmath.h ! -name internal.h \
    ! -name json.h ! -name elements.h ! -name named.h ! -name conv_geom.h ! -name spin.h ! -name bf16_emu.h ! -name bf16_pack.h ! -name peak.h | sort)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in "${headers[@]}"; do echo "#include \"$h\""; done > "$tmp/all.c"
"$cc" -std=c11 -I"$src" -fsyntax-only -aux-info "$tmp/aux" "$tmp/all.c"
# "/* <file>:<line>:NC */ extern <type> tg_name (<args>);" for our files only
mapfile -t names < <(grep -F "/* $src/" "$tmp/aux" | grep -o '\btg_[a-z0-9_]* (' | tr -d ' (' | sort -u)
[ "${#names[@]}" -gt 100 ] || { echo "null_coverage: only ${#names[@]} functions found in the headers"; exit 1; }

declare -A declared ok
for n in "${names[@]}"; do declared[$n]=1; done
for a in "${allowed[@]}"; do ok[$a]=1; done
# the ops: test_op_cases fails for an op without a row
while IFS= read -r n; do ok[$n]=1; done < <(
  find "$src/core/ops" -name '*.h' ! -name internal.h -exec grep -ho '^tg_tensor \*tg_[a-z0-9_]*(' {} + | sed 's/^tg_tensor \*//; s/($//')
missing=0
for n in "${names[@]}"; do
  [ -n "${ok[$n]:-}" ] && continue
  if ! grep -q "\b$n(" "$src/tests/test_null.c" "$src"/tests/op_cases_*.c; then
    echo "null_coverage: $n is not called by tests/test_null.c nor by an op-case row"
    missing=$((missing + 1))
  fi
done
# an allowed name that no header declares any more goes from the list
for a in "${allowed[@]}"; do
  [ -n "${declared[$a]:-}" ] || { echo "null_coverage: $a is allowed but not declared"; missing=$((missing + 1)); }
done
echo "null_coverage: ${#names[@]} functions, ${#allowed[@]} allowed, $missing missing"
[ "$missing" -eq 0 ]
