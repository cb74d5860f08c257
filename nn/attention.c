/* tapegrad: multi-head attention, per-head and fused (see nn/attention.h). */
#include "attention.h"

#include "../core/ops/internal.h"

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
    else if (c->kdim < 0 || c->vdim < 0) why = "kdim and vdim must be >= 0 (0: d_model)";
    else if ((c->add_bias_kv || c->add_zero_attn) && (c->rope || c->alibi))
        why = "add_bias_kv and add_zero_attn do not combine with rope or alibi (the appended keys have no position)";
    else if (c->add_bias_kv && c->n_kv_heads && c->n_kv_heads != c->n_heads)
        why = "add_bias_kv does not combine with n_kv_heads < n_heads (its key and value are "
              "nn.MultiheadAttention's [1, 1, n_heads * d_head])";
    if (!why) return 0;
    return tg_error_set("tg_mha '%s': %s (n_heads %d, n_kv_heads %d, d_model %d, d_head %d, dropout %g)", name,
                        why, c->n_heads, c->n_kv_heads, c->d_model, c->d_head, c->dropout);
}

/* Heads of projection s (0 q, 1 k, 2 v): n_heads or n_kv_heads. */
static int heads_of(const tg_mha_config *c, int s)
{
    return s ? c->n_kv_heads : c->n_heads;
}

/* The input width of projection s: d_model, kdim, vdim. */
static int width_of(const tg_mha_config *c, int s)
{
    return s == 0 ? c->d_model : s == 1 ? c->kdim : c->vdim;
}

/* The first row of projection s (0 q, 1 k, 2 v; 3: the end) in the packed
 * | q heads | k heads | v heads | order: 0, E, E + Ekv, E + 2Ekv. */
static int row_of(const tg_mha_config *c, int s)
{
    return (s == 0 ? 0 : c->n_heads + (s - 1) * c->n_kv_heads) * c->d_head;
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
    size_t row = (size_t)row_of(c, s) + (size_t)h * c->d_head;
    if (bias) return m->in_proj_bias ? m->in_proj_bias->data + row : NULL;
    if (!m->in_proj_weight) return m->qkv_proj[s]->data + (size_t)h * c->d_head * width_of(c, s);
    return m->in_proj_weight->data + row * c->d_model;
}

/* add_bias_kv's [d_head] of head h: its key's (s 1) or its value's (s 2). */
static tg_real *kv_bias_block(const tg_mha *m, int s, int h)
{
    if (m->cfg.mode == TG_MHA_PER_HEAD) return (s == 1 ? m->heads[h].bias_k : m->heads[h].bias_v)->data;
    return (s == 1 ? m->bias_k : m->bias_v)->data + (size_t)h * m->cfg.d_head;
}

/* "<prefix>.<kind>.<h>.<q|k|v>_proj.{weight,bias}" of projection s into *w, *b. */
static int add_head(tg_params *p, const char *prefix, const char *kind, int h, int s, const tg_mha_config *c,
                    tg_tensor **w, tg_tensor **b)
{
    char sub[TG_NN_NAME_MAX], proj[48];
    snprintf(proj, sizeof proj, "%s.%d.%s", kind, h, proj_names[s]);
    if (tg_nn_name(sub, prefix, proj)) return -1;
    if (!(*w = tg_nn_param(p, sub, "weight", 2, (int[]){c->d_head, width_of(c, s)}))) return -1;
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
        static const char *const sep[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
        int E = c->n_heads * c->d_head;
        for (int s = 0; s < 3 && (c->kdim != c->d_model || c->vdim != c->d_model); s++)
            if (!(m->qkv_proj[s] = tg_nn_param(p, prefix, sep[s], 2, (int[]){row_of(c, s + 1) - row_of(c, s),
                                                                              width_of(c, s)})))
                return -1;
        if (!m->qkv_proj[0] && !(m->in_proj_weight = tg_nn_param(p, prefix, "in_proj_weight", 2, (int[]){R, c->d_model})))
            return -1;
        if (c->bias && !(m->in_proj_bias = tg_nn_param(p, prefix, "in_proj_bias", 1, (int[]){R}))) return -1;
        if (c->add_bias_kv && (!(m->bias_k = tg_nn_param(p, prefix, "bias_k", 3, (int[]){1, 1, E})) ||
                               !(m->bias_v = tg_nn_param(p, prefix, "bias_v", 3, (int[]){1, 1, E}))))
            return -1;
        return 0;
    }
    for (int h = 0; h < c->n_heads; h++) {
        tg_mha_head *hd = &m->heads[h];
        if (add_head(p, prefix, "heads", h, 0, c, &hd->wq, &hd->bq)) return -1;
        if (group == 1 && (add_head(p, prefix, "heads", h, 1, c, &hd->wk, &hd->bk) ||
                           add_head(p, prefix, "heads", h, 2, c, &hd->wv, &hd->bv)))
            return -1;
    }
    for (int h = 0; c->add_bias_kv && h < c->n_heads; h++) {
        char sub[TG_NN_NAME_MAX], name[32];
        snprintf(name, sizeof name, "heads.%d", h);
        if (tg_nn_name(sub, prefix, name) || !(m->heads[h].bias_k = tg_nn_param(p, sub, "bias_k", 1, (int[]){c->d_head})) ||
            !(m->heads[h].bias_v = tg_nn_param(p, sub, "bias_v", 1, (int[]){c->d_head})))
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
    int n0 = tg_params_count(p);
    if (check_config(cfg, m->name)) return tg_nn_init_undo(m, sizeof *m, m->name, p, n0);
    m->cfg = *cfg;
    if (m->cfg.d_head == 0) m->cfg.d_head = cfg->d_model / cfg->n_heads;
    if (m->cfg.n_kv_heads == 0) m->cfg.n_kv_heads = cfg->n_heads;
    if (m->cfg.kdim == 0) m->cfg.kdim = cfg->d_model;
    if (m->cfg.vdim == 0) m->cfg.vdim = cfg->d_model;
    if (m->cfg.alibi) tg_alibi_slopes(m->alibi, m->cfg.n_heads);
    if (m->cfg.rope) {  /* RoPE turns pairs of dims */
        int dh = m->cfg.d_head;
        m->rope_rot = m->cfg.rope_frac > 0 && m->cfg.rope_frac < 1 ? (int)(m->cfg.rope_frac * dh) / 2 * 2 : dh;
        if (m->rope_rot < 2 || m->rope_rot % 2) {
            tg_error_set("tg_mha '%s': RoPE rotates pairs of dims: %d of a head of %d (d_head %d is odd, or "
                         "rope_frac %g leaves fewer than 2; set rope_frac)", m->name, m->rope_rot, dh, dh,
                         m->cfg.rope_frac);
            return tg_nn_init_undo(m, sizeof *m, m->name, p, n0);
        }
    }
    int E = m->cfg.n_heads * m->cfg.d_head, D = m->cfg.d_model, dh = m->cfg.d_head;
    char sub[TG_NN_NAME_MAX];
    if (add_params(m, p, prefix) || tg_nn_name(sub, prefix, "out_proj") ||
        tg_linear_init(&m->out_proj, p, sub, &(tg_linear_config){.in = E, .out = D, .bias = m->cfg.bias},
                       NULL))
        return tg_nn_init_undo(m, sizeof *m, m->name, p, n0);
    if (!rng) return 0;
    /* xavier_uniform_ over the packed [(H + 2 Hkv) dh, D] matrix (or over each
     * of q, k, v_proj_weight [E or Ekv, width] when kdim or vdim differ), drawn
     * row by row: in per-head mode too, so both modes get the same numbers */
    bool packed = m->cfg.kdim == D && m->cfg.vdim == D;
    for (int s = 0; s < 3; s++) {
        int w_in = width_of(&m->cfg, s);
        double bound = packed ? tg_xavier_bound(D, (m->cfg.n_heads + 2 * m->cfg.n_kv_heads) * dh)
                              : tg_xavier_bound(w_in, row_of(&m->cfg, s + 1) - row_of(&m->cfg, s));
        for (int h = 0; h < heads_of(&m->cfg, s); h++) {
            tg_real *w = proj_block(m, s, h, false);
            for (size_t i = 0; i < (size_t)dh * w_in; i++) w[i] = (tg_real)(bound * (2 * tg_rng_uniform(rng) - 1));
        }
    }
    double ob = tg_linear_init_bound(E);
    tg_init_uniform(m->out_proj.weight, -ob, ob, rng);
    for (int s = 1; s < 3 && m->cfg.add_bias_kv; s++)  /* xavier_normal_ of [1, 1, E]: std 1 / sqrt(E) */
        for (int h = 0; h < m->cfg.n_heads; h++) {
            tg_real *b = kv_bias_block(m, s, h);
            for (int i = 0; i < dh; i++) b[i] = (tg_real)(tg_rng_normal(rng) / sqrt((double)E));
        }
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
        a->d_head != b->d_head || a->bias != b->bias || a->kdim != b->kdim || a->vdim != b->vdim ||
        a->add_bias_kv != b->add_bias_kv)
        return tg_error_set("tg_mha_copy_weights: '%s' and '%s' differ: n_heads %d / %d, n_kv_heads %d / %d, "
                            "d_model %d / %d, d_head %d / %d, bias %d / %d", dst->name, src->name, a->n_heads,
                            b->n_heads, a->n_kv_heads, b->n_kv_heads, a->d_model, b->d_model, a->d_head, b->d_head,
                            a->bias, b->bias);
    size_t dh = (size_t)a->d_head;
    for (int s = 0; s < 3; s++)
        for (int h = 0; h < heads_of(a, s); h++) {
            memcpy(proj_block(dst, s, h, false), proj_block(src, s, h, false),
                   dh * (size_t)width_of(a, s) * sizeof(tg_real));
            if (a->bias) memcpy(proj_block(dst, s, h, true), proj_block(src, s, h, true), dh * sizeof(tg_real));
        }
    for (int s = 1; s < 3 && a->add_bias_kv; s++)
        for (int h = 0; h < a->n_heads; h++) memcpy(kv_bias_block(dst, s, h), kv_bias_block(src, s, h), dh * sizeof(tg_real));
    memcpy(dst->out_proj.weight->data, src->out_proj.weight->data, src->out_proj.weight->size * sizeof(tg_real));
    if (a->bias) memcpy(dst->out_proj.bias->data, src->out_proj.bias->data, src->out_proj.bias->size * sizeof(tg_real));
    return 0;
}

/* ---- forward ------------------------------------------------------------------ */

/* What the layer's config adds to the scores of every call, a forward's
 * and a decode's alike (ALiBi's slopes); scale 1/sqrt(d_head). */
static tg_sdpa_opts score_opts(const tg_mha *m)
{
    return (tg_sdpa_opts){.alibi = m->cfg.alibi ? m->alibi : NULL};
}

/* A forward's: also the call's mask and bias, and dropout (tg_sdpa drops
 * weights only while the tape trains). */
static tg_sdpa_opts sdpa_opts(const tg_mha *m, const tg_mha_opts *o)
{
    tg_sdpa_opts s = score_opts(m);
    s.mask = o->mask, s.dropout = m->cfg.dropout, s.rng = o->rng, s.bias = o->bias;
    return s;
}

/* x with RoPE on n heads of d_head columns from col (positions pos0[b] + ..;
 * pos0 an int tensor [B] or NULL), or x itself without RoPE. */
static tg_tensor *rope_on(tg_tape *t, const tg_mha *m, tg_tensor *x, int col, int n, const tg_tensor *pos0)
{
    if (!m->cfg.rope || !x) return x;
    return tg_rope(t, x, &(tg_rope_opts){.col = col, .n_heads = n, .d_head = m->cfg.d_head, .rot = m->rope_rot,
                                         .base = m->cfg.rope_base, .pos0 = pos0});
}

/* x [B, L, W] with one more position at the end: vec [W] (the same for
 * every row), or zeros when vec is NULL -> [B, L + 1, W]. */
TG_OP_NO_GRAD(position_op, "tg_mha appended position");

static tg_tensor *append_position(tg_tape *t, tg_tensor *x, tg_tensor *vec)
{
    if (!x) return NULL;
    int B = x->shape[0], W = x->shape[2];
    tg_tensor *col = tg_new(t, &position_op, 3, (int[]){B, W, 1});
    if (!col) return NULL;
    memset(col->data, 0, col->size * sizeof *col->data);
    if (vec) col = tg_add(t, col, tg_reshape(t, vec, 2, (int[]){W, 1}));
    tg_tensor *parts[2] = {tg_permute(t, x, (int[]){0, 2, 1}, 3), col};  /* [B, W, L] | [B, W, 1] */
    return tg_permute(t, tg_concat(t, parts, 2), (int[]){0, 2, 1}, 3);
}

/* k, v [B, Lk, W] with add_bias_kv's (bk, bv), then add_zero_attn's zeros,
 * appended as positions Lk, Lk + 1. */
static void append_kv(tg_tape *t, const tg_mha *m, tg_tensor **k, tg_tensor **v, tg_tensor *bk, tg_tensor *bv)
{
    if (m->cfg.add_bias_kv) *k = append_position(t, *k, bk), *v = append_position(t, *v, bv);
    if (m->cfg.add_zero_attn) *k = append_position(t, *k, NULL), *v = append_position(t, *v, NULL);
}

/* The keys appended by add_bias_kv and add_zero_attn. */
static int extra_keys(const tg_mha *m)
{
    return m->cfg.add_bias_kv + m->cfg.add_zero_attn;
}

/* mask over Lk keys widened to Lk + extra_keys, the appended keys visible to
 * every query (PyTorch pads attn_mask and key_padding_mask so): all its parts
 * as one attn [B*Hm, Lq, Lk'] in the arena (Hm: H for a per-head mask, else
 * 1), bool (true = hidden), or float (its float parts added, -inf where
 * hidden) when it has float parts. mask itself when nothing is appended or it
 * is empty; false with the tape's error set when it does not fit. */
static bool widen_mask(tg_tape *t, const tg_mha *m, const tg_mask **mask, int B, int Lq, int Lk, tg_mask *out)
{
    int extra = extra_keys(m), Lk2 = Lk + extra, H = m->cfg.n_heads;
    if (!extra || tg_mask_empty(*mask)) return true;
    char op[TG_NN_NAME_MAX + 16], shapes[96];
    snprintf(op, sizeof op, "tg_mha '%s'", m->name);
    snprintf(shapes, sizeof shapes, "scores [B, H, Lq, Lk] = [%d, %d, %d, %d]", B, H, Lq, Lk);
    tg_mask_rt r;
    if (!tg_mask_read(t, *mask, B, H, Lq, Lk, false, op, shapes, &r)) return false;
    int Hm = tg_mask_rt_per_h(&r) ? H : 1;
    bool flt = r.add || r.pad_add;
    tg_tensor *w = tg_tensor_new_dtype(t, flt ? TG_REAL_DTYPE : TG_BOOL, 3, (int[]){B * Hm, Lq, Lk2});
    uint8_t *vis = tg_arena_scratch(t, (size_t)Lq * Lk, "tg_mha widened mask");
    if (!w || !vis) return false;
    tg_attn_bias ab = {.mask = r, .H = H, .Lq = Lq, .Lk = Lk};
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hm; h++) {
            size_t plane = ((size_t)b * Hm + h) * Lq * Lk2;
            int ld;
            const tg_real *add = tg_attn_bias_rows(&ab, b, h, 0, Lq, Lk, flt ? w->data + plane : NULL, &ld);
            tg_mask_fill_rows(&r, b, h, 0, Lq, Lk, vis);
            for (int i = Lq - 1; i >= 0; i--) {  /* backwards: a sum in w's plane is [Lq, Lk] */
                const uint8_t *v = vis + (size_t)i * Lk;
                if (!flt) {
                    uint8_t *d = (uint8_t *)tg_data(w, TG_BOOL) + plane + (size_t)i * Lk2;
                    for (int j = 0; j < Lk2; j++) d[j] = j < Lk && !v[j];
                    continue;
                }
                tg_real *d = w->data + plane + (size_t)i * Lk2;
                for (int j = Lk2 - 1; j >= 0; j--) d[j] = j >= Lk ? 0 : v[j] ? add[(size_t)i * ld + j] : -INFINITY;
            }
        }
    tg_arena_release(t, vis, (size_t)Lq * Lk);
    *out = (tg_mask){.attn = w};
    *mask = out;
    return true;
}

/* x [B, L, W] through projections s0..s1 -> their heads side by side,
 * | s0 heads | .. | s1 heads | [B, L, row_of(s1 + 1) - row_of(s0)]: the one
 * tensor every path of the layer reads heads from, whatever the mode.
 * Fused: one GEMM on in_proj's rows (or q/k/v_proj_weight, one per
 * projection); per-head: one GEMM per head, joined. The per-head GEMMs are
 * made head by head, a group's key and value before its first query, so
 * backward adds their parts of x's grad in the order one attention op per
 * head did (docs/ATTENTION.md, "Two modes, one function"). */
static tg_tensor *project(tg_tape *t, const tg_mha *m, tg_tensor *x, int s0, int s1)
{
    const tg_mha_config *c = &m->cfg;
    tg_tensor *parts[3 * TG_MHA_MAX_HEADS], *b = m->in_proj_bias;
    int n = 0, r0 = row_of(c, s0), rows = row_of(c, s1 + 1) - r0, group = c->n_heads / c->n_kv_heads;
    if (c->mode == TG_MHA_FUSED && m->in_proj_weight) {
        if (s0 == 0 && s1 == 2) return tg_matmul(t, x, m->in_proj_weight, b, TG_TRANS_B);
        return tg_matmul(t, x, tg_rows_view(t, m->in_proj_weight, r0, rows), b ? tg_rows_view(t, b, r0, rows) : NULL,
                         TG_TRANS_B);
    }
    if (c->mode == TG_MHA_FUSED) {  /* q/k/v_proj_weight */
        for (int s = s0; s <= s1; s++) {
            int r = row_of(c, s), w = row_of(c, s + 1) - r;
            parts[n++] = tg_matmul(t, x, m->qkv_proj[s], b ? tg_rows_view(t, b, r, w) : NULL, TG_TRANS_B);
        }
        return n == 1 ? parts[0] : tg_concat(t, parts, n);
    }
    for (int h = 0; h < c->n_heads; h++)
        for (int i = 0; i < 3; i++) {
            int s = (i + 1) % 3, hh = s ? h / group : h;  /* k, v, q; key/value head h / group */
            if (s < s0 || s > s1 || (s && h % group)) continue;
            const tg_mha_head *hd = &m->heads[s ? hh * group : h];  /* its group's first query head's */
            parts[(row_of(c, s) - r0) / c->d_head + hh] = tg_matmul(t, x, s == 0 ? hd->wq : s == 1 ? hd->wk : hd->wv,
                                                                    s == 0 ? hd->bq : s == 1 ? hd->bk : hd->bv,
                                                                    TG_TRANS_B);
            n++;
        }
    return n == 1 ? parts[0] : tg_concat(t, parts, n);
}

/* add_bias_kv's learned key (s 1) or value (s 2), [E] in either mode. */
static tg_tensor *kv_bias(tg_tape *t, const tg_mha *m, int s)
{
    tg_tensor *parts[TG_MHA_MAX_HEADS];
    if (!m->cfg.add_bias_kv) return NULL;
    if (m->cfg.mode == TG_MHA_FUSED) return s == 1 ? m->bias_k : m->bias_v;
    for (int h = 0; h < m->cfg.n_heads; h++) parts[h] = s == 1 ? m->heads[h].bias_k : m->heads[h].bias_v;
    return m->cfg.n_heads == 1 ? parts[0] : tg_concat(t, parts, m->cfg.n_heads);
}

/* The heads of q, k, v in packed tensors, RoPE on q and k, the appended keys,
 * then ONE tg_sdpa_heads for every head -> [B, Lq, E]. Self-attention
 * projects | q | k | v | with one call (cache: NULL, or receives | k | v | of
 * every position); otherwise q [B, Lq, E] and | k | v | [B, Lk', 2Ekv]. */
static tg_tensor *attend(tg_tape *t, const tg_mha *m, tg_tensor *xq, tg_tensor *xkv, tg_tensor *xv,
                         const tg_mha_opts *mo, const tg_mask *mask, tg_tensor **weights)
{
    int H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads;
    tg_sdpa_opts o = sdpa_opts(m, mo);
    tg_sdpa_layout lay = tg_mha_kv_layout(m);
    o.mask = mask;
    if (xq == xkv && xv == xkv && !extra_keys(m)) {  /* self-attention: qkv [B, L, E + 2Ekv] */
        tg_tensor *qkv = rope_on(t, m, project(t, m, xq, 0, 2), 0, H + Hkv, NULL);  /* q and k heads */
        if (mo->cache && (!qkv || tg_kv_write(t, mo->cache, qkv, &lay, NULL))) return NULL;
        return tg_sdpa_heads(t, qkv, qkv, &lay, &o, weights);
    }
    tg_tensor *q = rope_on(t, m, project(t, m, xq, 0, 0), 0, H, NULL), *kv;
    if (xv == xkv && !extra_keys(m)) {
        kv = rope_on(t, m, project(t, m, xkv, 1, 2), 0, Hkv, NULL);
    } else {
        tg_tensor *k[2] = {rope_on(t, m, project(t, m, xkv, 1, 1), 0, Hkv, NULL), project(t, m, xv, 2, 2)};
        append_kv(t, m, &k[0], &k[1], kv_bias(t, m, 1), kv_bias(t, m, 2));
        kv = tg_concat(t, k, 2);
    }
    lay.k_col = 0;
    lay.v_col = Hkv * m->cfg.d_head;
    return tg_sdpa_heads(t, q, kv, &lay, &o, weights);
}

/* o [B, Lq, E] * (per column: head_mask of its head) unless every head's is 1 */
TG_OP_NO_GRAD(head_mask_op, "tg_mha head mask");

static tg_tensor *apply_head_mask(tg_tape *t, const tg_mha *m, tg_tensor *o, const tg_tensor *head_mask)
{
    int H = m->cfg.n_heads, dh = m->cfg.d_head;
    if (!o || !head_mask) return o;
    char s[TG_SHAPE_STR];
    tg_tensor *hm = (tg_tensor *)head_mask;
    if (hm->magic != TG_TENSOR_LIVE) return tg_fail(t, "tg_mha '%s': head_mask is not a live tensor", m->name);
    if (!tg_inputs_check_dtype(t, &head_mask_op, hm->dtype, &hm, 1, 1)) return NULL;
    if (!tg_dtype_is_float(hm->dtype))
        return tg_fail(t, "tg_mha '%s': head_mask is %s, but must be float (1 keeps a head, 0 silences it)", m->name,
                       tg_dtype_name(hm->dtype));
    if (hm->ndim != 1 || hm->shape[0] != H)
        return tg_fail(t, "tg_mha '%s': head_mask %s must be [n_heads] = [%d]", m->name, tg_shape_str(hm, s), H);
    bool all_on = true;
    for (int h = 0; h < H; h++) all_on = all_on && tg_dtype_load(hm->dtype, hm->data, (size_t)h) == 1;
    if (all_on) return o;
    tg_tensor *keep = tg_new(t, &head_mask_op, 1, (int[]){H * dh});
    if (!keep) return NULL;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < dh; i++) keep->data[h * dh + i] = (tg_real)tg_dtype_load(hm->dtype, hm->data, (size_t)h);
    return tg_mul(t, o, keep);
}

static bool check_inputs(tg_tape *t, const tg_mha *m, const tg_tensor *xq, const tg_tensor *xkv,
                         const tg_tensor *xv, tg_rng *rng)
{
    char sq[TG_SHAPE_STR], sk[TG_SHAPE_STR], sv[TG_SHAPE_STR];
    int D = m->cfg.d_model, kdim = m->cfg.kdim, vdim = m->cfg.vdim;
    if (xq->ndim != 3 || xq->shape[2] != D || xkv->ndim != 3 || xkv->shape[2] != kdim ||
        xkv->shape[0] != xq->shape[0]) {
        tg_fail(t, "tg_mha '%s': inputs must be xq [B, Lq, %d] and xkv [B, Lk, %d], got xq %s, xkv %s",
                m->name, D, kdim, tg_shape_str(xq, sq), tg_shape_str(xkv, sk));
        return false;
    }
    if (xv->ndim != 3 || xv->shape[0] != xkv->shape[0] || xv->shape[1] != xkv->shape[1] || xv->shape[2] != vdim) {
        tg_fail(t, "tg_mha '%s': the values' input must be [B, Lk, %d] (vdim) for xkv %s, got %s%s", m->name, vdim,
                tg_shape_str(xkv, sk), tg_shape_str(xv, sv), xv == xkv ? " (no opts.xv: pass it when vdim != kdim)" : "");
        return false;
    }
    if (m->cfg.dropout > 0 && tg_tape_training(t) && !rng) {
        tg_fail(t, "tg_mha '%s': dropout %g while training needs an rng", m->name, m->cfg.dropout);
        return false;
    }
    return true;
}

/* A cache to fill: self-attention only, [B' >= B, cap >= L, 2Ekv]. */
TG_OP_NO_GRAD(cache_op, "tg_mha cache");

static bool check_cache(tg_tape *t, const tg_mha *m, const tg_tensor *xq, const tg_tensor *xkv,
                        const tg_tensor *cache)
{
    char sx[TG_SHAPE_STR], sc[TG_SHAPE_STR];
    int E2 = 2 * m->cfg.n_kv_heads * m->cfg.d_head;
    if (xq != xkv) {
        tg_fail(t, "tg_mha '%s': a key/value cache is filled by self-attention only (xq == xkv)", m->name);
        return false;
    }
    if (!tg_inputs_check(t, &cache_op, (tg_tensor *const[]){(tg_tensor *)cache}, 1, 1)) return false;
    if (cache->ndim != 3 || cache->shape[0] < xq->shape[0] || cache->shape[1] < xq->shape[1] ||
        cache->shape[2] != E2) {
        tg_fail(t, "tg_mha '%s': the cache must be [B' >= B, cap >= L, %d] for x %s, got %s", m->name, E2,
                tg_shape_str(xq, sx), tg_shape_str(cache, sc));
        return false;
    }
    return true;
}

tg_tensor *tg_mha_forward(tg_tape *t, const tg_mha *m, tg_tensor *xq, tg_tensor *xkv, const tg_mha_opts *opts,
                          tg_tensor **weights)
{
    if (weights) *weights = NULL;
    if (tg_nn_check_forward("tg_mha_forward", t, m, m && m->out_proj.weight)) return NULL;
    if (!xq || !xkv) return tg_fail_null(t, "tg_mha");
    tg_mha_opts o = opts ? *opts : (tg_mha_opts){0};
    if (xq->ndim == 2) {  /* unbatched, as PyTorch: [L, D] -> a batch of one */
        if (xkv->ndim != 2 || (o.xv && o.xv->ndim != 2))
            return tg_fail(t, "tg_mha '%s': an unbatched xq [Lq, D] needs unbatched keys and values", m->name);
        tg_tensor *x1[3] = {xq, xkv, o.xv};
        for (int i = 0; i < 3; i++)
            if (x1[i]) x1[i] = tg_reshape(t, x1[i], 3, (int[]){1, x1[i]->shape[0], x1[i]->shape[1]});
        o.xv = x1[2];
        tg_tensor *w = NULL, *out = tg_mha_forward(t, m, x1[0], xq == xkv ? x1[0] : x1[1], &o, weights ? &w : NULL);
        if (weights && out) *weights = tg_reshape(t, w, 3, (int[]){w->shape[1], w->shape[2], w->shape[3]});
        return out ? tg_reshape(t, out, 2, (int[]){out->shape[1], out->shape[2]}) : NULL;
    }
    tg_tensor *xv = o.xv ? o.xv : xkv;
    if (!check_inputs(t, m, xq, xkv, xv, o.rng) || (o.cache && !check_cache(t, m, xq, xkv, o.cache))) return NULL;
    if (o.cache && (xv != xkv || extra_keys(m) || !(m->cfg.kdim == m->cfg.d_model && m->cfg.vdim == m->cfg.d_model)))
        return tg_fail(t, "tg_mha '%s': no key/value cache with kdim, vdim, add_bias_kv or add_zero_attn", m->name);
    tg_mask wide;
    const tg_mask *mask = o.mask;
    if (!widen_mask(t, m, &mask, xq->shape[0], xq->shape[1], xkv->shape[1], &wide)) return NULL;
    tg_tensor *h = apply_head_mask(t, m, attend(t, m, xq, xkv, xv, &o, mask, weights), o.head_mask);
    tg_tensor *out = tg_linear_forward(t, &m->out_proj, h);
    if (!out && weights) *weights = NULL;
    return out;
}

/* ---- decoding ------------------------------------------------------------------ */

tg_sdpa_layout tg_mha_kv_layout(const tg_mha *m)
{
    TG_REFUSE_NULL(m, "the layer", (tg_sdpa_layout){0});
    int H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads, dh = m->cfg.d_head;
    return (tg_sdpa_layout){.n_heads = H, .n_kv_heads = Hkv, .dk = dh, .dv = dh, .q_col = 0, .k_col = H * dh,
                            .v_col = (H + Hkv) * dh};
}

TG_OP_NO_GRAD(mha_decode_op, "tg_mha_decode");

tg_tensor *tg_mha_decode(tg_tape *t, const tg_mha *m, tg_tensor *x, tg_tensor *cache, const tg_tensor *pos,
                       const tg_tensor *head_mask)
{
    if (tg_nn_check_forward("tg_mha_decode", t, m, m && m->out_proj.weight)) return NULL;
    if (!x || !cache || !pos) return tg_fail_null(t, "tg_mha_decode");
    char sx[TG_SHAPE_STR];
    if (tg_tape_recording(t))
        return tg_fail(t, "tg_mha_decode '%s': decoding only: the tape must not record", m->name);
    if (x->ndim != 3 || x->shape[1] != 1 || x->shape[2] != m->cfg.d_model)
        return tg_fail(t, "tg_mha_decode '%s': need x [B, 1, %d], got %s", m->name, m->cfg.d_model,
                       tg_shape_str(x, sx));
    if (!tg_index_rows_check(t, &mha_decode_op, pos, "pos", x->shape[0])) return NULL;
    if (extra_keys(m) || m->cfg.kdim != m->cfg.d_model || m->cfg.vdim != m->cfg.d_model)
        return tg_fail(t, "tg_mha_decode '%s': no key/value cache with kdim, vdim, add_bias_kv or add_zero_attn",
                       m->name);
    tg_sdpa_layout lay = tg_mha_kv_layout(m);
    tg_sdpa_opts so = score_opts(m);
    tg_tensor *qkv = rope_on(t, m, project(t, m, x, 0, 2), 0, m->cfg.n_heads + m->cfg.n_kv_heads, pos);
    if (!qkv || tg_kv_write(t, cache, qkv, &lay, pos)) return NULL;
    tg_tensor *o = tg_sdpa_decode(t, qkv, cache, &lay, pos, &so);
    return tg_linear_forward(t, &m->out_proj, apply_head_mask(t, m, o, head_mask));
}
