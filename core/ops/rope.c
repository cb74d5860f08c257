/* tapegrad: rotary position embeddings (tg_rope, core/ops/ops.h).
 *
 * Head h of x [B, L, C] is columns [col + h*d, col + (h+1)*d). Its first r
 * (even) dims are r/2 pairs (x_2i, x_2i+1), LLaMA's apply_rotary_emb: pair i
 * of position p turns by the angle p * w_i, w_i = 1 / base^(2i / r):
 *     y_2i   = x_2i cos - x_2i+1 sin
 *     y_2i+1 = x_2i sin + x_2i+1 cos
 * Every other column of x is copied. A rotation's inverse is its transpose:
 *     dx_2i   =  dy_2i cos + dy_2i+1 sin
 *     dx_2i+1 = -dy_2i sin + dy_2i+1 cos
 * The angle of (p, i) is computed the same way whatever the call (in double,
 * then rounded), so a decoding step at position p rotates its query and key
 * exactly as a whole pass does at p. cos and sin of the L positions of a
 * batch row are tabled once (LLaMA's freqs_cis) and shared by its heads and
 * by the next rows starting at the same position: a pass without pos0
 * computes L * r/2 of each instead of B * L * heads * r/2.
 */
#include <math.h>
#include <string.h>

#include "ops.h"

typedef struct rope_ctx {
    tg_rope_opts o;            /* pos0 copied into the arena */
    int rot;                   /* r, resolved */
} rope_ctx;

/* cs [L, r/2, 2] <- cos and sin (sign -1: -sin) of the angles of positions
 * p0 .. p0+L-1, each rounded to tg_real. */
static void rope_table(tg_real *cs, int L, int r, double base, int p0, int sign)
{
    for (int l = 0; l < L; l++)
        for (int i = 0; i < r / 2; i++) {
            double a = (p0 + l) / pow(base, 2.0 * i / r);
            cs[((size_t)l * (r / 2) + i) * 2] = (tg_real)cos(a);
            cs[((size_t)l * (r / 2) + i) * 2 + 1] = (tg_real)(sign * sin(a));
        }
}

/* y = R x over one head's r dims, R's cos and sin in cs [r/2, 2]. */
static void rotate(const tg_real *x, tg_real *y, const tg_real *cs, int r)
{
    for (int i = 0; i < r / 2; i++) {
        tg_real c = cs[2 * i], s = cs[2 * i + 1], x0 = x[2 * i], x1 = x[2 * i + 1];
        y[2 * i] = x0 * c - x1 * s;
        y[2 * i + 1] = x0 * s + x1 * c;
    }
}

/* Every row's heads rotated from x into y (sign -1: the inverse); y has x's
 * other columns already. cs: scratch [L, r/2, 2]. */
static void rope_rows(const tg_real *x, tg_real *y, tg_real *cs, int B, int L, int C, const tg_rope_opts *o, int r,
                      int sign)
{
    double base = o->base > 0 ? o->base : 10000;
    for (int b = 0; b < B; b++) {
        int p0 = o->pos0 ? o->pos0[b] : 0;
        if (b == 0 || p0 != (o->pos0 ? o->pos0[b - 1] : 0)) rope_table(cs, L, r, base, p0, sign);
        for (int l = 0; l < L; l++) {
            size_t row = ((size_t)b * L + l) * C + o->col;
            for (int h = 0; h < o->n_heads; h++)
                rotate(x + row + (size_t)h * o->d_head, y + row + (size_t)h * o->d_head, cs + (size_t)l * r, r);
        }
    }
}

/* Scratch for rope_rows' table of L positions of r dims: NULL with an error. */
static tg_real *table_scratch(tg_tape *t, int L, int r, size_t *bytes, const char *what)
{
    size_t n = (size_t)L * (size_t)r;
    *bytes = (n ? n : 1) * sizeof(tg_real);
    return tg_arena_scratch(t, *bytes, what);
}

/* out [B, L, C] <- x: dx += R^T dout on the rotated dims, dout elsewhere */
TG_BACKWARD(rope_backward, rope_ctx)
{
    const rope_ctx *c = ctx;
    tg_tensor *x = in[0];
    tg_real *dx = tg_grad(t, x), *g = out->grad;
    size_t n = x->size;
    size_t cs_bytes;
    tg_real *tmp = dx ? tg_arena_scratch(t, n * sizeof *tmp, "tg_rope backward") : NULL;
    tg_real *cs = tmp ? table_scratch(t, x->shape[1], c->rot, &cs_bytes, "tg_rope backward") : NULL;
    if (!cs) {
        tg_arena_release(t, tmp, n * sizeof *tmp);
        return;
    }
    memcpy(tmp, g, n * sizeof *tmp);
    rope_rows(g, tmp, cs, x->shape[0], x->shape[1], x->shape[2], &c->o, c->rot, -1);
    for (size_t i = 0; i < n; i++) dx[i] += tmp[i];
    tg_arena_release(t, cs, cs_bytes);
    tg_arena_release(t, tmp, n * sizeof *tmp);
}

TG_OP(rope_op, "tg_rope", rope_backward, rope_ctx);

tg_tensor *tg_rope(tg_tape *t, tg_tensor *x, const tg_rope_opts *opts)
{
    if (!tg_inputs_check(t, &rope_op, &x, 1, 1)) return NULL;
    if (!opts) return tg_fail(t, "tg_rope: opts is NULL");
    char sx[TG_SHAPE_STR];
    tg_rope_opts o = *opts;
    int r = o.rot ? o.rot : o.d_head;
    if (x->ndim != 3) return tg_fail(t, "tg_rope: x must be [B, L, C], got %s", tg_shape_str(x, sx));
    if (o.n_heads < 1 || o.d_head < 1 || o.col < 0 || (long long)o.col + (long long)o.n_heads * o.d_head > x->shape[2])
        return tg_fail(t, "tg_rope: %d heads of %d columns from column %d do not fit in x %s", o.n_heads, o.d_head,
                       o.col, tg_shape_str(x, sx));
    if (r < 2 || r % 2 || r > o.d_head)
        return tg_fail(t, "tg_rope: the rotated dims (%d of a head of %d) must be even, >= 2 and <= the head "
                          "width (an odd head width needs rot < d_head)", r, o.d_head);
    if (!isfinite(o.base) || o.base < 0) return tg_fail(t, "tg_rope: base %g must be finite and > 0 (0: 10000)", o.base);
    int B = x->shape[0], L = x->shape[1];
    for (int b = 0; o.pos0 && b < B; b++)
        if (o.pos0[b] < 0) return tg_fail(t, "tg_rope: pos0[%d] = %d is negative", b, (int)o.pos0[b]);
    tg_tensor *out = tg_new_like(t, &rope_op, x);
    size_t cs_bytes;
    tg_real *cs = out ? table_scratch(t, L, r, &cs_bytes, "tg_rope") : NULL;
    if (!cs) return NULL;
    memcpy(out->data, x->data, x->size * sizeof *x->data);
    rope_rows(x->data, out->data, cs, B, L, x->shape[2], &o, r, 1);
    tg_arena_release(t, cs, cs_bytes);
    if (o.pos0 && tg_needs_grad(t, &x, 1)) {
        int32_t *p = tg_arena_alloc(t, (size_t)B * sizeof *p, "tg_rope positions");
        if (!p) return NULL;
        memcpy(p, o.pos0, (size_t)B * sizeof *p);
        o.pos0 = p;
    }
    if (!tg_op_record(t, &rope_op, out, &x, 1, &(rope_ctx){o, r})) return NULL;
    return tg_op_done(t, &rope_op, out);
}
