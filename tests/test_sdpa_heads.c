/* tg_sdpa_heads (core/ops/nn/attention.c): attention on heads read in place from
 * packed projections. Equality with slice -> split_heads -> tg_sdpa ->
 * merge_heads (outputs, weights and every input grad; self on one shared
 * input, cross on two, dk != dv, offsets, overlapping blocks, every mask
 * kind, dropout, eval), gradchecks of the same cases, the fused MHA recording
 * no copies, out of memory, and errors naming the op and shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/nn/nn.h>

#include "../core/ops/internal.h"
#include "mask_cases.h"
#include "ops_util.h"

TU_SUITE(sdpa_heads, 11);

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
    case 2: return (tg_mask){.key_lens = MC_I32(LENS)};
    case 3: return (tg_mask){.key_padding = MC_BOOL(KPAD, B_, LK)};
    case 4: return (tg_mask){.window = 2};
    default: return (tg_mask){.causal = true, .key_lens = MC_I32(LENS0)};
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

Test(sdpa_heads, equals_copies_self_layouts)
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

Test(sdpa_heads, equals_copies_cross_every_mask)
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

Test(sdpa_heads, equals_copies_dropout_and_eval)
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
Test(sdpa_heads, eval_without_recording)
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

Test(sdpa_heads, gradcheck_self_shared_input)
{
    for (int kind = 0; kind < N_SELF; kind++) {
        pk_case c = self_case("self mask kind", kind);
        check_grad(&c);
    }
    check_grad(&(pk_case){.what = "q = k = v", .B = 1, .Lq = 4, .Lk = 4, .Cq = 6, .Ckv = 6, .shared = true,
                          .lay = {.n_heads = 2, .dk = 3, .dv = 3}, .scale = 0.6});
}

Test(sdpa_heads, gradcheck_cross_every_mask)
{
    for (int kind = -1; kind < N_KINDS; kind++) {
        pk_case c = cross_case("cross mask kind", kind);
        check_grad(&c);
    }
}

Test(sdpa_heads, gradcheck_dropout)
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

Test(sdpa_heads, fused_mha_records_no_copies)
{
    assert_no_copies(false);
    tg_tape_reset(T);
    assert_no_copies(true);
}

/* ---- out of memory ------------------------------------------------------------------------ */

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

Test(sdpa_heads, out_of_memory)
{
    pk_case c = self_case("oom", 2);
    c.dropout = 0.2;
    tg_tensor *x, *unused;
    case_inputs(&c, &x, &unused);
    walk_out_of_memory(forward_packed, &(packed_run){&c, x}, &x, 1);
    tg_tensor_free(x);
}

/* ---- errors ---------------------------------------------------------------------------------- */

Test(sdpa_heads, rejects_bad_inputs)
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
    static const int32_t lens6[2] = {3, 6};
    tg_tensor *nan = tg_tensor_alloc(2, (int[]){4, 5}), *wrong = tg_tensor_alloc_dtype(TG_BOOL, 3, (int[]){2, 5, 5});
    tg_tensor *u8 = tg_tensor_alloc_dtype(TG_U8, 2, (int[]){4, 5});
    nan->data[7] = NAN;
    const tg_mask bad[] = {
        {.key_lens = MC_I32(lens6)},
        {.window = -2},
        {.attn = nan},
        {.attn = wrong},
        {.attn = u8},
    };
    const char *why[] = {"key_lens[1] = 6 is outside [0, Lk = 5]", "window -2", "attn[1,2]",
                         "attn [2,5,5] must be [Lq, Lk] = [4, 5], [B, Lq, Lk] = [2, 4, 5], [B*H, Lq, Lk] = [4, 4, 5] "
                         "or [B, H, Lq, Lk] = [2, 2, 4, 5]", "attn is uint8, but must be bool (true = not allowed) or "
                         "float32/float64"};
    for (int i = 0; i < 5; i++)
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
    tg_tensor *all[] = {xq, xkv, x2, xb, nan, wrong, u8};
    tu_free_all(all, 7);
}
