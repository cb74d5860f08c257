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
    else if (!(c->dropout >= 0 && c->dropout < 1)) why = "dropout must be in [0, 1)";
    else if (c->mode != TG_MHA_FUSED && c->mode != TG_MHA_PER_HEAD) why = "mode must be TG_MHA_FUSED or TG_MHA_PER_HEAD";
    if (!why) return 0;
    return tg_error_set("tg_mha '%s': %s (n_heads %d, d_model %d, d_head %d, dropout %g)", name, why,
                        c->n_heads, c->d_model, c->d_head, c->dropout);
}

/* The [d_head, D] block of projection s (0 q, 1 k, 2 v) of head h, or its
 * [d_head] bias (NULL without biases), in either storage mode. */
static tg_real *proj_block(const tg_mha *m, int s, int h, bool bias)
{
    const tg_mha_config *c = &m->cfg;
    if (c->mode == TG_MHA_PER_HEAD) {
        const tg_mha_head *hd = &m->heads[h];
        tg_tensor *x = bias ? (s == 0 ? hd->bq : s == 1 ? hd->bk : hd->bv)
                            : (s == 0 ? hd->wq : s == 1 ? hd->wk : hd->wv);
        return x ? x->data : NULL;
    }
    size_t row = (size_t)s * c->n_heads * c->d_head + (size_t)h * c->d_head;
    if (bias) return m->in_proj_bias ? m->in_proj_bias->data + row : NULL;
    return m->in_proj_weight->data + row * c->d_model;
}

static int add_params(tg_mha *m, tg_params *p, const char *prefix)
{
    const tg_mha_config *c = &m->cfg;
    int E = c->n_heads * c->d_head, D = c->d_model, dh = c->d_head;
    if (c->mode == TG_MHA_FUSED) {
        m->in_proj_weight = tg_nn_param(p, prefix, "in_proj_weight", 2, (int[]){3 * E, D});
        if (!m->in_proj_weight) return -1;
        if (c->bias && !(m->in_proj_bias = tg_nn_param(p, prefix, "in_proj_bias", 1, (int[]){3 * E})))
            return -1;
        return 0;
    }
    for (int h = 0; h < c->n_heads; h++) {
        tg_mha_head *hd = &m->heads[h];
        tg_tensor **w[3] = {&hd->wq, &hd->wk, &hd->wv}, **b[3] = {&hd->bq, &hd->bk, &hd->bv};
        for (int s = 0; s < 3; s++) {
            char sub[TG_NN_NAME_MAX], proj[48];
            snprintf(proj, sizeof proj, "heads.%d.%s", h, proj_names[s]);
            if (tg_nn_name(sub, prefix, proj)) return -1;
            if (!(*w[s] = tg_nn_param(p, sub, "weight", 2, (int[]){dh, D}))) return -1;
            if (c->bias && !(*b[s] = tg_nn_param(p, sub, "bias", 1, (int[]){dh}))) return -1;
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
    int E = m->cfg.n_heads * m->cfg.d_head, D = m->cfg.d_model, dh = m->cfg.d_head;
    char sub[TG_NN_NAME_MAX];
    if (add_params(m, p, prefix) || tg_nn_name(sub, prefix, "out_proj") ||
        tg_linear_init(&m->out_proj, p, sub, &(tg_linear_config){.in = E, .out = D, .bias = m->cfg.bias},
                       NULL))
        return -1;
    if (!rng) return 0;
    /* xavier_uniform_ over the packed [3E, D] matrix, drawn row by row: in
     * per-head mode too, so both modes get the same numbers */
    double bound = tg_xavier_bound(D, 3 * E);
    for (int s = 0; s < 3; s++)
        for (int h = 0; h < m->cfg.n_heads; h++) {
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
    if (a->n_heads != b->n_heads || a->d_model != b->d_model || a->d_head != b->d_head || a->bias != b->bias)
        return tg_error_set("tg_mha_copy_weights: '%s' and '%s' differ: n_heads %d / %d, d_model %d / %d, "
                            "d_head %d / %d, bias %d / %d", dst->name, src->name, a->n_heads, b->n_heads,
                            a->d_model, b->d_model, a->d_head, b->d_head, a->bias, b->bias);
    size_t dh = (size_t)a->d_head, D = (size_t)a->d_model;
    for (int s = 0; s < 3; s++)
        for (int h = 0; h < a->n_heads; h++) {
            memcpy(proj_block(dst, s, h, false), proj_block(src, s, h, false), dh * D * sizeof(tg_real));
            if (a->bias) memcpy(proj_block(dst, s, h, true), proj_block(src, s, h, true), dh * sizeof(tg_real));
        }
    memcpy(dst->out_proj.weight->data, src->out_proj.weight->data, src->out_proj.weight->size * sizeof(tg_real));
    if (a->bias) memcpy(dst->out_proj.bias->data, src->out_proj.bias->data, src->out_proj.bias->size * sizeof(tg_real));
    return 0;
}

/* ---- forward ------------------------------------------------------------------ */

/* Scale 1/sqrt(d_head); tg_sdpa drops weights only while the tape trains. */
static tg_sdpa_opts sdpa_opts(const tg_mha *m, const tg_mask *mask, tg_rng *rng)
{
    return (tg_sdpa_opts){.mask = mask, .scale = 0, .dropout = m->cfg.dropout, .rng = rng};
}

/* Fused: packed projections, then one tg_sdpa_heads reading the heads in
 * place from their column blocks -> [B, Lq, E] (no slice/split/merge copies).
 * cache: NULL, or (self-attention) receives | k | v | of every position. */
static tg_tensor *fused_heads(tg_tape *t, const tg_mha *m, tg_tensor *xq, tg_tensor *xkv,
                              const tg_mask *mask, tg_rng *rng, tg_tensor *cache, tg_tensor **weights)
{
    int H = m->cfg.n_heads, dh = m->cfg.d_head, E = H * dh;
    tg_sdpa_opts o = sdpa_opts(m, mask, rng);
    tg_sdpa_layout lay = {.n_heads = H, .dk = dh, .dv = dh};
    if (xq == xkv) {  /* self-attention: one GEMM, qkv [B, L, 3E] = | q | k | v | */
        tg_tensor *qkv = tg_matmul(t, xq, m->in_proj_weight, m->in_proj_bias, TG_TRANS_B);
        lay.k_col = E;
        lay.v_col = 2 * E;
        if (cache && (!qkv || tg_kv_write(t, cache, qkv, &lay, NULL))) return NULL;
        return tg_sdpa_heads(t, qkv, qkv, &lay, &o, weights);
    }
    /* cross: Q rows on xq -> [B, Lq, E], K/V rows on xkv -> [B, Lk, 2E] = | k | v | */
    tg_tensor *b = m->in_proj_bias;
    tg_tensor *q = tg_matmul(t, xq, tg_rows_view(t, m->in_proj_weight, 0, E),
                             b ? tg_rows_view(t, b, 0, E) : NULL, TG_TRANS_B);
    tg_tensor *kv = tg_matmul(t, xkv, tg_rows_view(t, m->in_proj_weight, E, 2 * E),
                              b ? tg_rows_view(t, b, E, 2 * E) : NULL, TG_TRANS_B);
    lay.v_col = E;
    return tg_sdpa_heads(t, q, kv, &lay, &o, weights);
}

/* Per-head: H x (three [B, L, dh] GEMMs -> sdpa on [B, 1, L, dh]) -> concat [B, Lq, E] */
static tg_tensor *per_head(tg_tape *t, const tg_mha *m, tg_tensor *xq, tg_tensor *xkv,
                           const tg_mask *mask, tg_rng *rng, tg_tensor *cache, tg_tensor **weights)
{
    int H = m->cfg.n_heads, dh = m->cfg.d_head, B = xq->shape[0], Lq = xq->shape[1], Lk = xkv->shape[1];
    tg_tensor *outs[TG_MHA_MAX_HEADS], *ws[TG_MHA_MAX_HEADS], *kv[2 * TG_MHA_MAX_HEADS];
    tg_sdpa_opts o = sdpa_opts(m, mask, rng);
    for (int h = 0; h < H; h++) {
        const tg_mha_head *hd = &m->heads[h];
        tg_tensor *q = tg_matmul(t, xq, hd->wq, hd->bq, TG_TRANS_B);
        tg_tensor *k = tg_matmul(t, xkv, hd->wk, hd->bk, TG_TRANS_B);
        tg_tensor *v = tg_matmul(t, xkv, hd->wv, hd->bv, TG_TRANS_B);
        kv[h] = k, kv[H + h] = v;
        q = tg_reshape(t, q, 4, (int[]){B, 1, Lq, dh});
        k = tg_reshape(t, k, 4, (int[]){B, 1, Lk, dh});
        v = tg_reshape(t, v, 4, (int[]){B, 1, Lk, dh});
        tg_tensor *w = NULL;
        tg_tensor *a = tg_sdpa(t, q, k, v, &o, weights ? &w : NULL);
        outs[h] = tg_reshape(t, a, 3, (int[]){B, Lq, dh});
        if (weights) ws[h] = tg_reshape(t, w, 2, (int[]){B, Lq * Lk});
        if (!outs[h]) return NULL;
    }
    if (cache) {  /* | k heads | v heads | [B, L, 2E] into the cache */
        tg_sdpa_layout lay = {.n_heads = H, .dk = dh, .dv = dh, .v_col = H * dh};
        tg_tensor *kvs = tg_concat(t, kv, 2 * H);
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

/* A cache to fill: self-attention only, [B, cap >= L, 2E]. */
static bool check_cache(tg_tape *t, const tg_mha *m, const tg_tensor *xq, const tg_tensor *xkv,
                        const tg_tensor *cache)
{
    char sx[TG_SHAPE_STR], sc[TG_SHAPE_STR];
    int E2 = 2 * m->cfg.n_heads * m->cfg.d_head;
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
    tg_tensor *h = m->cfg.mode == TG_MHA_FUSED ? fused_heads(t, m, xq, xkv, o.mask, o.rng, o.cache, weights)
                                               : per_head(t, m, xq, xkv, o.mask, o.rng, o.cache, weights);
    h = apply_head_mask(t, m, h, o.head_mask);
    tg_tensor *out = tg_linear_forward(t, &m->out_proj, h);
    if (!out && weights) *weights = NULL;
    return out;
}

/* ---- checkpoints across modes ------------------------------------------------- */

/* prefix[0, plen) + "heads.<h>.<q|k|v>_proj.<what>", or + what when h < 0 */
static void part_name(char *name, const char *prefix, size_t plen, int h, int s, const char *what)
{
    if (h < 0) snprintf(name, TG_NN_NAME_MAX, "%.*s%s", (int)plen, prefix, what);
    else snprintf(name, TG_NN_NAME_MAX, "%.*sheads.%d.%s.%s", (int)plen, prefix, h, proj_names[s], what);
}

/* name = "<prefix>heads.<h>.<q|k|v>_proj.<weight|bias>" with the prefix
 * empty or ending in '.': the prefix length and h. */
static bool is_head_part(const char *name, size_t *plen, int *h)
{
    for (const char *p = strstr(name, "heads."); p; p = strstr(p + 1, "heads.")) {
        char proj, kind[8];
        int end = 0;
        if ((p == name || p[-1] == '.') && sscanf(p, "heads.%d.%c_proj.%7[a-z]%n", h, &proj, kind, &end) == 3 &&
            !p[end] && *h >= 0 && strchr("qkv", proj) && (!strcmp(kind, "weight") || !strcmp(kind, "bias"))) {
            *plen = (size_t)(p - name);
            return true;
        }
    }
    return false;
}

/* name = "<prefix><suffix>" with the prefix empty or ending in '.': the prefix length. */
static bool has_suffix(const char *name, const char *suffix, size_t *plen)
{
    size_t n = strlen(name), k = strlen(suffix);
    if (n < k || strcmp(name + n - k, suffix) || (n > k && name[n - k - 1] != '.')) return false;
    *plen = n - k;
    return true;
}

static int convert_fail(const char *name, const tg_tensor *x, const char *why)
{
    char sx[TG_SHAPE_STR];
    return tg_error_set("tg_mha_convert: '%s'%s%s %s", name, x ? " " : "", x ? tg_shape_str(x, sx) : "", why);
}

/* "<prefix>in_proj_weight" w [3E, D] (and its bias [3E]) -> per-head tensors in dst */
static int split_heads(tg_safetensors *dst, const tg_safetensors *src, const tg_tensor *w, size_t plen, int H)
{
    char name[TG_NN_NAME_MAX];
    part_name(name, w->name, plen, -1, 0, "in_proj_bias");
    const tg_tensor *b = tg_st_get(src, name);
    if (w->ndim != 2 || w->shape[0] == 0 || w->shape[0] % (3 * H))
        return convert_fail(w->name, w, "is not [3 * n_heads * d_head, d_model]");
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return convert_fail(b->name, b, "does not match in_proj_weight's rows");
    int D = w->shape[1], dh = w->shape[0] / (3 * H);
    for (int h = 0; h < H; h++)
        for (int s = 0; s < 3; s++) {
            size_t row = ((size_t)s * H + (size_t)h) * (size_t)dh;
            part_name(name, w->name, plen, h, s, "weight");
            if (tg_st_add_data(dst, name, w->data + row * (size_t)D, 2, (int[]){dh, D})) return -1;
            part_name(name, w->name, plen, h, s, "bias");
            if (b && tg_st_add_data(dst, name, b->data + row, 1, (int[]){dh})) return -1;
        }
    return 0;
}

/* The per-head tensors of prefix[0, plen) in src -> in_proj_weight [3E, D]
 * (and in_proj_bias [3E]) in dst */
static int join_heads(tg_safetensors *dst, const tg_safetensors *src, const char *prefix, size_t plen, int H)
{
    char name[TG_NN_NAME_MAX];
    part_name(name, prefix, plen, 0, 0, "bias");
    bool bias = tg_st_get(src, name) != NULL;
    part_name(name, prefix, plen, 0, 0, "weight");
    const tg_tensor *q0 = tg_st_get(src, name);
    if (q0->ndim != 2) return convert_fail(name, q0, "is not [d_head, d_model]");
    int dh = q0->shape[0], D = q0->shape[1], E = H * dh;
    part_name(name, prefix, plen, -1, 0, "in_proj_weight");
    tg_tensor *w = tg_st_add_zeros(dst, name, 2, (int[]){3 * E, D});
    part_name(name, prefix, plen, -1, 0, "in_proj_bias");
    tg_tensor *b = w && bias ? tg_st_add_zeros(dst, name, 1, (int[]){3 * E}) : NULL;
    if (!w || (bias && !b)) return -1;
    for (int h = 0; h < H; h++)
        for (int s = 0; s < 3; s++) {
            size_t row = (size_t)s * E + (size_t)h * dh;
            part_name(name, prefix, plen, h, s, "weight");
            const tg_tensor *x = tg_st_get(src, name);
            if (!x || x->ndim != 2 || x->shape[0] != dh || x->shape[1] != D)
                return convert_fail(name, x, x ? "differs from head 0's q_proj.weight" : "is missing");
            memcpy(w->data + row * D, x->data, x->size * sizeof *x->data);
            part_name(name, prefix, plen, h, s, "bias");
            x = tg_st_get(src, name);
            if (!x != !bias || (x && (x->ndim != 1 || x->shape[0] != dh)))
                return convert_fail(name, x, x ? "is not [d_head], or head 0 has no biases" : "is missing");
            if (x) memcpy(b->data + row, x->data, x->size * sizeof *x->data);
        }
    return 0;
}

/* One tensor of src into dst: converted, left for its group, or copied. */
static int convert_one(tg_safetensors *dst, const tg_safetensors *src, const tg_tensor *x, tg_mha_mode to,
                       int H)
{
    char name[TG_NN_NAME_MAX];
    size_t plen;
    int h;
    if (to == TG_MHA_PER_HEAD && has_suffix(x->name, "in_proj_weight", &plen))
        return split_heads(dst, src, x, plen, H);
    if (to == TG_MHA_PER_HEAD && has_suffix(x->name, "in_proj_bias", &plen)) {
        part_name(name, x->name, plen, -1, 0, "in_proj_weight");
        return tg_st_get(src, name) ? 0 : convert_fail(x->name, x, "has no in_proj_weight");
    }
    if (to == TG_MHA_FUSED && is_head_part(x->name, &plen, &h)) {
        if (h >= H) return convert_fail(x->name, x, "is a head beyond n_heads");
        part_name(name, x->name, plen, 0, 0, "weight");
        if (!tg_st_get(src, name)) return convert_fail(name, NULL, "is missing");
        return strcmp(name, x->name) ? 0 : join_heads(dst, src, x->name, plen, H);
    }
    return tg_st_add(dst, x->name, x);
}

tg_safetensors *tg_mha_convert(const tg_safetensors *src, tg_mha_mode to, int n_heads)
{
    if (!src) {
        tg_error_set("tg_mha_convert: the safetensors set is NULL");
        return NULL;
    }
    if (n_heads <= 0 || n_heads > TG_MHA_MAX_HEADS || (to != TG_MHA_FUSED && to != TG_MHA_PER_HEAD)) {
        tg_error_set("tg_mha_convert: n_heads %d must be in [1, %d] and the mode fused or per-head", n_heads,
                     TG_MHA_MAX_HEADS);
        return NULL;
    }
    tg_safetensors *dst = tg_st_new();
    if (!dst) {
        tg_error_set("tg_mha_convert: out of memory");
        return NULL;
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < tg_st_meta_count(src); i++) {
        const char *k = tg_st_meta_key(src, i);
        rc = tg_st_set_meta(dst, k, tg_st_meta(src, k));
    }
    for (int i = 0; rc == 0 && i < tg_st_count(src); i++) rc = convert_one(dst, src, tg_st_at(src, i), to, n_heads);
    if (rc == 0) return dst;
    tg_st_free(dst);
    return NULL;
}

/* ---- decoding step ------------------------------------------------------------- */

/* x [B, L, D] -> | q heads | k heads | v heads | [B, L, 3E], either mode. */
static tg_tensor *project_qkv(tg_tape *t, const tg_mha *m, tg_tensor *x)
{
    int H = m->cfg.n_heads;
    if (m->cfg.mode == TG_MHA_FUSED) return tg_matmul(t, x, m->in_proj_weight, m->in_proj_bias, TG_TRANS_B);
    tg_tensor *parts[3 * TG_MHA_MAX_HEADS];
    for (int h = 0; h < H; h++) {
        const tg_mha_head *hd = &m->heads[h];
        parts[h] = tg_matmul(t, x, hd->wq, hd->bq, TG_TRANS_B);
        parts[H + h] = tg_matmul(t, x, hd->wk, hd->bk, TG_TRANS_B);
        parts[2 * H + h] = tg_matmul(t, x, hd->wv, hd->bv, TG_TRANS_B);
    }
    return tg_concat(t, parts, 3 * H);
}

tg_sdpa_layout tg_mha_kv_layout(const tg_mha *m)
{
    int H = m->cfg.n_heads, dh = m->cfg.d_head;
    return (tg_sdpa_layout){.n_heads = H, .dk = dh, .dv = dh, .q_col = 0, .k_col = H * dh, .v_col = 2 * H * dh};
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
    tg_tensor *qkv = project_qkv(t, m, x);
    if (!qkv || tg_kv_write(t, cache, qkv, &lay, pos)) return NULL;
    tg_tensor *o = tg_sdpa_step(t, qkv, cache, &lay, pos, NULL);
    return tg_linear_forward(t, &m->out_proj, apply_head_mask(t, m, o, head_mask));
}
