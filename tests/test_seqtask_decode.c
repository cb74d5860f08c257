/* seqtask's greedy decoder (examples/seqtask/eval.c): one teacher-forced
 * pass that also fills the key/value cache, then one step per token for the
 * rows it got wrong, each row leaving the batch when it ends. Whatever the
 * targets, its output must be greedy decoding by whole passes (one
 * tg_model_forward over the prefix per token), token for token. */
#include <stdlib.h>
#include <string.h>

#include <tapegrad/nn/nn.h>
#include "../examples/seqtask/eval.h"
#include "test_util.h"

enum { SYMS = 6, MAXN = 6, N_EX = 40 };

/* Greedy output of src[n] by whole passes, into out (room for Tmax); its length. */
static int greedy_full(tg_tape *t, const tg_model *m, const int32_t *src, int n, const tg_tensor *hm, int32_t *out)
{
    int tmax = m->cfg.max_len, V = m->cfg.vocab;
    int32_t seq[64];
    seq[0] = SQ_BOS;
    for (int i = 0; i < n; i++) seq[1 + i] = SQ_SYM0 + src[i];
    seq[n + 1] = SQ_SEP;
    int L = n + 2;
    while (L < tmax) {
        tg_tape_reset(t);
        tg_tensor *ids = tg_tensor_from_dtype(t, TG_I32, seq, 2, (int[]){1, L});
        tg_tensor *lg = tg_model_forward(t, m, ids, &(tg_model_opts){.head_mask = hm}, NULL);
        cr_assert_not_null(lg, "%s", tg_tape_error(t));
        const tg_real *x = lg->data + (size_t)(L - 1) * V;
        int32_t best = 0;
        for (int v = 1; v < V; v++)
            if (x[v] > x[best]) best = v;
        seq[L++] = best;
        if (best == SQ_EOS) break;
    }
    memcpy(out, seq + n + 2, (size_t)(L - n - 2) * sizeof *out);
    return L - n - 2;
}

/* y1..ym EOS as tokens is out[n] */
static bool is_output(const int32_t *y, int m, const int32_t *out, int n)
{
    if (n != m + 1 || out[m] != SQ_EOS) return false;
    for (int i = 0; i < m; i++)
        if (SQ_SYM0 + y[i] != out[i]) return false;
    return true;
}

static void check_decoder(tg_mha_mode mode, const tg_tensor *hm)
{
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = SQ_SYM0 + SYMS, .d_model = 16, .n_layers = 2, .n_heads = 2,
                           .max_len = sq_tmax(MAXN), .mode = mode};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0, "%s", tg_error());
    m.head.bias->data[SQ_EOS] = 0.25f;  /* some outputs end early, some fill Tmax */
    tg_tape *t = tg_tape_new();
    tg_no_grad_begin(t);
    tg_tape_set_training(t, false);
    /* targets that agree with the greedy output for a random number of
     * tokens (all of it for every fourth), so decoding starts at many
     * positions */
    sq_dataset *set = sq_data_new();
    int32_t want[N_EX][64], src[MAXN], tgt[MAXN];
    int n_want[N_EX], exact = 0, ended = 0, lens_seen = 0;
    for (int e = 0; e < N_EX; e++) {
        int n = 1 + (int)tg_rng_below(&rng, MAXN);
        for (int i = 0; i < n; i++) src[i] = (int32_t)tg_rng_below(&rng, SYMS);
        n_want[e] = greedy_full(t, &m, src, n, hm, want[e]);
        int agree = e % 4 == 0 ? n_want[e] : (int)tg_rng_below(&rng, (uint32_t)n_want[e] + 1), k = 0;
        for (; k < agree && k < MAXN && want[e][k] >= SQ_SYM0; k++) tgt[k] = want[e][k] - SQ_SYM0;
        bool whole = k == n_want[e] - 1 && want[e][k] == SQ_EOS && k > 0;
        int mlen = whole ? k : 1 + (int)tg_rng_below(&rng, MAXN);
        for (int i = k; i < mlen; i++) tgt[i] = (int32_t)tg_rng_below(&rng, SYMS);
        exact += is_output(tgt, mlen, want[e], n_want[e]);
        ended += want[e][n_want[e] - 1] == SQ_EOS;
        lens_seen |= 1 << n_want[e];
        cr_assert_eq(sq_data_add(set, src, n, tgt, mlen), 0, "%s", tg_error());
    }
    cr_assert(ended >= 3 && ended <= N_EX - 3, "%d of %d outputs end in EOS: the test needs both kinds", ended, N_EX);
    cr_assert(__builtin_popcount(lens_seen) >= 4, "output lengths: the test needs rows that end at different steps");
    cr_assert(exact >= 2, "%d examples the teacher-forced pass decodes alone", exact);
    sq_decoder d;
    cr_assert_eq(sq_decoder_init(&d, &m), 0, "%s", tg_error());
    cr_assert_geq(d.cap, N_EX, "one batch, so every row's output is still in d.seq");
    sq_eval_result r;
    cr_assert_eq(sq_evaluate(&d, set, hm, &r, NULL, 0), 0, "%s", tg_error());
    for (int e = 0; e < N_EX; e++) {
        const int32_t *got = d.seq + (size_t)e * d.tmax + set->ex[e].n + 2;
        int n_got = d.len[e] - set->ex[e].n - 2;
        cr_assert_eq(n_got, n_want[e], "example %d: %d tokens, whole passes give %d", e, n_got, n_want[e]);
        for (int i = 0; i < n_got; i++)
            cr_assert_eq(got[i], want[e][i], "example %d token %d: %d, whole passes give %d", e, i, got[i], want[e][i]);
    }
    cr_assert_eq(r.exact, exact);
    /* sq_generate: a prefill of the prompt, then steps */
    if (!hm)
        for (int e = 0; e < N_EX; e++) {
            int32_t out[64];
            int n_out;
            cr_assert_eq(sq_generate(&d, set->ex[e].src, set->ex[e].n, out, &n_out), 0, "%s", tg_error());
            cr_assert_eq(n_out, n_want[e], "example %d", e);
            cr_assert_eq(memcmp(out, want[e], (size_t)n_out * sizeof *out), 0, "example %d", e);
        }
    sq_decoder_free(&d);
    sq_data_free(set);
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}

Test(seqtask_decode, greedy_by_whole_passes_fused) { check_decoder(TG_MHA_FUSED, NULL); }
Test(seqtask_decode, greedy_by_whole_passes_per_head) { check_decoder(TG_MHA_PER_HEAD, NULL); }
Test(seqtask_decode, greedy_by_whole_passes_with_head_mask)
{
    tg_tensor *hm = tg_tensor_alloc(2, (int[]){2, 2});  /* [layers, heads]: layer 0's head 1 off */
    for (int i = 0; i < 4; i++) hm->data[i] = i != 1;
    check_decoder(TG_MHA_FUSED, hm);
    tg_tensor_free(hm);
}
