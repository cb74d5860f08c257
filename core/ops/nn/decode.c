/* tapegrad: the key/value cache of attention (core/ops/nn/decode.h): writing
 * positions into it and copying rows of it. The decoding step that reads it,
 * tg_sdpa_decode, is a front end of the one attention core in
 * core/ops/nn/attention.c. */
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* The resolved widths of a layout: H query heads, Hkv key/value heads. */
typedef struct kv_dims {
    int H, Hkv, dk, dv;
} kv_dims;

static bool dims_of(const tg_sdpa_layout *l, kv_dims *d)
{
    if (!l || l->n_heads < 1 || l->dk < 1 || l->dv < 1 || l->n_kv_heads < 0) return false;
    *d = (kv_dims){l->n_heads, l->n_kv_heads ? l->n_kv_heads : l->n_heads, l->dk, l->dv};
    return d->H % d->Hkv == 0;
}

/* Row b of the cache: its keys [Hkv*dk, cap], then its values [cap, Hkv*dv]. */
static tg_real *keys_of(const tg_tensor *cache, const kv_dims *d, int b)
{
    return cache->data + (size_t)b * cache->shape[1] * d->Hkv * (d->dk + d->dv);
}

static tg_real *values_of(const tg_tensor *cache, const kv_dims *d, int b)
{
    return keys_of(cache, d, b) + (size_t)d->Hkv * d->dk * cache->shape[1];
}

/* No node: no gradient flows through the cache. */
TG_OP_NO_GRAD(kv_write_op, "tg_kv_write");

/* A cache [B >= rows, cap, Hkv*(dk+dv)] for layout l: false with the tape's error set. */
static bool cache_check(tg_tape *t, const tg_op *rec, const tg_tensor *cache, const tg_sdpa_layout *l, int rows,
                        kv_dims *d)
{
    const char *op = rec->name;
    char sc[TG_SHAPE_STR];
    if (!l) return tg_fail(t, "%s: the layout is NULL", op), false;
    if (!dims_of(l, d)) {
        tg_fail(t, "%s: the layout needs n_heads, dk, dv >= 1 and n_kv_heads dividing n_heads "
                   "(n_heads %d, n_kv_heads %d, dk %d, dv %d)", op, l ? l->n_heads : 0, l ? l->n_kv_heads : 0,
                l ? l->dk : 0, l ? l->dv : 0);
        return false;
    }
    if (!tg_inputs_check(t, rec, (tg_tensor *const[]){(tg_tensor *)cache}, 1, 1)) return false;
    int C = d->Hkv * (d->dk + d->dv);
    if (cache->ndim != 3 || cache->shape[0] < rows || cache->shape[1] < 1 || cache->shape[2] != C) {
        tg_fail(t, "%s: the cache must be [B >= %d, cap, %d] (%d key/value heads of %d + %d), got %s", op, rows,
                C, d->Hkv, d->dk, d->dv, tg_shape_str(cache, sc));
        return false;
    }
    return true;
}

int tg_kv_write(tg_tape *t, tg_tensor *cache, const tg_tensor *x, const tg_sdpa_layout *lay, const tg_tensor *at)
{
    TG_DISPATCH_OTHER(tg_kv_write, cache, (t, cache, x, lay, at));
    char sx[TG_SHAPE_STR];
    kv_dims d;
    if (!cache || !x) return tg_fail_null(t, "tg_kv_write"), -1;
    if (!tg_inputs_check(t, &kv_write_op, (tg_tensor *const[]){(tg_tensor *)x}, 1, 1)) return -1;
    if (x->ndim != 3) return tg_op_fail(t, &kv_write_op, "x must be [B, L, C], got %s", tg_shape_str(x, sx)), -1;
    int B = x->shape[0], L = x->shape[1], C = x->shape[2];
    if (!cache_check(t, &kv_write_op, cache, lay, B, &d)) return -1;
    int cap = cache->shape[1], kw = d.Hkv * d.dk, vw = d.Hkv * d.dv;
    if (lay->k_col < 0 || lay->k_col + kw > C || lay->v_col < 0 || lay->v_col + vw > C)
        return tg_op_fail(t, &kv_write_op, "key columns [%d, %d) or value columns [%d, %d) are outside x %s",
                       lay->k_col, lay->k_col + kw, lay->v_col, lay->v_col + vw, tg_shape_str(x, sx)), -1;
    if (at && !tg_index_rows_check(t, &kv_write_op, at, "at", B)) return -1;
    for (int b = 0; b < B; b++) {
        int64_t p0 = at ? tg_index_at(at, (size_t)b) : 0;
        if (p0 < 0 || p0 + L > cap)
            return tg_op_fail(t, &kv_write_op, "row %d's positions [%lld, %lld) are outside the cache [0, %d)", b,
                              (long long)p0, (long long)p0 + L, cap), -1;
    }
    for (int b = 0; b < B; b++) {
        tg_real *kt = keys_of(cache, &d, b), *v = values_of(cache, &d, b);
        int p0 = at ? (int)tg_index_at(at, (size_t)b) : 0;
        for (int i = 0; i < L; i++) {
            const tg_real *row = x->data + ((size_t)b * L + i) * C;
            for (int c = 0; c < kw; c++) kt[(size_t)c * cap + p0 + i] = row[lay->k_col + c];
            memcpy(v + (size_t)(p0 + i) * vw, row + lay->v_col, (size_t)vw * sizeof *row);
        }
    }
    return 0;
}

int tg_kv_copy(tg_tensor *cache, const tg_sdpa_layout *lay, int to, int from, int n)
{
    kv_dims d;
    TG_REFUSE_NULL(cache, "the cache", -1);
    TG_REFUSE_NULL(lay, "the layout", -1);
    if (!dims_of(lay, &d) || cache->ndim != 3 || cache->shape[2] != d.Hkv * (d.dk + d.dv))
        return tg_error_set("tg_kv_copy: the cache does not match its layout");
    int B = cache->shape[0], cap = cache->shape[1], kw = d.Hkv * d.dk, vw = d.Hkv * d.dv;
    if (to < 0 || to >= B || from < 0 || from >= B || n < 0 || n > cap)
        return tg_error_set("tg_kv_copy: rows %d -> %d, %d positions: need rows in [0, %d), positions in [0, %d]",
                            from, to, n, B, cap);
    if (to == from) return 0;
    tg_real *kd = keys_of(cache, &d, to), *ks = keys_of(cache, &d, from);
    for (int c = 0; c < kw; c++) memcpy(kd + (size_t)c * cap, ks + (size_t)c * cap, (size_t)n * sizeof *ks);
    memcpy(values_of(cache, &d, to), values_of(cache, &d, from), (size_t)n * vw * sizeof *ks);
    return 0;
}

/* Declared in core/ops/internal.h. */
bool tg_kv_check(tg_tape *t, const tg_op *rec, const tg_tensor *cache, const tg_sdpa_layout *lay, int rows,
                 int *n_kv)
{
    kv_dims d;
    if (!cache_check(t, rec, cache, lay, rows, &d)) return false;
    *n_kv = d.Hkv;
    return true;
}
