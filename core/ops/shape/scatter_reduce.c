/* tapegrad: a.scatter_reduce(dim, ix, src, reduce, include_self) (PyTorch).
 * out = a; each position p = (i with i_dim = ix[i]) that an index names
 * starts at a[p] (include_self) or at the reduction's identity, and takes
 * every src[i] sent to it, in index order:
 *   sum  out[p] += s      prod  out[p] *= s      amax / amin  out[p] = max / min(out[p], s), NaN wins
 *   mean the sum divided by N[p] = include_self + the count sent to p
 * Positions no index names keep a. The grads are PyTorch's
 * scatter_reduce_backward (derivatives.yaml), with g = d out:
 *   sum   d a[p] += g[p]                      d s[i] += g[p]
 *   mean  d a[p] += g[p] / N[p]               d s[i] += g[p] / N[p]
 *   amax  d a[p] += (a[p] == out[p]) g[p] / M[p], d s[i] += (s[i] == out[p]) g[p] / M[p], M[p] the number of
 *         a[p] and s sent to p equal to out[p] (ties share evenly)
 *   prod  d a[p] += g[p] r[p] / a'[p], a' = a with 0 read as 1, r the product from a' instead of a;
 *         d s[i] += g[p] out[p] / s[i] (s[i] != 0), or g[p] r_i[p] when s[i] is the only zero sent to p,
 *         r_i the product with s[i] read as 1 (two zeros at p give 0)
 *   without include_self, d a[p] = 0 at every position an index names.
 * The forward saves the factors of g: d a[p] += g[p] ka[p], d s[i] += g[p] ks[i].
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

typedef struct scatter_reduce_ctx {
    const size_t *xoff, *soff;  /* [n] arena: a's and src's element per index element */
    const tg_real *ka, *ks;     /* [a size], [n] arena: the factors of g */
    size_t n;
} scatter_reduce_ctx;

/* out [a's shape] <- a, src: d a += g ka; d src[soff[i]] += g[xoff[i]] ks[i] */
TG_BACKWARD(scatter_reduce_backward, scatter_reduce_ctx)
{
    const scatter_reduce_ctx *c = ctx;
    const tg_real *g = out->grad;
    if (in[0]->requires_grad) {
        tg_real *da = tg_grad(t, in[0]);
        if (!da) return;
        for (size_t p = 0; p < out->size; p++) da[p] += g[p] * c->ka[p];
    }
    if (in[1]->requires_grad) {
        tg_real *ds = tg_grad(t, in[1]);
        if (!ds) return;
        for (size_t i = 0; i < c->n; i++) ds[c->soff[i]] += g[c->xoff[i]] * c->ks[i];
    }
}

TG_OP(scatter_reduce_op, "tg_scatter_reduce", scatter_reduce_backward, scatter_reduce_ctx);

static tg_real reduce_one(tg_scatter_reduce_mode r, tg_real acc, tg_real s)
{
    switch (r) {
    case TG_SCATTER_PROD: return acc * s;
    case TG_SCATTER_AMAX: return isnan(s) || s > acc ? s : acc;
    case TG_SCATTER_AMIN: return isnan(s) || s < acc ? s : acc;
    default: return acc + s;  /* sum, mean */
    }
}

static tg_real identity(tg_scatter_reduce_mode r)
{
    return r == TG_SCATTER_PROD ? 1 : r == TG_SCATTER_AMAX ? -INFINITY : r == TG_SCATTER_AMIN ? INFINITY : 0;
}

/* The grads' factors ka [a size], ks [n] (see the top); cnt [a size] the
 * count sent to each position, scratch [2 a size]. */
static void factors(tg_scatter_reduce_mode r, bool self, const tg_tensor *a, const tg_tensor *src,
                    const tg_tensor *out, const size_t *xoff, const size_t *soff, size_t n, const tg_real *cnt,
                    tg_real *scratch, tg_real *ka, tg_real *ks)
{
    const tg_real *x = a->data, *s = src->data, *o = out->data;
    size_t m = a->size;
    for (size_t p = 0; p < m; p++) ka[p] = 1;
    if (r == TG_SCATTER_SUM)
        for (size_t i = 0; i < n; i++) ks[i] = 1;
    if (r == TG_SCATTER_MEAN) {
        for (size_t p = 0; p < m; p++) ka[p] = 1 / (cnt[p] + self > 0 ? cnt[p] + self : 1);
        for (size_t i = 0; i < n; i++) ks[i] = ka[xoff[i]];
    }
    if (r == TG_SCATTER_AMAX || r == TG_SCATTER_AMIN) {
        tg_real *M = scratch;  /* ties at p */
        for (size_t p = 0; p < m; p++) M[p] = x[p] == o[p];
        for (size_t i = 0; i < n; i++) M[xoff[i]] += s[soff[i]] == o[xoff[i]];
        for (size_t p = 0; p < m; p++) ka[p] = (tg_real)(x[p] == o[p]) / M[p];
        for (size_t i = 0; i < n; i++) ks[i] = (tg_real)(s[soff[i]] == o[xoff[i]]) / M[xoff[i]];
    }
    if (r == TG_SCATTER_PROD) {
        tg_real *zeros = scratch;  /* src zeros sent to p */
        for (size_t p = 0; p < m; p++) zeros[p] = 0;
        for (size_t i = 0; i < n; i++) zeros[xoff[i]] += s[soff[i]] == 0;
        /* ka = r / a', r the product over a' (a's zeros read as 1): every
         * position starts at a' (or 1 without include_self) */
        for (size_t p = 0; p < m; p++) ka[p] = x[p] == 0 ? 1 : x[p];
        for (size_t p = 0; p < m; p++)
            if (cnt[p] && !self) ka[p] = 1;
        for (size_t i = 0; i < n; i++) ka[xoff[i]] *= s[soff[i]];
        for (size_t p = 0; p < m; p++) ka[p] /= x[p] == 0 ? 1 : x[p];
        /* ks: r_i for the only zero at p, the product with zeros read as 1, in
         * index order as the forward */
        tg_real *r1 = scratch + m;
        for (size_t p = 0; p < m; p++) r1[p] = self ? x[p] : 1;
        for (size_t i = 0; i < n; i++) r1[xoff[i]] *= s[soff[i]] == 0 ? 1 : s[soff[i]];
        for (size_t i = 0; i < n; i++) {
            size_t p = xoff[i];
            ks[i] = s[soff[i]] == 0 && zeros[p] == 1 ? r1[p] : o[p] / (s[soff[i]] == 0 ? 1 : s[soff[i]]);
        }
    }
    if (!self)
        for (size_t p = 0; p < m; p++)
            if (cnt[p]) ka[p] = 0;
}

tg_tensor *tg_scatter_reduce(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix, tg_tensor *src,
                             tg_scatter_reduce_mode reduce, bool include_self)
{
    TG_DISPATCH_SAME(tg_scatter_reduce, (t, a, dim, ix, src, reduce, include_self), a, src);
    const char *op = scatter_reduce_op.name;
    tg_tensor *in[2] = {a, src};
    if (!tg_inputs_check(t, &scatter_reduce_op, in, 2, 2) || !tg_index_check(t, &scatter_reduce_op, ix, "the index"))
        return NULL;
    if ((unsigned)reduce > TG_SCATTER_AMIN)
        return tg_fail(t, "%s: reduce %d is not one of TG_SCATTER_SUM, _PROD, _MEAN, _AMAX, _AMIN", op, (int)reduce);
    int d;
    size_t n = ix->size;
    if (!tg_dim_resolve(t, op, a, dim, a->ndim ? a->ndim : 1, &d)) return NULL;
    size_t m = a->size;
    size_t *xoff = tg_arena_alloc(t, (n ? 2 * n : 1) * sizeof *xoff, op);
    tg_real *cnt = xoff ? tg_arena_scratch(t, (m ? 3 * m : 1) * sizeof *cnt, op) : NULL;
    if (!cnt) return NULL;
    size_t *soff = xoff + n;
    tg_real *scratch = cnt + m;
    tg_tensor *out = NULL;
    if (!tg_index_offsets(t, op, ix, d, a, src, xoff, soff)) goto done;
    if (!(out = tg_new_like(t, &scatter_reduce_op, a))) goto done;
    memcpy(out->data, a->data, m * sizeof *a->data);
    memset(cnt, 0, m * sizeof *cnt);
    for (size_t i = 0; i < n; i++) cnt[xoff[i]]++;
    if (!include_self)
        for (size_t p = 0; p < m; p++)
            if (cnt[p]) out->data[p] = identity(reduce);
    for (size_t i = 0; i < n; i++) out->data[xoff[i]] = reduce_one(reduce, out->data[xoff[i]], src->data[soff[i]]);
    if (reduce == TG_SCATTER_MEAN)
        for (size_t p = 0; p < m; p++)
            if (cnt[p]) out->data[p] /= cnt[p] + include_self;
    if (tg_needs_grad(t, in, 2)) {
        tg_real *ka = tg_arena_alloc(t, (m + n ? m + n : 1) * sizeof *ka, op);
        if (!ka) goto fail;
        factors(reduce, include_self, a, src, out, xoff, soff, n, cnt, scratch, ka, ka + m);
        if (!tg_op_record(t, &scatter_reduce_op, out, in, 2, &(scatter_reduce_ctx){xoff, soff, ka, ka + m, n}))
            goto fail;
    }
    out = tg_op_done(t, &scatter_reduce_op, out);
    goto done;
fail:
    out = NULL;
done:
    tg_arena_release(t, cnt, (m ? 3 * m : 1) * sizeof *cnt);
    return out;
}
