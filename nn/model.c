/* tapegrad: the decoder-only toy model (see nn/model.h). */
#include "model.h"

#include <stdio.h>
#include <string.h>

#include "../core/engine/alloc.h"
#include "../core/ops/internal.h"

static int check_config(const tg_model_config *c)
{
    if (c->vocab > 0 && c->d_model > 0 && c->n_layers > 0 && c->n_heads > 0 && c->d_head >= 0 &&
        c->d_ff >= 0 && c->max_len > 0 && c->pos >= TG_POS_LEARNED && c->pos <= TG_POS_NONE &&
        c->norm >= TG_NORM_LAYER && c->norm <= TG_NORM_RMS && c->ff_act >= TG_FFN_GELU && c->ff_act <= TG_FFN_GEGLU)
        return 0;
    return tg_error_set("tg_model: bad config: vocab %d, d_model %d, n_layers %d, n_heads %d, "
                        "d_head %d, d_ff %d, max_len %d, pos %d, norm %d, ff_act %d (all > 0; d_head, d_ff >= 0; "
                        "pos a tg_pos_kind, norm a tg_norm_kind, ff_act a tg_ffn_act)",
                        c->vocab, c->d_model, c->n_layers, c->n_heads, c->d_head, c->d_ff, c->max_len, (int)c->pos,
                        (int)c->norm, (int)c->ff_act);
}

/* head = Linear(D, V), or, tied, tok_emb.weight [V, D] itself without a bias */
static int head_init(tg_model *m, tg_params *p, tg_rng *rng)
{
    const tg_model_config *c = &m->cfg;
    if (!c->tie_weights) {
        tg_linear_config head = {.in = c->d_model, .out = c->vocab, .bias = !c->no_bias};
        return tg_linear_init(&m->head, p, "head", &head, rng);
    }
    m->head = (tg_linear){.weight = m->tok_emb.weight, .in = c->d_model, .out = c->vocab, .name = "head"};
    return 0;
}

int tg_model_init(tg_model *m, tg_params *p, const tg_model_config *cfg, tg_rng *rng)
{
    if (tg_nn_check_init("tg_model_init", m, p, cfg)) return -1;
    memset(m, 0, sizeof *m);
    int n0 = tg_params_count(p);
    if (check_config(cfg)) return -1;
    m->cfg = *cfg;
    if (m->cfg.d_ff == 0) m->cfg.d_ff = 4 * cfg->d_model;
    const tg_model_config *c = &m->cfg;
    tg_block_config bc = {
        .attn = {.n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads, .d_model = c->d_model, .d_head = c->d_head,
                 .bias = !c->no_bias, .rope = c->pos == TG_POS_ROPE, .rope_base = c->rope_base,
                 .rope_frac = c->rope_frac, .alibi = c->alibi,
                 .dropout = c->dropout, .mode = c->mode},
        .d_ff = c->d_ff, .ff_dropout = c->dropout, .ln_eps = 1e-5, .norm = c->norm, .ff_act = c->ff_act,
        .no_bias = c->no_bias};
    /* tied: both tables from GPT-2's N(0, 0.02) (nanoGPT's init), since N(0, 1)
     * rows as the head's weight give logits of norm ~sqrt(D) and a first loss
     * far above log V; the position table on the same scale keeps it from
     * drowning the tokens */
    tg_rng *emb_rng = c->tie_weights ? NULL : rng;
    if (tg_embedding_init(&m->tok_emb, p, "tok_emb", c->vocab, c->d_model, emb_rng) ||
        (c->pos == TG_POS_LEARNED && tg_embedding_init(&m->pos_emb, p, "pos_emb", c->max_len, c->d_model, emb_rng)))
        goto fail;
    if (c->tie_weights && rng) {
        tg_init_normal(m->tok_emb.weight, 0.0, 0.02, rng);
        if (c->pos == TG_POS_LEARNED) tg_init_normal(m->pos_emb.weight, 0.0, 0.02, rng);
    }
    m->blocks = tg_calloc((size_t)c->n_layers, sizeof *m->blocks);
    if (!m->blocks) {
        tg_error_set("tg_model: out of memory for %d blocks", c->n_layers);
        goto fail;
    }
    for (int l = 0; l < c->n_layers; l++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "blocks.%d", l);
        if (tg_block_init(&m->blocks[l], p, prefix, &bc, rng)) goto fail;
    }
    m->cfg.d_head = m->blocks[0].attn.cfg.d_head;
    m->cfg.n_kv_heads = m->blocks[0].attn.cfg.n_kv_heads;
    if (tg_norm_init(&m->ln_f, p, "ln_f", c->norm, c->d_model, 1e-5) || head_init(m, p, rng)) goto fail;
    return 0;
fail:
    tg_model_free(m);
    return tg_nn_init_undo(m, sizeof *m, NULL, p, n0);
}

void tg_model_free(tg_model *m)
{
    if (!m) return;
    tg_free(m->blocks);
    m->blocks = NULL;
}

TG_OP_NO_GRAD(forward_op, "tg_model_forward");
TG_OP_NO_GRAD(prefill_op, "tg_model_prefill");
TG_OP_NO_GRAD(decode_op, "tg_model_decode");

/* A float head_mask [n_layers, n_heads] of op, or NULL. */
static bool check_head_mask(tg_tape *t, const tg_op *op, const tg_model *m, const tg_tensor *hm)
{
    if (!hm) return true;
    char s[TG_SHAPE_STR];
    tg_tensor *x = (tg_tensor *)hm;
    if (!tg_inputs_check_dtype(t, op, hm->dtype, &x, 1, 1)) return false;
    if (!tg_dtype_is_float(hm->dtype) || hm->ndim != 2 || hm->shape[0] != m->cfg.n_layers ||
        hm->shape[1] != m->cfg.n_heads) {
        tg_op_fail(t, op, "head_mask is %s %s, but it is a float tensor [n_layers, n_heads] = [%d, %d]",
                   tg_dtype_name(hm->dtype), tg_shape_str(hm, s), m->cfg.n_layers, m->cfg.n_heads);
        return false;
    }
    return true;
}

/* ids [B, T] (int64 or int32), 0 < T <= max_len, and lens [B] in [0, T] or NULL. */
static bool check_inputs(tg_tape *t, const tg_op *op, const tg_model *m, const tg_tensor *ids, const tg_model_opts *o)
{
    char s[TG_SHAPE_STR];
    if (!tg_index_check(t, op, ids, "ids")) return false;
    if (ids->ndim != 2 || ids->shape[0] < 1 || ids->shape[1] < 1 || ids->shape[1] > m->cfg.max_len) {
        tg_op_fail(t, op, "ids is %s, but it is [B, T] with B > 0 and 0 < T <= max_len %d", tg_shape_str(ids, s),
                   m->cfg.max_len);
        return false;
    }
    int B = ids->shape[0], T = ids->shape[1];
    if (o->lens && !tg_index_rows_check(t, op, o->lens, "lens", B)) return false;
    for (int b = 0; o->lens && b < B; b++) {
        int64_t v = tg_index_at(o->lens, (size_t)b);
        if (v < 0 || v > T) {
            tg_op_fail(t, op, "lens[%d] = %lld is outside [0, T = %d]", b, (long long)v, T);
            return false;
        }
    }
    return check_head_mask(t, op, m, o->head_mask);
}

/* tok_emb[ids] + pos_emb[pos] (pos NULL: 0..T-1 in every row, else [B] for
 * T = 1; learned positions only): [B, T, D]. */
static tg_tensor *embed(tg_tape *t, const tg_model *m, const tg_tensor *ids, const tg_tensor *pos)
{
    const int B = ids->shape[0], T = ids->shape[1], shape[2] = {B, T};
    tg_tensor *tok = tg_embedding_forward(t, &m->tok_emb, ids);
    if (m->cfg.pos != TG_POS_LEARNED || !tok) return tok;
    tg_tensor *p = tg_tensor_new_dtype(t, TG_I32, 2, shape);
    if (!p) return NULL;
    int32_t *pv = tg_data(p, TG_I32);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) pv[b * T + i] = pos ? (int32_t)tg_index_at(pos, (size_t)b) : i;
    return tg_add_inplace(t, tok, tg_embedding_forward(t, &m->pos_emb, p));
}

/* Layer l's row of the model's head mask [n_layers, n_heads] as the layer
 * takes it, a tensor [n_heads] of its dtype (in *out; NULL when hm is). false
 * when out of memory (the tape's error set). */
static bool layer_head_mask(tg_tape *t, const tg_model *m, const tg_tensor *hm, int l, tg_tensor **out)
{
    int H = m->cfg.n_heads;
    *out = NULL;
    if (!hm) return true;
    const char *row = (const char *)hm->data + (size_t)l * H * tg_dtype_size(hm->dtype);
    return (*out = tg_tensor_from_dtype(t, hm->dtype, row, 1, (int[]){H})) != NULL;
}

/* The forward (checked by the caller); with c, each layer's keys and values
 * also go to rows [0, B) of the cache. -> logits [B, T, V] */
static tg_tensor *model_run(tg_tape *t, const tg_model *m, const tg_tensor *ids, const tg_model_opts *o,
                            tg_kv_cache *c, tg_tensor **attn)
{
    tg_mask mask = {.causal = true, .key_lens = o->lens};
    tg_tensor *h = embed(t, m, ids, NULL);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        tg_tensor *hm;
        if (!layer_head_mask(t, m, o->head_mask, l, &hm)) return NULL;
        tg_mha_opts a = {.mask = &mask, .head_mask = hm, .rng = o->rng, .cache = c ? c->kv[l] : NULL};
        h = tg_block_forward(t, &m->blocks[l], h, &a, attn ? &attn[l] : NULL);
    }
    h = tg_norm_forward(t, &m->ln_f, h);
    return tg_linear_forward(t, &m->head, h);
}

/* ids [B, T] -> logits [B, T, V] */
tg_tensor *tg_model_forward(tg_tape *t, const tg_model *m, const tg_tensor *ids, const tg_model_opts *opts,
                            tg_tensor **attn)
{
    if (tg_nn_check_forward("tg_model_forward", t, m, m && m->head.weight)) return NULL;
    for (int l = 0; attn && l < m->cfg.n_layers; l++) attn[l] = NULL;
    tg_model_opts o = opts ? *opts : (tg_model_opts){0};
    if (!check_inputs(t, &forward_op, m, ids, &o)) return NULL;
    return model_run(t, m, ids, &o, NULL, attn);
}

/* A cache of rows >= B for this model. */
static bool check_cache(tg_tape *t, const char *fn, const tg_model *m, const tg_kv_cache *c, int B)
{
    if (!c || !c->kv) {
        tg_fail(t, "%s: the cache is %s", fn, c ? "not initialised (tg_kv_cache_init)" : "NULL");
        return false;
    }
    if (c->n_layers != m->cfg.n_layers || c->cap != m->cfg.max_len) {
        tg_fail(t, "%s: the cache holds %d layers x %d positions, the model %d x %d (another model's?)", fn,
                c->n_layers, c->cap, m->cfg.n_layers, m->cfg.max_len);
        return false;
    }
    if (B < 1 || B > c->B) {
        tg_fail(t, "%s: %d rows for a cache of %d", fn, B, c->B);
        return false;
    }
    return true;
}

tg_tensor *tg_model_prefill(tg_tape *t, const tg_model *m, tg_kv_cache *c, const tg_tensor *ids,
                            const tg_model_opts *opts)
{
    if (tg_nn_check_forward("tg_model_prefill", t, m, m && m->head.weight)) return NULL;
    tg_model_opts o = opts ? *opts : (tg_model_opts){0};
    if (!check_inputs(t, &prefill_op, m, ids, &o) || !check_cache(t, "tg_model_prefill", m, c, ids->shape[0]))
        return NULL;
    return model_run(t, m, ids, &o, c, NULL);
}

int tg_kv_cache_init(tg_kv_cache *c, const tg_model *m, int B)
{
    if (!c) return tg_error_set("tg_kv_cache_init: the cache is NULL");
    if (!m || !m->head.weight) return tg_error_set("tg_kv_cache_init: the model is %s", m ? "not initialised" : "NULL");
    if (B < 1) return tg_error_set("tg_kv_cache_init: B = %d must be >= 1", B);
    memset(c, 0, sizeof *c);
    tg_sdpa_layout lay = tg_mha_kv_layout(&m->blocks[0].attn);
    int L = m->cfg.n_layers, E2 = (lay.n_kv_heads ? lay.n_kv_heads : lay.n_heads) * (lay.dk + lay.dv);
    c->B = B, c->cap = m->cfg.max_len, c->n_layers = L, c->lay = lay;
    c->kv = tg_calloc((size_t)L, sizeof *c->kv);
    for (int l = 0; c->kv && l < L; l++)
        if (!(c->kv[l] = tg_tensor_alloc(3, (int[]){B, c->cap, E2}))) break;
    if (c->kv && (L == 0 || c->kv[L - 1])) return 0;
    tg_kv_cache_free(c);
    return tg_error_set("tg_kv_cache: out of memory for %d x [%d, %d, %d]", L, B, m->cfg.max_len, E2);
}

void tg_kv_cache_free(tg_kv_cache *c)
{
    TG_REFUSE_NULL(c, "the cache", );
    for (int l = 0; c->kv && l < c->n_layers; l++) tg_tensor_free(c->kv[l]);
    tg_free(c->kv);
    memset(c, 0, sizeof *c);
}

int tg_kv_cache_move(tg_kv_cache *c, int to, int from, int n)
{
    if (!c || !c->kv) return tg_error_set("tg_kv_cache_move: the cache is %s", c ? "not initialised" : "NULL");
    if (to < 0 || to >= c->B || from < 0 || from >= c->B || n < 0 || n > c->cap)
        return tg_error_set("tg_kv_cache_move: rows %d -> %d, %d positions: need rows in [0, %d), positions "
                            "in [0, %d]", from, to, n, c->B, c->cap);
    if (to == from) return 0;
    for (int l = 0; l < c->n_layers; l++) {
        if (tg_kv_copy(c->kv[l], &c->lay, to, from, n)) return -1;
    }
    return 0;
}

tg_tensor *tg_model_decode(tg_tape *t, const tg_model *m, tg_kv_cache *c, const tg_tensor *ids,
                           const tg_tensor *pos, const tg_tensor *head_mask)
{
    if (tg_nn_check_forward("tg_model_decode", t, m, m && m->head.weight)) return NULL;
    char s[TG_SHAPE_STR];
    if (!tg_index_check(t, &decode_op, ids, "ids")) return NULL;
    if (ids->ndim != 2 || ids->shape[0] < 1 || ids->shape[1] != 1)
        return tg_op_fail(t, &decode_op, "ids is %s, but it is [B, 1] with B > 0 (one new token per row)",
                          tg_shape_str(ids, s));
    int B = ids->shape[0];
    if (!check_cache(t, "tg_model_decode", m, c, B) || !tg_index_rows_check(t, &decode_op, pos, "pos", B) ||
        !check_head_mask(t, &decode_op, m, head_mask))
        return NULL;
    for (int b = 0; b < B; b++) {
        int64_t v = tg_index_at(pos, (size_t)b);
        if (v < 0 || v >= m->cfg.max_len)
            return tg_op_fail(t, &decode_op, "pos[%d] = %lld is outside [0, max_len = %d)", b, (long long)v,
                              m->cfg.max_len);
    }
    tg_tensor *h = embed(t, m, ids, pos);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        tg_tensor *hm;
        if (!layer_head_mask(t, m, head_mask, l, &hm)) return NULL;
        h = tg_block_decode(t, &m->blocks[l], h, c->kv[l], pos, hm);
    }
    h = tg_norm_forward(t, &m->ln_f, h);
    return tg_linear_forward(t, &m->head, h);
}

/* A tied model's head.weight in s (a PyTorch state_dict names the shared
 * tensor twice) is a copy of tok_emb.weight; with strict, every other tensor
 * of s outside ignore_prefix is a parameter of p. 0, or -1 with a message. */
static int check_tied(const tg_params *p, const tg_safetensors *s, bool strict, const char *ignore_prefix)
{
    const tg_tensor *head = tg_st_get(s, "head.weight"), *emb = tg_st_get(s, "tok_emb.weight");
    if (!emb || !tg_shape_equal(head, emb) || head->dtype != emb->dtype ||
        memcmp(head->data, emb->data, emb->size * tg_dtype_size(emb->dtype)))
        return tg_error_set("tg_model_load: a tied model's head.weight is tok_emb.weight, but the file's head.weight "
                            "%s", emb ? "differs from its tok_emb.weight" : "comes without a tok_emb.weight");
    size_t n = ignore_prefix ? strlen(ignore_prefix) : 0;
    for (int i = 0; strict && i < tg_st_count(s); i++) {
        const char *name = tg_st_at(s, i)->name;
        if (strcmp(name, "head.weight") && !(n && !strncmp(name, ignore_prefix, n)) && !tg_params_get(p, name))
            return tg_error_set("tg_model_load: unexpected tensor '%s' (not a parameter of the model)", name);
    }
    return 0;
}

int tg_model_load(const tg_model *m, tg_params *p, const tg_safetensors *s, bool strict, const char *ignore_prefix)
{
    if (!m || !m->head.weight) return tg_error_set("tg_model_load: the model is %s", m ? "not initialised" : "NULL");
    if (!p || !s) return tg_error_set("tg_model_load: the %s is NULL", p ? "file" : "parameter store");
    if (!m->cfg.tie_weights || !tg_st_get(s, "head.weight")) return tg_st_load_params(p, s, strict, ignore_prefix);
    if (check_tied(p, s, strict, ignore_prefix)) return -1;
    return tg_st_load_params(p, s, false, ignore_prefix);
}
