/* softmax, log_softmax, masks and masked softmax (core/ops/nn/softmax.c,
 * core/ops/nn/mask.c): hand-computed values, every mask rule against an
 * independent reference (tests/mask_cases.h), fully masked rows, gradchecks
 * and errors. */
#include <stdlib.h>
#include <string.h>

#include "../core/ops/internal.h"
#include "mask_cases.h"
#include "test_util.h"

TU_SUITE(softmax, 7);

/* ---- hand-computed values ------------------------------------------------- */

Test(softmax, softmax_hand_values)
{
    tg_real xv[] = {1, 2, 3, 1e4, 0, 0};
    tg_tensor *y = tg_softmax(T, tg_tensor_from(T, xv, 2, (int[]){2, 3}));
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    /* exp([-2,-1,0]) / (e^-2 + e^-1 + 1) */
    tu_close(y->data[0], 0.09003057317038046, TU_TOL);
    tu_close(y->data[1], 0.24472847105479764, TU_TOL);
    tu_close(y->data[2], 0.66524095577481770, TU_TOL);
    /* [1e4, 0, 0]: finite and exact, exp(-1e4) underflows to 0 */
    cr_assert_eq(y->data[3], 1);
    cr_assert_eq(y->data[4], 0);
    cr_assert_eq(y->data[5], 0);
}

Test(softmax, log_softmax_hand_values)
{
    tg_real xv[] = {1, 2, 3, 1e4, 0, -1e4};
    tg_tensor *y = tg_log_softmax(T, tg_tensor_from(T, xv, 2, (int[]){2, 3}));
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    /* log(e^1 + e^2 + e^3) = 3.40760596444438 */
    tu_close(y->data[0], -2.40760596444438, TU_TOL);
    tu_close(y->data[1], -1.40760596444438, TU_TOL);
    tu_close(y->data[2], -0.40760596444438, TU_TOL);
    cr_assert_eq(y->data[3], 0);
    cr_assert_eq(y->data[4], -1e4);
    cr_assert_eq(y->data[5], -2e4);
}

/* Large logits: (x - max) - log sum, not x - (max + log sum), whose float sum
 * rounds at the scale of 1e4 (y0 = -0.37109375, its grad off by 1e-3). */
Test(softmax, log_softmax_large_logits_keep_their_digits)
{
    const double xd[4] = {1e4, 9999, 9997.5, 9990}, seed[4] = {1, -2, 0.5, 3};
    tg_real xv[4], sv[4];
    for (int j = 0; j < 4; j++) xv[j] = (tg_real)xd[j], sv[j] = (tg_real)seed[j];
    tg_tensor *x = tg_tensor_from(T, xv, 1, (int[]){4});
    x->requires_grad = true;
    tg_tensor *y = tg_log_softmax(T, x);
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    cr_assert_eq(tg_backward_seed(T, y, sv), 0);
    double sum = 0, gsum = 0;
    for (int j = 0; j < 4; j++) sum += exp(xd[j] - 1e4), gsum += seed[j];
    for (int j = 0; j < 4; j++) {
        double want = (xd[j] - 1e4) - log(sum), gwant = seed[j] - exp(want) * gsum;
        tu_close(y->data[j], want, 1e-6);     /* exact -0.37157034 for j = 0 */
        tu_close(x->grad[j], gwant, 2e-6);
    }
}

/* Probabilities from 1 down to e^-80 keep their relative accuracy (the float
 * build uses its own vectorised exp): within a few ulp of exp, plus the
 * rounding of the argument x - max, which exp turns into relative error. */
Test(softmax, wide_range_relative_accuracy)
{
    enum { N = 161 };
    tg_real xv[N];
    for (int j = 0; j < N; j++) xv[j] = (tg_real)(-0.5 * j + 3 * sin(j));
    tg_tensor *x = tg_tensor_from(T, xv, 1, (int[]){N});
    tg_tensor *y = tg_softmax(T, x), *ly = tg_log_softmax(T, x);
    cr_assert(y && ly);
    double mx = -INFINITY, sum = 0;
    /* not fmax: GCC 12's aarch64 vectorizer crashes on that reduction */
    for (int j = 0; j < N; j++) mx = xv[j] > mx ? xv[j] : mx;
    for (int j = 0; j < N; j++) sum += exp((double)xv[j] - mx);
#ifdef TAPEGRAD_DOUBLE
    const double rel = 1e-13;
#else
    const double rel = 4e-7;
#endif
    for (int j = 0; j < N; j++) {
        double want = exp((double)xv[j] - mx) / sum, lwant = (double)xv[j] - mx - log(sum);
        double tol = rel * (1 + fabs((double)xv[j] - mx));
        cr_assert(fabs(y->data[j] - want) <= tol * want, "y[%d] = %.9g, want %.9g", j, (double)y->data[j], want);
        cr_assert(fabs(ly->data[j] - lwant) <= tol, "log y[%d] = %g, want %g", j,
                  (double)ly->data[j], lwant);
    }
}

Test(softmax, rows_sum_to_one)
{
    tg_tensor *x = tu_rand(&R, -5, 5, 3, (int[]){3, 4, 7});
    tg_tensor *y = tg_softmax(T, x), *ly = tg_log_softmax(T, x);
    cr_assert(y && ly);
    for (int r = 0; r < 12; r++) {
        double s = 0;
        for (int j = 0; j < 7; j++) {
            s += y->data[r * 7 + j];
            tu_close(exp(ly->data[r * 7 + j]), y->data[r * 7 + j], 1e-5);
        }
        tu_close(s, 1.0, 1e-6);
    }
    tg_tensor_free(x);
}

/* ---- masks ------------------------------------------------------------------ */

Test(softmax, mask_visible_matches_rules)
{
    cr_assert(tg_mask_empty(NULL));
    cr_assert(tg_mask_empty(&(tg_mask){0}));
    for (int kind = 0; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        cr_assert(!tg_mask_empty(&m), "kind %d", kind);
        tg_tensor *v = tg_mask_visible(T, &m, B_, H_, LQ, LK);
        cr_assert_not_null(v, "kind %d: %s", kind, tg_tape_error(T));
        cr_assert(v->dtype == TG_BOOL && v->ndim == 4 && v->shape[0] == B_ && v->shape[1] == H_ &&
                  v->shape[2] == LQ && v->shape[3] == LK);
        const uint8_t *vis = tg_data(v, TG_BOOL);
        for (int e = 0; e < B_ * H_ * LQ * LK; e++) {
            int b = e / (H_ * LQ * LK), h = e / (LQ * LK) % H_, i = e / LK % LQ, j = e % LK;
            cr_assert_eq(vis[e], ref_visible(&m, B_, H_, b, h, i, j, LK), "kind %d (%d,%d,%d,%d)", kind, b, h, i, j);
        }
    }
    /* more queries than keys, window with causal: i - 2 < j <= i */
    tg_mask m = {.causal = true, .window = 2};
    const uint8_t *vis = tg_data(tg_mask_visible(T, &m, 1, 1, 6, 3), TG_BOOL);
    cr_assert_not_null(vis);
    for (int e = 0; e < 18; e++)
        cr_assert_eq(vis[e], ref_visible(&m, 1, 1, 0, 0, e / 3, e % 3, 3), "e %d", e);
    cr_assert_eq(vis[5 * 3 + 2], 0);  /* query 5 sees nothing */
    /* no mask: all visible */
    vis = tg_data(tg_mask_visible(T, NULL, 1, 1, 1, 2), TG_BOOL);
    cr_assert(vis && vis[0] == 1 && vis[1] == 1);
}

/* Runs tg_softmax_masked on random scores of the given shape and compares
 * every entry with the reference: exact zeros where masked, rows summing to
 * one (or all zeros). Returns the number of masked entries. */
static int check_masked(const tg_mask *m, int nd, const int *shape, double scale)
{
    tg_tensor *a = tu_rand(&R, -2, 2, nd, shape);
    tg_tensor *y = tg_softmax_masked(T, a, m, scale);
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    int Lq = shape[nd - 2], Lk = shape[nd - 1], B = nd >= 3 ? shape[0] : 1, H = nd == 4 ? shape[1] : 1;
    int masked = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Lq; i++) {
                size_t off = (((size_t)b * H + h) * Lq + i) * Lk;
                double raw[MAXK], w[MAXK], sum = 0;
                bool vis[MAXK], any = false;
                for (int j = 0; j < Lk; j++) raw[j] = a->data[off + j];
                ref_weights(m, B, H, b, h, i, Lk, raw, scale, w, vis);
                for (int j = 0; j < Lk; j++) {
                    tg_real v = y->data[off + j];
                    if (!vis[j]) cr_assert(v == 0, "masked (%d,%d,%d,%d) = %g", b, h, i, j, (double)v);
                    masked += !vis[j];
                    any |= vis[j];
                    tu_close(v, w[j], TU_TOL);
                    sum += v;
                }
                tu_close(sum, any ? 1.0 : 0.0, 1e-5);
            }
    tg_tensor_free(a);
    return masked;
}

Test(softmax, masked_each_rule_and_combined)
{
    for (int kind = 0; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind);
        int masked = check_masked(&m, 4, (int[]){B_, H_, LQ, LK}, 0.7);
        if (kind != 7) cr_assert_gt(masked, 0, "kind %d masks nothing", kind);
    }
    /* 3-D [B, Lq, Lk] and 2-D [Lq, Lk] (B = 1) inputs */
    tg_mask c = {.causal = true, .key_lens = MC_I32(LENS)};
    cr_assert_gt(check_masked(&c, 3, (int[]){B_, LQ, LK}, 1.0), 0);
    tg_mask k2 = {.attn = MC_BOOL(DENY2, LQ, LK), .window = 3};
    cr_assert_gt(check_masked(&k2, 2, (int[]){LQ, LK}, 1.0), 0);
    check_masked(NULL, 4, (int[]){B_, H_, LQ, LK}, 0.5);
}

/* ---- fully masked rows ------------------------------------------------------------ */

Test(softmax, fully_masked_row_softmax_zero_grad)
{
    tg_mask m = {.key_lens = MC_I32(LENS0)};
    tg_tensor *a = tu_rand(&R, -1, 1, 4, (int[]){B_, H_, LQ, LK});
    tg_tensor *y = tg_softmax_masked(T, a, &m, 1.0);
    cr_assert_not_null(y);
    tg_real seed[B_ * H_ * LQ * LK];
    for (int e = 0; e < B_ * H_ * LQ * LK; e++) seed[e] = (tg_real)(e % 7) - 3;
    cr_assert_eq(tg_backward_seed(T, y, seed), 0, "%s", tg_tape_error(T));
    for (int e = 0; e < B_ * H_ * LQ * LK; e++) {
        cr_assert(isfinite(a->grad[e]));
        if (e < H_ * LQ * LK) cr_assert(y->data[e] == 0 && a->grad[e] == 0, "e %d", e);
    }
    tg_tensor_free(a);
}

/* ---- gradchecks: softmax family ------------------------------------------------- */

typedef struct sm_ctx {
    int op;            /* 0 softmax, 1 log_softmax, 2 masked */
    const tg_mask *mask;
    double scale;
} sm_ctx;

static tg_tensor *f_softmax(tg_tape *t, tg_tensor **in, void *vc)
{
    sm_ctx *c = vc;
    if (c->op == 0) return tg_softmax(t, in[0]);
    if (c->op == 1) return tg_log_softmax(t, in[0]);
    return tg_softmax_masked(t, in[0], c->mask, c->scale);
}

Test(softmax, gradcheck_softmax_and_log_softmax)
{
    for (int op = 0; op < 2; op++) {
        tg_tensor *x = tu_rand(&R, -2, 2, 3, (int[]){2, 3, 5});
        tu_gradcheck(f_softmax, &(sm_ctx){.op = op}, &x, 1);
        tg_tensor_free(x);
    }
}

Test(softmax, gradcheck_masked_each_kind)
{
    for (int kind = -1; kind < N_KINDS; kind++) {
        tg_mask m = mask_kind(kind < 0 ? 0 : kind);
        tg_tensor *x = tu_rand(&R, -1.5, 1.5, 4, (int[]){B_, H_, LQ, LK});
        sm_ctx c = {.op = 2, .mask = kind < 0 ? NULL : &m, .scale = 0.8};
        tg_gradcheck_result r = tg_gradcheck(f_softmax, &c, &x, 1, NULL);
        tg_tensor_free(x);
        cr_assert(r.ok, "kind %d: %s", kind, tg_error());
    }
}

/* ---- errors ---------------------------------------------------------------------------- */

Test(softmax, softmax_family_rejects_bad_inputs)
{
    tg_tensor *a1 = tg_tensor_zeros(T, 1, (int[]){5});
    tu_expect_error(T, tg_softmax_masked(T, a1, NULL, 1), "tg_softmax_masked", "[5]");
    a1 = tg_tensor_zeros(T, 2, (int[]){4, 5});
    tu_expect_error(T, tg_softmax_masked(T, a1, NULL, NAN), "tg_softmax_masked: scale", "[4,5]");
    tu_expect_error(T, tg_softmax(T, NULL), "tg_softmax", "NULL");
    tu_expect_error(T, tg_log_softmax(T, NULL), "tg_log_softmax", "NULL");
    tu_expect_error(T, tg_softmax_masked(T, NULL, NULL, 1), "tg_softmax_masked", "NULL");
    /* sticky: a later NULL keeps the first message */
    a1 = tg_tensor_zeros(T, 1, (int[]){5});
    cr_assert_null(tg_softmax_masked(T, a1, NULL, 1));
    cr_assert_null(tg_softmax(T, NULL));
    cr_assert_null(tg_softmax_masked(T, NULL, NULL, 1));
    cr_assert(strstr(tg_tape_error(T), "[5]"));
}
