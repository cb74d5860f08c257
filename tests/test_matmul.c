/* tg_matmul (core/ops/linalg/matmul.c): values on hand-computed cases for every
 * transpose flag, bias and batches, empty sizes, gradchecks, the bias grad's
 * bits at every SIMD level, and rejection of bad shapes. */
#include <string.h>

#include <tapegrad/core/kernels/vmath.h>
#include "test_util.h"

TU_SUITE(matmul, 42);

struct mm_ctx { unsigned flags; bool bias; };

static tg_tensor *f_matmul(tg_tape *t, tg_tensor **in, void *ctx)
{
    struct mm_ctx *c = ctx;
    return tg_matmul(t, in[0], in[1], c->bias ? in[2] : NULL, c->flags);
}

/* a [2,3] = 1..6, b [3,2] = 1..6: a b = [[22,28],[49,64]] */
Test(matmul, matmul_each_transpose_flag)
{
    tg_real av[] = {1, 2, 3, 4, 5, 6}, bv[] = {1, 2, 3, 4, 5, 6};
    tg_real at[] = {1, 4, 2, 5, 3, 6}, bt[] = {1, 3, 5, 2, 4, 6};  /* transposed copies */
    const tg_real want[] = {22, 28, 49, 64};
    tg_tensor *a = tg_tensor_from(T, av, 2, (int[]){2, 3}), *b = tg_tensor_from(T, bv, 2, (int[]){3, 2});
    tg_tensor *aT = tg_tensor_from(T, at, 2, (int[]){3, 2}), *bT = tg_tensor_from(T, bt, 2, (int[]){2, 3});
    tg_tensor *outs[] = {tg_matmul(T, a, b, NULL, 0), tg_matmul(T, aT, b, NULL, TG_TRANS_A),
                         tg_matmul(T, a, bT, NULL, TG_TRANS_B),
                         tg_matmul(T, aT, bT, NULL, TG_TRANS_A | TG_TRANS_B)};
    for (int k = 0; k < 4; k++) {
        cr_assert_not_null(outs[k], "%s", tg_tape_error(T));
        cr_assert_eq(outs[k]->ndim, 2);
        cr_assert_eq(outs[k]->shape[0], 2);
        cr_assert_eq(outs[k]->shape[1], 2);
        for (int i = 0; i < 4; i++) cr_assert_eq(outs[k]->data[i], want[i], "flags %d elem %d", k, i);
    }
}

Test(matmul, matmul_bias_and_batched)
{
    tg_real av[12], bv[6] = {1, 0, 0, 1, 1, 1}, bias[] = {10, 20};
    for (int i = 0; i < 12; i++) av[i] = (tg_real)i;
    tg_tensor *a = tg_tensor_from(T, av, 3, (int[]){2, 2, 3});
    tg_tensor *b = tg_tensor_from(T, bv, 2, (int[]){3, 2});
    tg_tensor *c = tg_tensor_from(T, bias, 1, (int[]){2});
    tg_tensor *out = tg_matmul(T, a, b, c, 0);
    cr_assert_not_null(out);
    cr_assert_eq(out->ndim, 3);
    /* row r = [x0, x1, x2] -> [x0 + x2 + 10, x1 + x2 + 20] */
    for (int r = 0; r < 4; r++) {
        cr_assert_eq(out->data[2 * r], av[3 * r] + av[3 * r + 2] + 10);
        cr_assert_eq(out->data[2 * r + 1], av[3 * r + 1] + av[3 * r + 2] + 20);
    }
    /* batched right operand: each batch has its own b */
    tg_real b2v[12];
    for (int i = 0; i < 12; i++) b2v[i] = (tg_real)(i % 5);
    tg_tensor *b2 = tg_tensor_from(T, b2v, 3, (int[]){2, 3, 2});
    tg_tensor *o2 = tg_matmul(T, a, b2, NULL, 0);
    cr_assert_not_null(o2);
    for (int bi = 0; bi < 2; bi++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                tg_real s = 0;
                for (int k = 0; k < 3; k++) s += av[bi * 6 + i * 3 + k] * b2v[bi * 6 + k * 2 + j];
                cr_assert_eq(o2->data[bi * 4 + i * 2 + j], s);
            }
}

Test(matmul, matmul_rejects_bad_shapes)
{
    tg_tensor *a = tg_tensor_zeros(T, 3, (int[]){32, 16, 64}), *b = tg_tensor_zeros(T, 2, (int[]){48, 64});
    cr_assert_not_null(tg_matmul(T, a, b, NULL, TG_TRANS_B), "%s", tg_tape_error(T));
    tg_tensor *b2 = tg_tensor_zeros(T, 2, (int[]){48, 63});
    cr_assert_null(tg_matmul(T, a, b2, NULL, TG_TRANS_B));
    cr_assert_str_eq(tg_tape_error(T), "tg_matmul: inner dimensions differ: a [32,16,64] @ b [48,63]^T");
    /* sticky: a NULL input keeps the first message */
    cr_assert_null(tg_add(T, NULL, a));
    cr_assert_str_eq(tg_tape_error(T), "tg_matmul: inner dimensions differ: a [32,16,64] @ b [48,63]^T");
    tg_tape_reset(T);
    a = tg_tensor_zeros(T, 3, (int[]){2, 3, 4});
    tg_tensor *bb = tg_tensor_zeros(T, 3, (int[]){3, 4, 5});
    cr_assert_null(tg_matmul(T, a, bb, NULL, 0));
    cr_assert(strstr(tg_tape_error(T), "batch dimensions differ"), "%s", tg_tape_error(T));
    tg_tape_reset(T);  /* tensors made before a reset are gone */
    a = tg_tensor_zeros(T, 3, (int[]){2, 3, 4});
    tg_tensor *bias = tg_tensor_zeros(T, 1, (int[]){7});
    cr_assert_null(tg_matmul(T, a, tg_tensor_zeros(T, 2, (int[]){4, 5}), bias, 0));
    cr_assert(strstr(tg_tape_error(T), "bias [7]"), "%s", tg_tape_error(T));
    tg_tape_reset(T);
    a = tg_tensor_zeros(T, 3, (int[]){2, 3, 4});
    cr_assert_null(tg_matmul(T, tg_tensor_zeros(T, 1, (int[]){4}), a, NULL, 0));
    cr_assert(strstr(tg_tape_error(T), "at least 2 dims"), "%s", tg_tape_error(T));
}

/* Empty products: K = 0 gives out = bias and the bias still gets its column
 * sum; an empty output gives its inputs zero grads (PyTorch's behaviour). */
Test(matmul, matmul_empty_inner_and_empty_output)
{
    tg_tensor *a = tg_tensor_zeros(T, 2, (int[]){2, 0}), *b = tg_tensor_zeros(T, 2, (int[]){0, 3});
    tg_tensor *bias = tg_tensor_from(T, (tg_real[]){1, 2, 3}, 1, (int[]){3});
    a->requires_grad = b->requires_grad = bias->requires_grad = true;
    tg_tensor *out = tg_matmul(T, a, b, bias, 0);
    cr_assert_not_null(out, "%s", tg_tape_error(T));
    for (int i = 0; i < 6; i++) cr_assert_eq(out->data[i], (tg_real)(i % 3 + 1));
    cr_assert_eq(tg_backward_seed(T, out, (tg_real[]){1, 1, 1, 1, 1, 1}), 0);
    for (int j = 0; j < 3; j++) cr_assert_eq(bias->grad[j], 2, "bias grad %d = %g", j, (double)bias->grad[j]);
    cr_assert(a->grad && b->grad, "empty inputs still get a (zero-length) grad");

    tg_tape_reset(T);
    a = tg_tensor_zeros(T, 2, (int[]){0, 3});
    b = tg_tensor_from(T, (tg_real[]){1, 2, 3, 4, 5, 6}, 2, (int[]){3, 2});
    bias = tg_tensor_zeros(T, 1, (int[]){2});
    a->requires_grad = b->requires_grad = bias->requires_grad = true;
    out = tg_matmul(T, a, b, bias, 0);
    cr_assert(out && out->size == 0, "%s", tg_tape_error(T));
    cr_assert_eq(tg_backward_seed(T, out, (tg_real[]){0}), 0);
    cr_assert(b->grad && bias->grad, "an empty output gives zero grads, not none");
    for (int i = 0; i < 6; i++) cr_assert_eq(b->grad[i], 0);
    for (int j = 0; j < 2; j++) cr_assert_eq(bias->grad[j], 0);
}

Test(matmul, gradcheck_matmul_all_flags_2d_3d_4d)
{
    /* op(a) [.., 3, 4], op(b) [4, 5] */
    for (unsigned flags = 0; flags < 4; flags++)
        for (int nd = 2; nd <= 4; nd++)
            for (int batched_b = 0; batched_b < (nd > 2 ? 2 : 1); batched_b++) {
                int sa[4] = {2, 2, 0, 0}, sb[4] = {2, 2, 0, 0};
                sa[nd - 2] = flags & TG_TRANS_A ? 4 : 3;
                sa[nd - 1] = flags & TG_TRANS_A ? 3 : 4;
                int bnd = batched_b ? nd : 2;
                sb[bnd - 2] = flags & TG_TRANS_B ? 5 : 4;
                sb[bnd - 1] = flags & TG_TRANS_B ? 4 : 5;
                tg_tensor *in[3] = {tu_rand(&R, -1, 1, nd, sa), tu_rand(&R, -1, 1, bnd, sb),
                                    tu_rand(&R, -1, 1, 1, (int[]){5})};
                struct mm_ctx c = {flags, batched_b == 0};
                tu_gradcheck(f_matmul, &c, in, 3);
                tu_free_all(in, 3);
            }
}

/* dbias is each column of dout summed over the rows in order, from the
 * grad's zero: the same bits at every SIMD level the CPU runs, whatever
 * the vector width (N = 75: past one block of 64 columns, odd). */
Test(matmul, bias_grad_is_the_rows_summed_in_order_at_every_simd_level)
{
    enum { ROWS = 37, K = 3, N = 75 };
    tg_simd best = tg_simd_get();
    tg_tensor *dout = tu_rand(&R, -1, 1, 2, (int[]){ROWS, N});
    for (int i = 0; i < ROWS * N; i++) dout->data[i] *= (tg_real)(1 << (i % 23)); /* sums that round */
    for (int l = TG_SIMD_BASE; l <= TG_SIMD_AVX512; l++) {
        if (!tg_simd_set((tg_simd)l)) {
            cr_log_info("SIMD level %s skipped: this CPU or build cannot run it", tg_simd_name((tg_simd)l));
            continue;
        }
        tg_tape *t = tg_tape_new();
        tg_tensor *a = tg_tensor_zeros(t, 2, (int[]){ROWS, K}), *b = tg_tensor_zeros(t, 2, (int[]){K, N});
        tg_tensor *bias = tg_tensor_zeros(t, 1, (int[]){N});
        bias->requires_grad = true;
        tg_tensor *y = tg_matmul(t, a, b, bias, 0);
        cr_assert_not_null(y, "%s", tg_tape_error(t));
        cr_assert_eq(tg_backward_seed(t, y, dout->data), 0, "%s", tg_tape_error(t));
        for (int j = 0; j < N; j++) {
            tg_real want = 0;
            for (int r = 0; r < ROWS; r++) want += dout->data[r * N + j];
            cr_assert(bias->grad[j] == want, "level %s, column %d: %.9g, want %.9g", tg_simd_name((tg_simd)l), j,
                      (double)bias->grad[j], (double)want);
        }
        cr_log_info("SIMD level %s ran: dbias the rows' sums in order", tg_simd_name((tg_simd)l));
        tg_tape_free(t);
    }
    tg_simd_set(best);
    tg_tensor_free(dout);
}
