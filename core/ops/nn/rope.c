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
 * exactly as a whole pass does at p. A call tables cos and sin of its L
 * positions once (LLaMA's freqs_cis; one table per batch row only when the
 * rows start at different pos0) for every head of every row: a pass without
 * pos0 computes L * r/2 of each instead of B * L * heads * r/2.
 */
#include <math.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* ns per column of a row, on one thread: the pool's size rule (tg_parallel_pays) */
#define ROPE_NS_PER_COL 0.5

typedef struct rope_ctx {
    tg_rope_opts o;            /* pos0 NULL: read from p0 */
    const int32_t *p0;         /* [B] row b's first position, in the arena; NULL: 0 */
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

/* Whether every batch row starts at the same position: one table serves all. */
static bool one_table(const int32_t *p0, int B)
{
    for (int b = 1; p0 && b < B; b++)
        if (p0[b] != p0[0]) return false;
    return true;
}

/* The tables of x [B, L, .]'s positions (one, or one per batch row) into
 * arena scratch [n, L, r/2, 2]; NULL with an error. */
static tg_real *rope_tables(tg_tape *t, const tg_rope_opts *o, const int32_t *p0, int B, int L, int r, int sign,
                            size_t *bytes, const char *what)
{
    int n = one_table(p0, B) ? 1 : B;
    size_t per = (size_t)L * (size_t)r, all = per * (size_t)n;
    *bytes = (all ? all : 1) * sizeof(tg_real);
    tg_real *cs = tg_arena_scratch(t, *bytes, what);
    double base = o->base > 0 ? o->base : 10000;
    for (int b = 0; cs && b < n; b++) rope_table(cs + (size_t)b * per, L, r, base, p0 ? p0[b] : 0, sign);
    return cs;
}

/* y = R x over one head's r dims (acc: y += R x), R's cos and sin in cs [r/2, 2]. */
static void rotate(const tg_real *x, tg_real *y, const tg_real *cs, int r, bool acc)
{
    for (int i = 0; i < r / 2; i++) {
        tg_real c = cs[2 * i], s = cs[2 * i + 1], x0 = x[2 * i], x1 = x[2 * i + 1];
        tg_real y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
        if (acc) {
            y[2 * i] += y0;
            y[2 * i + 1] += y1;
        } else {
            y[2 * i] = y0;
            y[2 * i + 1] = y1;
        }
    }
}

/* y [n] = x (acc: y += x) */
static void pass(const tg_real *x, tg_real *y, size_t n, bool acc)
{
    if (!acc) memcpy(y, x, n * sizeof *y);
    else for (size_t i = 0; i < n; i++) y[i] += x[i];
}

typedef struct rope_job {
    const tg_real *x, *cs;
    tg_real *y;
    const tg_rope_opts *o;
    int L, C, r, n_tables;
    bool acc;
} rope_job;

/* Rows [begin, end) of x [B*L, C] into y: heads rotated, other columns passed. */
static void rope_piece(void *ctx, size_t begin, size_t end)
{
    const rope_job *j = ctx;
    const tg_rope_opts *o = j->o;
    for (size_t row = begin; row < end; row++) {
        const tg_real *x = j->x + row * j->C, *cs = j->cs + (j->n_tables > 1 ? row : row % j->L) * j->r;
        tg_real *y = j->y + row * j->C;
        int at = o->col;
        pass(x, y, (size_t)at, j->acc);
        for (int h = 0; h < o->n_heads; h++, at += o->d_head) {
            rotate(x + at, y + at, cs, j->r, j->acc);
            pass(x + at + j->r, y + at + j->r, (size_t)(o->d_head - j->r), j->acc);
        }
        pass(x + at, y + at, (size_t)(j->C - at), j->acc);
    }
}

/* y = rope(x) over x [B, L, C] (sign -1: y += the inverse); false with an
 * error when the tables' scratch is out of memory. The rows are independent:
 * any cut across the pool gives the same bits. */
static bool rope_rows(tg_tape *t, const tg_real *x, tg_real *y, const int *shape, const rope_ctx *c, int sign,
                      const char *what)
{
    int B = shape[0], L = shape[1], C = shape[2], r = c->rot;
    size_t bytes;
    tg_real *cs = rope_tables(t, &c->o, c->p0, B, L, r, sign, &bytes, what);
    if (!cs) return false;
    rope_job j = {x, cs, y, &c->o, L, C, r, one_table(c->p0, B) ? 1 : B, sign < 0};
    tg_parallel_range((size_t)B * L, ROPE_NS_PER_COL * C, rope_piece, &j);
    tg_arena_release(t, cs, bytes);
    return true;
}

/* out [B, L, C] <- x: dx += R^T dout on the rotated dims, dout elsewhere */
TG_BACKWARD(rope_backward, rope_ctx)
{
    const rope_ctx *c = ctx;
    tg_tensor *x = in[0];
    tg_real *dx = tg_grad(t, x);
    if (dx) rope_rows(t, out->grad, dx, x->shape, c, -1, "tg_rope backward");
}

TG_OP(rope_op, "tg_rope", rope_backward, rope_ctx);

/* pos0, an int64 or int32 tensor [B] of first positions of L, as int32 in the
 * arena (the backward's, until tg_tape_reset); NULL with an error. */
static const int32_t *rope_positions(tg_tape *t, const tg_tensor *pos0, int B, int L)
{
    if (!tg_index_rows_check(t, &rope_op, pos0, "pos0", B)) return NULL;
    int32_t *p = tg_arena_alloc(t, (size_t)(B ? B : 1) * sizeof *p, "tg_rope positions");
    for (int b = 0; p && b < B; b++) {
        int64_t v = tg_index_at(pos0, (size_t)b);
        if (v < 0 || v > INT32_MAX - L) {
            tg_op_fail(t, &rope_op, "pos0[%d] = %lld is outside [0, %d]", b, (long long)v, INT32_MAX - L);
            return NULL;
        }
        p[b] = (int32_t)v;
    }
    return p;
}

tg_tensor *tg_rope(tg_tape *t, tg_tensor *x, const tg_rope_opts *opts)
{
    TG_DISPATCH(tg_rope, x, (t, x, opts));
    if (!tg_inputs_check(t, &rope_op, &x, 1, 1)) return NULL;
    if (!opts) return tg_op_fail(t, &rope_op, "opts is NULL");
    char sx[TG_SHAPE_STR];
    tg_rope_opts o = *opts;
    int r = o.rot ? o.rot : o.d_head;
    if (x->ndim != 3) return tg_op_fail(t, &rope_op, "x must be [B, L, C], got %s", tg_shape_str(x, sx));
    if (o.n_heads < 1 || o.d_head < 1 || o.col < 0 || (long long)o.col + (long long)o.n_heads * o.d_head > x->shape[2])
        return tg_op_fail(t, &rope_op, "%d heads of %d columns from column %d do not fit in x %s", o.n_heads, o.d_head,
                          o.col, tg_shape_str(x, sx));
    if (r < 2 || r % 2 || r > o.d_head)
        return tg_op_fail(t, &rope_op, "the rotated dims (%d of a head of %d) must be even, >= 2 and <= the head "
                          "width (an odd head width needs rot < d_head)", r, o.d_head);
    if (!isfinite(o.base) || o.base < 0) return tg_op_fail(t, &rope_op, "base %g must be finite and > 0 (0: 10000)", o.base);
    int B = x->shape[0];
    rope_ctx c = {o, NULL, r};
    if (o.pos0 && !(c.p0 = rope_positions(t, o.pos0, B, x->shape[1]))) return NULL;
    c.o.pos0 = NULL;  /* the caller's tensor may be gone by the backward */
    tg_tensor *out = tg_new_like(t, &rope_op, x);
    if (!out || !rope_rows(t, x->data, out->data, x->shape, &c, 1, rope_op.name)) return NULL;
    if (!tg_op_record(t, &rope_op, out, &x, 1, &c)) return NULL;
    return tg_op_done(t, &rope_op, out);
}
