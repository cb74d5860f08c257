/* tapegrad: sampling and generation (see nn/sample.h). */
#include "sample.h"

#include <math.h>
#include <stdlib.h>

#include "../core/engine/alloc.h"

/* 0, or -1 naming fn and what is wrong with the options. */
static int check_opts(const char *fn, const tg_sample_opts *o)
{
    if (o && (isnan(o->temperature) || o->temperature == INFINITY || o->top_k < 0 || isnan(o->top_p) ||
              o->top_p < 0))
        return tg_error_set("%s: bad options: temperature %g (finite or <= 0), top_k %d (>= 0), top_p %g (>= 0)",
                            fn, o->temperature, o->top_k, o->top_p);
    return 0;
}

/* 0, or -1 naming fn and what is wrong with the arguments or the logits. */
static int check_args(const char *fn, const void *dst, const tg_real *logits, int V, const tg_sample_opts *o)
{
    if (!dst || !logits) return tg_error_set("%s: %s is NULL", fn, dst ? "logits" : "the output");
    if (V <= 0) return tg_error_set("%s: V = %d must be >= 1", fn, V);
    if (check_opts(fn, o)) return -1;
    int finite = 0;
    for (int i = 0; i < V; i++) {
        if (isnan(logits[i]) || logits[i] == INFINITY)
            return tg_error_set("%s: logits[%d] = %g (NaN or +inf)", fn, i, (double)logits[i]);
        finite += logits[i] != -INFINITY;
    }
    if (!finite) return tg_error_set("%s: every one of the %d logits is -inf", fn, V);
    return 0;
}

static bool greedy(const tg_sample_opts *o) { return o && o->temperature <= 0; }

/* The first of the largest logits (torch.argmax). */
static int argmax(const tg_real *x, int V)
{
    int best = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

typedef struct ranked {
    double z;
    int i;
} ranked;

/* Descending, equal logits in index order (torch.sort(stable=True, descending=True)). */
static int by_logit_desc(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->z != y->z) return x->z < y->z ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}

/* p [V] <- softmax of the logits after temperature, top-k and top-p (the
 * checks passed, not greedy). Scratch r [V]. */
static void filtered_probs(double *p, ranked *r, const tg_real *logits, int V, const tg_sample_opts *o)
{
    double temp = o ? o->temperature : 1;
    int k = o && o->top_k < V ? o->top_k : 0;
    double top_p = o && o->top_p < 1 ? o->top_p : 0;
    /* (logit - max) / temp: softmax(logits / temp) without overflow at a tiny temp */
    double top = (double)logits[argmax(logits, V)];
    for (int i = 0; i < V; i++) p[i] = ((double)logits[i] - top) / temp;
    if (k || top_p > 0) {
        for (int i = 0; i < V; i++) r[i] = (ranked){p[i], i};
        qsort(r, (size_t)V, sizeof *r, by_logit_desc);
    }
    int keep = V;  /* r[0 .. keep) survive top-k, the rest become -inf */
    if (k) {
        while (keep > k && r[keep - 1].z < r[k - 1].z) p[r[--keep].i] = -INFINITY;
    }
    if (top_p > 0) {
        double sum = 0, cum = 0;
        for (int j = 0; j < keep; j++) sum += exp(r[j].z - r[0].z);
        for (int j = 1; j < keep; j++) {
            cum += exp(r[j - 1].z - r[0].z) / sum;
            if (cum > top_p) p[r[j].i] = -INFINITY;  /* the first token past p is kept: shifted by one */
        }
    }
    double max = -INFINITY, sum = 0;
    for (int i = 0; i < V; i++) max = fmax(max, p[i]);
    for (int i = 0; i < V; i++) sum += p[i] = exp(p[i] - max);
    for (int i = 0; i < V; i++) p[i] /= sum;
}

/* p [V] <- tg_sample_probs's distribution in double; NULL with tg_error()
 * (free with tg_free). */
static double *probs_new(const char *fn, const tg_real *logits, int V, const tg_sample_opts *o)
{
    double *p = tg_malloc((size_t)V * sizeof *p);
    ranked *r = tg_malloc((size_t)V * sizeof *r);
    if (p && r) filtered_probs(p, r, logits, V, o);
    else {
        tg_error_set("%s: out of memory for %d logits", fn, V);
        tg_free(p);
        p = NULL;
    }
    tg_free(r);
    return p;
}

int tg_sample_probs(tg_real *probs, const tg_real *logits, int V, const tg_sample_opts *o)
{
    if (check_args(__func__, probs, logits, V, o)) return -1;
    if (greedy(o)) {
        int best = argmax(logits, V);
        for (int i = 0; i < V; i++) probs[i] = i == best;
        return 0;
    }
    double *p = probs_new(__func__, logits, V, o);
    if (!p) return -1;
    for (int i = 0; i < V; i++) probs[i] = (tg_real)p[i];
    tg_free(p);
    return 0;
}

int tg_sample(int32_t *token, const tg_real *logits, int V, const tg_sample_opts *o, tg_rng *rng)
{
    if (check_args(__func__, token, logits, V, o)) return -1;
    if (greedy(o)) {
        *token = argmax(logits, V);
        return 0;
    }
    TG_REFUSE_NULL(rng, "the rng (sampling needs one; greedy is temperature <= 0)", -1);
    double *p = probs_new(__func__, logits, V, o);
    if (!p) return -1;
    /* the first token whose cumulative probability passes u; rounding can
     * leave the total a hair below u: then the last token with mass */
    double u = tg_rng_uniform(rng), cum = 0;
    int last = 0, pick = -1;
    for (int i = 0; i < V && pick < 0; i++) {
        if (p[i] > 0) last = i;
        cum += p[i];
        if (u < cum) pick = i;
    }
    *token = pick >= 0 ? pick : last;
    tg_free(p);
    return 0;
}

/* ---- generation ---------------------------------------------------------------- */

static int check_tokens(const char *what, const int32_t *ids, int n, int V)
{
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return tg_error_set("tg_model_generate: %s[%d] = %d is outside [0, vocab = %d)", what, i, (int)ids[i], V);
    return 0;
}

static int check_generate(const tg_model *m, const int32_t *out, int max_new, const int32_t *prompt, int n_prompt,
                          const tg_sample_opts *o, const int32_t *stop, int n_stop, const tg_rng *rng)
{
    if (!m || !m->head.weight)
        return tg_error_set("tg_model_generate: the model is %s", m ? "not initialised (tg_model_init)" : "NULL");
    if (!prompt || (!out && max_new > 0) || (!stop && n_stop > 0))
        return tg_error_set("tg_model_generate: %s is NULL", !prompt ? "prompt" : !out ? "out" : "stop");
    if (n_prompt < 1 || n_prompt > m->cfg.max_len || max_new < 0 || n_stop < 0)
        return tg_error_set("tg_model_generate: n_prompt %d (in [1, max_len = %d]), max_new %d, n_stop %d "
                            "(both >= 0)", n_prompt, m->cfg.max_len, max_new, n_stop);
    if (check_tokens("prompt", prompt, n_prompt, m->cfg.vocab) || check_tokens("stop", stop, n_stop, m->cfg.vocab))
        return -1;
    if (check_opts("tg_model_generate", o)) return -1;
    if (!rng && !greedy(o)) return tg_error_set("tg_model_generate: the rng is NULL (sampling needs one)");
    return 0;
}

static bool is_stop(int32_t tok, const int32_t *stop, int n_stop)
{
    for (int i = 0; i < n_stop; i++)
        if (stop[i] == tok) return true;
    return false;
}

int tg_model_generate(const tg_model *m, int32_t *out, int max_new, const int32_t *prompt, int n_prompt,
                      const tg_sample_opts *o, const int32_t *stop, int n_stop, tg_rng *rng, int *n_out)
{
    TG_REFUSE_NULL(n_out, "n_out", -1);
    *n_out = 0;
    if (check_generate(m, out, max_new, prompt, n_prompt, o, stop, n_stop, rng)) return -1;
    int V = m->cfg.vocab, len = n_prompt;
    if (max_new == 0 || len == m->cfg.max_len) return 0;
    tg_kv_cache c;
    if (tg_kv_cache_init(&c, m, 1)) return -1;
    tg_tape *t = tg_tape_new();
    if (!t) {
        tg_kv_cache_free(&c);
        return -1;
    }
    tg_no_grad_begin(t);
    tg_tape_set_training(t, false);
    tg_tensor *ids = tg_tensor_from_dtype(t, TG_I32, prompt, 2, (int[]){1, n_prompt});
    tg_tensor *logits = tg_model_prefill(t, m, &c, ids, NULL);
    const tg_real *row = logits ? logits->data + (size_t)(n_prompt - 1) * V : NULL;
    bool done = false;
    while (row) {
        int32_t tok;
        if (tg_sample(&tok, row, V, o, rng)) break;
        out[(*n_out)++] = tok;
        len++;
        done = *n_out == max_new || len == m->cfg.max_len || is_stop(tok, stop, n_stop);
        if (done) break;
        tg_tape_reset(t);
        tg_tensor *next = tg_tensor_from_dtype(t, TG_I32, &tok, 2, (int[]){1, 1});
        logits = tg_model_decode(t, m, &c, next, tg_tensor_from_dtype(t, TG_I32, &(int32_t){len - 1}, 1, (int[]){1}),
                                 NULL);
        row = logits ? logits->data : NULL;
    }
    tg_tape_free(t);
    tg_kv_cache_free(&c);
    return done ? 0 : -1;
}
