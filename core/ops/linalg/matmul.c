/* tapegrad: matmul, 2-D and batched, with transpose flags and optional bias.
 *
 * out = op(a) op(b) + bias. With op(a) [M,K], op(b) [K,N], dout [M,N]:
 *   d op(a) = dout op(b)^T      d op(b) = op(a)^T dout      dbias = colsum(dout)
 * and a transposed operand receives the transpose of its d op(.).
 *
 * Under autocast (core/engine/tape.h) every GEMM of both passes takes its
 * float32 operands (dout too) rounded to the half type, with float32 sums
 * (tg_gemm_rounded, core/kernels/gemm_half.h: a bfloat16 kernel rounds as
 * it packs, so no rounded copy is kept); bias, dbias and the results stay
 * float32.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"
#include "../../kernels/blas.h"
#include "../../kernels/gemm_half.h"
#include "../../kernels/threads.h"
#include "../../kernels/vmath.h"

/* The op's context: what its forward worked out from the shapes. */
typedef struct mm_dims {
    unsigned flags; /* TG_TRANS_A | TG_TRANS_B */
    int batch;      /* product of a's leading dims */
    int M, K, N;
    bool b_batched; /* b has a's batch dims (else broadcast 2-D) */
    tg_dtype half;  /* TG_F32, or autocast's operand type */
} mm_dims;

/* C [M,N] = op(A) op(B) + beta C, contiguous as tg_gemm: in float, or with
 * the operands rounded to half. False only when the half GEMM's scratch
 * could not be allocated (the error is set). */
static bool mm_gemm(tg_dtype half, bool ta, bool tb, int M, int N, int K, const tg_real *A, const tg_real *B,
                    tg_real beta, tg_real *C)
{
#ifndef TAPEGRAD_DOUBLE
    if (half != TG_F32) return tg_gemm_rounded(half, ta, tb, M, N, K, 1, A, ta ? M : K, B, tb ? K : N, beta, C, N);
#endif
    (void)half;
    tg_gemm(ta, tb, M, N, K, 1, A, B, beta, C);
    return true;
}

/* C [M,N] = A [M,K] op(B) + bias in every row, contiguous: mm_gemm's
 * product with the bias added as it is stored. */
static bool mm_gemm_bias(tg_dtype half, bool tb, int M, int N, int K, const tg_real *A, const tg_real *B,
                         const tg_real *bias, tg_real *C)
{
#ifndef TAPEGRAD_DOUBLE
    if (half != TG_F32) return tg_gemm_rounded_bias(half, tb, M, N, K, A, B, bias, C);
#endif
    (void)half;
    tg_gemm_bias(0, tb, M, N, K, A, B, bias, C);
    return true;
}

static bool mm_shapes(tg_tape *t, const tg_op *op, const tg_tensor *a, const tg_tensor *b,
                      const tg_tensor *bias, unsigned flags, mm_dims *d)
{
    char sa[TG_SHAPE_STR], sb[TG_SHAPE_STR], sc[TG_SHAPE_STR];
    const char *ta = flags & TG_TRANS_A ? "^T" : "", *tb = flags & TG_TRANS_B ? "^T" : "";
    if (a->ndim < 2 || b->ndim < 2) {
        tg_op_fail(t, op, "operands must have at least 2 dims: a %s @ b %s", tg_shape_str(a, sa),
                   tg_shape_str(b, sb));
        return false;
    }
    int r0 = a->shape[a->ndim - 2], r1 = a->shape[a->ndim - 1];
    int c0 = b->shape[b->ndim - 2], c1 = b->shape[b->ndim - 1];
    d->M = flags & TG_TRANS_A ? r1 : r0;
    d->K = flags & TG_TRANS_A ? r0 : r1;
    int kb = flags & TG_TRANS_B ? c1 : c0;
    d->N = flags & TG_TRANS_B ? c0 : c1;
    d->batch = 1;
    for (int i = 0; i + 2 < a->ndim; i++) d->batch *= a->shape[i];
    d->b_batched = b->ndim > 2;
    d->flags = flags;
    if (d->K != kb) {
        tg_op_fail(t, op, "inner dimensions differ: a %s%s @ b %s%s", tg_shape_str(a, sa), ta,
                   tg_shape_str(b, sb), tb);
        return false;
    }
    if (d->b_batched) {
        bool same = b->ndim == a->ndim;
        for (int i = 0; same && i + 2 < a->ndim; i++) same = a->shape[i] == b->shape[i];
        if (!same) {
            tg_op_fail(t, op, "batch dimensions differ: a %s%s @ b %s%s (b must be 2-D or share a's batch dims)",
                       tg_shape_str(a, sa), ta, tg_shape_str(b, sb), tb);
            return false;
        }
    }
    if (bias && (bias->ndim != 1 || bias->shape[0] != d->N)) {
        tg_op_fail(t, op, "bias %s does not match the output's last dim %d (a %s%s @ b %s%s)",
                   tg_shape_str(bias, sc), d->N, tg_shape_str(a, sa), ta, tg_shape_str(b, sb), tb);
        return false;
    }
    return true;
}

/* dbias [N] += the column sums of dout [rows, N], cut into blocks of
 * BIAS_COLS columns (whole cache lines of dbias per thread); each column is
 * summed over the rows in order, so the bits do not depend on the cut. */
#define BIAS_COLS 16
typedef struct bias_job {
    const tg_real *dout;
    tg_real *dbias;
    size_t rows;
    int N;
} bias_job;

/* The column sums run row by row over strips of up to BIAS_STRIP columns,
 * from dbias's values to the store, in a local array that stays in L1: dout
 * is read in the order it is stored (strips of 64 columns, a row apart each,
 * ran past the prefetcher: 2-4x slower), each column adds its rows in order,
 * and a thread writes dbias once, so no cache line of it goes back and forth
 * between threads row after row. */
#define BIAS_STRIP 1024
TG_SIMD_BODY void bias_cols_body(void *p, size_t begin, size_t end)
{
    const bias_job *j = p;
    size_t c1 = end * BIAS_COLS < (size_t)j->N ? end * BIAS_COLS : (size_t)j->N;
    for (size_t s0 = begin * BIAS_COLS; s0 < c1; s0 += BIAS_STRIP) {
        size_t n = c1 - s0 < BIAS_STRIP ? c1 - s0 : BIAS_STRIP;
        tg_real acc[BIAS_STRIP];
        memcpy(acc, j->dbias + s0, n * sizeof *acc);
        for (size_t r = 0; r < j->rows; r++) {
            const tg_real *restrict row = j->dout + r * j->N + s0;
            for (size_t c = 0; c < n; c++) acc[c] += row[c];
        }
        memcpy(j->dbias + s0, acc, n * sizeof *acc);
    }
}
TG_SIMD_CLONES(static, bias_cols, (void *p, size_t begin, size_t end), (p, begin, end))

/* out [..., M, N] <- a, b, bias (in[2], NULL without) */
TG_BACKWARD(matmul_backward, mm_dims)
{
    tg_tensor *a = in[0], *b = in[1], *bias = in[2];
    const mm_dims d = *ctx;
    bool ta = d.flags & TG_TRANS_A, tb = d.flags & TG_TRANS_B;
    const tg_real *dout = out->grad;
    tg_real *dbias = bias && bias->requires_grad ? tg_grad(t, bias) : NULL;
    if (dbias) {
        bias_job j = {dout, dbias, (size_t)d.batch * d.M, d.N};
        size_t blocks = ((size_t)d.N + BIAS_COLS - 1) / BIAS_COLS;
        /* a column sum costs as a reduction's element (core/ops/reduce/reduce.c) */
        tg_parallel_range(blocks, 0.2 * (double)j.rows * BIAS_COLS, bias_cols, &j);
    }
    if (out->size == 0 || d.K == 0) {
        /* every input that needs a grad gets one, zero where nothing flows (an
         * empty product; BLAS rejects zero leading dims); NULL only when out of
         * memory, which the tape reports after this node */
        if (a->requires_grad) tg_grad(t, a);
        if (b->requires_grad) tg_grad(t, b);
        return;
    }
    /* The GEMMs below write all of da and db: a grad made here is stored
     * (beta 0), not zeroed and added to. */
    tg_real beta_a = 0, beta_b = 0;
    tg_real *da = a->requires_grad ? tg_grad_write(t, a, &beta_a) : NULL;
    tg_real *db = b->requires_grad ? tg_grad_write(t, b, &beta_b) : NULL;
    size_t sa = (size_t)d.M * d.K, sb = (size_t)d.K * d.N, so = (size_t)d.M * d.N;
    const tg_real *A = a->data, *B = b->data, *G = dout;
    bool ok = true;
    /* A broadcast b with an untransposed a: one GEMM over all batch * M rows, as forward. */
    int steps = d.b_batched || ta ? d.batch : 1, M = steps == 1 ? d.batch * d.M : d.M;
    if (da) {
        for (int i = 0; i < steps; i++) {
            const tg_real *bi = B + (d.b_batched ? i * sb : 0), *gi = G + i * so;
            if (!ta) /* da [M,K] += dout [M,N] op(b)^T */
                ok &= mm_gemm(d.half, 0, !tb, M, d.K, d.N, gi, bi, beta_a, da + i * sa);
            else     /* da [K,M] += op(b) [K,N] dout^T */
                ok &= mm_gemm(d.half, tb, 1, d.K, d.M, d.N, bi, gi, beta_a, da + i * sa);
        }
    }
    if (db) {
        for (int i = 0; i < steps; i++) {
            const tg_real *ai = A + i * sa, *gi = G + i * so;
            tg_real *dbi = db + (d.b_batched ? i * sb : 0);
            tg_real beta = d.b_batched || i == 0 ? beta_b : 1;  /* a broadcast b sums the steps */
            if (!tb) /* db [K,N] += op(a)^T [K,M] dout [M,N] */
                ok &= mm_gemm(d.half, !ta, 0, d.K, d.N, M, ai, gi, beta, dbi);
            else     /* db [N,K] += dout^T [N,M] op(a) [M,K] */
                ok &= mm_gemm(d.half, 1, ta, d.N, d.K, M, gi, ai, beta, dbi);
        }
    }
    if (!ok) tg_fail(t, "tg_matmul: backward: %s", tg_error());
}

TG_OP(matmul_op, "tg_matmul", matmul_backward, mm_dims);

tg_tensor *tg_matmul(tg_tape *t, tg_tensor *a, tg_tensor *b, tg_tensor *bias, unsigned flags)
{
    TG_DISPATCH_SAME(tg_matmul, (t, a, b, bias, flags), a, b, bias);
    tg_tensor *in[3] = {a, b, bias};
    if (!tg_inputs_check(t, &matmul_op, in, 3, 2)) return NULL;
    mm_dims d;
    if (!mm_shapes(t, &matmul_op, a, b, bias, flags, &d)) return NULL;
    int shape[TG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[a->ndim - 2] = d.M;
    shape[a->ndim - 1] = d.N;
    tg_tensor *out = tg_new(t, &matmul_op, a->ndim, shape);
    if (!out) return NULL;
    bool ta = flags & TG_TRANS_A, tb = flags & TG_TRANS_B;
    size_t sa = (size_t)d.M * d.K, sb = (size_t)d.K * d.N, so = (size_t)d.M * d.N;
    d.half = TG_REAL_DTYPE == TG_F32 ? tg_tape_autocast(t) : TG_F32;
    bool cast = d.half != TG_F32;
    /* the float path: one GEMM for an untransposed a and a 2-D b, bias in its store */
    bool one_gemm = !d.b_batched && !ta && out->size > 0 && d.K > 0;
    tg_real beta = 0;
    if (bias && !one_gemm) {
        size_t rows = (size_t)d.batch * d.M;
        for (size_t r = 0; r < rows; r++) memcpy(out->data + r * d.N, bias->data, d.N * sizeof(tg_real));
        beta = 1;
    }
    if (d.K == 0 && !bias) memset(out->data, 0, out->size * sizeof(tg_real));
    bool ok = true;
    if (out->size == 0 || d.K == 0) {
        /* BLAS rejects zero leading dimensions; the result is already set */
    } else if (one_gemm && !cast) {
        /* [batch*M, K] @ op(b): one GEMM, the bias added in its store */
        if (bias) tg_gemm_bias(0, tb, d.batch * d.M, d.N, d.K, a->data, b->data, bias->data, out->data);
        else tg_gemm(0, tb, d.batch * d.M, d.N, d.K, 1, a->data, b->data, 0, out->data);
    } else if (one_gemm) {
        /* under autocast: the bias added as the half kernel stores */
        int rows = d.batch * d.M;
        ok = bias ? mm_gemm_bias(d.half, tb, rows, d.N, d.K, a->data, b->data, bias->data, out->data)
                  : mm_gemm(d.half, 0, tb, rows, d.N, d.K, a->data, b->data, 0, out->data);
    } else {
        for (int i = 0; i < d.batch; i++)
            ok &= mm_gemm(d.half, ta, tb, d.M, d.N, d.K, a->data + i * sa, b->data + (d.b_batched ? i * sb : 0),
                          beta, out->data + i * so);
    }
    if (!ok) return tg_op_fail(t, &matmul_op, "%s", tg_error());
    if (!tg_op_record(t, &matmul_op, out, in, 3, &d)) return NULL;
    return tg_op_done(t, &matmul_op, out);
}
