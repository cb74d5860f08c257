/* tapegrad: the additive terms of attention scores (core/ops/internal.h):
 * the mask's float parts, a bias tensor per (batch, head), and ALiBi.
 *
 * ALiBi (Press et al.): head h adds m_h * (j - i) to the score of query i
 * and key j, i and j their positions, so a key's weight decays with its
 * distance at a rate of the head's own; m_h is the geometric sequence of
 * the paper's code (tg_alibi_slopes). A decoding step at position p adds
 * m_h * (j - p), the same numbers a whole pass adds to its row p.
 */
#include <math.h>

#include "../internal.h"
#include "../ops.h"

void tg_alibi_slopes(double *slopes, int n_heads)
{
    TG_REFUSE_NULL(slopes, "slopes", );
    /* 2^(-8/n) .. 2^(-8) for n a power of 2; else the closest power of 2's
     * slopes, then every other slope of twice as many (the paper's code) */
    int p2 = 1;
    while (p2 * 2 <= n_heads) p2 *= 2;
    for (int h = 0; h < p2 && h < n_heads; h++) slopes[h] = pow(2.0, -8.0 * (h + 1) / p2);
    for (int h = p2; h < n_heads; h++) slopes[h] = pow(2.0, -8.0 * (2 * (h - p2) + 1) / (2 * p2));
}

const tg_real *tg_attn_bias_rows(const tg_attn_bias *a, int b, int h, int i0, int nr, int n, tg_real *scratch,
                                 int *ld)
{
    const tg_mask_rt *m = &a->mask;
    const tg_real *plane = a->bias ? a->bias + (((size_t)(a->bias_b > 1 ? b : 0) * a->H + h) * a->Lq) * a->Lk : NULL;
    const tg_real *add = m->add ? m->add + tg_mask_rt_plane(m, b, h) : NULL;
    const tg_real *pad = m->pad_add ? m->pad_add + (size_t)b * a->Lk : NULL;  /* one row for every query */
    int terms = (add != NULL) + (pad != NULL) + (plane != NULL) + (a->alibi != NULL);
    *ld = a->Lk;
    if (terms == 0) return NULL;
    if (terms == 1 && add) return add + (size_t)i0 * a->Lk;
    if (terms == 1 && plane) return plane + (size_t)i0 * a->Lk;
    if (terms == 1 && pad) return *ld = 0, pad;
    int i = (a->pos0 ? a->pos0[b] : 0) + i0;  /* the position of row 0 */
    *ld = n;  /* the sum, in this order, in scratch [nr, n] */
    for (int r = 0; r < nr; r++) {
        tg_real *y = scratch + (size_t)r * n;
        size_t row = (size_t)(i0 + r) * a->Lk;
        for (int j = 0; j < n; j++) {
            tg_real v = add ? add[row + j] : 0;
            if (pad) v += pad[j];
            if (plane) v += plane[row + j];
            if (a->alibi) v += (tg_real)(a->alibi[h] * (double)(j - (i + r)));
            y[j] = v;
        }
    }
    return scratch;
}
