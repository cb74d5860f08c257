/* Gradient checks a user would run on their own code: a composite function
 * built from core ops, and multi-head attention in both modes. Prints the
 * worst element of every input as a table; exits 1 if any check fails.
 * Usage: gradcheck (no flags; gradcheck --help). Most telling in the double build. */
#include <stdio.h>
#include <string.h>

#include <tapegrad/nn/nn.h>
#include <tapegrad/tapegrad.h>

/* A user-defined composite: f(x, w, b) = layernorm(tanh(x w^T + b)) * x */
static tg_tensor *composite(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *h = tg_tanh(t, tg_matmul(t, in[0], in[1], in[2], TG_TRANS_B));
    return tg_mul(t, tg_layernorm(t, h, NULL, NULL, 1e-5), in[0]);
}

typedef struct { const tg_mha *m; tg_mask mask; } mha_ctx;

static tg_tensor *mha(tg_tape *t, tg_tensor **in, void *ctx)
{
    mha_ctx *c = ctx;
    return tg_mha_forward(t, c->m, in[0], in[0], &(tg_mha_opts){.mask = &c->mask}, NULL);
}

/* Checks each input on its own so the table has one row per input. */
static int check_each(const char *title, tg_gradcheck_fn f, void *ctx, tg_tensor **in, int n,
                      const char *const *names)
{
    int failed = 0;
    printf("\n%s\n  %-34s %8s %14s %14s %10s\n", title, "input", "elems", "analytic", "numeric", "of tol");
    for (int k = 0; k < n; k++) {
        for (int j = 0; j < n; j++) in[j]->requires_grad = j == k;
        tg_gradcheck_result r = tg_gradcheck(f, ctx, in, n, NULL);
        if (r.worst_input < 0) {
            printf("  %-34s %s\n", names[k], tg_error());
            failed++;
            continue;
        }
        printf("  %-34s %8zu %14.6g %14.6g %10.3g %s\n", names[k], in[k]->size, r.analytic, r.numeric,
               r.worst_ratio, r.ok ? "ok" : "FAILED");
        failed += !r.ok;
    }
    for (int j = 0; j < n; j++) in[j]->requires_grad = true;
    return failed;
}

static tg_tensor *rand_tensor(tg_rng *rng, int ndim, const int *shape)
{
    tg_tensor *x = tg_tensor_alloc(ndim, shape);
    for (size_t i = 0; x && i < x->size; i++) x->data[i] = (tg_real)(2 * tg_rng_uniform(rng) - 1);
    return x;
}

static int check_mha(tg_mha_mode mode, tg_rng *rng)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_mha_config cfg = {.n_heads = 2, .d_model = 6, .d_head = 4, .bias = true, .mode = mode};
    if (tg_mha_init(&m, p, "attn", &cfg, rng)) {
        puts(tg_error());
        tg_params_free(p);
        return 1;
    }
    int n = tg_params_count(p) + 1;
    tg_tensor *in[32];
    const char *names[32];
    in[0] = rand_tensor(rng, 3, (int[]){2, 5, 6});
    names[0] = "x [2,5,6]";
    for (int i = 1; i < n; i++) {
        in[i] = tg_params_at(p, i - 1);
        names[i] = in[i]->name;
    }
    mha_ctx ctx = {.m = &m, .mask = {.causal = true}};
    int failed = check_each(mode == TG_MHA_FUSED ? "MHA, fused mode, causal self-attention"
                                                 : "MHA, per-head mode, causal self-attention",
                            mha, &ctx, in, n, names);
    tg_tensor_free(in[0]);
    tg_params_free(p);
    return failed;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0)
        return fputs("usage: gradcheck\n\nGradchecks a composite function of core ops and multi-head attention "
                     "in both modes;\nprints the worst element of every input, exits 1 if a check fails. "
                     "It takes no flags.\n", stdout), 0;
    if (argc > 1) return fprintf(stderr, "gradcheck: unknown flag %s (gradcheck --help)\n", argv[1]), 2;
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    printf("tapegrad gradcheck (%s build): |analytic - numeric| <= atol + rtol |numeric|\n", TG_REAL_NAME);
    tg_tensor *in[3] = {rand_tensor(&rng, 2, (int[]){3, 4}), rand_tensor(&rng, 2, (int[]){4, 4}),
                        rand_tensor(&rng, 1, (int[]){4})};
    const char *names[3] = {"x [3,4]", "w [4,4]", "b [4]"};
    int failed = check_each("composite: layernorm(tanh(x w^T + b)) * x", composite, NULL, in, 3, names);
    for (int k = 0; k < 3; k++) tg_tensor_free(in[k]);
    failed += check_mha(TG_MHA_FUSED, &rng);
    failed += check_mha(TG_MHA_PER_HEAD, &rng);
    printf("\n%s\n", failed ? "some checks FAILED" : "all checks passed");
    return failed ? 1 : 0;
}
