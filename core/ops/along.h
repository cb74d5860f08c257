/* tapegrad internal: ops that work along one dim of a tensor, slice by
 * slice (core/ops/along.c): min, prod, var, std, norm, argmax (stats.c),
 * cumsum, cumprod, sort, topk (scan.c). a is read as [outer, n, inner]; each
 * of the outer * inner slices holds n elements `inner` apart, and gives m
 * output elements the same distance apart in out [outer, m, inner]. */
#ifndef TAPEGRAD_OPS_ALONG_H
#define TAPEGRAD_OPS_ALONG_H

#include <stdint.h>

#include "../engine/op.h"

#define TG_ALONG_PARAMS 2

typedef struct tg_along_kind {
    tg_op op;          /* name and tg_along_backward (or NULL: no grad, as argmax) */
    bool keeps_index;  /* fwd writes idx[j * s] (sort, topk, min): saved for backward */
    size_t scratch;    /* bytes of scratch fwd needs per slice element (sort's keys) */
    /* y[j * s], j < m, from x[i * s], i < n; idx may be NULL when !keeps_index;
     * w: scratch * n bytes of the slice's own */
    void (*fwd)(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                void *w);
    /* dx[i * s] += the grad of slice x from g[j * s] */
    void (*bwd)(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                const int64_t *idx, tg_real *dx, const double *p);
} tg_along_kind;

void tg_along_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx);
#define TG_ALONG_OP(name) {name, tg_along_backward, sizeof(tg_along_ctx)}

typedef struct tg_along_ctx {
    const tg_along_kind *kind;
    int dim;           /* resolved, >= 0 */
    size_t m;
    double p[TG_ALONG_PARAMS];
    const int64_t *idx;  /* [out->size] when keeps_index, arena */
} tg_along_ctx;

/* Resolves dim (negative counts from the end; a 0-d a takes 0 or -1) into
 * *d, or stores "<op>: dim ... out of range" and returns false. */
bool tg_along_dim(tg_tape *t, const char *op, const tg_tensor *a, int dim, int *d);

/* out = kind along dim d with m outputs per slice; keep: dim d stays (size
 * m), else it is dropped (m must be 1). *idx_out, when not NULL, receives
 * the indices kind wrote, as a tensor of out's shape (no grad). */
tg_tensor *tg_along_apply(tg_tape *t, const tg_along_kind *k, tg_tensor *a, int d, size_t m, bool keep,
                          const double *p, tg_tensor **idx_out);

#endif
