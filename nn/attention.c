/* tapegrad: multi-head attention, per-head and fused (see nn/attention.h). */
#include "attention.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const proj_names[3] = {"q_proj", "k_proj", "v_proj"};

static int check_config(const tg_mha_config *c, const char *name)
{
    const char *why = NULL;
    if (c->n_heads <= 0 || c->n_heads > TG_MHA_MAX_HEADS) why = "n_heads must be in [1, 64]";
    else if (c->d_model <= 0) why = "d_model must be > 0";
    else if (c->d_head < 0) why = "d_head must be >= 0 (0: d_model / n_heads)";
    else if (c->d_head == 0 && c->d_model % c->n_heads) why = "d_model must divide by n_heads when d_head is 0";
    else if (c->n_kv_heads < 0 || (c->n_kv_heads && c->n_heads % c->n_kv_heads))
        why = "n_kv_heads must divide n_heads (0: n_heads)";
    else if (!(c->dropout >= 0 && c->dropout < 1)) why = "dropout must be in [0, 1)";
    else if (c->rope && !(c->rope_base >= 0 && isfinite(c->rope_base))) why = "rope_base must be finite and >= 0 (0: 10000)";
    else if (c->rope && !(c->rope_frac >= 0 && c->rope_frac <= 1)) why = "rope_frac must be in [0, 1] (0: 1)";
    else if (c->mode != TG_MHA_FUSED && c->mode != TG_MHA_PER_HEAD) why = "mode must be TG_MHA_FUSED or TG_MHA_PER_HEAD";
    if (!why) return 0;
    return tg_error_set("tg_mha '%s': %s (n_heads %d, n_kv_heads %d, d_model %d, d_head %d, dropout %g)", name,
                        why, c->n_heads, c->n_kv_heads, c->d_model, c->d_head, c->dropout);
}

/* Heads of projection s (0 q, 1 k, 2 v): n_heads or n_kv_heads. */
static int heads_of(const tg_mha_config *c, int s)
{
    return s ? c->n_kv_heads : c->n_heads;
}

/* The [d_head, D] block of projection s (0 q, 1 k, 2 v) of head h (a key/value
 * head for s > 0), or its [d_head] bias (NULL without biases), in either
 * storage mode. Packed rows: n_heads query heads, then n_kv_heads key heads,
 * then n_kv_heads value heads. */
static tg_real *proj_block(const tg_mha *m, int s, int h, bool bias)
{
    const tg_mha_config *c = &m->cfg;
    if (c->mode == TG_MHA_PER_HEAD) {  /* key/value head h is held by its group's first query head */
        const tg_mha_head *hd = &m->heads[s ? h * (c->n_heads / c->n_kv_heads) : h];
        tg_tensor *x = bias ? (s == 0 ? hd->bq : s == 1 ? hd->bk : hd->bv)
                            : (s == 0 ? hd->wq : s == 1 ? hd->wk : hd->wv);
        return x ? x->data : NULL;
    }
    size_t row = ((size_t)(s == 0 ? 0 : s == 1 ? c->n_heads : c->n_heads + c->n_kv_heads) + (size_t)h) * c->d_head;
    if (bias) return m->in_proj_bias ? m->in_proj_bias->data + row : NULL;
    return m->in_proj_weight->data + row * c->d_model;
}

/* "<prefix>.<kind>.<h>.<q|k|v>_proj.{weight,bias}" of projection s into *w, *b. */
static int add_head(tg_params *p, const char *prefix, const char *kind, int h, int s, const tg_mha_config *c,
                    tg_tensor **w, tg_tensor **b)
{
    char sub[TG_NN_NAME_MAX], proj[48];
    snprintf(proj, sizeof proj, "%s.%d.%s", kind, h, proj_names[s]);
    if (tg_nn_name(sub, prefix, proj)) return -1;
    if (!(*w = tg_nn_param(p, sub, "weight", 2, (int[]){c->d_head, c->d_model}))) return -1;
    if (c->bias && !(*b = tg_nn_param(p, sub, "bias", 1, (int[]){c->d_head}))) return -1;
    return 0;
}

/* Per-head mode: "heads.<h>.{q,k,v}_proj" (n_kv_heads = n_heads), or
 * "heads.<h>.q_proj" and "kv_heads.<g>.{k,v}_proj", key/value head g's
 * tensors shared by the heads of its group. */
static int add_params(tg_mha *m, tg_params *p, const char *prefix)
{
    const tg_mha_config *c = &m->cfg;
    int R = (c->n_heads + 2 * c->n_kv_heads) * c->d_head, group = c->n_heads / c->n_kv_heads;
    if (c->mode == TG_MHA_FUSED) {
        m->in_proj_weight = tg_nn_param(p, prefix, "in_proj_weight", 2, (int[]){R, c->d_model});
        if (!m->in_proj_weight) return -1;
        if (c->bias && !(m->in_proj_bias = tg_nn_param(p, prefix, "in_proj_bias", 1, (int[]){R}))) return -1;
        return 0;
    }
    for (int h = 0; h < c->n_heads; h++) {
        tg_mha_head *hd = &m->heads[h];
        if (add_head(p, prefix, "heads", h, 0, c, &hd->wq, &hd->bq)) return -1;
        if (group == 1 && (add_head(p, prefix, "heads", h, 1, c, &hd->wk, &hd->bk) ||
                           add_head(p, prefix, "heads", h, 2, c, &hd->wv, &hd->bv)))
            return -1;
    }
    for (int g = 0; group > 1 && g < c->n_kv_heads; g++) {
        tg_mha_head *hd = &m->heads[g * group];
        if (add_head(p, prefix, "kv_heads", g, 1, c, &hd->wk, &hd->bk) ||
            add_head(p, prefix, "kv_heads", g, 2, c, &hd->wv, &hd->bv))
            return -1;
        for (int i = 1; i < group; i++) {
            tg_mha_head *o = &m->heads[g * group + i];
            o->wk = hd->wk, o->bk = hd->bk, o->wv = hd->wv, o->bv = hd->bv;
        }
    }
    return 0;
}

int tg_mha_init(tg_mha *m, tg_params *p, const char *prefix, const tg_mha_config *cfg, tg_rng *rng)
{
    if (tg_nn_check_init("tg_mha_init", m, p, cfg)) return -1;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", prefix ? prefix : "");
    if (check_config(cfg, m->name)) return -1;
    m->cfg = *cfg;
    if (m->cfg.d_head == 0) m->cfg.d_head = cfg->d_model / cfg->n_heads;
    if (m->cfg.n_kv_heads == 0) m->cfg.n_kv_heads = cfg->n_heads;
    if (m->cfg.alibi) tg_alibi_slopes(m->cfg.n_heads, m->alibi);
    if (m->cfg.rope) {  /* RoPE turns pairs of dims */
        int dh = m->cfg.d_head;
        m->rope_rot = m->cfg.rope_frac > 0 && m->cfg.rope_frac < 1 ? (int)(m->cfg.rope_frac * dh) / 2 * 2 : dh;
        if (m->rope_rot < 2 || m->rope_rot % 2)
            return tg_error_set("tg_mha '%s': RoPE rotates pairs of dims: %d of a head of %d (d_head %d is odd, or "
                                "rope_frac %g leaves fewer than 2; set rope_frac)", m->name, m->rope_rot, dh, dh,
                                m->cfg.rope_frac);
    }
    int E = m->cfg.n_heads * m->cfg.d_head, D = m->cfg.d_model, dh = m->cfg.d_head;
    char sub[TG_NN_NAME_MAX];
    if (add_params(m, p, prefix) || tg_nn_name(sub, prefix, "out_proj") ||
        tg_linear_init(&m->out_proj, p, sub, &(tg_linear_config){.in = E, .out = D, .bias = m->cfg.bias},
                       NULL))
        return -1;
    if (!rng) return 0;
    /* xavier_uniform_ over the packed [(H + 2 Hkv) dh, D] matrix, drawn row
     * by row: in per-head mode too, so both modes get the same numbers */
    double bound = tg_xavier_bound(D, (m->cfg.n_heads + 2 * m->cfg.n_kv_heads) * dh);
    for (int s = 0; s < 3; s++)
        for (int h = 0; h < heads_of(&m->cfg, s); h++) {
            tg_real *w = proj_block(m, s, h, false);
            for (size_t i = 0; i < (size_t)dh * D; i++) w[i] = (tg_real)(bound * (2 * tg_rng_uniform(rng) - 1));
        }
    double ob = tg_linear_init_bound(E);
    tg_init_uniform(m->out_proj.weight, -ob, ob, rng);
    return 0;
}

int tg_mha_copy_weights(tg_mha *dst, const tg_mha *src)
{
    if (!dst || !src) return tg_error_set("tg_mha_copy_weights: %s is NULL", dst ? "src" : "dst");
    if (!dst->out_proj.weight || !src->out_proj.weight)
        return tg_error_set("tg_mha_copy_weights: %s is not initialised (its init failed or was not called)",
                            dst->out_proj.weight ? "src" : "dst");
    const tg_mha_config *a = &dst->cfg, *b = &src->cfg;
    if (a->n_heads != b->n_heads || a->n_kv_heads != b->n_kv_heads || a->d_model != b->d_model ||
        a->d_head != b->d_head || a->bias != b->bias)
        return tg_error_set("tg_mha_copy_weights: '%s' and '%s' differ: n_heads %d / %d, n_kv_heads %d / %d, "
                            "d_model %d / %d, d_head %d / %d, bias %d / %d", dst->name, src->name, a->n_heads,
                            b->n_heads, a->n_kv_heads, b->n_kv_heads, a->d_model, b->d_model, a->d_head, b->d_head,
                            a->bias, b->bias);
    size_t dh = (size_t)a->d_head, D = (size_t)a->d_model;
    for (int s = 0; s < 3; s++)
        for (int h = 0; h < heads_of(a, s); h++) {
            memcpy(proj_block(dst, s, h, false), proj_block(src, s, h, false), dh * D * sizeof(tg_real));
            if (a->bias) memcpy(proj_block(dst, s, h, true), proj_block(src, s, h, true), dh * sizeof(tg_real));
        }
    memcpy(dst->out_proj.weight->data, src->out_proj.weight->data, src->out_proj.weight->size * sizeof(tg_real));
    if (a->bias) memcpy(dst->out_proj.bias->data, src->out_proj.bias->data, src->out_proj.bias->size * sizeof(tg_real));
    return 0;
}

/* ---- forward ------------------------------------------------------------------ */

/* Scale 1/sqrt(d_head); tg_sdpa drops weights only while the tape trains. */
static tg_sdpa_opts sdpa_opts(const tg_mha *m, const tg_mha_opts *o)
{
    return (tg_sdpa_opts){.mask = o->mask, .scale = 0, .dropout = m->cfg.dropout, .rng = o->rng, .bias = o->bias,
                          .alibi = m->cfg.alibi ? m->alibi : NULL};
}

/* x with RoPE on n heads of d_head columns from col (positions pos0[b] + ..),
 * or x itself without RoPE. */
static tg_tensor *rope_on(tg_tape *t, const tg_mha *m, tg_tensor *x, int col, int n, const int32_t *pos0)
{
    if (!m->cfg.rope || !x) return x;
    return tg_rope(t, x, &(tg_rope_opts){.col = col, .n_heads = n, .d_head = m->cfg.d_head, .rot = m->rope_rot,
                                         .base = m->cfg.rope_base, .pos0 = pos0});
}

/* Fused: packed projections, then one tg_sdpa_heads reading the heads in
 * place from their column blocks -> [B, Lq, E] (no slice/split/merge copies).
 * cache: NULL, or (self-attention) receives | k | v | of every position. */
static tg_tensor *fused_heads(tg_tape *t, const tg_mha *m, tg_tensor *xq, tg_tensor *xkv, const tg_mha_opts *mo,
                              tg_tensor **weights)
{
    tg_tensor *cache = mo->cache;
    int E = m->cfg.n_heads * m->cfg.d_head, Ekv = m->cfg.n_kv_heads * m->cfg.d_head;
    tg_sdpa_opts o = sdpa_opts(m, mo);
    tg_sdpa_layout lay = tg_mha_kv_layout(m);
    if (xq == xkv) {  /* self-attention: one GEMM, qkv [B, L, E + 2Ekv] = | q | k | v | */
        tg_tensor *qkv = tg_matmul(t, xq, m->in_proj_weight, m->in_proj_bias, TG_TRANS_B);
        qkv = rope_on(t, m, qkv, 0, m->cfg.n_heads + m->cfg.n_kv_heads, NULL);  /* q and k heads */
        if (cache && (!qkv || tg_kv_write(t, cache, qkv, &lay, NULL))) return NULL;
        return tg_sdpa_heads(t, qkv, qkv, &lay, &o, weights);
    }
    /* cross: Q rows on xq -> [B, Lq, E], K/V rows on xkv -> [B, Lk, 2Ekv] = | k | v | */
    tg_tensor *b = m->in_proj_bias;
    tg_tensor *q = tg_matmul(t, xq, tg_rows_view(t, m->in_proj_weight, 0, E),
                             b ? tg_rows_view(t, b, 0, E) : NULL, TG_TRANS_B);
    tg_tensor *kv = tg_matmul(t, xkv, tg_rows_view(t, m->in_proj_weight, E, 2 * Ekv),
                              b ? tg_rows_view(t, b, E, 2 * Ekv) : NULL, TG_TRANS_B);
    lay.k_col = 0;
    lay.v_col = Ekv;
    q = rope_on(t, m, q, 0, m->cfg.n_heads, NULL);
    kv = rope_on(t, m, kv, 0, m->cfg.n_kv_heads, NULL);
    return tg_sdpa_heads(t, q, kv, &lay, &o, weights);
}

/* Per-head: H x (a [B, Lq, dh] GEMM for q; per key/value head, two [B, Lk,
 * dh] GEMMs for k, v -> sdpa on [B, 1, L, dh]) -> concat [B, Lq, E] */
static tg_tensor *per_head(tg_tape *t, const tg_mha *m, tg_tensor *xq, tg_tensor *xkv, const tg_mha_opts *mo,
                           tg_tensor **weights)
{
    tg_tensor *cache = mo->cache, *bias = mo->bias;
    int H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads, group = H / Hkv, dh = m->cfg.d_head;
    int B = xq->shape[0], Lq = xq->shape[1], Lk = xkv->shape[1];
    tg_tensor *outs[TG_MHA_MAX_HEADS], *ws[TG_MHA_MAX_HEADS], *kv[2 * TG_MHA_MAX_HEADS];
    tg_sdpa_opts o = sdpa_opts(m, mo);
    int Bb = bias ? bias->shape[0] : 1;
    if (bias && Bb > 1) bias = tg_permute(t, bias, (int[]){1, 0, 2, 3});  /* [H, B, Lq, Lk]: heads outermost */
    for (int h = 0; h < H; h++) {
        const tg_mha_head *hd = &m->heads[h];
        int g = h / group;
        o.alibi = m->cfg.alibi ? &m->alibi[h] : NULL;
        if (bias) {  /* head h's [Bb, 1, Lq, Lk], a view */
            tg_tensor *rows = tg_reshape(t, bias, 2, (int[]){H, -1});
            o.bias = tg_reshape(t, tg_rows_view(t, rows, h, 1), 4, (int[]){Bb, 1, Lq, Lk});
            if (!o.bias) return NULL;
        }
        if (h % group == 0) {  /* the group's key/value head, once */
            kv[g] = rope_on(t, m, tg_matmul(t, xkv, hd->wk, hd->bk, TG_TRANS_B), 0, 1, NULL);
            kv[Hkv + g] = tg_matmul(t, xkv, hd->wv, hd->bv, TG_TRANS_B);
        }
        tg_tensor *q = rope_on(t, m, tg_matmul(t, xq, hd->wq, hd->bq, TG_TRANS_B), 0, 1, NULL);
        q = tg_reshape(t, q, 4, (int[]){B, 1, Lq, dh});
        tg_tensor *k = tg_reshape(t, kv[g], 4, (int[]){B, 1, Lk, dh});
        tg_tensor *v = tg_reshape(t, kv[Hkv + g], 4, (int[]){B, 1, Lk, dh});
        tg_tensor *w = NULL;
        tg_tensor *a = tg_sdpa(t, q, k, v, &o, weights ? &w : NULL);
        outs[h] = tg_reshape(t, a, 3, (int[]){B, Lq, dh});
        if (weights) ws[h] = tg_reshape(t, w, 2, (int[]){B, Lq * Lk});
        if (!outs[h]) return NULL;
    }
    if (cache) {  /* | k heads | v heads | [B, L, 2Ekv] into the cache */
        tg_sdpa_layout lay = tg_mha_kv_layout(m);
        lay.k_col = 0;
        lay.v_col = Hkv * dh;
        tg_tensor *kvs = tg_concat(t, kv, 2 * Hkv);
        if (!kvs || tg_kv_write(t, cache, kvs, &lay, NULL)) return NULL;
    }
    if (weights) {  /* H x [B, Lq*Lk] -> [B, H*Lq*Lk] = [B, H, Lq, Lk] */
        *weights = tg_reshape(t, tg_concat(t, ws, H), 4, (int[]){B, H, Lq, Lk});
        if (!*weights) return NULL;
    }
    return tg_concat(t, outs, H);
}

/* [B, Lq, E] * (per column: head_mask of its head) when some head is off */
static tg_tensor *apply_head_mask(tg_tape *t, const tg_mha *m, tg_tensor *o, const uint8_t *head_mask)
{
    int H = m->cfg.n_heads, dh = m->cfg.d_head;
    bool all_on = true;
    for (int h = 0; h < H && head_mask; h++) all_on = all_on && head_mask[h];
    if (all_on || !o) return o;
    tg_tensor *keep = tg_new(t, "tg_mha head mask", 1, (int[]){H * dh});
    if (!keep) return NULL;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < dh; i++) keep->data[h * dh + i] = head_mask[h] ? 1 : 0;
    return tg_mul(t, o, keep);
}

static bool check_inputs(tg_tape *t, const tg_mha *m, const tg_tensor *xq, const tg_tensor *xkv, tg_rng *rng)
{
    char sq[TG_SHAPE_STR], sk[TG_SHAPE_STR];
    int D = m->cfg.d_model;
    if (xq->ndim != 3 || xq->shape[2] != D || xkv->ndim != 3 || xkv->shape[2] != D ||
        xkv->shape[0] != xq->shape[0]) {
        tg_fail(t, "tg_mha '%s': inputs must be xq [B, Lq, %d] and xkv [B, Lk, %d], got xq %s, xkv %s",
                m->name, D, D, tg_shape_str(xq, sq), tg_shape_str(xkv, sk));
        return false;
    }
    if (m->cfg.dropout > 0 && tg_tape_training(t) && !rng) {
        tg_fail(t, "tg_mha '%s': dropout %g while training needs an rng", m->name, m->cfg.dropout);
        return false;
    }
    return true;
}

/* A cache to fill: self-attention only, [B, cap >= L, 2Ekv]. */
static bool check_cache(tg_tape *t, const tg_mha *m, const tg_tensor *xq, const tg_tensor *xkv,
                        const tg_tensor *cache)
{
    char sx[TG_SHAPE_STR], sc[TG_SHAPE_STR];
    int E2 = 2 * m->cfg.n_kv_heads * m->cfg.d_head;
    if (xq != xkv) {
        tg_fail(t, "tg_mha '%s': a key/value cache is filled by self-attention only (xq == xkv)", m->name);
        return false;
    }
    if (!tg_inputs_check(t, "tg_mha cache", (tg_tensor *const[]){(tg_tensor *)cache}, 1, 1)) return false;
    if (cache->ndim != 3 || cache->shape[0] != xq->shape[0] || cache->shape[1] < xq->shape[1] ||
        cache->shape[2] != E2) {
        tg_fail(t, "tg_mha '%s': the cache must be [B, cap >= L, %d] for x %s, got %s", m->name, E2,
                tg_shape_str(xq, sx), tg_shape_str(cache, sc));
        return false;
    }
    return true;
}

tg_tensor *tg_mha_forward(tg_tape *t, const tg_mha *m, tg_tensor *xq, tg_tensor *xkv, const tg_mha_opts *opts,
                          tg_tensor **weights)
{
    if (weights) *weights = NULL;
    if (!tg_nn_check_forward("tg_mha_forward", t, m, m && m->out_proj.weight)) return NULL;
    if (!xq || !xkv) return tg_fail_null(t, "tg_mha");
    tg_mha_opts o = opts ? *opts : (tg_mha_opts){0};
    if (!check_inputs(t, m, xq, xkv, o.rng) || (o.cache && !check_cache(t, m, xq, xkv, o.cache))) return NULL;
    tg_tensor *h = m->cfg.mode == TG_MHA_FUSED ? fused_heads(t, m, xq, xkv, &o, weights)
                                               : per_head(t, m, xq, xkv, &o, weights);
    h = apply_head_mask(t, m, h, o.head_mask);
    tg_tensor *out = tg_linear_forward(t, &m->out_proj, h);
    if (!out && weights) *weights = NULL;
    return out;
}

/* ---- decoding step ------------------------------------------------------------- */

/* x [B, L, D] -> | q heads | k heads | v heads | [B, L, E + 2Ekv], either mode. */
static tg_tensor *project_qkv(tg_tape *t, const tg_mha *m, tg_tensor *x)
{
    int H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads, group = H / Hkv;
    if (m->cfg.mode == TG_MHA_FUSED) return tg_matmul(t, x, m->in_proj_weight, m->in_proj_bias, TG_TRANS_B);
    tg_tensor *parts[3 * TG_MHA_MAX_HEADS];
    for (int h = 0; h < H; h++) parts[h] = tg_matmul(t, x, m->heads[h].wq, m->heads[h].bq, TG_TRANS_B);
    for (int g = 0; g < Hkv; g++) {
        const tg_mha_head *hd = &m->heads[g * group];
        parts[H + g] = tg_matmul(t, x, hd->wk, hd->bk, TG_TRANS_B);
        parts[H + Hkv + g] = tg_matmul(t, x, hd->wv, hd->bv, TG_TRANS_B);
    }
    return tg_concat(t, parts, H + 2 * Hkv);
}

tg_sdpa_layout tg_mha_kv_layout(const tg_mha *m)
{
    int H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads, dh = m->cfg.d_head;
    return (tg_sdpa_layout){.n_heads = H, .n_kv_heads = Hkv, .dk = dh, .dv = dh, .q_col = 0, .k_col = H * dh,
                            .v_col = (H + Hkv) * dh};
}

tg_tensor *tg_mha_step(tg_tape *t, const tg_mha *m, tg_tensor *x, tg_tensor *cache, const int32_t *pos,
                       const uint8_t *head_mask)
{
    if (!tg_nn_check_forward("tg_mha_step", t, m, m && m->out_proj.weight)) return NULL;
    if (!x || !cache || !pos) return tg_fail_null(t, "tg_mha_step");
    char sx[TG_SHAPE_STR];
    if (tg_tape_recording(t))
        return tg_fail(t, "tg_mha_step '%s': decoding only: the tape must not record", m->name);
    if (x->ndim != 3 || x->shape[1] != 1 || x->shape[2] != m->cfg.d_model)
        return tg_fail(t, "tg_mha_step '%s': need x [B, 1, %d], got %s", m->name, m->cfg.d_model,
                       tg_shape_str(x, sx));
    tg_sdpa_layout lay = tg_mha_kv_layout(m);
    tg_tensor *qkv = rope_on(t, m, project_qkv(t, m, x), 0, m->cfg.n_heads + m->cfg.n_kv_heads, pos);
    if (!qkv || tg_kv_write(t, cache, qkv, &lay, pos)) return NULL;
    tg_tensor *o = tg_sdpa_step(t, qkv, cache, &lay, pos, &(tg_sdpa_opts){.alibi = m->cfg.alibi ? m->alibi : NULL});
    return tg_linear_forward(t, &m->out_proj, apply_head_mask(t, m, o, head_mask));
}
