/* tapegrad: the key/value cache layout and one decoding step of attention
 * (core/ops/nn/decode.h). The step is the last query row of tg_sdpa_heads under
 * a causal mask: scores = scale q K^T over positions 0..pos, softmax, times V,
 * with the products and softmax of core/ops/nn/attention.c, so a decoder that
 * steps one position at a time reproduces a whole pass's bits. */
#include <math.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"
#include "../../kernels/blas.h"
#include "../../kernels/threads.h"

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

/* Neither records a node: decoding runs without grad. */
TG_OP_NO_GRAD(kv_write_op, "tg_kv_write");
TG_OP_NO_GRAD(sdpa_decode_op, "tg_sdpa_decode");

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

int tg_kv_write(tg_tape *t, tg_tensor *cache, const tg_tensor *x, const tg_sdpa_layout *lay, const int32_t *at)
{
    char sx[TG_SHAPE_STR];
    kv_dims d;
    if (!cache || !x) return tg_fail_null(t, "tg_kv_write"), -1;
    if (!tg_inputs_check(t, &kv_write_op, (tg_tensor *const[]){(tg_tensor *)x}, 1, 1)) return -1;
    if (x->ndim != 3) return tg_fail(t, "tg_kv_write: x must be [B, L, C], got %s", tg_shape_str(x, sx)), -1;
    int B = x->shape[0], L = x->shape[1], C = x->shape[2];
    if (!cache_check(t, &kv_write_op, cache, lay, B, &d)) return -1;
    int cap = cache->shape[1], kw = d.Hkv * d.dk, vw = d.Hkv * d.dv;
    if (lay->k_col < 0 || lay->k_col + kw > C || lay->v_col < 0 || lay->v_col + vw > C)
        return tg_fail(t, "tg_kv_write: key columns [%d, %d) or value columns [%d, %d) are outside x %s",
                       lay->k_col, lay->k_col + kw, lay->v_col, lay->v_col + vw, tg_shape_str(x, sx)), -1;
    for (int b = 0; b < B; b++) {
        int p0 = at ? at[b] : 0;
        if (p0 < 0 || p0 + L > cap)
            return tg_fail(t, "tg_kv_write: row %d's positions [%d, %d) are outside the cache [0, %d)", b, p0,
                           p0 + L, cap), -1;
    }
    for (int b = 0; b < B; b++) {
        tg_real *kt = keys_of(cache, &d, b), *v = values_of(cache, &d, b);
        int p0 = at ? at[b] : 0;
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

/* One step over rows [b0, b1): per query head, S = scale q K^T read in place
 * from the transposed keys, softmax, O = S V. */
typedef struct step_ctx {
    const tg_tensor *cache;
    const tg_real *q;           /* xq's data, head h of row b at b*ldq + q_col + h*dk */
    const int32_t *pos;
    tg_real *S, *out;           /* [B, 2 cap] scratch (scores, ALiBi's terms), [B, H*dv] */
    const double *alibi;        /* [H] or NULL */
    kv_dims d;
    int ldq, q_col, cap;
    tg_real scale;
} step_ctx;

static void step_rows(void *ctx, int b0, int b1)
{
    const step_ctx *a = ctx;
    const kv_dims *d = &a->d;
    int cap = a->cap, group = d->H / d->Hkv, vw = d->Hkv * d->dv;
    for (int b = b0; b < b1; b++) {
        int n = a->pos[b] + 1;
        const tg_real *kt = keys_of(a->cache, d, b), *v = values_of(a->cache, d, b);
        tg_real *S = a->S + (size_t)b * 2 * cap;
        tg_attn_bias ab = {.alibi = a->alibi, .H = d->H, .Lq = 1, .Lk = cap, .pos0 = a->pos[b]};
        for (int h = 0; h < d->H; h++) {
            int g = h / group, ld_add;
            const tg_real *q = a->q + (size_t)b * a->ldq + a->q_col + (size_t)h * d->dk;
            const tg_real *add = tg_attn_bias_rows(&ab, b, h, 0, 1, n, S + cap, &ld_add);
            tg_gemm_ld(false, false, 1, n, d->dk, a->scale, q, a->ldq, kt + (size_t)g * d->dk * cap, cap, 0, S, n);
            tg_softmax_block(S, S, 1, n, 1, NULL, add, ld_add, NULL);
            tg_gemm_ld(false, false, 1, d->dv, n, 1, S, n, v + (size_t)g * d->dv, vw, 0,
                       a->out + (size_t)b * d->H * d->dv + (size_t)h * d->dv, d->H * d->dv);
        }
    }
}

tg_tensor *tg_sdpa_decode(tg_tape *t, tg_tensor *xq, tg_tensor *cache, const tg_sdpa_layout *lay,
                        const int32_t *pos, const tg_sdpa_opts *opts)
{
    char sx[TG_SHAPE_STR];
    kv_dims d;
    if (!tg_inputs_check(t, &sdpa_decode_op, (tg_tensor *const[]){xq, cache}, 2, 2)) return NULL;
    if (!pos) return tg_fail(t, "tg_sdpa_decode: pos is NULL");
    if (tg_tape_recording(t)) return tg_fail(t, "tg_sdpa_decode: decoding only: the tape must not record");
    if (opts && (opts->mask || opts->bias || opts->dropout != 0 || !isfinite(opts->scale)))
        return tg_fail(t, "tg_sdpa_decode: takes a finite scale and ALiBi slopes only (no mask, bias or dropout)");
    if (xq->ndim != 3 || xq->shape[1] != 1) return tg_fail(t, "tg_sdpa_decode: xq must be [B, 1, C], got %s",
                                                           tg_shape_str(xq, sx));
    int B = xq->shape[0];
    if (!cache_check(t, &sdpa_decode_op, cache, lay, B, &d)) return NULL;
    if (lay->q_col < 0 || lay->q_col + d.H * d.dk > xq->shape[2])
        return tg_fail(t, "tg_sdpa_decode: query columns [%d, %d) are outside xq %s", lay->q_col,
                       lay->q_col + d.H * d.dk, tg_shape_str(xq, sx));
    int cap = cache->shape[1];
    double work = 0;
    for (int b = 0; b < B; b++) {
        if (pos[b] < 0 || pos[b] >= cap)
            return tg_fail(t, "tg_sdpa_decode: pos[%d] = %d is outside the cache [0, %d)", b, (int)pos[b], cap);
        work += (double)(pos[b] + 1) * d.H * (d.dk + d.dv);
    }
    tg_tensor *o = tg_new(t, &sdpa_decode_op, 3, (int[]){B, 1, d.H * d.dv});
    tg_real *S = tg_arena_alloc(t, (size_t)B * 2 * cap * sizeof *S, "tg_sdpa_decode scores");
    if (!o || !S) return NULL;
    double scale = opts && opts->scale > 0 ? opts->scale : 1 / sqrt((double)d.dk);
    step_ctx c = {.cache = cache, .q = xq->data, .pos = pos, .S = S, .out = o->data, .d = d,
                  .alibi = opts ? opts->alibi : NULL,
                  .ldq = xq->shape[2], .q_col = lay->q_col, .cap = cap, .scale = (tg_real)scale};
    /* rows are independent; 0.1 ns per key and head dim, as tg_sdpa's planes */
    if (B > 1 && tg_parallel_pays(0.1 * work)) tg_parallel_for(B, step_rows, &c);
    else step_rows(&c, 0, B);
    return tg_op_done(t, &sdpa_decode_op, o);
}
