/* Scaled dot-product attention (core/ops/attention.c).
 *
 * tg_sdpa against a naive loop and the mask references of
 * tests/mask_cases.h (self and cross, fully masked rows, no keys, eval mode,
 * dropout), gradchecks, out of memory and errors.
 *
 * tg_sdpa_heads (the heads_ tests): attention on heads read in place from
 * packed projections. Equality with slice -> split_heads -> tg_sdpa ->
 * merge_heads (outputs,
 * weights and every input grad; self on one shared input, cross on two,
 * dk != dv, offsets, overlapping blocks, every mask kind, dropout, eval),
 * gradchecks of the same cases, the fused MHA recording no copies, out of
 * memory, and errors naming the op and shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/nn/nn.h>

#include "../core/ops/internal.h"
#include "mask_cases.h"
#include "test_util.h"

TU_SUITE(sdpa, 11);

#ifdef TAPEGRAD_DOUBLE
#define EQ_TOL 1e-12
#else
#define EQ_TOL 1e-6
#endif

/* ---- masks: tests/mask_cases.h's kinds for cross-attention, a few for L = 5 ---- */

/* Kinds for self-attention (L = 5); kind 0 is no mask. */
static tg_mask self_mask(int kind)
{
    switch (kind) {
    case 0: return (tg_mask){0};
    case 1: return (tg_mask){.causal = true};
    case 2: return (tg_mask){.key_lens = LENS};
    case 3: return (tg_mask){.key_keep = KKEEP};
    case 4: return (tg_mask){.window = 2};
    default: return (tg_mask){.causal = true, .key_lens = LENS0};
    }
}
#define N_SELF 6

/* ---- one case ------------------------------------------------------------------------ */

typedef struct pk_case {
    const char *what;
    int B, Lq, Lk, Cq, Ckv;
    tg_sdpa_layout lay;
    bool shared;           /* xkv = xq (then Lk = Lq, Ckv = Cq) */
    tg_mask mask;
    bool masked;           /* use mask */
    double scale, dropout;
} pk_case;

static tg_sdpa_opts case_opts(const pk_case *c, tg_rng *rng)
{
    tg_rng_seed(rng, 2024);  /* every call drops the same entries */
    return (tg_sdpa_opts){.mask = c->masked ? &c->mask : NULL, .scale = c->scale, .dropout = c->dropout,
                          .rng = rng};
}

static tg_tensor *run_packed(tg_tape *t, const pk_case *c, tg_tensor *xq, tg_tensor *xkv, tg_tensor **w)
{
    tg_rng rng;
    tg_sdpa_opts o = case_opts(c, &rng);
    return tg_sdpa_heads(t, xq, c->shared ? xq : xkv, &c->lay, &o, w);
}

/* The same function from copies: slice -> split_heads -> tg_sdpa -> merge_heads. */
static tg_tensor *run_reference(tg_tape *t, const pk_case *c, tg_tensor *xq, tg_tensor *xkv, tg_tensor **w)
{
    tg_rng rng;
    tg_sdpa_opts o = case_opts(c, &rng);
    const tg_sdpa_layout *l = &c->lay;
    int H = l->n_heads;
    if (c->shared) xkv = xq;
    tg_tensor *q = tg_split_heads(t, tg_slice(t, xq, l->q_col, H * l->dk), H);
    tg_tensor *k = tg_split_heads(t, tg_slice(t, xkv, l->k_col, H * l->dk), H);
    tg_tensor *v = tg_split_heads(t, tg_slice(t, xkv, l->v_col, H * l->dv), H);
    return tg_merge_heads(t, tg_sdpa(t, q, k, v, &o, w));
}

static void case_inputs(const pk_case *c, tg_tensor **xq, tg_tensor **xkv)
{
    *xq = tu_rand(&R, -1, 1, 3, (int[]){c->B, c->Lq, c->Cq});
    *xkv = c->shared ? NULL : tu_rand(&R, -1, 1, 3, (int[]){c->B, c->Lk, c->Ckv});
}

static tg_tensor *clone(const tg_tensor *x)
{
    if (!x) return NULL;
    tg_tensor *y = tg_tensor_alloc(x->ndim, x->shape);
    cr_assert_not_null(y);
    memcpy(y->data, x->data, x->size * sizeof *y->data);
    y->requires_grad = x->requires_grad;
    return y;
}

static void assert_close_all(const char *what, const char *part, const tg_real *a, const tg_real *b, size_t n)
{
    for (size_t e = 0; e < n; e++)
        cr_assert(fabs((double)a[e] - (double)b[e]) <= EQ_TOL * (1 + fabs((double)b[e])),
                  "%s: %s[%zu] = %.12g, reference %.12g", what, part, e, (double)a[e], (double)b[e]);
}

/* Packed and reference on equal inputs: out, weights and every input grad
 * (backward seeded with one random array) agree. */
static void check_equal(const pk_case *c)
{
    tg_tensor *aq, *akv;
    case_inputs(c, &aq, &akv);
    tg_tensor *bq = clone(aq), *bkv = clone(akv);
    tg_tape *t2 = tg_tape_new();
    tg_tape_set_training(t2, tg_tape_training(T));
    tg_tensor *wa = NULL, *wb = NULL;
    tg_tensor *oa = run_packed(T, c, aq, akv, &wa), *ob = run_reference(t2, c, bq, bkv, &wb);
    cr_assert(oa && wa, "%s: %s", c->what, tg_tape_error(T));
    cr_assert(ob && wb, "%s: reference: %s", c->what, tg_tape_error(t2));
    cr_assert(oa->ndim == 3 && oa->shape[0] == c->B && oa->shape[1] == c->Lq &&
              oa->shape[2] == c->lay.n_heads * c->lay.dv, "%s: out shape", c->what);
    cr_assert(tg_shape_equal(wa, wb), "%s: weights shape", c->what);
    assert_close_all(c->what, "out", oa->data, ob->data, oa->size);
    assert_close_all(c->what, "weights", wa->data, wb->data, wa->size);
    tg_real *seed = malloc(oa->size * sizeof *seed + 1);
    for (size_t e = 0; e < oa->size; e++) seed[e] = (tg_real)(2 * tg_rng_uniform(&R) - 1);
    cr_assert_eq(tg_backward_seed(T, oa, seed), 0, "%s: %s", c->what, tg_tape_error(T));
    cr_assert_eq(tg_backward_seed(t2, ob, seed), 0, "%s: %s", c->what, tg_tape_error(t2));
    free(seed);
    cr_assert(aq->grad && bq->grad, "%s: no grad for xq", c->what);
    assert_close_all(c->what, "dxq", aq->grad, bq->grad, aq->size);
    if (akv) {
        cr_assert(akv->grad && bkv->grad, "%s: no grad for xkv", c->what);
        assert_close_all(c->what, "dxkv", akv->grad, bkv->grad, akv->size);
    }
    tg_tape_free(t2);
    tg_tape_reset(T);
    tg_tensor *all[] = {aq, bq, akv, bkv};
    for (int i = 0; i < 4; i++) tg_tensor_free(all[i]);
}

static tg_tensor *f_packed(tg_tape *t, tg_tensor **in, void *ctx)
{
    const pk_case *c = ctx;
    return run_packed(t, c, in[0], c->shared ? in[0] : in[1], NULL);
}

static void check_grad(const pk_case *c)
{
    tg_tensor *in[2];
    case_inputs(c, &in[0], &in[1]);
    tg_gradcheck_result r = tg_gradcheck(f_packed, (void *)c, in, c->shared ? 1 : 2, NULL);
    tu_free_all(in, c->shared ? 1 : 2);
    cr_assert(r.ok, "%s: %s", c->what, tg_error());
}

/* Self on qkv [B, 5, C]: H = 2, dk = 3, dv = 2, blocks at 1, 7, 13 with
 * unused columns around them. */
static pk_case self_case(const char *what, int kind)
{
    return (pk_case){.what = what, .B = B_, .Lq = 5, .Lk = 5, .Cq = 18, .Ckv = 18, .shared = true,
                     .lay = {.n_heads = 2, .dk = 3, .dv = 2, .q_col = 1, .k_col = 7, .v_col = 13},
                     .mask = self_mask(kind), .masked = kind > 0};
}

/* Cross: xq [B, 4, 7] (q at column 1), xkv [B, 5, 10] with v before k;
 * H = 2, dk = 3, dv = 2. */
static pk_case cross_case(const char *what, int kind)
{
    return (pk_case){.what = what, .B = B_, .Lq = LQ, .Lk = LK, .Cq = 7, .Ckv = 10,
                     .lay = {.n_heads = 2, .dk = 3, .dv = 2, .q_col = 1, .k_col = 4, .v_col = 0},
                     .mask = kind >= 0 ? mask_kind(kind) : (tg_mask){0}, .masked = kind >= 0};
}

/* ---- equality with the copying path ----------------------------------------------------- */

Test(sdpa, heads_equals_copies_self_layouts)
{
    /* the fused MHA's own layout: qkv [B, L, 3E], cols 0, E, 2E */
    check_equal(&(pk_case){.what = "self qkv", .B = 2, .Lq = 6, .Lk = 6, .Cq = 24, .Ckv = 24, .shared = true,
                           .lay = {.n_heads = 4, .dk = 2, .dv = 2, .q_col = 0, .k_col = 8, .v_col = 16}});
    check_equal(&(pk_case){.what = "self one head", .B = 3, .Lq = 4, .Lk = 4, .Cq = 9, .Ckv = 9, .shared = true,
                           .lay = {.n_heads = 1, .dk = 3, .dv = 3, .q_col = 0, .k_col = 3, .v_col = 6},
                           .scale = 0.7});
    /* q = k = v: every block the same columns, grads of three uses summed */
    check_equal(&(pk_case){.what = "q = k = v", .B = 2, .Lq = 5, .Lk = 5, .Cq = 6, .Ckv = 6, .shared = true,
                           .lay = {.n_heads = 2, .dk = 3, .dv = 3}});
    for (int kind = 0; kind < N_SELF; kind++) {
        pk_case c = self_case("self mask kind", kind);
        check_equal(&c);
    }
}

Test(sdpa, heads_equals_copies_cross_every_mask)
{
    for (int kind = -1; kind < N_KINDS; kind++) {
        pk_case c = cross_case("cross mask kind", kind);
        check_equal(&c);
    }
    /* the fused MHA's cross layout: q [B, Lq, E], kv [B, Lk, 2E] */
    check_equal(&(pk_case){.what = "cross q | kv", .B = 2, .Lq = 3, .Lk = 7, .Cq = 6, .Ckv = 12,
                           .lay = {.n_heads = 3, .dk = 2, .dv = 2, .q_col = 0, .k_col = 0, .v_col = 6}});
    /* Lq > Lk, dk != dv, d_head not E/H of anything */
    check_equal(&(pk_case){.what = "cross Lq > Lk", .B = 1, .Lq = 6, .Lk = 2, .Cq = 5, .Ckv = 9,
                           .lay = {.n_heads = 1, .dk = 5, .dv = 4, .q_col = 0, .k_col = 4, .v_col = 0}});
}

Test(sdpa, heads_equals_copies_dropout_and_eval)
{
    pk_case c = self_case("self dropout + causal", 1);
    c.dropout = 0.3;
    check_equal(&c);
    c = cross_case("cross dropout + key_lens", 1);
    c.dropout = 0.5;
    check_equal(&c);
    tg_tape_set_training(T, false);  /* dropout off: still the same function */
    c.what = "cross eval";
    check_equal(&c);
}

/* Not recording: the same values, no node; weights [B, H, Lq, Lk]. */
Test(sdpa, heads_eval_without_recording)
{
    pk_case c = cross_case("cross", 9);
    tg_tensor *xq, *xkv;
    case_inputs(&c, &xq, &xkv);
    tg_tensor *w1 = NULL, *o1 = run_packed(T, &c, xq, xkv, &w1);
    int nodes = tg_tape_node_count(T);
    tg_no_grad_begin(T);
    tg_tensor *w2 = NULL, *o2 = run_packed(T, &c, xq, xkv, &w2);
    cr_assert(o1 && o2 && w1 && w2, "%s", tg_tape_error(T));
    cr_assert_eq(tg_tape_node_count(T), nodes);
    cr_assert(w2->ndim == 4 && w2->shape[0] == B_ && w2->shape[1] == 2 && w2->shape[2] == LQ && w2->shape[3] == LK);
    for (size_t e = 0; e < o1->size; e++) cr_assert(o1->data[e] == o2->data[e]);
    for (size_t e = 0; e < w1->size; e++) cr_assert(w1->data[e] == w2->data[e]);
    tg_tensor_free(xq);
    tg_tensor_free(xkv);
}

/* ---- gradchecks ------------------------------------------------------------------------- */

Test(sdpa, heads_gradcheck_self_shared_input)
{
    for (int kind = 0; kind < N_SELF; kind++) {
        pk_case c = self_case("self mask kind", kind);
        check_grad(&c);
    }
    check_grad(&(pk_case){.what = "q = k = v", .B = 1, .Lq = 4, .Lk = 4, .Cq = 6, .Ckv = 6, .shared = true,
                          .lay = {.n_heads = 2, .dk = 3, .dv = 3}, .scale = 0.6});
}

Test(sdpa, heads_gradcheck_cross_every_mask)
{
    for (int kind = -1; kind < N_KINDS; kind++) {
        pk_case c = cross_case("cross mask kind", kind);
        check_grad(&c);
    }
}

Test(sdpa, heads_gradcheck_dropout)
{
    pk_case c = self_case("self dropout + causal", 1);
    c.dropout = 0.3;
    check_grad(&c);
    c = cross_case("cross dropout", -1);
    c.dropout = 0.5;
    check_grad(&c);
}

/* ---- the fused MHA reads the heads in place ---------------------------------------------- */

static void assert_no_copies(bool cross)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_mha_config cfg = {.n_heads = 2, .d_model = 4, .d_head = 3, .bias = true, .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &cfg, &rng), 0, "%s", tg_error());
    tg_tensor *xq = tu_rand(&R, -1, 1, 3, (int[]){2, 3, 4}), *xkv = cross ? tu_rand(&R, -1, 1, 3, (int[]){2, 5, 4}) : xq;
    tg_tensor *w = NULL, *out = tg_mha_forward(T, &m, xq, xkv, NULL, &w);
    cr_assert(out && w, "%s", tg_tape_error(T));
    cr_assert(w->shape[1] == 2 && w->shape[3] == xkv->shape[1]);
    char *dump = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&dump, &len);
    cr_assert_not_null(f);
    tg_tape_dump(T, f);
    fclose(f);
    cr_assert(strstr(dump, "tg_sdpa_heads"), "%s", dump);
    cr_assert(!strstr(dump, "tg_slice") && !strstr(dump, "tg_split_heads") && !strstr(dump, "tg_merge_heads"),
              "copies in the fused path:\n%s", dump);
    free(dump);
    tg_tensor_free(xq);
    if (cross) tg_tensor_free(xkv);
    tg_params_free(p);
}

Test(sdpa, heads_fused_mha_records_no_copies)
{
    assert_no_copies(false);
    tg_tape_reset(T);
    assert_no_copies(true);
}

/* ---- out of memory ------------------------------------------------------------------------ */

/* Every allocation of forward(t, ctx) and a backward from it failing in turn,
 * n = 1, 2, ... until a run succeeds: an error saying "out of memory", no
 * crash, no leak (the sanitizer build checks the leaks). The n_in inputs'
 * grads are dropped before each run: backward allocates them again. */
static void walk_out_of_memory(tg_tensor *(*forward)(tg_tape *t, void *ctx), void *ctx, tg_tensor **in, int n_in)
{
    bool done = false;
    for (int n = 1; n < 20 && !done; n++) {
        tg_tape *t = tg_tape_new();
        cr_assert_not_null(t);
        for (int x = 0; x < n_in; x++) {
            tg_free(in[x]->grad);
            in[x]->grad = NULL;
        }
        tg_alloc_fail_at((uint64_t)n);
        tg_tensor *o = forward(t, ctx);
        tg_real one[64] = {1};
        int rc = o && o->size <= 64 ? tg_backward_seed(t, o, one) : -1;
        tg_alloc_fail_at(0);
        cr_assert(!o || o->size <= 64, "the seed has 64 elements, the output %zu", o->size);
        done = rc == 0;
        if (!done) cr_assert(tg_tape_error(t) && strstr(tg_tape_error(t), "out of memory"), "n %d: %s", n,
                             tg_tape_error(t) ? tg_tape_error(t) : "(no error)");
        tg_tape_free(t);
    }
    cr_assert(done, "never succeeded");
}

typedef struct packed_run {
    const pk_case *c;
    tg_tensor *x;
} packed_run;

static tg_tensor *forward_packed(tg_tape *t, void *ctx)
{
    const packed_run *r = ctx;
    tg_tensor *w = NULL;
    return run_packed(t, r->c, r->x, NULL, &w);
}

Test(sdpa, heads_out_of_memory)
{
    pk_case c = self_case("oom", 2);
    c.dropout = 0.2;
    tg_tensor *x, *unused;
    case_inputs(&c, &x, &unused);
    walk_out_of_memory(forward_packed, &(packed_run){&c, x}, &x, 1);
    tg_tensor_free(x);
}

/* ---- errors ---------------------------------------------------------------------------------- */

Test(sdpa, heads_rejects_bad_inputs)
{
    tg_tensor *xq = tu_rand(&R, -1, 1, 3, (int[]){2, 4, 6});
    tg_tensor *xkv = tu_rand(&R, -1, 1, 3, (int[]){2, 5, 10});
    tg_tensor *x2 = tu_rand(&R, -1, 1, 2, (int[]){4, 6});
    tg_tensor *xb = tu_rand(&R, -1, 1, 3, (int[]){3, 5, 10});
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    const tg_sdpa_layout ok = {.n_heads = 2, .dk = 3, .dv = 2, .q_col = 0, .k_col = 0, .v_col = 6};
    tg_sdpa_layout l;
    tg_tensor *w = (tg_tensor *)1;
    cr_assert_not_null(tg_sdpa_heads(T, xq, xkv, &ok, NULL, NULL), "%s", tg_tape_error(T));
    tg_tape_reset(T);

    tu_expect_error(T, tg_sdpa_heads(T, x2, xkv, &ok, NULL, &w), "tg_sdpa_heads: xq and xkv must be 3-D", "xq [4,6]");
    cr_assert_null(w);
    tu_expect_error(T, tg_sdpa_heads(T, xq, x2, &ok, NULL, NULL), "must be 3-D", "xkv [4,6]");
    tu_expect_error(T, tg_sdpa_heads(T, xq, xb, &ok, NULL, NULL), "tg_sdpa_heads: batch dims differ", "xkv [3,5,10]");
    l = ok, l.n_heads = 0;
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "n_heads, dk and dv must be >= 1", "n_heads 0");
    l = ok, l.dk = 0;
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "must be >= 1", "dk 0");
    l = ok, l.dv = -1;
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "must be >= 1", "dv -1");
    l = ok, l.q_col = 1;
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "tg_sdpa_heads: q columns [1, 7) are outside [0, 6)",
                 "xq [2,4,6]");
    l = ok, l.q_col = -1;
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "q columns [-1, 5)", "q_col -1");
    l = ok, l.k_col = 5;
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "k columns [5, 11) are outside [0, 10)", "xkv [2,5,10]");
    l = ok, l.v_col = 7;
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "v columns [7, 11) are outside [0, 10)", "v_col 7");
    l = ok, l.k_col = 2000000000, l.dk = 2000000000;  /* no int overflow on the way */
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "q columns", "dk 2000000000");
    l = ok, l.n_heads = 2, l.dv = 1200000000, l.v_col = 0;
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &l, NULL, NULL), "n_heads*dv overflows", "dv 1200000000");

    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &ok, &(tg_sdpa_opts){.dropout = 1, .rng = &rng}, NULL),
                 "tg_sdpa_heads: dropout 1 is outside [0, 1)", "xq [2,4,6] xkv [2,5,10]");
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &ok, &(tg_sdpa_opts){.dropout = NAN, .rng = &rng}, NULL),
                 "tg_sdpa_heads: dropout", "xkv [2,5,10]");
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &ok, &(tg_sdpa_opts){.dropout = 0.1}, NULL), "needs an rng",
                 "xq [2,4,6]");
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &ok, &(tg_sdpa_opts){.scale = INFINITY}, NULL),
                 "tg_sdpa_heads: scale inf is not finite", "xq [2,4,6]");
    const tg_mask bad[] = {
        {.keep_batched = true},
        {.key_lens = (const int32_t[]){3, 6}},
        {.window = -2},
        {.additive = (const tg_real[20]){[7] = NAN}},
    };
    const char *why[] = {"keep is NULL", "key_lens[1] = 6 is outside [0, Lk = 5]", "window -2", "additive[1,2]"};
    for (int i = 0; i < 4; i++)
        tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, &ok, &(tg_sdpa_opts){.mask = &bad[i]}, NULL),
                     "tg_sdpa_heads: mask", why[i]);

    /* NULL inputs: their own message, or the earlier one kept */
    tu_expect_error(T, tg_sdpa_heads(T, NULL, xkv, &ok, NULL, NULL), "tg_sdpa_heads", "input is NULL");
    tu_expect_error(T, tg_sdpa_heads(T, xq, xkv, NULL, NULL, NULL), "tg_sdpa_heads", "input is NULL");
    cr_assert_null(tg_sdpa_heads(T, xq, xb, &ok, NULL, NULL));
    char first[512];
    snprintf(first, sizeof first, "%s", tg_tape_error(T));
    cr_assert_null(tg_sdpa_heads(T, xq, NULL, &ok, NULL, NULL));
    cr_assert_str_eq(tg_tape_error(T), first);
    tg_tape_reset(T);
    cr_assert_null(tg_sdpa_heads(NULL, xq, xkv, &ok, NULL, NULL));
    tg_tensor *all[] = {xq, xkv, x2, xb};
    tu_free_all(all, 4);
}

/* ---- tg_sdpa ------------------------------------------------------------------ */

/* These tests were written with R seeded 7 (runs after the suite's setup). */
static void seed_7(void) { tg_rng_seed(&R, 7); }

/* tg_backward with d out = 1 everywhere. */
static int backward_ones(tg_tensor *out)
{
    tg_real *seed = malloc((out->size + 1) * sizeof *seed);
    for (size_t e = 0; e < out->size; e++) seed[e] = 1;
    int rc = tg_backward_seed(T, out, seed);
    free(seed);
    return rc;
}

/* out [B,H,Lq,dv] and w [B,H,Lq,Lk] of softmax(scale q k^T + mask) v, naively. */
static void ref_sdpa(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v, const tg_mask *m,
                     double scale, double *out, double *w)
{
    int B = q->shape[0], H = q->shape[1], Lq = q->shape[2], Lk = k->shape[2], dk = q->shape[3],
        dv = v->shape[3];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Lq; i++) {
                int bh = b * H + h;
                double raw[MAXK], *wr = w + ((size_t)bh * Lq + i) * Lk;
                bool vis[MAXK];
                for (int j = 0; j < Lk; j++) {
                    raw[j] = 0;
                    for (int c = 0; c < dk; c++)
                        raw[j] += (double)q->data[(bh * Lq + i) * dk + c] * k->data[(bh * Lk + j) * dk + c];
                }
                ref_weights(m, b, i, Lq, Lk, raw, scale, wr, vis);
                for (int c = 0; c < dv; c++) {
                    double s = 0;
                    for (int j = 0; j < Lk; j++) s += wr[j] * v->data[(bh * Lk + j) * dv + c];
                    out[(bh * Lq + i) * dv + c] = s;
                }
            }
}

/* Compares tg_sdpa (output and weights) with ref_sdpa on random q, k, v. */
static void check_sdpa(int B, int H, int Lq, int Lk, int dk, int dv, const tg_mask *m, double scale)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B, H, Lq, dk});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, dk});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, dv});
    tg_tensor *w = NULL;
    tg_tensor *o = tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = m, .scale = scale}, &w);
    cr_assert(o && w, "%s", tg_tape_error(T));
    cr_assert(o->shape[2] == Lq && o->shape[3] == dv && w->shape[2] == Lq && w->shape[3] == Lk);
    double *ro = calloc(o->size, sizeof *ro), *rw = calloc(w->size, sizeof *rw);
    ref_sdpa(q, k, v, m, scale > 0 ? scale : 1 / sqrt(dk), ro, rw);
    for (size_t e = 0; e < o->size; e++) tu_close(o->data[e], ro[e], TU_TOL);
    for (size_t e = 0; e < w->size; e++) {
        if (rw[e] == 0) cr_assert(w->data[e] == 0, "weight %zu = %g, want exactly 0", e, (double)w->data[e]);
        tu_close(w->data[e], rw[e], TU_TOL);
    }
    free(ro);
    free(rw);
    tg_tensor *in[] = {q, k, v};
    tu_free_all(in, 3);
}

typedef struct sdpa_ctx {
    const tg_mask *mask;
    double scale, dropout;
    bool shared;  /* q = k = v = in[0] */
} sdpa_ctx;

/* Reseeds a local rng at every call so each evaluation drops the same entries. */
static tg_tensor *f_sdpa(tg_tape *t, tg_tensor **in, void *vc)
{
    sdpa_ctx *c = vc;
    tg_rng rng;
    tg_rng_seed(&rng, 2024);
    tg_sdpa_opts o = {.mask = c->mask, .scale = c->scale, .dropout = c->dropout, .rng = &rng};
    if (c->shared) return tg_sdpa(t, in[0], in[0], in[0], &o, NULL);
    return tg_sdpa(t, in[0], in[1], in[2], &o, NULL);
}

static void gc_sdpa(const char *what, int B, int H, int Lq, int Lk, int dk, int dv, sdpa_ctx c)
{
    tg_tensor *in[] = {tu_rand(&R, -1, 1, 4, (int[]){B, H, Lq, dk}),
                       tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, dk}),
                       tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, dv})};
    tg_gradcheck_result r = tg_gradcheck(f_sdpa, &c, in, c.shared ? 1 : 3, NULL);
    tu_free_all(in, 3);
    cr_assert(r.ok, "%s: %s", what, tg_error());
}

/* out, weights, dq, dk, dv of one tg_sdpa forward + backward (d out = 1)
 * under tg_sdpa_tune(rows, mat), concatenated into res (malloc'd). */
static tg_real *sdpa_tuned(int rows, int mat, tg_tensor *const in[3], const tg_mask *m, double p,
                           size_t *n)
{
    tg_sdpa_tune(rows, mat);
    tg_tape_reset(T);
    for (int x = 0; x < 3; x++)
        if (in[x]->grad) memset(in[x]->grad, 0, in[x]->size * sizeof *in[x]->grad);
    tg_rng rng;
    tg_rng_seed(&rng, 99);
    tg_tensor *w = NULL, *o = tg_sdpa(T, in[0], in[1], in[2], &(tg_sdpa_opts){.mask = m, .dropout = p, .rng = &rng}, &w);
    cr_assert(o && w, "%s", tg_tape_error(T));
    cr_assert_eq(backward_ones(o), 0, "%s", tg_tape_error(T));
    tg_sdpa_tune(0, -1);
    const tg_tensor *parts[5] = {o, w, NULL, NULL, NULL};
    *n = o->size + w->size + in[0]->size + in[1]->size + in[2]->size;
    tg_real *res = malloc(*n * sizeof *res), *r = res;
    for (int i = 0; i < 5; i++) {
        const tg_real *src = i < 2 ? parts[i]->data : in[i - 2]->grad;
        size_t len = i < 2 ? parts[i]->size : in[i - 2]->size;
        memcpy(r, src, len * sizeof *r);
        r += len;
    }
    return res;
}

/* For blocks of 1, 3 and all rows: recomputing the weights in backward gives
 * the same bits as keeping them; any blocking agrees with one block. */
static void check_modes(int B, int H, int Lq, int Lk, const tg_mask *m, double p)
{
    tg_tensor *in[3] = {tu_rand(&R, -1, 1, 4, (int[]){B, H, Lq, 3}), tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, 3}),
                        tu_rand(&R, -1, 1, 4, (int[]){B, H, Lk, 2})};
    size_t n;
    tg_real *one = sdpa_tuned(Lq, 1, in, m, p, &n);
    for (int rows = 1; rows <= Lq; rows = rows == 1 ? 3 : rows == 3 ? Lq : Lq + 1) {
        tg_real *kept = sdpa_tuned(rows, 1, in, m, p, &n), *redo = sdpa_tuned(rows, 0, in, m, p, &n);
        for (size_t e = 0; e < n; e++) {
            cr_assert(kept[e] == redo[e], "rows %d, elem %zu: kept %.9g, recomputed %.9g", rows, e,
                      (double)kept[e], (double)redo[e]);
            tu_close(redo[e], one[e], TU_TOL);
        }
        free(kept);
        free(redo);
    }
    free(one);
    tu_free_all(in, 3);
}

Test(sdpa, matches_naive_self_and_cross, .init = seed_7)
{
    check_sdpa(2, 2, LQ, LK, 3, 2, NULL, 0);          /* default scale 1/sqrt(3) */
    check_sdpa(2, 3, 5, 5, 4, 3, NULL, 0.9);          /* self, dk != dv */
    check_sdpa(2, 2, 3, 7, 4, 6, NULL, 0);            /* cross, Lq < Lk */
    check_sdpa(1, 2, 6, 2, 3, 5, NULL, 0);            /* cross, Lq > Lk */
    for (int kind = 0; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        check_sdpa(B_, H_, LQ, LK, 3, 2, &m, 0);
    }
}

Test(sdpa, fully_masked_zero_out_and_grad, .init = seed_7)
{
    tg_mask m = {.key_lens = LENS0};
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LQ, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LK, 3});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LK, 2});
    tg_tensor *w = NULL, *o = tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &m}, &w);
    cr_assert(o && w);
    cr_assert_eq(backward_ones(o), 0, "%s", tg_tape_error(T));
    for (size_t e = 0; e < o->size; e++) cr_assert(e >= o->size / 2 || o->data[e] == 0);
    for (size_t e = 0; e < w->size / 2; e++) cr_assert(w->data[e] == 0);
    tg_tensor *in[] = {q, k, v};
    for (int x = 0; x < 3; x++)
        for (size_t e = 0; e < in[x]->size; e++) {
            cr_assert(isfinite(in[x]->grad[e]));
            if (e < in[x]->size / 2) cr_assert(in[x]->grad[e] == 0, "input %d elem %zu", x, e);
        }
    cr_assert(v->grad[v->size / 2] != 0);  /* batch 1, key 0 does get a gradient */
    tu_free_all(in, 3);
}

Test(sdpa, empty_keys_and_eval_mode, .init = seed_7)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){1, 1, 2, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){1, 1, 0, 3});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){1, 1, 0, 4});
    tg_tensor *o = tg_sdpa(T, q, k, v, NULL, NULL);
    cr_assert_not_null(o, "%s", tg_tape_error(T));
    for (size_t e = 0; e < o->size; e++) cr_assert(o->data[e] == 0);
    cr_assert_eq(backward_ones(o), 0, "%s", tg_tape_error(T));
    tg_tensor *in[] = {q, k, v};
    tu_free_all(in, 3);
    /* not recording: same values, no node */
    tg_tape_reset(T);
    q = tu_rand(&R, -1, 1, 4, (int[]){1, 2, 3, 4});
    tg_tensor *o1 = tg_sdpa(T, q, q, q, NULL, NULL);
    int nodes = tg_tape_node_count(T);
    tg_no_grad_begin(T);
    tg_tensor *o2 = tg_sdpa(T, q, q, q, NULL, NULL);
    cr_assert(o1 && o2);
    cr_assert_eq(tg_tape_node_count(T), nodes);
    for (size_t e = 0; e < o1->size; e++) cr_assert(o1->data[e] == o2->data[e]);
    tg_tensor_free(q);
}

/* Backward reads nothing from the caller's mask arrays, and the weights
 * handed out are the caller's to modify. */
Test(sdpa, backward_independent_of_caller_arrays, .init = seed_7)
{
    int32_t lens[B_] = {3, 4};
    tg_real add[LQ * LK];
    for (int e = 0; e < LQ * LK; e++) add[e] = (tg_real)(0.1 * (e % 5));
    tg_mask m = {.causal = true, .key_lens = lens, .additive = add};
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LQ, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LK, 3});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LK, 2});
    tg_real want[B_ * H_ * LQ * 3];
    for (int pass = 0; pass < 2; pass++) {
        tg_tape_reset(T);
        if (q->grad) memset(q->grad, 0, q->size * sizeof *q->grad);
        tg_tensor *w = NULL, *o = tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &m}, &w);
        cr_assert(o && w);
        if (pass == 1) { /* scribble over everything the caller owns */
            lens[0] = lens[1] = 1;
            for (int e = 0; e < LQ * LK; e++) add[e] = (tg_real)(e % 3);
            tg_tensor_fill(w, 42);
        }
        cr_assert_eq(backward_ones(o), 0);
        for (size_t e = 0; e < q->size; e++) {
            if (pass == 0) want[e] = q->grad[e];
            else cr_assert(q->grad[e] == want[e], "elem %zu", e);
        }
    }
    tg_tensor *in[] = {q, k, v};
    tu_free_all(in, 3);
}

/* With v = identity (dv = Lk) the output is the dropped weights themselves. */
Test(sdpa, dropout_drops_and_rescales, .init = seed_7)
{
    enum { L = 8, H = 4 };
    const double p = 0.5;
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){1, H, L, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){1, H, L, 3});
    tg_tensor *v = tu_rand(&R, 0, 0, 4, (int[]){1, H, L, L});
    for (int h = 0; h < H; h++)
        for (int j = 0; j < L; j++) v->data[(h * L + j) * L + j] = 1;
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_sdpa_opts o = {.dropout = p, .rng = &rng};
    tg_tensor *w = NULL, *out = tg_sdpa(T, q, k, v, &o, &w);
    cr_assert(out && w, "%s", tg_tape_error(T));
    int dropped = 0;
    for (size_t e = 0; e < out->size; e++) {
        if (out->data[e] == 0) dropped++;
        else tu_close(out->data[e], w->data[e] / (1 - p), 1e-5);
    }
    cr_assert(dropped > (int)out->size / 4 && dropped < 3 * (int)out->size / 4, "dropped %d of %zu", dropped, out->size);
    /* weights are pre-dropout: rows sum to one */
    for (int r = 0; r < H * L; r++) {
        double s = 0;
        for (int j = 0; j < L; j++) s += w->data[r * L + j];
        tu_close(s, 1.0, 1e-5);
    }
    /* not training: dropout is off */
    tg_tape_set_training(T, false);
    tg_tensor *ev = tg_sdpa(T, q, k, v, &o, NULL);
    cr_assert_not_null(ev);
    for (size_t e = 0; e < ev->size; e++) cr_assert(ev->data[e] == w->data[e]);
    tg_tensor *in[] = {q, k, v};
    tu_free_all(in, 3);
}

Test(sdpa, gradcheck_masks, .init = seed_7)
{
    tg_mask causal = {.causal = true}, pad = {.key_lens = LENS}, keep = {.key_keep = KKEEP};
    tg_mask win = {.window = 2}, cpad = {.causal = true, .key_lens = LENS};
    tg_mask none_visible = {.key_lens = LENS0, .additive = ADD};
    gc_sdpa("no mask", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){0});
    gc_sdpa("causal", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &causal});
    gc_sdpa("key_lens", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &pad});
    gc_sdpa("key_keep", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &keep});
    gc_sdpa("window", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &win});
    gc_sdpa("causal+padding", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &cpad, .scale = 0.6});
    gc_sdpa("fully masked batch + additive", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.mask = &none_visible});
    for (int kind = 5; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        gc_sdpa("mask kind", B_, H_, LQ, LK, 2, 3, (sdpa_ctx){.mask = &m});
    }
}

Test(sdpa, gradcheck_cross_shared_and_dropout, .init = seed_7)
{
    tg_mask pad = {.key_lens = (const int32_t[]){6, 4}};
    gc_sdpa("cross", 2, 2, 3, 6, 4, 2, (sdpa_ctx){0});
    gc_sdpa("cross + padding", 2, 1, 3, 6, 2, 3, (sdpa_ctx){.mask = &pad});
    gc_sdpa("q = k = v", 1, 2, 4, 4, 3, 3, (sdpa_ctx){.shared = true});
    tg_mask causal = {.causal = true};
    gc_sdpa("dropout", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){.dropout = 0.3});
    gc_sdpa("dropout + causal", B_, H_, LQ, LQ, 3, 2, (sdpa_ctx){.mask = &causal, .dropout = 0.5});
}

Test(sdpa, recomputed_equals_materialised, .init = seed_7)
{
    check_modes(B_, H_, LQ, LK, NULL, 0);
    for (int kind = 0; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        check_modes(B_, H_, LQ, LK, &m, 0);
        check_modes(B_, H_, LQ, LK, &m, 0.3);
    }
    tg_mask causal = {.causal = true};  /* several blocks of the size rule's rows */
    check_modes(1, 1, 300, 300, &causal, 0);
}

/* The gradchecks above, with the weights recomputed in blocks of 2 rows. */
Test(sdpa, gradcheck_recomputed_blocks, .init = seed_7)
{
    tg_sdpa_tune(2, 0);
    gc_sdpa("no mask", B_, H_, LQ, LK, 3, 2, (sdpa_ctx){0});
    for (int kind = 0; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        gc_sdpa("mask kind", B_, H_, LQ, LK, 2, 3, (sdpa_ctx){.mask = &m});
    }
    gc_sdpa("dropout + causal", B_, H_, LQ, LQ, 3, 2, (sdpa_ctx){.mask = &(tg_mask){.causal = true}, .dropout = 0.5});
    gc_sdpa("cross", 2, 2, 3, 6, 4, 2, (sdpa_ctx){0});
    tg_sdpa_tune(0, -1);
}

typedef struct sdpa_run {
    tg_tensor **in;
    const tg_sdpa_opts *opts;
} sdpa_run;

static tg_tensor *forward_sdpa(tg_tape *t, void *ctx)
{
    const sdpa_run *r = ctx;
    tg_tensor *w = NULL;
    return tg_sdpa(t, r->in[0], r->in[1], r->in[2], r->opts, &w);
}

Test(sdpa, out_of_memory, .init = seed_7)
{
    tg_tensor *in[] = {tu_rand(&R, -1, 1, 4, (int[]){2, 2, 3, 4}), tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 4}),
                       tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 2})};
    tg_mask m = {.causal = true, .key_lens = LENS};
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_sdpa_opts o = {.mask = &m, .dropout = 0.2, .rng = &rng};
    walk_out_of_memory(forward_sdpa, &(sdpa_run){in, &o}, in, 3);
    tu_free_all(in, 3);
}

Test(sdpa, rejects_bad_inputs, .init = seed_7)
{
    tg_tensor *q = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 4, 3});
    tg_tensor *k = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 3});
    tg_tensor *v = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 2});
    tg_tensor *q3 = tu_rand(&R, -1, 1, 3, (int[]){2, 4, 3});
    tg_tensor *kb = tu_rand(&R, -1, 1, 4, (int[]){3, 2, 5, 3});
    tg_tensor *vh = tu_rand(&R, -1, 1, 4, (int[]){2, 1, 5, 2});
    tg_tensor *kd = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 5, 4});
    tg_tensor *vl = tu_rand(&R, -1, 1, 4, (int[]){2, 2, 6, 2});
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *w = (tg_tensor *)1;
    tu_expect_error(T, tg_sdpa(T, q3, k, v, NULL, &w), "tg_sdpa", "[2,4,3]");
    cr_assert_null(w);
    tu_expect_error(T, tg_sdpa(T, q, kb, v, NULL, NULL), "tg_sdpa", "[3,2,5,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, vh, NULL, NULL), "tg_sdpa", "[2,1,5,2]");
    tu_expect_error(T, tg_sdpa(T, q, kd, v, NULL, NULL), "tg_sdpa", "[2,2,5,4]");
    tu_expect_error(T, tg_sdpa(T, q, k, vl, NULL, NULL), "tg_sdpa", "[2,2,6,2]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.dropout = 1, .rng = &rng}, NULL), "tg_sdpa: dropout", "[2,2,4,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.dropout = -0.1, .rng = &rng}, NULL), "tg_sdpa: dropout", "[2,2,4,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.dropout = NAN, .rng = &rng}, NULL), "tg_sdpa: dropout", "[2,2,4,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.dropout = 0.1}, NULL), "rng", "[2,2,4,3]");
    tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.scale = INFINITY}, NULL), "tg_sdpa: scale", "[2,2,4,3]");
    const tg_mask bad[] = {
        {.keep_batched = true},
        {.key_lens = (const int32_t[]){3, 6}},
        {.key_lens = (const int32_t[]){-1, 2}},
        {.window = -2},
        {.additive = (const tg_real[20]){[7] = NAN}},
        {.additive = (const tg_real[20]){[19] = INFINITY}},
    };
    const char *why[] = {"keep is NULL", "key_lens[1] = 6", "key_lens[0] = -1", "window -2", "additive[1,2]", "additive[3,4]"};
    for (int i = 0; i < 6; i++) {
        tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &bad[i]}, NULL), "tg_sdpa", why[i]);
        tu_expect_error(T, tg_sdpa(T, q, k, v, &(tg_sdpa_opts){.mask = &bad[i]}, NULL), "tg_sdpa", "k [2,2,5,3]");
        tg_tensor *s = tg_tensor_zeros(T, 4, (int[]){2, 2, 4, 5});
        tu_expect_error(T, tg_softmax_masked(T, s, &bad[i], 1), "tg_softmax_masked", why[i]);
        s = tg_tensor_zeros(T, 4, (int[]){2, 2, 4, 5});
        tu_expect_error(T, tg_softmax_masked(T, s, &bad[i], 1), "tg_softmax_masked", "[2,2,4,5]");
    }
    /* a NULL input keeps the earlier message */
    cr_assert_null(tg_sdpa(T, q, kd, v, NULL, NULL));
    char first[512];
    snprintf(first, sizeof first, "%s", tg_tape_error(T));
    cr_assert_null(tg_sdpa(T, NULL, k, v, NULL, NULL));
    cr_assert_null(tg_sdpa(T, q, k, NULL, NULL, NULL));
    cr_assert_str_eq(tg_tape_error(T), first);
    tg_tape_reset(T);
    tu_expect_error(T, tg_sdpa(T, q, NULL, v, NULL, NULL), "tg_sdpa", "NULL");
    tg_tensor *all[] = {q, k, v, q3, kb, vh, kd, vl};
    tu_free_all(all, 8);
}
