/* tapegrad: ops that move elements without arithmetic, written as maps.
 *
 * A map pairs every index i of a walk shape n[nd] with one element of the
 * input and one of the output:
 *     out[out_off + sum_k i_k out_st[k]]  <-  in[in_off + sum_k i_k in_st[k]]
 * Strides count elements and may be 0 (expand reads one element many times)
 * or negative (flip). permute, narrow with a step, flip, roll, pad, repeat,
 * expand, cat and diag are each a map (or two) and a shape; their backward is
 * the same map read the other way round:
 *     d in[in_off + i . in_st] += d out[out_off + i . out_st]
 * which sums the grads of every output element that read one input element
 * (expand, repeat), in walk order, so the bits do not depend on threads.
 */
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* n elements of es bytes from s (b bytes apart) to d (a bytes apart); a
 * constant size per case, so each memcpy is one load and store */
static void strided_copy(unsigned char *d, ptrdiff_t a, const unsigned char *s, ptrdiff_t b, size_t n, size_t es)
{
#define STRIDED_COPY(E) \
    for (size_t j = 0; j < n; j++) memcpy(d + (ptrdiff_t)j * a, s + (ptrdiff_t)j * b, E)
    switch (es) {
    case 1: STRIDED_COPY(1); break;
    case 2: STRIDED_COPY(2); break;
    case 4: STRIDED_COPY(4); break;
    default: STRIDED_COPY(8); break;
    }
#undef STRIDED_COPY
}

/* d += s; a grad and the grad it reads never overlap */
static inline void add_run(tg_real *restrict d, const tg_real *restrict s, size_t n)
{
    for (size_t j = 0; j < n; j++) d[j] += s[j];
}

/* dst[dst_off + i . dst_st] (+)= src[src_off + i . src_st] over i < n, elements
 * of es bytes (add: tg_real). Size-1 dims are dropped and a dim is merged
 * into the one before it when both sides step alike, so a contiguous copy is
 * one run. A copy moves bytes, whatever the dtype: the bits stay. */
static void map_walk(const tg_map *m, void *dst, const ptrdiff_t *dst_st, ptrdiff_t dst_off, const void *src,
                     const ptrdiff_t *src_st, ptrdiff_t src_off, size_t es, bool add)
{
    size_t n[TG_MAP_DIMS];
    ptrdiff_t sd[TG_MAP_DIMS], ss[TG_MAP_DIMS];
    int nd = 0;
    for (int k = 0; k < m->nd; k++) {
        if (m->n[k] == 0) return;
        if (m->n[k] == 1) continue;
        ptrdiff_t len = m->n[k];
        if (nd > 0 && sd[nd - 1] == dst_st[k] * len && ss[nd - 1] == src_st[k] * len) {
            n[nd - 1] *= (size_t)len;
        } else {
            n[nd] = (size_t)len;
            nd++;
        }
        sd[nd - 1] = dst_st[k];
        ss[nd - 1] = src_st[k];
    }
    if (nd == 0) {
        n[0] = 1;
        sd[0] = ss[0] = 1;
        nd = 1;
    }
    /* the last two dims as plain loops, an odometer over the rest; strides in bytes from here */
    const ptrdiff_t e = (ptrdiff_t)es;
    const size_t run = n[nd - 1], rows = nd > 1 ? n[nd - 2] : 1;
    const ptrdiff_t a = sd[nd - 1] * e, b = ss[nd - 1] * e, ra = nd > 1 ? sd[nd - 2] * e : 0,
                    rb = nd > 1 ? ss[nd - 2] * e : 0;
    const bool unit = a == e && b == e;  /* decided once: the row loops below do not branch */
    size_t idx[TG_MAP_DIMS] = {0};
    for (;;) {
        unsigned char *d = (unsigned char *)dst + dst_off * e;
        const unsigned char *s = (const unsigned char *)src + src_off * e;
        if (add && unit)
            for (size_t r = 0; r < rows; r++)
                add_run((tg_real *)(void *)(d + (ptrdiff_t)r * ra), (const tg_real *)(const void *)(s + (ptrdiff_t)r * rb),
                        run);
        else if (unit)
            for (size_t r = 0; r < rows; r++) memcpy(d + (ptrdiff_t)r * ra, s + (ptrdiff_t)r * rb, run * es);
        else
            for (size_t r = 0; r < rows; r++) {
                unsigned char *dr = d + (ptrdiff_t)r * ra;
                const unsigned char *sr = s + (ptrdiff_t)r * rb;
                if (add)
                    for (size_t j = 0; j < run; j++)
                        *(tg_real *)(void *)(dr + (ptrdiff_t)j * a) += *(const tg_real *)(const void *)(sr + (ptrdiff_t)j * b);
                else
                    strided_copy(dr, a, sr, b, run, es);
            }
        int k = nd - 3;
        for (; k >= 0; k--) {
            dst_off += sd[k];
            src_off += ss[k];
            if (++idx[k] < n[k]) break;
            dst_off -= sd[k] * (ptrdiff_t)n[k];
            src_off -= ss[k] * (ptrdiff_t)n[k];
            idx[k] = 0;
        }
        if (k < 0) return;
    }
}

void tg_map_copy(const tg_map *m, void *out, const void *in, size_t es)
{
    map_walk(m, out, m->out_st, m->out_off, in, m->in_st, m->in_off, es, false);
}

void tg_map_forward(const tg_map *m, tg_real *out, const tg_real *in) { tg_map_copy(m, out, in, sizeof *out); }

void tg_map_backward(const tg_map *m, tg_real *din, const tg_real *dout)
{
    map_walk(m, din, m->in_st, m->in_off, dout, m->out_st, m->out_off, sizeof *din, true);
}

void tg_strides(int ndim, const int *shape, ptrdiff_t *st)
{
    ptrdiff_t s = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        st[k] = s;
        s *= shape[k];
    }
}

/* out <- a through ctx's maps: d a += every map read backwards. */
TG_BACKWARD_SHARED(tg_map_op_backward, tg_map_ctx)
{
    tg_real *da = tg_grad(t, in[0]);
    if (!da) return;
    for (int k = 0; k < ctx->n_maps; k++) tg_map_backward(&ctx->maps[k], da, out->grad);
}

tg_tensor *tg_map_op(tg_tape *t, const tg_op *op, tg_tensor *a, int ndim, const int *shape,
                     const tg_map_ctx *c, const double *fill)
{
    tg_tensor *out = tg_new_op(t, op, a->dtype, ndim, shape);
    if (!out) return NULL;
    if (fill) tg_tensor_fill(out, *fill);
    for (int k = 0; k < c->n_maps; k++) tg_map_copy(&c->maps[k], out->data, a->data, tg_dtype_size(a->dtype));
    if (!tg_op_record(t, op, out, &a, 1, c)) return NULL;
    return tg_op_done(t, op, out);
}

bool tg_dim_resolve(tg_tape *t, const char *op, const tg_tensor *a, int dim, int n, int *d)
{
    *d = dim < 0 ? dim + n : dim;
    if (*d >= 0 && *d < n) return true;
    char sa[TG_SHAPE_STR];
    tg_fail(t, "%s: dim %d is out of range for a %s (dims %d to %d)", op, dim, tg_shape_str(a, sa), -n, n - 1);
    return false;
}

void tg_map_of(tg_map *m, int ndim, const int *shape)
{
    memset(m, 0, sizeof *m);
    m->nd = ndim;
    memcpy(m->n, shape, (size_t)ndim * sizeof *shape);
    tg_strides(ndim, shape, m->in_st);
    tg_strides(ndim, shape, m->out_st);
}
