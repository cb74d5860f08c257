/* Helpers shared by the optimizer suites (test_optim.c, test_optim_torch.c,
 * test_scaler.c): the fixtures (tests/fixtures/optim_*.safetensors, from
 * bench/torch/make_optim_fixtures.py), the two problems and the
 * configurations.
 *
 * Two problems, data and initial values read from the fixture:
 *   quad    f = 0.5 * sum(a * (p - c)^2), parameters "w" [2,3] and "b" [3]
 *   linreg  mean((x weight^T + bias - y)^2), x [16,3], y [16,2], through the
 *           tape (tg_matmul, tg_sub, tg_mul, tg_mean)
 *
 * Tolerances, |got - want| <= tol * max(|want|, floor), over 100 steps
 * (measured worst cases in brackets):
 *   torch, same precision: tol 1e-5 in float [3e-6], 1e-12 in double [6e-15],
 *     floor 1e-2 (relative for any value this size; the values are O(1)).
 *     The same arithmetic as torch, up to its fused multiply-adds.
 *   formulas in double: double build 1e-12, floor 1e-2 [1.2e-13]; float build
 *     2e-5, floor 1 [4e-6]: the float run rounds each coefficient once (0.9f,
 *     1 - lr*wd, ...) and each update a few times, ~3e-8 relative a step,
 *     which adds up over 100 steps (AdamW's 1 - lr*wd factor compounds); a
 *     trajectory crossing zero makes pure relative error meaningless there.
 *   torch, other precision: 1e-5, floor 1 [4e-6], for the same reasons.
 */
#ifndef TAPEGRAD_TESTS_OPTIM_UTIL_H
#define TAPEGRAD_TESTS_OPTIM_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/io/io.h>
#include <tapegrad/optim/optim.h>
#include "test_util.h"

#ifdef TAPEGRAD_DOUBLE
#define OWN_FIXTURE "optim_f64"
#define OTHER_FIXTURE "optim_f32"
#define FORMULA_TOL 1e-12
#define FORMULA_FLOOR 1e-2
#define TORCH_TOL 1e-12
#define ST_DTYPE TG_F64
#else
#define OWN_FIXTURE "optim_f32"
#define OTHER_FIXTURE "optim_f64"
#define FORMULA_TOL 2e-5
#define FORMULA_FLOOR 1.0
#define TORCH_TOL 1e-5
#define ST_DTYPE TG_F32
#endif
#define TORCH_FLOOR 1e-2
#define CROSS_TOL 1e-5  /* either build against the other precision's run */
#define CROSS_FLOOR 1.0
#define PI 3.14159265358979323846

/* |got - want| <= tol * max(|want|, floor) */
#define rel_close(got, want, tol, floor, ...)                                                    \
    cr_assert(fabs((double)(got) - (double)(want)) <= (tol) * fmax(fabs((double)(want)), floor), \
              __VA_ARGS__)

/* test_optim*'s configurations (unused by test_scaler, which has its own) */
static const char *CONFIGS[] __attribute__((unused)) = {"adam", "adam_l2", "adam_eps", "adamw", "adamw_no1d", "sgd",
                                                        "sgd_momentum", "sgd_nesterov", "sgd_dampening", "sgd_wd"};
#define N_CONFIGS (int)(sizeof CONFIGS / sizeof *CONFIGS)

static inline tg_safetensors *fixture(const char *stem)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s.safetensors", TG_SOURCE_DIR, stem);
    tg_safetensors *s = NULL;
    cr_assert_eq(tg_st_load(path, &s), 0, "%s", tg_error());
    return s;
}

static inline const tg_tensor *fx_get(const tg_safetensors *s, const char *name)
{
    const tg_tensor *x = tg_st_get(s, name);
    cr_assert_not_null(x, "fixture has no '%s'", name);
    return x;
}

/* ---- the two problems ---------------------------------------------------- */

typedef struct problem {
    bool quad;
    tg_params *p;
    tg_tensor *w, *b;      /* "w"/"b" (quad) or "weight"/"bias" (linreg) */
    tg_real a[9], c[9];    /* quad: flat like the store (w then b) */
    tg_tensor *x, *y;      /* linreg data */
    tg_tape *t;
} problem;

static inline void copy_fx(tg_real *dst, const tg_safetensors *fx, const char *name, size_t n)
{
    const tg_tensor *x = fx_get(fx, name);
    cr_assert_eq(x->size, n, "%s", name);
    memcpy(dst, x->data, n * sizeof(tg_real));
}

static inline void problem_init(problem *pr, const tg_safetensors *fx, bool quad)
{
    memset(pr, 0, sizeof *pr);
    pr->quad = quad;
    pr->p = tg_params_new();
    const char *wn = quad ? "w" : "weight", *bn = quad ? "b" : "bias";
    pr->w = tg_params_add(pr->p, wn, 2, (int[]){2, 3});
    pr->b = tg_params_add(pr->p, bn, 1, (int[]){quad ? 3 : 2});
    cr_assert(pr->w && pr->b);
    char name[64];
    snprintf(name, sizeof name, "%s.init.%s", quad ? "quad" : "linreg", wn);
    copy_fx(pr->w->data, fx, name, pr->w->size);
    snprintf(name, sizeof name, "%s.init.%s", quad ? "quad" : "linreg", bn);
    copy_fx(pr->b->data, fx, name, pr->b->size);
    if (quad) {
        copy_fx(pr->a, fx, "quad.a.w", 6);
        copy_fx(pr->a + 6, fx, "quad.a.b", 3);
        copy_fx(pr->c, fx, "quad.c.w", 6);
        copy_fx(pr->c + 6, fx, "quad.c.b", 3);
        return;
    }
    pr->x = tg_tensor_alloc(2, (int[]){16, 3});
    pr->y = tg_tensor_alloc(2, (int[]){16, 2});
    copy_fx(pr->x->data, fx, "linreg.x", 48);
    copy_fx(pr->y->data, fx, "linreg.y", 32);
    pr->t = tg_tape_new();
}

static inline void problem_free(problem *pr)
{
    tg_params_free(pr->p);
    tg_tensor_free(pr->x);
    tg_tensor_free(pr->y);
    tg_tape_free(pr->t);
}

/* loss = mean((x W^T + b - y)^2) on the tape. */
static inline tg_tensor *linreg_loss(tg_tape *t, tg_params *p, tg_tensor *x, tg_tensor *y)
{
    tg_tensor *w = tg_params_at(p, 0), *b = tg_params_at(p, 1);
    tg_tensor *d = tg_sub(t, tg_matmul(t, x, w, b, TG_TRANS_B), y);
    tg_tensor *loss = tg_mean(t, tg_mul(t, d, d));
    cr_assert_not_null(loss, "%s", tg_tape_error(t));
    return loss;
}

/* The grads of linreg_loss; returns the loss. */
static inline double linreg_backward(tg_tape *t, tg_params *p, tg_tensor *x, tg_tensor *y)
{
    tg_tensor *loss = linreg_loss(t, p, x, y);
    tg_params_zero_grad(p);
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    double v = loss->data[0];
    tg_tape_reset(t);
    return v;
}

/* The store's grads at its current parameters. */
static inline void problem_grad(problem *pr)
{
    if (!pr->quad) {
        linreg_backward(pr->t, pr->p, pr->x, pr->y);
        return;
    }
    const tg_real *p = tg_params_data(pr->p);
    tg_real *g = tg_params_grad(pr->p);
    for (int i = 0; i < 9; i++) g[i] = pr->a[i] * (p[i] - pr->c[i]);
}

/* ---- configurations ------------------------------------------------------ */

/* The fixture's configuration `name` ("adam", "sgd_nesterov", ...) as options. */
static inline tg_optim_opts config_from(const tg_safetensors *fx, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "config.%s", name);
    const char *s = tg_st_meta(fx, key);
    cr_assert_not_null(s, "fixture has no metadata '%s'", key);
    double v[7];
    int n = 0;
    for (char *end; n < 7; s = end, n++) {
        v[n] = strtod(s, &end);
        if (end == s) break;
    }
    bool adam = strncmp(name, "adam", 4) == 0;
    cr_assert_eq(n, adam ? 7 : 5, "'%s' = \"%s\"", key, tg_st_meta(fx, key));
    if (adam)
        return (tg_optim_opts){.kind = v[5] != 0 ? TG_ADAMW : TG_ADAM, .lr = v[0], .beta1 = v[1], .beta2 = v[2],
                               .eps = v[3], .weight_decay = v[4], .no_decay_1d = v[6] != 0};
    return (tg_optim_opts){.kind = TG_SGD, .lr = v[0], .momentum = v[1], .dampening = v[2], .weight_decay = v[3],
                           .nesterov = v[4] != 0};
}

static inline tg_optim *optim_new(tg_params *p, const tg_optim_opts *o)
{
    tg_optim *opt = tg_optim_new(p, o);
    cr_assert_not_null(opt, "%s", tg_error());
    return opt;
}

static inline void optim_step(tg_optim *o) { cr_assert_eq(tg_optim_step(o), 0, "%s", tg_error()); }
static inline void optim_set_lr(tg_optim *o, double lr) { cr_assert_eq(tg_optim_set_lr(o, lr), 0, "%s", tg_error()); }

#endif
