/* tapegrad: attention masks described by rules (see core/ops/nn/mask.h).
 *
 * tg_mask_fill turns the rules into a [Lq, Lk] 0/1 visibility array for one
 * batch element; tg_mask_check validates a mask against the shapes of the op
 * about to use it (internal: shared by tg_softmax_masked and tg_sdpa).
 */
#include "../internal.h"

#include <math.h>
#include <string.h>

#include "mask.h"
#include "../../engine/tape.h"

bool tg_mask_empty(const tg_mask *m)
{
    return !m || (!m->causal && !m->key_lens && !m->key_keep && m->window <= 0 && !m->keep &&
                  !m->additive);
}

/* The interval [lo, hi) of keys that causal, key_lens and window allow for
 * query i of batch element b (the rules that are ranges). */
static void row_range(const tg_mask *m, int b, int i, int Lk, int *lo, int *hi)
{
    long long l = 0, h = Lk;
    if (m->causal && (long long)i + 1 < h) h = (long long)i + 1;
    if (m->key_lens && m->key_lens[b] < h) h = m->key_lens[b];
    if (m->window > 0) {
        if ((long long)i - m->window + 1 > l) l = (long long)i - m->window + 1;
        if ((long long)i + m->window < h) h = (long long)i + m->window;
    }
    if (h < l) h = l;
    *lo = (int)(l < Lk ? l : Lk);
    *hi = (int)(h < Lk ? h : Lk);
}

void tg_mask_fill(const tg_mask *m, int b, int Lq, int Lk, uint8_t *vis)
{
    TG_REFUSE_NULL(vis, "vis", );
    tg_mask_fill_rows(m, b, Lq, Lk, 0, Lq, Lk, vis);
}

/* Declared in core/ops/internal.h. */
void tg_mask_fill_rows(const tg_mask *m, int b, int Lq, int Lk, int i0, int rows, int n, uint8_t *vis)
{
    if (tg_mask_empty(m)) {
        memset(vis, 1, (size_t)rows * (size_t)n);
        return;
    }
    const uint8_t *kk = m->key_keep ? m->key_keep + (size_t)b * Lk : NULL;
    const uint8_t *keep = m->keep ? m->keep + (m->keep_batched ? (size_t)b * Lq * Lk : 0) : NULL;
    for (int r = 0; r < rows; r++) {
        int i = i0 + r, lo, hi;
        uint8_t *v = vis + (size_t)r * n;
        row_range(m, b, i, Lk, &lo, &hi);
        if (hi > n) hi = n;
        if (lo > hi) lo = hi;
        memset(v, 0, (size_t)n);
        memset(v + lo, 1, (size_t)(hi - lo));
        if (kk)
            for (int j = lo; j < hi; j++) v[j] &= kk[j] != 0;
        if (keep) {
            const uint8_t *kr = keep + (size_t)i * Lk;
            for (int j = lo; j < hi; j++) v[j] &= kr[j] != 0;
        }
        if (m->additive) {
            const tg_real *ar = m->additive + (size_t)i * Lk;
            for (int j = lo; j < hi; j++) v[j] &= ar[j] != -INFINITY;
        }
    }
}

/* Declared in core/ops/internal.h: row_range's hi never decreases with i. */
int tg_mask_keys_end(const tg_mask *m, int b, int i, int Lk)
{
    if (tg_mask_empty(m)) return Lk;
    int lo, hi;
    row_range(m, b, i, Lk, &lo, &hi);
    return hi;
}

/* Declared in core/ops/internal.h. */
bool tg_mask_check(tg_tape *t, const tg_mask *m, int B, int Lq, int Lk, const char *op,
                   const char *shapes)
{
    if (!m) return true;
    if (m->window < 0) {
        tg_fail(t, "%s: mask window %d is negative (0 = off): %s", op, m->window, shapes);
        return false;
    }
    if (m->keep_batched && !m->keep) {
        tg_fail(t, "%s: mask keep_batched is set but keep is NULL: %s", op, shapes);
        return false;
    }
    for (int b = 0; m->key_lens && b < B; b++) {
        if (m->key_lens[b] < 0 || m->key_lens[b] > Lk) {
            tg_fail(t, "%s: mask key_lens[%d] = %d is outside [0, Lk = %d]: %s", op, b,
                    (int)m->key_lens[b], Lk, shapes);
            return false;
        }
    }
    size_t n = (size_t)Lq * (size_t)Lk;
    for (size_t e = 0; m->additive && e < n; e++) {
        tg_real a = m->additive[e];
        if (isnan(a) || a == INFINITY) {
            tg_fail(t, "%s: mask additive[%zu,%zu] is %s (only finite values or -inf): %s", op,
                    e / (size_t)Lk, e % (size_t)Lk, isnan(a) ? "NaN" : "+inf", shapes);
            return false;
        }
    }
    return true;
}
