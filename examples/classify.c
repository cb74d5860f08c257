/* A sequence classifier, written as a user of tapegrad writes one: only the
 * public header, no seqtask code.
 *
 * The task needs attention: a sequence is "a b SEP x1 .. xL" over S symbols
 * (L from 6 to 20), and the label says whether symbol a occurs among the x
 * more often than symbol b (ties are never drawn). a and b change from one
 * sequence to the next, so a position cannot know what to count without
 * looking at the first two tokens.
 *
 * The model: token + position embeddings; one multi-head self-attention layer
 * with a key-padding mask (each sequence's length), added back to its input;
 * masked mean pooling over the valid positions (the padding, positions from
 * tg_arange compared with the lengths, filled with 0 by tg_masked_fill, then
 * tg_sum_dim over time divided by the lengths); a Linear layer to the two
 * classes. The report gathers each label's probability with tg_gather.
 * Cross-entropy, AdamW with a cosine schedule. One source in 16, by a hash of
 * its tokens, is held out: training never draws it.
 *
 * Usage: classify [--mode fused|per-head] [--steps N] [--seed N]  (classify --help)
 * Prints progress and ends with "held-out accuracy NN.NN%".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/tapegrad.h>

enum {
    S = 8,                   /* symbols, token ids 1..S */
    PAD = 0, SEP = S + 1, V = S + 2,
    MIN_LEN = 6, MAX_LEN = 20,
    T = MAX_LEN + 3,         /* a, b, SEP, then up to MAX_LEN symbols */
    D = 32, HEADS = 4,
    BATCH = 64, EVAL = 2000,
};

typedef struct model {
    tg_embedding_layer tok, pos;
    tg_mha attn;
    tg_linear out;
} model;

typedef struct batch {
    int n;
    int64_t ids[EVAL * T];
    int32_t lens[EVAL], labels[EVAL];
} batch;

/* FNV-1a over the tokens: 1 source in 16 is held out */
static bool held_out(const int64_t *ids, int len)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < len; i++) h = (h ^ (uint32_t)ids[i]) * 16777619u;
    return h % 16 == 0;
}

/* One example into ids [T] (PAD after len); returns its label. */
static int32_t draw(tg_rng *rng, bool want_held_out, int64_t *ids, int32_t *len)
{
    for (;;) {
        int a = (int)tg_rng_below(rng, S), b = (int)tg_rng_below(rng, S - 1);
        b += b >= a;
        int L = MIN_LEN + (int)tg_rng_below(rng, MAX_LEN - MIN_LEN + 1), na = 0, nb = 0;
        ids[0] = a + 1, ids[1] = b + 1, ids[2] = SEP;
        for (int i = 0; i < L; i++) {  /* a, b or any symbol, a third each: counts differ by little */
            uint32_t r = tg_rng_below(rng, 3);
            int x = r == 0 ? a : r == 1 ? b : (int)tg_rng_below(rng, S);
            na += x == a, nb += x == b;
            ids[3 + i] = x + 1;
        }
        for (int i = 3 + L; i < T; i++) ids[i] = PAD;
        *len = 3 + L;
        if (na != nb && held_out(ids, *len) == want_held_out) return na > nb;
    }
}

static void fill(batch *bt, tg_rng *rng, int n, bool held)
{
    bt->n = n;
    for (int i = 0; i < n; i++) bt->labels[i] = draw(rng, held, bt->ids + i * T, &bt->lens[i]);
}

/* ids [n, T] -> logits [n, 2] */
static tg_tensor *forward(tg_tape *t, const model *m, const batch *bt)
{
    int n = bt->n;
    tg_tensor *ids = tg_tensor_from_dtype(t, TG_I64, bt->ids, 2, (int[]){n, T});
    tg_tensor *positions = tg_tensor_new_dtype(t, TG_I64, 2, (int[]){1, T});
    if (!positions) return NULL;
    int64_t *pv = tg_data(positions, TG_I64);
    for (int i = 0; i < T; i++) pv[i] = i;
    /* [n, T, D] + [1, T, D]: the positions broadcast over the batch */
    tg_tensor *h = tg_add(t, tg_embedding_forward(t, &m->tok, ids), tg_embedding_forward(t, &m->pos, positions));
    /* keys at and after a sequence's length are ignored */
    tg_mask pad = {.key_lens = tg_tensor_from_dtype(t, TG_I32, bt->lens, 1, (int[]){n})};
    h = tg_add(t, h, tg_mha_forward(t, &m->attn, h, h, &(tg_mha_opts){.mask = &pad}, NULL));
    /* masked mean over time: padding (time >= len) filled with 0, summed, / len */
    tg_tensor *lens = tg_tensor_new(t, 3, (int[]){n, 1, 1});
    if (!lens) return NULL;
    for (int i = 0; i < n; i++) lens->data[i] = (tg_real)bt->lens[i];
    tg_tensor *time = tg_reshape(t, tg_arange(t, 0, T, 1), 3, (int[]){1, T, 1});
    tg_tensor *padding = tg_ge(t, time, lens);                                        /* [n, T, 1] bool */
    tg_tensor *pooled = tg_div(t, tg_sum_dim(t, tg_masked_fill(t, h, padding, 0), 1, false), /* [n, D] */
                               tg_reshape(t, lens, 2, (int[]){n, 1}));                 /* / [n, 1] */
    return tg_linear_forward(t, &m->out, pooled);
}

/* fraction of bt classified right, or -1 on an error; *p_label: the mean
 * probability the model gives each example's label */
static double accuracy(tg_tape *t, const model *m, const batch *bt, double *p_label)
{
    tg_tape_reset(t);
    bool prev = tg_no_grad_begin(t);
    tg_tensor *logits = forward(t, m, bt);
    tg_no_grad_end(t, prev);
    tg_tensor *labels = tg_tensor_from_dtype(t, TG_I32, bt->labels, 1, (int[]){bt->n});
    if (!logits || !labels) return -1;
    /* the mean of (argmax(logits) == label) as numbers, [n, 2] -> [n] bool -> [] */
    tg_tensor *acc = tg_mean(t, tg_to(t, tg_eq(t, tg_argmax(t, logits, -1, false), labels), TG_REAL_DTYPE));
    /* softmax(logits)[i, label_i]: gather along the class dim, [n, 2] -> [n, 1] */
    tg_tensor *ix = tg_tensor_from_dtype(t, TG_I32, bt->labels, 2, (int[]){bt->n, 1});
    tg_tensor *p = tg_mean(t, tg_gather(t, tg_softmax(t, logits), 1, ix));
    if (!acc || !p) return -1;
    *p_label = (double)p->data[0];
    return (double)acc->data[0];
}

static int init(model *m, tg_params *p, tg_mha_mode mode, tg_rng *rng)
{
    tg_mha_config ac = {.n_heads = HEADS, .d_model = D, .bias = true, .mode = mode};
    if (tg_embedding_init(&m->tok, p, "tok", V, D, rng) ||
        tg_embedding_init(&m->pos, p, "pos", T, D, rng) ||
        tg_mha_init(&m->attn, p, "attn", &ac, rng) ||
        tg_linear_init(&m->out, p, "out", &(tg_linear_config){.in = D, .out = 2, .bias = true}, rng))
        return -1;
    return 0;
}

/* ---- command line, in seqtask's style: --help to stdout, a bad flag named on stderr, exit 2 ---- */

static const char help[] =
    "usage: classify [flags]\n\n"
    "Trains a one-layer attention classifier on \"a b SEP x1 .. xL: does a occur among the x more\n"
    "often than b?\" and prints the held-out accuracy every 250 steps and at the end.\n\n"
    "flags:\n"
    "  --mode fused|per-head       attention: one packed projection for all heads or one per head [fused]\n"
    "  --steps N                   optimizer steps, an integer in [1, 1000000000] [1500]\n"
    "  --seed N                    seed of the initialisation and the data, an integer >= 0 [1]\n"
    "  --help                      this text\n\n"
    "example: classify --mode per-head --steps 500\n";

static int bad(const char *flag, const char *value, const char *expected)
{
    if (value)
        fprintf(stderr, "classify: %s '%s' is not allowed: expected %s\n", flag, value, expected);
    else if (expected)
        fprintf(stderr, "classify: %s needs a value: %s\n", flag, expected);
    else
        fprintf(stderr, "classify: unknown flag %s (classify --help lists the flags)\n", flag);
    return 2;
}

int main(int argc, char **argv)
{
    tg_mha_mode mode = TG_MHA_FUSED;
    long steps = 1500;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *want;
        char *end = NULL;
        if (!strcmp(f, "--help")) return fputs(help, stdout), 0;
        if (!strcmp(f, "--mode")) {
            want = "one of fused, per-head";
            if (!v) return bad(f, NULL, want);
            if (strcmp(v, "fused") && strcmp(v, "per-head")) return bad(f, v, want);
            mode = v[0] == 'p' ? TG_MHA_PER_HEAD : TG_MHA_FUSED;
        } else if (!strcmp(f, "--steps")) {
            want = "an integer in [1, 1000000000]";
            if (!v) return bad(f, NULL, want);
            errno = 0;
            steps = strtol(v, &end, 10);
            if (errno || end == v || *end || steps < 1 || steps > 1000000000) return bad(f, v, want);
        } else if (!strcmp(f, "--seed")) {
            want = "an integer >= 0";
            if (!v) return bad(f, NULL, want);
            errno = 0;
            seed = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') return bad(f, v, want);
        } else {
            return bad(f, NULL, NULL);
        }
        i++;
    }
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    tg_params *p = tg_params_new();
    model m;
    if (!p || init(&m, p, mode, &rng)) return fprintf(stderr, "classify: %s\n", tg_error()), 1;
    tg_optim_opts o = tg_optim_defaults(TG_ADAMW);
    o.lr = 3e-3;
    o.no_decay_1d = true;
    tg_optim *opt = tg_optim_new(p, &o);
    tg_schedule lr = tg_schedule_cosine(o.lr, 0, 50, steps);
    static batch train, held;
    fill(&held, &rng, EVAL, true);
    tg_tape *t = tg_tape_new();
    if (!opt || !t) return fprintf(stderr, "classify: %s\n", tg_error()), 1;
    printf("classify: %s attention, %d heads, d_model %d, %zu parameters, %ld steps of %d\n",
           mode == TG_MHA_FUSED ? "fused" : "per-head", HEADS, D, tg_params_numel(p), steps, BATCH);
    for (long step = 0; step < steps; step++) {
        fill(&train, &rng, BATCH, false);
        tg_tape_reset(t);
        tg_tensor *labels = tg_tensor_from_dtype(t, TG_I32, train.labels, 1, (int[]){train.n});
        tg_tensor *loss = tg_cross_entropy(t, forward(t, &m, &train), labels, TG_IGNORE);
        tg_optim_zero_grad(opt);
        if (tg_backward(t, loss) || tg_optim_schedule_lr(opt, &lr, step) || tg_optim_step(opt))
            return fprintf(stderr, "classify: step %ld: %s\n", step, tg_error()), 1;
        if ((step + 1) % 250 == 0) {
            double l = (double)loss->data[0], pl;  /* read before accuracy() resets the tape */
            printf("step %5ld  loss %.4f  held-out %.2f%%\n", step + 1, l, 100 * accuracy(t, &m, &held, &pl));
        }
    }
    double pl, acc = accuracy(t, &m, &held, &pl);
    if (acc < 0) return fprintf(stderr, "classify: %s\n", tg_error()), 1;
    printf("held-out accuracy %.2f%% (mean probability of the label %.3f)\n", 100 * acc, pl);
    tg_tape_free(t);
    tg_optim_free(opt);
    tg_params_free(p);
    return 0;
}
