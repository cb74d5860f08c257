/* Decoding with the key/value cache (nn/model.h): tg_model_decode one position
 * at a time and tg_model_prefill give the logits of whole tg_model_forward
 * passes (bit for bit where the build allows), greedy decoding with the cache
 * gives the tokens of decoding by whole passes, in both attention modes and
 * with head masks. */
#include <stdlib.h>
#include <string.h>

#include <tapegrad/nn/nn.h>
#include "ops_util.h"

enum { KV = 12, KT = 16, KB = 3 };

static int32_t argmax_row(const tg_real *x, int n)
{
    int32_t best = 0;
    for (int v = 1; v < n; v++)
        if (x[v] > x[best]) best = v;
    return best;
}

/* The attention of a test's model: query heads, key/value heads (0: as
 * many), positions (RoPE rotating a share of each head's dims). */
typedef struct kv_arch {
    int n_heads, n_kv_heads;
    tg_pos_kind pos;
    double rope_frac;
    bool alibi;
    tg_norm_kind norm;
    tg_ffn_act ff_act;
    bool no_bias, tie_weights;
} kv_arch;
static const kv_arch MHA = {.n_heads = 2}, GQA = {.n_heads = 4, .n_kv_heads = 2}, MQA = {.n_heads = 4, .n_kv_heads = 1};
static const kv_arch ROPE = {.n_heads = 2, .pos = TG_POS_ROPE}, NOPOS = {.n_heads = 2, .pos = TG_POS_NONE};
static const kv_arch ROPE_GQA = {.n_heads = 4, .n_kv_heads = 2, .pos = TG_POS_ROPE, .rope_frac = 0.5};
static const kv_arch ALIBI = {.n_heads = 2, .pos = TG_POS_NONE, .alibi = true};
static const kv_arch ALIBI_GQA = {.n_heads = 4, .n_kv_heads = 2, .alibi = true};
static const kv_arch LLAMA = {.n_heads = 4, .n_kv_heads = 2, .pos = TG_POS_ROPE, .norm = TG_NORM_RMS,
                              .ff_act = TG_FFN_SWIGLU, .no_bias = true};
static const kv_arch GPT2 = {.n_heads = 2, .tie_weights = true};

/* A small model of either mode, a tape that does not record, KB x KT random ids. */
typedef struct kv_fixture {
    tg_rng rng;
    tg_params *p;
    tg_model m;
    tg_tape *t;
    bool prev;
    int32_t ids[KB * KT];
} kv_fixture;

static void kv_open(kv_fixture *f, tg_mha_mode mode, kv_arch a, uint64_t seed)
{
    tg_rng_seed(&f->rng, seed);
    f->p = tg_params_new();
    tg_model_config cfg = {.vocab = KV, .d_model = 16, .n_layers = 2, .n_heads = a.n_heads,
                           .n_kv_heads = a.n_kv_heads, .max_len = KT, .mode = mode, .pos = a.pos,
                           .rope_frac = a.rope_frac, .alibi = a.alibi, .norm = a.norm, .ff_act = a.ff_act,
                           .no_bias = a.no_bias, .tie_weights = a.tie_weights};
    cr_assert_eq(tg_model_init(&f->m, f->p, &cfg, &f->rng), 0, "%s", tg_error());
    f->t = tg_tape_new();
    f->prev = tg_no_grad_begin(f->t);
    tg_tape_set_training(f->t, false);
    for (int e = 0; e < KB * KT; e++) f->ids[e] = (int32_t)tg_rng_below(&f->rng, KV);
}

/* v [rows, n] (n 0: [rows]) as an int tensor of t of dtype dt */
static tg_tensor *ix_of(tg_tape *t, tg_dtype dt, const int32_t *v, int rows, int n)
{
    tg_tensor *x = tg_tensor_new_dtype(t, dt, n ? 2 : 1, (int[]){rows, n});
    cr_assert_not_null(x, "%s", tg_tape_error(t));
    for (int i = 0; i < rows * (n ? n : 1); i++) tg_dtype_store(dt, x->data, (size_t)i, v[i]);
    return x;
}

/* hm [n_layers * n_heads] as the model's head_mask, a float tensor [n_layers,
 * n_heads] of t; NULL stays NULL. */
static tg_tensor *hm_of(tg_tape *t, const tg_model *m, const uint8_t *hm)
{
    if (!hm) return NULL;
    tg_tensor *x = tg_tensor_new(t, 2, (int[]){m->cfg.n_layers, m->cfg.n_heads});
    cr_assert_not_null(x, "%s", tg_tape_error(t));
    for (size_t i = 0; i < x->size; i++) x->data[i] = hm[i] ? 1 : 0;
    return x;
}

static void kv_close(kv_fixture *f)
{
    tg_tape_free(f->t);
    tg_model_free(&f->m);
    tg_params_free(f->p);
}

/* A copy of the logits [KB, KT, KV] of one whole pass over f->ids. */
static tg_real *full_logits(kv_fixture *f, const uint8_t *hm)
{
    tg_tape_reset(f->t);
    tg_tensor *full = tg_model_forward(f->t, &f->m, ix_of(f->t, TG_I32, f->ids, KB, KT),
                                       &(tg_model_opts){.head_mask = hm_of(f->t, &f->m, hm)}, NULL);
    cr_assert_not_null(full, "%s", tg_tape_error(f->t));
    tg_real *want = malloc(full->size * sizeof *want);
    memcpy(want, full->data, full->size * sizeof *want);
    return want;
}

/* One step, row b reading f->ids[b, pos[b]] (int64 ids and positions); with want (a whole pass's
 * logits), the step's logits must be its logits at those positions (the
 * same bits where tu_same_bits()). */
static void step_rows(kv_fixture *f, tg_kv_cache *c, const int32_t *pos, const uint8_t *hm, const tg_real *want)
{
    int32_t in[KB];
    for (int b = 0; b < KB; b++) in[b] = f->ids[b * KT + pos[b]];
    tg_tape_reset(f->t);
    tg_tensor *lg = tg_model_decode(f->t, &f->m, c, ix_of(f->t, TG_I64, in, KB, 1), ix_of(f->t, TG_I64, pos, KB, 0),
                                    hm_of(f->t, &f->m, hm));
    cr_assert_not_null(lg, "%s", tg_tape_error(f->t));
    cr_assert(lg->ndim == 3 && lg->shape[0] == KB && lg->shape[1] == 1 && lg->shape[2] == KV);
    for (int b = 0; want && b < KB; b++) {
        const tg_real *w = want + ((size_t)b * KT + pos[b]) * KV;
        if (tu_same_bits()) cr_assert_eq(memcmp(lg->data + b * KV, w, KV * sizeof *w), 0, "row %d at %d", b, pos[b]);
        for (int v = 0; v < KV; v++) tu_close(lg->data[b * KV + v], w[v], TU_TOL);
    }
}

/* Greedy continuation of seq[0..n) up to KT tokens by whole forward passes
 * over the prefix (the decode without a cache). */
static void greedy_full(tg_tape *t, const tg_model *m, int32_t *seq, int n, const uint8_t *hm)
{
    for (; n < KT; n++) {
        tg_tape_reset(t);
        tg_model_opts o = {.head_mask = hm_of(t, m, hm)};
        tg_tensor *lg = tg_model_forward(t, m, ix_of(t, TG_I32, seq, 1, n), &o, NULL);
        cr_assert_not_null(lg, "%s", tg_tape_error(t));
        seq[n] = argmax_row(lg->data + (size_t)(n - 1) * KV, KV);
    }
}

/* The same with the cache: the prompt by one prefill (whose last logits give
 * token n) or one position per step, then each argmax fed back by a step. */
static void greedy_cached(tg_tape *t, const tg_model *m, tg_kv_cache *c, int32_t *seq, int n, const uint8_t *hm,
                          bool prefill)
{
    int pos = 0;
    if (prefill) {
        tg_tape_reset(t);
        tg_model_opts o = {.head_mask = hm_of(t, m, hm)};
        tg_tensor *lg = tg_model_prefill(t, m, c, ix_of(t, TG_I32, seq, 1, n), &o);
        cr_assert_not_null(lg, "%s", tg_tape_error(t));
        seq[n] = argmax_row(lg->data + (size_t)(n - 1) * KV, KV);
        pos = n;
    }
    for (; pos < KT - 1; pos++) {
        tg_tape_reset(t);
        tg_tensor *lg = tg_model_decode(t, m, c, ix_of(t, TG_I32, &seq[pos], 1, 1), ix_of(t, TG_I32, &pos, 1, 0),
                                        hm_of(t, m, hm));
        cr_assert_not_null(lg, "%s", tg_tape_error(t));
        if (pos + 1 >= n) seq[pos + 1] = argmax_row(lg->data, KV);
    }
}

/* Greedy decoding of a few prompts gives the same tokens with the cache as
 * by whole passes. */
static void check_greedy(kv_fixture *f, tg_kv_cache *c, const uint8_t *hm, bool prefill)
{
    for (int prompt = 1; prompt <= 10; prompt += 3) {
        int32_t a[KT], b[KT];
        for (int i = 0; i < prompt; i++) a[i] = b[i] = (int32_t)tg_rng_below(&f->rng, KV);
        greedy_full(f->t, &f->m, a, prompt, hm);
        greedy_cached(f->t, &f->m, c, b, prompt, hm, prefill);
        for (int i = 0; i < KT; i++)
            cr_assert_eq(a[i], b[i], "prompt %d: token %d: %d by whole passes, %d with the cache%s", prompt, i, a[i],
                         b[i], prefill ? " after a prefill" : "");
    }
}

/* Row b steps through its sequence b positions behind row 0 (so one step
 * serves rows at different positions); every step's logits equal the full
 * forward's at that position, and greedy decoding gives the same tokens. */
static void check_kv_cache(tg_mha_mode mode, kv_arch a, const uint8_t *hm)
{
    kv_fixture f;
    kv_open(&f, mode, a, 8);
    tg_tape *t = f.t;
    tg_kv_cache c;
    cr_assert_eq(tg_kv_cache_init(&c, &f.m, KB), 0, "%s", tg_error());
    int32_t pos[KB];
    tg_real *want = full_logits(&f, hm);
    for (int step = 0; step < KT + KB - 1; step++) {
        for (int b = 0; b < KB; b++) pos[b] = step - b < 0 ? 0 : step - b >= KT ? KT - 1 : step - b;
        step_rows(&f, &c, pos, hm, want);
    }
    free(want);
    check_greedy(&f, &c, hm, false);
    /* misuse: a recording tape, a position past the cache, too many rows */
    const int32_t *in = f.ids;
    tg_tape_reset(t);
    pos[0] = KT;
    cr_assert_null(tg_model_decode(t, &f.m, &c, ix_of(t, TG_I32, in, 1, 1), ix_of(t, TG_I32, pos, 1, 0), NULL));
    cr_assert(strstr(tg_tape_error(t), "tg_model_decode: pos[0] = 16"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    const int32_t zeros[KB + 1] = {0};
    cr_assert_null(tg_model_decode(t, &f.m, &c, ix_of(t, TG_I32, in, KB + 1, 1), ix_of(t, TG_I32, zeros, KB + 1, 0),
                                   NULL));
    cr_assert(strstr(tg_tape_error(t), "4 rows for a cache of 3"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    /* ids [B, 1] and pos [B], int64 or int32; a head mask [n_layers, n_heads] of floats */
    cr_assert_null(tg_model_decode(t, &f.m, &c, ix_of(t, TG_I32, in, 1, KB), ix_of(t, TG_I32, zeros, 1, 0), NULL));
    cr_assert(strstr(tg_tape_error(t), "tg_model_decode: ids is [1,3], but it is [B, 1]"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    cr_assert_null(tg_model_decode(t, &f.m, &c, ix_of(t, TG_I32, in, KB, 1), ix_of(t, TG_I32, zeros, KB, 1), NULL));
    cr_assert(strstr(tg_tape_error(t), "tg_model_decode: pos is [3,1], but it is [B] = [3]"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    cr_assert_null(tg_model_decode(t, &f.m, &c, ix_of(t, TG_REAL_DTYPE, in, KB, 1),
                                   ix_of(t, TG_I32, zeros, KB, 0), NULL));
    cr_assert(strstr(tg_tape_error(t), "tg_model_decode: ids is float"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    cr_assert_null(tg_model_decode(t, &f.m, &c, ix_of(t, TG_I32, in, KB, 1), tg_tensor_zeros(t, 1, (int[]){KB}), NULL));
    cr_assert(strstr(tg_tape_error(t), "tg_model_decode: pos is float"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    cr_assert_null(tg_model_decode(t, &f.m, &c, ix_of(t, TG_I32, in, KB, 1), ix_of(t, TG_I32, zeros, KB, 0),
                                   ix_of(t, TG_I32, f.ids, f.m.cfg.n_layers, f.m.cfg.n_heads)));
    cr_assert(strstr(tg_tape_error(t), "tg_model_decode: head_mask is int32"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    tg_no_grad_end(t, f.prev);
    cr_assert_null(tg_model_decode(t, &f.m, &c, ix_of(t, TG_I32, in, KB, 1), ix_of(t, TG_I32, zeros, KB, 0), NULL));
    cr_assert(strstr(tg_tape_error(t), "must not record"), "%s", tg_tape_error(t));
    tg_kv_cache_free(&c);
    kv_close(&f);
}

Test(kv_cache, kv_cache_decoding_equals_full_passes_fused) { check_kv_cache(TG_MHA_FUSED, MHA, NULL); }
Test(kv_cache, kv_cache_decoding_equals_full_passes_per_head) { check_kv_cache(TG_MHA_PER_HEAD, MHA, NULL); }
Test(kv_cache, kv_cache_decoding_with_head_mask) { check_kv_cache(TG_MHA_FUSED, MHA, (const uint8_t[]){1, 0, 0, 1}); }
Test(kv_cache, grouped_query_decoding_equals_full_passes)
{
    check_kv_cache(TG_MHA_FUSED, GQA, NULL);
    check_kv_cache(TG_MHA_PER_HEAD, GQA, (const uint8_t[]){1, 0, 1, 1, 0, 1, 1, 1});
}
Test(kv_cache, rope_decoding_equals_full_passes)
{
    check_kv_cache(TG_MHA_FUSED, ROPE, NULL);
    check_kv_cache(TG_MHA_PER_HEAD, ROPE, NULL);
    check_kv_cache(TG_MHA_FUSED, ROPE_GQA, NULL);
    check_kv_cache(TG_MHA_PER_HEAD, ROPE_GQA, NULL);
    check_kv_cache(TG_MHA_FUSED, NOPOS, NULL);
}
Test(kv_cache, llama_and_tied_gpt2_decoding_equals_full_passes)
{
    check_kv_cache(TG_MHA_FUSED, LLAMA, NULL);
    check_kv_cache(TG_MHA_PER_HEAD, LLAMA, NULL);
    check_kv_cache(TG_MHA_FUSED, GPT2, NULL);
}
Test(kv_cache, alibi_decoding_equals_full_passes)
{
    check_kv_cache(TG_MHA_FUSED, ALIBI, NULL);
    check_kv_cache(TG_MHA_PER_HEAD, ALIBI, NULL);
    check_kv_cache(TG_MHA_FUSED, ALIBI_GQA, NULL);
    check_kv_cache(TG_MHA_PER_HEAD, ALIBI_GQA, NULL);
}
Test(kv_cache, multi_query_decoding_equals_full_passes)
{
    check_kv_cache(TG_MHA_FUSED, MQA, NULL);
    check_kv_cache(TG_MHA_PER_HEAD, MQA, NULL);
}

/* Past the GEMM's K blocks (384) and the forward's row blocks: 800 positions
 * stepped one at a time give the whole pass's logits, the same bits where
 * tu_same_bits(). */
Test(kv_cache, kv_cache_long_sequence_equals_full_pass)
{
    enum { N = 800 };
    tg_rng rng;
    tg_rng_seed(&rng, 11);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = KV, .d_model = 16, .n_layers = 1, .n_heads = 2, .max_len = N};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_no_grad_begin(t);
    tg_tape_set_training(t, false);
    tg_kv_cache c;
    cr_assert_eq(tg_kv_cache_init(&c, &m, 1), 0, "%s", tg_error());
    int32_t *ids = malloc(N * sizeof *ids);
    for (int i = 0; i < N; i++) ids[i] = (int32_t)tg_rng_below(&rng, KV);
    tg_tensor *full = tg_model_forward(t, &m, ix_of(t, TG_I32, ids, 1, N), NULL, NULL);
    cr_assert_not_null(full, "%s", tg_tape_error(t));
    tg_real *want = malloc(full->size * sizeof *want);
    memcpy(want, full->data, full->size * sizeof *want);
    for (int pos = 0; pos < N; pos++) {
        tg_tape_reset(t);
        tg_tensor *lg =
            tg_model_decode(t, &m, &c, ix_of(t, TG_I32, &ids[pos], 1, 1), ix_of(t, TG_I32, &pos, 1, 0), NULL);
        cr_assert_not_null(lg, "%s", tg_tape_error(t));
        const tg_real *w = want + (size_t)pos * KV;
        if (tu_same_bits()) cr_assert_eq(memcmp(lg->data, w, KV * sizeof *w), 0, "position %d", pos);
        for (int v = 0; v < KV; v++) tu_close(lg->data[v], w[v], TU_TOL);
    }
    free(want);
    free(ids);
    tg_kv_cache_free(&c);
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}

/* Rows of different lengths prefilled in one pass: the logits are
 * tg_model_forward's bit for bit, the cache holds what stepping each row
 * through its positions puts there (the same bits where the GEMMs are
 * tapegrad's own, which give the same bits for any row count), each row
 * steps on from its prefix with the logits of a whole pass, and greedy
 * decoding from a prefilled prompt gives the tokens of whole passes. */
static void check_prefill(tg_mha_mode mode, kv_arch a, const uint8_t *hm)
{
    kv_fixture f;
    kv_open(&f, mode, a, 9);
    tg_tape *t = f.t;
    tg_kv_cache pre, stepped;
    cr_assert_eq(tg_kv_cache_init(&pre, &f.m, KB), 0, "%s", tg_error());
    cr_assert_eq(tg_kv_cache_init(&stepped, &f.m, KB), 0, "%s", tg_error());
    /* the prefill against the forward, over the first T positions */
    enum { T = KT - 3 };
    const int32_t lens[KB] = {T, 5, 1};
    int32_t pos[KB], packed[KB * T];  /* ids as [KB, T] */
    for (int b = 0; b < KB; b++) memcpy(packed + b * T, f.ids + b * KT, T * sizeof *packed);
    tg_model_opts o = {.lens = ix_of(t, TG_I32, lens, KB, 0), .head_mask = hm_of(t, &f.m, hm)};
    tg_tensor *full = tg_model_forward(t, &f.m, ix_of(t, TG_I32, packed, KB, T), &o, NULL);
    cr_assert_not_null(full, "%s", tg_tape_error(t));
    size_t bytes = full->size * sizeof *full->data;
    tg_real *want = malloc(bytes);
    memcpy(want, full->data, bytes);
    tg_tape_reset(t);
    o = (tg_model_opts){.lens = ix_of(t, TG_I64, lens, KB, 0), .head_mask = hm_of(t, &f.m, hm)};
    tg_tensor *lg = tg_model_prefill(t, &f.m, &pre, ix_of(t, TG_I64, packed, KB, T), &o);
    cr_assert_not_null(lg, "%s", tg_tape_error(t));
    cr_assert_eq(memcmp(lg->data, want, bytes), 0, "the prefill's logits are the forward's");
    free(want);
    /* the same positions stepped one at a time */
    for (int step = 0; step < T; step++) {
        for (int b = 0; b < KB; b++) pos[b] = step < lens[b] ? step : lens[b] - 1;
        step_rows(&f, &stepped, pos, hm, NULL);
    }
    for (int l = 0; l < f.m.cfg.n_layers; l++) {
        int E = pre.kv[l]->shape[2] / 2;
        for (int b = 0; b < KB; b++) { /* keys [E, KT] of positions < lens[b], then values [lens[b], E] */
            const tg_real *a = pre.kv[l]->data + (size_t)b * KT * 2 * E, *s = stepped.kv[l]->data + (size_t)b * KT * 2 * E;
            for (int e = 0; e <= E; e++) {
                size_t at = (size_t)e * KT, n = e < E ? (size_t)lens[b] : (size_t)lens[b] * E;
                if (tu_same_bits()) cr_assert_eq(memcmp(a + at, s + at, n * sizeof *a), 0, "layer %d row %d", l, b);
                for (size_t j = 0; j < n; j++) tu_close(a[at + j], s[at + j], TU_TOL);
            }
        }
    }
    /* each row steps on from its prefix: the logits of a whole pass */
    want = full_logits(&f, hm);
    for (int step = 0; step < KT; step++) {
        for (int b = 0; b < KB; b++) pos[b] = lens[b] + step < KT ? lens[b] + step : KT - 1;
        step_rows(&f, &pre, pos, hm, want);
    }
    free(want);
    check_greedy(&f, &pre, hm, true);
    tg_no_grad_end(t, f.prev);
    tg_kv_cache_free(&pre);
    tg_kv_cache_free(&stepped);
    kv_close(&f);
}

Test(kv_cache, prefill_equals_forward_and_step_by_step_fill_fused) { check_prefill(TG_MHA_FUSED, MHA, NULL); }
Test(kv_cache, prefill_equals_forward_and_step_by_step_fill_per_head) { check_prefill(TG_MHA_PER_HEAD, MHA, NULL); }
Test(kv_cache, prefill_with_head_mask) { check_prefill(TG_MHA_FUSED, MHA, (const uint8_t[]){0, 1, 1, 1}); }
Test(kv_cache, prefill_grouped_query_both_modes)
{
    check_prefill(TG_MHA_FUSED, GQA, NULL);
    check_prefill(TG_MHA_PER_HEAD, MQA, NULL);
}
Test(kv_cache, prefill_llama_and_tied_gpt2)
{
    check_prefill(TG_MHA_FUSED, LLAMA, NULL);
    check_prefill(TG_MHA_FUSED, GPT2, NULL);
}
Test(kv_cache, prefill_with_rope_or_alibi_both_modes)
{
    check_prefill(TG_MHA_FUSED, ALIBI_GQA, NULL);
    check_prefill(TG_MHA_PER_HEAD, ALIBI, NULL);
    check_prefill(TG_MHA_FUSED, ROPE_GQA, NULL);
    check_prefill(TG_MHA_PER_HEAD, ROPE, NULL);
}

/* The cache holds only the key/value heads: H / Hkv times smaller. */
Test(kv_cache, grouped_query_cache_holds_only_key_value_heads)
{
    kv_fixture f[2];
    tg_kv_cache c[2];
    kv_open(&f[0], TG_MHA_FUSED, (kv_arch){.n_heads = 4}, 1);
    kv_open(&f[1], TG_MHA_PER_HEAD, (kv_arch){.n_heads = 4, .n_kv_heads = 1}, 1);
    for (int i = 0; i < 2; i++) cr_assert_eq(tg_kv_cache_init(&c[i], &f[i].m, KB), 0, "%s", tg_error());
    cr_assert_eq(c[0].kv[0]->shape[2], 2 * 16);
    cr_assert_eq(c[1].kv[0]->shape[2], 2 * 4);
    cr_assert_eq(c[0].kv[1]->size, 4 * c[1].kv[1]->size);
    for (int i = 0; i < 2; i++) {
        tg_kv_cache_free(&c[i]);
        kv_close(&f[i]);
    }
}
