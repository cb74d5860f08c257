/* Sampling (nn/sample.h): the filtered distribution equals PyTorch's
 * top_k_top_p_filtering (bench/torch/make_sample_fixtures.py), draws follow
 * it, greedy is the argmax, bad options are errors; generation with the
 * key/value cache gives the tokens of sampling from whole forward passes,
 * for tg_model and for a model built by hand from tg_blocks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_util.h"

Test(sample, filtered_probs_match_torch)
{
    tg_safetensors *s = load_fixture("sample.safetensors");
    int n = meta_int(s, "n");
    cr_assert_geq(n, 10);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "logits.%d", i);
        const tg_tensor *logits = fx(s, name);
        snprintf(name, sizeof name, "opts.%d", i);
        const tg_tensor *opts = fx(s, name);
        snprintf(name, sizeof name, "probs.%d", i);
        const tg_tensor *want = fx(s, name);
        tg_sample_opts o = {.temperature = opts->data[0], .top_k = (int)opts->data[1], .top_p = opts->data[2]};
        int V = (int)logits->size;
        tg_real got[64];
        cr_assert_leq(V, 64);
        cr_assert_eq(tg_sample_probs(got, logits->data, V, &o), 0, "case %d: %s", i, tg_error());
        snprintf(name, sizeof name, "case %d", i);
        assert_matches(got, (size_t)V, want, name);
        for (int v = 0; v < V; v++)  /* removed is exactly 0, kept is not */
            cr_assert_eq(got[v] == 0, want->data[v] == 0, "case %d: token %d: %g, torch %g", i, v, (double)got[v],
                         (double)want->data[v]);
    }
    tg_st_free(s);
}

/* Draws from a filtered row land on the kept tokens only, at their
 * probabilities: Pearson's statistic over N draws stays under its mean (df)
 * plus 6 standard deviations (sqrt(2 df)). */
static void check_frequencies(const tg_real *logits, int V, const tg_sample_opts *o, uint64_t seed)
{
    enum { N = 20000 };
    tg_real p[16];
    int count[16] = {0};
    cr_assert_eq(tg_sample_probs(p, logits, V, o), 0, "%s", tg_error());
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    for (int d = 0; d < N; d++) {
        int32_t tok = -1;
        cr_assert_eq(tg_sample(&tok, logits, V, o, &rng), 0, "%s", tg_error());
        cr_assert(tok >= 0 && tok < V, "token %d", tok);
        count[tok]++;
    }
    double chi2 = 0;
    int df = -1;
    for (int v = 0; v < V; v++) {
        if (p[v] == 0) {
            cr_assert_eq(count[v], 0, "token %d was filtered out yet drawn %d times", v, count[v]);
            continue;
        }
        double e = N * (double)p[v];
        chi2 += (count[v] - e) * (count[v] - e) / e;
        df++;
    }
    cr_assert_gt(df, 0);
    cr_assert_lt(chi2, df + 6 * sqrt(2.0 * df), "chi-square %g over %d degrees of freedom", chi2, df);
}

Test(sample, draws_follow_the_filtered_distribution)
{
    const tg_real logits[10] = {0.5, -1, 2, 1.5, -INFINITY, 0, 2, 1, -0.5, 0.25};
    check_frequencies(logits, 10, NULL, 1);
    check_frequencies(logits, 10, &(tg_sample_opts){.temperature = 0.7, .top_k = 4}, 2);
    check_frequencies(logits, 10, &(tg_sample_opts){.temperature = 1.3, .top_p = 0.8}, 3);
    check_frequencies(logits, 10, &(tg_sample_opts){.temperature = 2, .top_k = 6, .top_p = 0.9}, 4);
}

Test(sample, a_seed_gives_the_same_tokens)
{
    const tg_real logits[6] = {0.1, 0.3, -0.2, 0.0, 0.25, 0.05};
    tg_rng a, b;
    tg_rng_seed(&a, 9);
    tg_rng_seed(&b, 9);
    int differ = 0;
    int32_t first[8];
    for (int d = 0; d < 64; d++) {
        int32_t x, y;
        cr_assert_eq(tg_sample(&x, logits, 6, &(tg_sample_opts){.temperature = 1}, &a), 0);
        cr_assert_eq(tg_sample(&y, logits, 6, &(tg_sample_opts){.temperature = 1}, &b), 0);
        cr_assert_eq(x, y, "draw %d: %d and %d from one seed", d, x, y);
        if (d < 8) first[d] = x;
        differ += d > 0 && d < 8 && first[d] != first[0];
    }
    cr_assert_gt(differ, 0, "eight draws from a flat row all gave token %d", first[0]);
}

Test(sample, greedy_is_the_first_argmax)
{
    const tg_real logits[5] = {-INFINITY, 3, 1, 3, 2};
    int32_t tok = -1;
    tg_real p[5];
    /* greedy ignores the rng (NULL is fine) and the filters */
    cr_assert_eq(tg_sample(&tok, logits, 5, &(tg_sample_opts){.temperature = 0, .top_p = 0.1}, NULL), 0, "%s",
                 tg_error());
    cr_assert_eq(tok, 1);
    cr_assert_eq(tg_sample(&tok, logits, 5, &(tg_sample_opts){.temperature = -1}, NULL), 0);
    cr_assert_eq(tok, 1);
    cr_assert_eq(tg_sample_probs(p, logits, 5, &(tg_sample_opts){0}), 0);
    for (int v = 0; v < 5; v++) cr_assert_eq(p[v], v == 1 ? 1 : 0, "token %d: %g", v, (double)p[v]);
    /* top-k 1 draws only the argmax, whatever the rng; a tiny temperature neither overflows nor moves it */
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    for (int d = 0; d < 20; d++) {
        cr_assert_eq(tg_sample(&tok, (const tg_real[]){0, 2, 1}, 3, &(tg_sample_opts){.temperature = 1, .top_k = 1},
                               &rng), 0);
        cr_assert_eq(tok, 1);
        cr_assert_eq(tg_sample(&tok, (const tg_real[]){0, 2, 1}, 3, &(tg_sample_opts){.temperature = 1e-300}, &rng),
                     0, "%s", tg_error());
        cr_assert_eq(tok, 1);
    }
}

static void expect_sample_error(const tg_real *logits, int V, const tg_sample_opts *o, tg_rng *rng, const char *part)
{
    int32_t tok = 123;
    tg_real p[4];
    tg_error_clear();
    cr_assert_eq(tg_sample(&tok, logits, V, o, rng), -1, "tg_sample accepted what should fail with \"%s\"", part);
    tu_assert_has(tg_error(), part);
    tu_assert_has(tg_error(), "tg_sample");
    cr_assert_eq(tok, 123, "a failed tg_sample wrote a token");
    if (!rng) return;
    tg_error_clear();
    cr_assert_eq(tg_sample_probs(p, logits, V, o), -1);
    tu_assert_has(tg_error(), part);
    tu_assert_has(tg_error(), "tg_sample_probs");
}

Test(sample, bad_options_are_errors)
{
    const tg_real ok[3] = {0, 1, 2};
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    const tg_sample_opts s = {.temperature = 1};
    expect_sample_error(ok, 0, &s, &rng, "V = 0 must be >= 1");
    expect_sample_error(ok, -3, &s, &rng, "V = -3");
    expect_sample_error(NULL, 3, &s, &rng, "logits is NULL");
    expect_sample_error(ok, 3, &(tg_sample_opts){.temperature = 1, .top_p = -0.5}, &rng, "top_p -0.5");
    expect_sample_error(ok, 3, &(tg_sample_opts){.temperature = 1, .top_p = NAN}, &rng, "top_p nan");
    expect_sample_error(ok, 3, &(tg_sample_opts){.temperature = 1, .top_k = -1}, &rng, "top_k -1");
    expect_sample_error(ok, 3, &(tg_sample_opts){.temperature = NAN}, &rng, "temperature nan");
    expect_sample_error(ok, 3, &(tg_sample_opts){.temperature = INFINITY}, &rng, "temperature inf");
    expect_sample_error((const tg_real[]){0, NAN, 1}, 3, &s, &rng, "logits[1] = nan");
    expect_sample_error((const tg_real[]){0, 1, INFINITY}, 3, &s, &rng, "logits[2] = inf");
    expect_sample_error((const tg_real[]){-INFINITY, -INFINITY}, 2, &s, &rng, "every one of the 2 logits is -inf");
    expect_sample_error(ok, 3, &s, NULL, "the rng");
    tg_error_clear();
    cr_assert_eq(tg_sample(NULL, ok, 3, &s, &rng), -1);
    tu_assert_has(tg_error(), "tg_sample: the output is NULL");
    cr_assert_eq(tg_sample_probs(NULL, ok, 3, &s), -1);
    tu_assert_has(tg_error(), "tg_sample_probs: the output is NULL");
}

/* ---- generation ---------------------------------------------------------------- */

enum { GV = 11, GT = 14 };

/* Sampling by whole tg_model_forward passes over the growing sequence, the
 * same rules as tg_model_generate. -> the number of new tokens in out. */
static int generate_full(const tg_model *m, int32_t *out, int max_new, const int32_t *prompt, int n_prompt,
                         const tg_sample_opts *o, const int32_t *stop, int n_stop, tg_rng *rng)
{
    int32_t seq[GT];
    memcpy(seq, prompt, (size_t)n_prompt * sizeof *seq);
    tg_tape *t = tg_tape_new();
    bool prev = tg_no_grad_begin(t);
    int n = 0, len = n_prompt;
    while (n < max_new && len < m->cfg.max_len) {
        tg_tape_reset(t);
        tg_tensor *lg = tg_model_forward(t, m, tg_tensor_from_dtype(t, TG_I32, seq, 2, (int[]){1, len}), NULL, NULL);
        cr_assert_not_null(lg, "%s", tg_tape_error(t));
        cr_assert_eq(tg_sample(&seq[len], lg->data + (size_t)(len - 1) * GV, GV, o, rng), 0, "%s", tg_error());
        out[n++] = seq[len++];
        bool stopped = false;
        for (int s = 0; s < n_stop; s++) stopped |= stop[s] == out[n - 1];
        if (stopped) break;
    }
    tg_no_grad_end(t, prev);
    tg_tape_free(t);
    return n;
}

static const tg_sample_opts SAMPLED[] = {
    {.temperature = 1}, {.temperature = 0.8, .top_k = 5}, {.temperature = 1.2, .top_p = 0.9},
    {.temperature = 0}};

/* With one seed, tg_model_generate gives the tokens of sampling from whole
 * passes; a stop token ends it (kept in out); the context bounds it. */
static void check_generate(tg_model_config cfg)
{
    tg_rng rng;
    tg_rng_seed(&rng, 21);
    tg_params *p = tg_params_new();
    cfg.vocab = GV, cfg.d_model = 16, cfg.n_layers = 2, cfg.max_len = GT;
    tg_model m;
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0, "%s", tg_error());
    tu_jitter(p, &rng, 0.3);  /* logits far enough from flat that the filters bite */
    const int32_t prompt[4] = {3, 1, 4, 1};
    int distinct = 0;
    for (size_t k = 0; k < sizeof SAMPLED / sizeof *SAMPLED; k++) {
        for (int n_prompt = 1; n_prompt <= 4; n_prompt += 3) {
            int32_t want[GT], got[GT];
            tg_rng a, b;
            tg_rng_seed(&a, 100 + k);
            tg_rng_seed(&b, 100 + k);
            int n_want = generate_full(&m, want, GT, prompt, n_prompt, &SAMPLED[k], NULL, 0, &a), n_got = -1;
            cr_assert_eq(n_want, GT - n_prompt);
            cr_assert_eq(tg_model_generate(&m, got, GT, prompt, n_prompt, &SAMPLED[k], NULL, 0, &b, &n_got), 0, "%s",
                         tg_error());
            cr_assert_eq(n_got, n_want, "options %zu: %d tokens, %d by whole passes", k, n_got, n_want);
            for (int i = 0; i < n_got; i++)
                cr_assert_eq(got[i], want[i], "options %zu, prompt %d: token %d: %d with the cache, %d by whole passes",
                             k, n_prompt, i, got[i], want[i]);
            for (int i = 1; i < n_got; i++) distinct += got[i] != got[0];
            /* the third token as a stop token ends generation there */
            int32_t stop[2] = {GV - 1, got[2]};
            int first = 0;
            while (got[first] != stop[0] && got[first] != stop[1]) first++;
            tg_rng_seed(&b, 100 + k);
            cr_assert_eq(tg_model_generate(&m, got, 5, prompt, n_prompt, &SAMPLED[k], stop, 2, &b, &n_got), 0);
            cr_assert_eq(n_got, first + 1 < 5 ? first + 1 : 5, "options %zu: stopped after %d tokens", k, n_got);
            cr_assert(n_got < 5 ? got[n_got - 1] == stop[0] || got[n_got - 1] == stop[1] : true);
        }
    }
    cr_assert_gt(distinct, 10, "generation gave one token over and over");
    /* a prompt filling the context leaves no room; max_new 0 makes nothing */
    int32_t full[GT] = {0}, out[4];
    int n_out = -1;
    cr_assert_eq(tg_model_generate(&m, out, 4, full, GT, &SAMPLED[0], NULL, 0, &rng, &n_out), 0, "%s", tg_error());
    cr_assert_eq(n_out, 0);
    cr_assert_eq(tg_model_generate(&m, out, 0, prompt, 2, &SAMPLED[0], NULL, 0, &rng, &n_out), 0);
    cr_assert_eq(n_out, 0);
    tg_model_free(&m);
    tg_params_free(p);
}

Test(sample, generate_equals_whole_passes_learned_positions) { check_generate((tg_model_config){.n_heads = 2}); }
Test(sample, generate_equals_whole_passes_rope_gqa)
{
    check_generate((tg_model_config){.n_heads = 4, .n_kv_heads = 2, .pos = TG_POS_ROPE});
    check_generate((tg_model_config){.n_heads = 4, .n_kv_heads = 1, .pos = TG_POS_ROPE, .mode = TG_MHA_PER_HEAD});
}
Test(sample, generate_equals_whole_passes_gqa_learned) { check_generate((tg_model_config){.n_heads = 4, .n_kv_heads = 2}); }

static void expect_generate_error(const tg_model *m, int32_t *out, int max_new, const int32_t *prompt, int n_prompt,
                                  const tg_sample_opts *o, const int32_t *stop, int n_stop, tg_rng *rng,
                                  const char *part)
{
    int n_out = 7;
    tg_error_clear();
    cr_assert_eq(tg_model_generate(m, out, max_new, prompt, n_prompt, o, stop, n_stop, rng, &n_out), -1,
                 "accepted what should fail with \"%s\"", part);
    tu_assert_has(tg_error(), "tg_model_generate");
    tu_assert_has(tg_error(), part);
    cr_assert_eq(n_out, 0);
}

Test(sample, generate_refuses_bad_arguments)
{
    tg_rng rng;
    tg_rng_seed(&rng, 2);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = GV, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = GT};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0, "%s", tg_error());
    int32_t out[4], pr[2] = {1, 2}, bad[2] = {1, GV};
    const tg_sample_opts s = {.temperature = 1};
    expect_generate_error(NULL, out, 4, pr, 2, &s, NULL, 0, &rng, "the model is NULL");
    expect_generate_error(&(tg_model){0}, out, 4, pr, 2, &s, NULL, 0, &rng, "not initialised");
    expect_generate_error(&m, NULL, 4, pr, 2, &s, NULL, 0, &rng, "out is NULL");
    expect_generate_error(&m, out, 4, NULL, 2, &s, NULL, 0, &rng, "prompt is NULL");
    expect_generate_error(&m, out, 4, pr, 2, &s, NULL, 1, &rng, "stop is NULL");
    expect_generate_error(&m, out, 4, pr, 0, &s, NULL, 0, &rng, "n_prompt 0 (in [1, max_len = 14]");
    expect_generate_error(&m, out, 4, pr, GT + 1, &s, NULL, 0, &rng, "n_prompt 15");
    expect_generate_error(&m, out, -1, pr, 2, &s, NULL, 0, &rng, "max_new -1");
    expect_generate_error(&m, out, 4, bad, 2, &s, NULL, 0, &rng, "prompt[1] = 11 is outside [0, vocab = 11)");
    expect_generate_error(&m, out, 4, pr, 2, &s, bad, 2, &rng, "stop[1] = 11");
    expect_generate_error(&m, out, 4, pr, 2, &(tg_sample_opts){.temperature = 1, .top_p = -1}, NULL, 0, &rng,
                          "top_p -1");
    expect_generate_error(&m, out, 4, pr, 2, &s, NULL, 0, NULL, "the rng is NULL");
    tg_error_clear();
    cr_assert_eq(tg_model_generate(&m, out, 4, pr, 2, &s, NULL, 0, &rng, NULL), -1);
    tu_assert_has(tg_error(), "n_out is NULL");
    /* greedy needs no rng */
    int n_out = -1;
    cr_assert_eq(tg_model_generate(&m, out, 4, pr, 2, &(tg_sample_opts){0}, NULL, 0, NULL, &n_out), 0, "%s",
                 tg_error());
    cr_assert_eq(n_out, 4);
    tg_model_free(&m);
    tg_params_free(p);
}

/* Every allocation of a generation failing in turn: -1 with "out of memory"
 * and nothing leaked (the sanitize build checks), then the same tokens. */
Test(sample, generate_survives_failed_allocations)
{
    tg_rng rng;
    tg_rng_seed(&rng, 4);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = GV, .d_model = 8, .n_layers = 2, .n_heads = 2, .max_len = GT};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0, "%s", tg_error());
    const tg_sample_opts o = {.temperature = 1, .top_k = 6, .top_p = 0.9};
    int32_t want[6], got[6], pr[2] = {1, 2};
    int n_want, n_got, failures = 0;
    tg_rng_seed(&rng, 8);
    cr_assert_eq(tg_model_generate(&m, want, 6, pr, 2, &o, NULL, 0, &rng, &n_want), 0, "%s", tg_error());
    for (uint64_t n = 1;; n++) {
        tg_rng_seed(&rng, 8);
        tg_error_clear();
        tg_alloc_fail_at(n);
        int rc = tg_model_generate(&m, got, 6, pr, 2, &o, NULL, 0, &rng, &n_got);
        tg_alloc_fail_at(0);
        if (rc == 0) break;
        failures++;
        tu_assert_has(tg_error(), "out of memory");
        cr_assert_lt(n, 10000);
    }
    cr_assert_gt(failures, 3);
    cr_assert_eq(n_got, n_want);
    cr_assert_eq(memcmp(got, want, sizeof want), 0);
    tg_model_free(&m);
    tg_params_free(p);
}

/* ---- a model built by hand from tg_blocks ---------------------------------- */

typedef struct hand_model {
    tg_params *p;
    tg_embedding_layer emb;
    tg_block blocks[2];
    tg_layernorm_layer ln_f;
    tg_linear head;
} hand_model;

/* Embeddings, two blocks with different attention (RoPE + grouped heads,
 * then ALiBi multi-head), a final LayerNorm and a head. */
static void hand_open(hand_model *h, tg_rng *rng)
{
    h->p = tg_params_new();
    tg_block_config bc[2] = {
        {.attn = {.n_heads = 4, .n_kv_heads = 2, .d_model = 16, .rope = true, .bias = true}, .d_ff = 32},
        {.attn = {.n_heads = 2, .d_model = 16, .alibi = true, .mode = TG_MHA_PER_HEAD}, .d_ff = 24}};
    cr_assert_eq(tg_embedding_init(&h->emb, h->p, "emb", GV, 16, rng), 0, "%s", tg_error());
    cr_assert_eq(tg_block_init(&h->blocks[0], h->p, "blocks.0", &bc[0], rng), 0, "%s", tg_error());
    cr_assert_eq(tg_block_init(&h->blocks[1], h->p, "blocks.1", &bc[1], rng), 0, "%s", tg_error());
    cr_assert_eq(tg_layernorm_init(&h->ln_f, h->p, "ln_f", 16, 1e-5), 0, "%s", tg_error());
    cr_assert_eq(tg_linear_init(&h->head, h->p, "head", &(tg_linear_config){.in = 16, .out = GV}, rng), 0, "%s",
                 tg_error());
    tu_jitter(h->p, rng, 0.3);
}

static tg_tensor *hand_logits(tg_tape *t, const hand_model *h, tg_tensor *x)
{
    return tg_linear_forward(t, &h->head, tg_layernorm_forward(t, &h->ln_f, x));
}

/* ids [n] -> logits [1, n, V] by one whole causal pass, or (cache) by a
 * prefill that fills the caches */
static tg_tensor *hand_forward(tg_tape *t, const hand_model *h, const int32_t *ids, int n, tg_tensor **cache)
{
    tg_mask causal = {.causal = true};
    tg_tensor *x = tg_embedding_forward(t, &h->emb, tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){1, n}));
    for (int l = 0; l < 2; l++)
        x = cache ? tg_block_prefill(t, &h->blocks[l], x, cache[l], NULL, NULL)
                  : tg_block_forward(t, &h->blocks[l], x, &(tg_mha_opts){.mask = &causal}, NULL);
    return hand_logits(t, h, x);
}

/* One token at position pos through both caches -> logits [1, 1, V] */
static tg_tensor *hand_decode(tg_tape *t, const hand_model *h, int32_t tok, int32_t pos, tg_tensor **cache)
{
    tg_tensor *x = tg_embedding_forward(t, &h->emb, tg_tensor_from_dtype(t, TG_I32, &tok, 2, (int[]){1, 1}));
    tg_tensor *at = tg_tensor_from_dtype(t, TG_I32, &pos, 1, (int[]){1});
    for (int l = 0; l < 2; l++) x = tg_block_decode(t, &h->blocks[l], x, cache[l], at, NULL);
    return hand_logits(t, h, x);
}

Test(sample, blocks_decode_with_their_caches)
{
    tg_rng rng;
    tg_rng_seed(&rng, 31);
    hand_model h;
    hand_open(&h, &rng);
    /* the cache holds the key/value heads only: [B, cap, Hkv*(dk + dv)] */
    tg_tensor *cache[2] = {tg_block_cache_new(&h.blocks[0], 2, GT), tg_block_cache_new(&h.blocks[1], 2, GT)};
    cr_assert(cache[0] && cache[1], "%s", tg_error());
    cr_assert(cache[0]->shape[0] == 2 && cache[0]->shape[1] == GT && cache[0]->shape[2] == 2 * (4 + 4));
    cr_assert(cache[1]->shape[2] == 2 * (8 + 8), "%d", cache[1]->shape[2]);
    tg_tape *t = tg_tape_new();
    bool prev = tg_no_grad_begin(t);
    for (size_t k = 0; k < sizeof SAMPLED / sizeof *SAMPLED; k++) {
        const int n_prompt = 3;
        int32_t full[GT] = {2, 7, 5}, cached[GT] = {2, 7, 5};
        tg_rng a, b;
        tg_rng_seed(&a, 50 + k);
        tg_rng_seed(&b, 50 + k);
        for (int len = n_prompt; len < GT; len++) {
            tg_tape_reset(t);
            tg_tensor *lg = hand_forward(t, &h, full, len, NULL);
            cr_assert_not_null(lg, "%s", tg_tape_error(t));
            cr_assert_eq(tg_sample(&full[len], lg->data + (size_t)(len - 1) * GV, GV, &SAMPLED[k], &a), 0);
        }
        tg_tape_reset(t);
        tg_tensor *lg = hand_forward(t, &h, cached, n_prompt, cache);
        cr_assert_not_null(lg, "%s", tg_tape_error(t));
        cr_assert_eq(tg_sample(&cached[n_prompt], lg->data + (n_prompt - 1) * GV, GV, &SAMPLED[k], &b), 0);
        for (int len = n_prompt + 1; len < GT; len++) {
            tg_tape_reset(t);
            lg = hand_decode(t, &h, cached[len - 1], len - 1, cache);
            cr_assert_not_null(lg, "%s", tg_tape_error(t));
            cr_assert_eq(tg_sample(&cached[len], lg->data, GV, &SAMPLED[k], &b), 0);
        }
        for (int i = 0; i < GT; i++)
            cr_assert_eq(cached[i], full[i], "options %zu: token %d: %d with the caches, %d by whole passes", k, i,
                         cached[i], full[i]);
    }
    /* misuse: no block, a bad size, another block's cache */
    tg_error_clear();
    cr_assert_null(tg_block_cache_new(NULL, 1, 4));
    tu_assert_has(tg_error(), "tg_block_cache_new: the block is NULL");
    cr_assert_null(tg_block_cache_new(&(tg_block){0}, 1, 4));
    tu_assert_has(tg_error(), "not initialised");
    cr_assert_null(tg_block_cache_new(&h.blocks[0], 1, 0));
    tu_assert_has(tg_error(), "cap = 0");
    tg_tape_reset(t);
    tu_expect_error(t, hand_decode(t, &h, 1, 0, (tg_tensor *[]){cache[1], cache[0]}), "cache", "[2,14,32]");
    tu_expect_error(t, tg_block_prefill(t, &h.blocks[0], NULL, cache[0], NULL, NULL), "tg_block_prefill", "NULL");
    tg_no_grad_end(t, prev);
    tg_tape_free(t);
    tg_tensor_free(cache[0]);
    tg_tensor_free(cache[1]);
    tg_params_free(h.p);
}
