/* Greedy decoding with the KV cache: the time of the decoding steps, at a
 * given number of key/value heads, so grouped-query and multi-query attention
 * can be set against multi-head attention at the same d_model.
 *
 *   bench_decode [--d-model 64 --heads 4 --kv-heads 0 --layers 2 --d-ff 0
 *                 --symbols 16 --max-len 500 --batch 4 --start max-len+2]
 *                [--reps 30 --burn-in 1 --budget 10 --threads T --seed 1 --tag decode]
 *
 * A randomly initialised model (the decoding cost does not depend on the
 * weights) prefills positions [0, start) of `batch` rows, then one repetition
 * decodes every row from position start to the cache's end (Tmax = 2 * max-len
 * + 3 positions, as seqtask's), one tg_model_decode per position, which is
 * what `seqtask eval` does for an example it gets wrong, without the early
 * stop at EOS that makes whole evaluations of different models differ in
 * length. Prints one ROW line: ms per repetition, ms per decoding step, and
 * the cache's bytes per row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/tapegrad.h>

#include "bench_util.h"

typedef struct decode_ctx {
    tg_model m;
    tg_kv_cache kv;
    tg_tape *t;
    int32_t *ids, *pos;
    int B, start, cap;
} decode_ctx;

/* Decodes positions [start, cap) of every row; the cache rows are
 * overwritten from start on, so each repetition does the same work. */
static int decode_sweep(void *p)
{
    decode_ctx *c = p;
    for (int pos = c->start; pos < c->cap; pos++) {
        for (int b = 0; b < c->B; b++) c->pos[b] = pos;
        tg_tape_reset(c->t);
        tg_tensor *ids = tg_tensor_from_dtype(c->t, TG_I32, c->ids, 2, (int[]){c->B, 1});
        tg_tensor *at = tg_tensor_from_dtype(c->t, TG_I32, c->pos, 1, (int[]){c->B});
        tg_tensor *logits = tg_model_decode(c->t, &c->m, &c->kv, ids, at, NULL);
        if (!logits) return -1;
        int V = c->m.cfg.vocab;
        for (int b = 0; b < c->B; b++) c->ids[b] = (int32_t)((c->ids[b] + (logits->data[(size_t)b * V] > 0)) % V);
    }
    return 0;
}

int main(int argc, char **argv)
{
#define OPT(name, def) bu_opt_long(argc, argv, "--" name, def)
    int n_sym = (int)OPT("symbols", 16), max_len = (int)OPT("max-len", 500), B = (int)OPT("batch", 4);
    tg_model_config mc = {.vocab = n_sym + 4, .d_model = (int)OPT("d-model", 64),
                          .n_layers = (int)OPT("layers", 2), .n_heads = (int)OPT("heads", 4),
                          .n_kv_heads = (int)OPT("kv-heads", 0), .d_ff = (int)OPT("d-ff", 0),
                          .max_len = 2 * max_len + 3, .mode = TG_MHA_FUSED};
    bu_plan plan = {.warmup = (int)OPT("burn-in", 1), .reps = (int)OPT("reps", 30), .min_reps = 3,
                    .budget_s = bu_opt_double(argc, argv, "--budget", 10.0)};
    int start = (int)OPT("start", max_len + 2);  /* BOS, the source, SEP: what seqtask eval prefills */
    if (B < 1 || B > 4096 || max_len < 1 || max_len > 4096 || n_sym < 1 || start < 1 || start >= mc.max_len) {
        fprintf(stderr, "bench_decode: need 1 <= batch <= 4096, 1 <= max-len <= 4096, symbols >= 1, "
                        "1 <= start < 2 * max-len + 3\n");
        return 2;
    }
    if (OPT("threads", 0) > 0) tg_threads_set((int)OPT("threads", 0));
    bu_warm_blas();

    static decode_ctx c;
    int rc = 1;
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)OPT("seed", 1) * 2 + 1);
    tg_params *params = tg_params_new();
    c.t = tg_tape_new();
    c.B = B, c.start = start, c.cap = mc.max_len;
    c.ids = tg_malloc((size_t)B * start * sizeof *c.ids);
    c.pos = tg_malloc((size_t)B * sizeof *c.pos);
    if (!params || !c.t || !c.ids || !c.pos) goto done;
    if (tg_model_init(&c.m, params, &mc, &rng)) goto done;
    if (tg_kv_cache_init(&c.kv, &c.m, B)) goto done;
    tg_no_grad_begin(c.t);
    tg_tape_set_training(c.t, false);
    for (int i = 0; i < B * start; i++) c.ids[i] = (int32_t)(tg_rng_u32(&rng) % (uint32_t)mc.vocab);
    if (!tg_model_prefill(c.t, &c.m, &c.kv, tg_tensor_from_dtype(c.t, TG_I32, c.ids, 2, (int[]){B, start}), NULL))
        goto done;

    bu_result r = bu_measure(decode_sweep, &c, plan);
    if (r.failed) goto done;
    const tg_model_config *k = &c.m.cfg;
    int steps = c.cap - start;
    double cache_row = (double)k->n_layers * c.cap * c.kv.kv[0]->shape[2] * sizeof(tg_real);
    bu_row("bench=decode impl=tapegrad tag=%s B=%d cap=%d start=%d D=%d layers=%d heads=%d kv_heads=%d threads=%d reps=%d "
           "ms=%.4f min_ms=%.4f step_us=%.2f min_step_us=%.2f cache_row_mib=%.3f",
           bu_opt_str(argc, argv, "--tag", "decode"), B, c.cap, start, k->d_model, k->n_layers, k->n_heads, k->n_kv_heads, tg_threads_get(), r.reps,
           r.median_ms, r.min_ms, 1e3 * r.median_ms / steps, 1e3 * r.min_ms / steps, cache_row / (1024.0 * 1024.0));
    rc = 0;
done:
    if (rc) fprintf(stderr, "bench_decode: %s\n", tg_error() ? tg_error() : "out of memory");
    if (c.kv.kv) tg_kv_cache_free(&c.kv);
    if (c.m.blocks) tg_model_free(&c.m);
    tg_params_free(params);
    tg_tape_free(c.t);
    tg_free(c.ids);
    tg_free(c.pos);
    return rc;
}
