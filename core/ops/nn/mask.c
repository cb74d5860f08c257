/* tapegrad: attention masks (see core/ops/nn/mask.h).
 *
 * tg_mask_read checks a tg_mask against the scores [B, H, Lq, Lk] of the op
 * about to use it and reads its tensors into a tg_mask_rt of raw arrays of
 * this copy's types (core/ops/internal.h: shared by tg_softmax_masked,
 * tg_sdpa, tg_sdpa_heads and the MHA layer); tg_mask_fill_rows turns it into
 * 0/1 visibility rows of one (b, h) plane.
 */
#include "../internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mask.h"
#include "../../engine/tape.h"

bool tg_mask_empty(const tg_mask *m)
{
    return !m || (!m->causal && m->window <= 0 && !m->key_lens && !m->key_padding && !m->attn);
}

/* Declared in core/ops/internal.h. */
bool tg_mask_rt_rules(const tg_mask_rt *r)
{
    return r->causal || r->window > 0 || r->pad || r->deny;
}

/* The interval [lo, hi) of keys that causal, key_lens and window allow for
 * query i of batch element b (the rules that are ranges). */
static void row_range(const tg_mask_rt *m, int b, int i, int Lk, int *lo, int *hi)
{
    long long l = 0, h = Lk;
    if (m->causal && (long long)i + 1 < h) h = (long long)i + 1;
    if (m->lens && m->lens[b] < h) h = m->lens[b];
    if (m->window > 0) {
        if ((long long)i - m->window + 1 > l) l = (long long)i - m->window + 1;
        if ((long long)i + m->window < h) h = (long long)i + m->window;
    }
    if (h < l) h = l;
    *lo = (int)(l < Lk ? l : Lk);
    *hi = (int)(h < Lk ? h : Lk);
}

/* Declared in core/ops/internal.h. */
void tg_mask_fill_rows(const tg_mask_rt *m, int b, int h, int i0, int rows, int n, uint8_t *vis)
{
    int Lk = m->Lk;
    size_t plane = tg_mask_rt_plane(m, b, h);
    const uint8_t *pad = m->pad ? m->pad + (size_t)b * Lk : NULL;
    const uint8_t *deny = m->deny ? m->deny + plane : NULL;
    const tg_real *add = m->add ? m->add + plane : NULL, *padd = m->pad_add ? m->pad_add + (size_t)b * Lk : NULL;
    for (int r = 0; r < rows; r++) {
        int i = i0 + r, lo, hi;
        uint8_t *v = vis + (size_t)r * n;
        row_range(m, b, i, Lk, &lo, &hi);
        if (hi > n) hi = n;
        if (lo > hi) lo = hi;
        memset(v, 0, (size_t)n);
        memset(v + lo, 1, (size_t)(hi - lo));
        if (pad)
            for (int j = lo; j < hi; j++) v[j] &= !pad[j];
        if (deny)
            for (int j = lo; j < hi; j++) v[j] &= !deny[(size_t)i * Lk + j];
        if (add)
            for (int j = lo; j < hi; j++) v[j] &= add[(size_t)i * Lk + j] != -INFINITY;
        if (padd)
            for (int j = lo; j < hi; j++) v[j] &= padd[j] != -INFINITY;
    }
}

/* Declared in core/ops/internal.h: row_range's hi never decreases with i. */
int tg_mask_keys_end(const tg_mask_rt *m, int b, int i)
{
    int lo, hi;
    row_range(m, b, i, m->Lk, &lo, &hi);
    return hi;
}

/* x's data as n elements of dtype want: x's own when it has that dtype and
 * copy is false, else an arena copy (converted). */
static const void *read_as(tg_tape *t, const tg_tensor *x, tg_dtype want, bool copy, const char *what)
{
    if (x->dtype == want && !copy) return x->data;
    size_t n = x->size, sz = tg_dtype_size(want);
    void *d = tg_arena_alloc(t, n * sz + 1, what);
    if (!d) return NULL;
    if (x->dtype == want) memcpy(d, x->data, n * sz);
    else
        for (size_t i = 0; i < n; i++) tg_dtype_store(want, d, i, tg_dtype_load(x->dtype, x->data, i));
    return d;
}

/* x live, of this tape, and one of the dtypes ok (a bit per dtype); false
 * with "<op>: mask <name> ...: <shapes>". */
static bool tensor_ok(tg_tape *t, const tg_tensor *x, const char *name, unsigned ok, const char *allowed,
                      const char *op, const char *shapes)
{
    char what[96];
    snprintf(what, sizeof what, "%s: mask %s", op, name);
    tg_op rec = {what, NULL, 0};
    if (x->magic != TG_TENSOR_LIVE || !tg_inputs_check_dtype(t, &rec, x->dtype, (tg_tensor *const[]){(tg_tensor *)x}, 1, 1)) {
        if (x->magic != TG_TENSOR_LIVE) tg_fail(t, "%s is not a live tensor: %s", what, shapes);
        return false;
    }
    if (ok >> x->dtype & 1) return true;
    tg_fail(t, "%s is %s, but must be %s: %s", what, tg_dtype_name(x->dtype), allowed, shapes);
    return false;
}

/* No NaN or +inf in a float mask a [rows, n] (they would turn rows into NaN). */
static bool finite_check(tg_tape *t, const tg_real *a, size_t rows, size_t n, const char *name, const char *op,
                         const char *shapes)
{
    for (size_t e = 0; e < rows * n; e++)
        if (isnan(a[e]) || a[e] == INFINITY) {
            tg_fail(t, "%s: mask %s[%zu,%zu] is %s (only finite values or -inf): %s", op, name, e / n, e % n,
                    isnan(a[e]) ? "NaN" : "+inf", shapes);
            return false;
        }
    return true;
}

#define FLOATS (1u << TG_F32 | 1u << TG_F64)

/* The attn mask's planes: strides (sb, sh) of plane (b, h) in planes of
 * [Lq, Lk] for each accepted shape; false with the expected and given shapes. */
static bool attn_strides(tg_tape *t, const tg_tensor *a, int B, int H, int Lq, int Lk, size_t *sb, size_t *sh,
                         const char *op, const char *shapes)
{
    const int *s = a->shape;
    bool tail = a->ndim >= 2 && s[a->ndim - 2] == Lq && s[a->ndim - 1] == Lk;
    *sb = *sh = 0;
    if (tail && a->ndim == 2) return true;
    if (tail && a->ndim == 3 && s[0] == B * H) { /* PyTorch's 3-D attn_mask: plane b*H + h */
        *sb = (size_t)H, *sh = 1;
        return true;
    }
    if (tail && a->ndim == 3 && s[0] == B) {
        *sb = 1;
        return true;
    }
    if (tail && a->ndim == 4 && s[0] == B && s[1] == H) {
        *sb = (size_t)H, *sh = 1;
        return true;
    }
    char sa[TG_SHAPE_STR];
    tg_fail(t, "%s: mask attn %s must be [Lq, Lk] = [%d, %d], [B, Lq, Lk] = [%d, %d, %d], [B*H, Lq, Lk] = "
            "[%d, %d, %d] or [B, H, Lq, Lk] = [%d, %d, %d, %d]: %s", op, tg_shape_str(a, sa), Lq, Lk, B, Lq, Lk,
            B * H, Lq, Lk, B, H, Lq, Lk, shapes);
    return false;
}

/* Declared in core/ops/internal.h. */
bool tg_mask_read(tg_tape *t, const tg_mask *m, int B, int H, int Lq, int Lk, bool copy, const char *op,
                  const char *shapes, tg_mask_rt *r)
{
    char sx[TG_SHAPE_STR], what[64];
    *r = (tg_mask_rt){.Lq = Lq, .Lk = Lk};
    if (!m) return true;
    snprintf(what, sizeof what, "%s mask", op);
    r->causal = m->causal, r->window = m->window;
    if (m->window < 0) {
        tg_fail(t, "%s: mask window %d is negative (0 = off): %s", op, m->window, shapes);
        return false;
    }
    const tg_tensor *kl = m->key_lens, *kp = m->key_padding, *a = m->attn;
    if (kl) {
        if (!tensor_ok(t, kl, "key_lens", 1u << TG_I32 | 1u << TG_I64, "int32 or int64", op, shapes)) return false;
        if (kl->ndim != 1 || kl->shape[0] != B) {
            tg_fail(t, "%s: mask key_lens %s must be [B] = [%d]: %s", op, tg_shape_str(kl, sx), B, shapes);
            return false;
        }
        for (int b = 0; b < B; b++) {
            double n = tg_dtype_load(kl->dtype, kl->data, (size_t)b);
            if (n < 0 || n > Lk) {
                tg_fail(t, "%s: mask key_lens[%d] = %.0f is outside [0, Lk = %d]: %s", op, b, n, Lk, shapes);
                return false;
            }
        }
        if (!(r->lens = read_as(t, kl, TG_I32, copy, what))) return false;
    }
    if (kp) {
        if (!tensor_ok(t, kp, "key_padding", 1u << TG_BOOL | FLOATS, "bool (true = ignore) or float32/float64",
                       op, shapes))
            return false;
        if (kp->ndim != 2 || kp->shape[0] != B || kp->shape[1] != Lk) {
            tg_fail(t, "%s: mask key_padding %s must be [B, Lk] = [%d, %d]: %s", op, tg_shape_str(kp, sx), B, Lk,
                    shapes);
            return false;
        }
        if (kp->dtype == TG_BOOL) r->pad = read_as(t, kp, TG_BOOL, copy, what);
        else if (!(r->pad_add = read_as(t, kp, TG_REAL_DTYPE, copy, what)) ||
                 !finite_check(t, r->pad_add, (size_t)B, (size_t)Lk, "key_padding", op, shapes))
            return false;
        if (!r->pad && !r->pad_add) return false;
    }
    if (a) {
        if (!tensor_ok(t, a, "attn", 1u << TG_BOOL | FLOATS, "bool (true = not allowed) or float32/float64", op,
                       shapes) ||
            !attn_strides(t, a, B, H, Lq, Lk, &r->sb, &r->sh, op, shapes))
            return false;
        size_t plane = (size_t)Lq * Lk;
        r->sb *= plane, r->sh *= plane;
        if (a->dtype == TG_BOOL) r->deny = read_as(t, a, TG_BOOL, copy, what);
        else if (!(r->add = read_as(t, a, TG_REAL_DTYPE, copy, what)) ||
                 !finite_check(t, r->add, a->size / (Lk ? (size_t)Lk : 1), (size_t)Lk, "attn", op, shapes))
            return false;
        if (!r->deny && !r->add) return false;
    }
    return true;
}

tg_tensor *tg_mask_visible(tg_tape *t, const tg_mask *m, int B, int H, int Lq, int Lk)
{
    char shapes[96];
    snprintf(shapes, sizeof shapes, "scores [%d, %d, %d, %d]", B, H, Lq, Lk);
    if (!t) return tg_fail(NULL, "tg_mask_visible: the tape is NULL");
    if (B < 0 || H < 0 || Lq < 0 || Lk < 0) return tg_fail(t, "tg_mask_visible: negative dims: %s", shapes);
    tg_mask_rt r;
    if (!tg_mask_read(t, m, B, H, Lq, Lk, false, "tg_mask_visible", shapes, &r)) return NULL;
    tg_tensor *v = tg_tensor_new_dtype(t, TG_BOOL, 4, (int[]){B, H, Lq, Lk});
    if (!v) return NULL;
    uint8_t *vis = tg_data(v, TG_BOOL);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            tg_mask_fill_rows(&r, b, h, 0, Lq, Lk, vis + ((size_t)b * H + h) * Lq * Lk);
    return v;
}
