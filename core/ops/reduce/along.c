/* tapegrad: the slice engine of stats.c and scan.c (see internal.h). Slices
 * are cut across the pool; each writes only its own output elements and, in
 * backward, its own input grads, so the bits do not depend on the thread
 * count. */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

bool tg_along_dim(tg_tape *t, const char *op, const tg_tensor *a, int dim, int *d)
{
    int nd = a->ndim ? a->ndim : 1;
    *d = dim < 0 ? dim + nd : dim;
    if (*d >= 0 && *d < nd) return true;
    char sa[TG_SHAPE_STR];
    tg_fail(t, "%s: dim %d is out of range for a %s (dims %d to %d)", op, dim, tg_shape_str(a, sa), -nd, nd - 1);
    return false;
}

typedef struct along_job {
    const tg_along_kind *k;
    size_t n, m, inner;
    const double *p;
    const tg_real *x, *y, *g;
    tg_real *out, *dx;
    int64_t *idx;
    char *w;           /* forward scratch, k->scratch * n bytes a slice */
} along_job;

static void along_piece(void *ctx, size_t begin, size_t end)
{
    const along_job *j = ctx;
    for (size_t sl = begin; sl < end; sl++) {
        size_t o = sl / j->inner, i = sl % j->inner, xo = o * j->n * j->inner + i, yo = o * j->m * j->inner + i;
        int64_t *idx = j->idx ? j->idx + yo : NULL;
        if (j->dx)
            j->k->bwd(j->x + xo, j->n, j->m, j->inner, j->y + yo, j->g + yo, idx, j->dx + xo, j->p);
        else
            j->k->fwd(j->x + xo, j->n, j->m, j->inner, j->out + yo, idx, j->p,
                      j->w ? j->w + sl * j->n * j->k->scratch : NULL);
    }
}

static void along_split(const tg_tensor *a, int d, size_t *outer, size_t *n, size_t *inner)
{
    *outer = *inner = 1;
    *n = a->ndim ? (size_t)a->shape[d] : 1;
    for (int i = 0; i < a->ndim; i++) {
        if (i < d) *outer *= (size_t)a->shape[i];
        if (i > d) *inner *= (size_t)a->shape[i];
    }
}

/* 2 ns an element of a slice */
static double along_ns(size_t n) { return 2.0 * (double)(n + 1); }

TG_BACKWARD_SHARED(tg_along_backward, tg_along_ctx)
{
    tg_tensor *a = in[0];
    tg_real *dx = tg_grad(t, a);
    if (!dx) return;
    along_job j = {ctx->kind, 0, ctx->m, 0, ctx->p, a->data, out->data, out->grad, NULL, dx, (int64_t *)ctx->idx, NULL};
    size_t outer;
    along_split(a, ctx->dim, &outer, &j.n, &j.inner);
    tg_parallel_range(outer * j.inner, along_ns(j.n), along_piece, &j);
}

tg_tensor *tg_along_apply(tg_tape *t, const tg_along_kind *k, tg_tensor *a, int d, size_t m, bool keep,
                          const double *p, tg_tensor **idx_out)
{
    const char *op = k->op.name;
    int nd = 0, shape[TG_MAX_DIMS];
    for (int i = 0; i < a->ndim; i++)
        if (i != d || keep) shape[nd++] = i == d ? (int)m : a->shape[i];
    tg_tensor *out = tg_new(t, &k->op, nd, shape);
    if (!out) return NULL;
    tg_along_ctx c = {k, d, m, {0}, NULL};
    if (p) memcpy(c.p, p, sizeof c.p);
    bool need = k->op.backward && tg_needs_grad(t, &a, 1);
    int64_t *idx = NULL;
    if (k->keeps_index && (need || idx_out) &&
        !(idx = tg_arena_alloc(t, (out->size ? out->size : 1) * sizeof *idx, op)))
        return NULL;
    size_t outer, n, inner;
    along_split(a, d, &outer, &n, &inner);
    size_t wbytes = k->scratch * a->size;
    char *w = wbytes ? tg_arena_scratch(t, wbytes, op) : NULL;
    if (wbytes && !w) return NULL;
    along_job j = {k, n, m, inner, c.p, a->data, NULL, NULL, out->data, NULL, idx, w};
    tg_parallel_range(outer * inner, along_ns(n), along_piece, &j);
    tg_arena_release(t, w, wbytes);
    if (idx_out) {  /* a copy: the caller may change it before backward reads idx */
        tg_tensor *ix = tg_new_op(t, &k->op, TG_I64, nd, shape);
        if (!ix) return NULL;
        memcpy(ix->data, idx, out->size * sizeof *idx);
        *idx_out = ix;
    }
    c.idx = idx;
    if (need && !tg_op_record(t, &k->op, out, &a, 1, &c)) return NULL;
    return tg_op_done(t, &k->op, out);
}
