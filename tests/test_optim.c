/* optim/: Adam, AdamW and SGD against the update formulas (computed here in
 * double); gradient clipping; learning-rate schedules; a real fit; option
 * checks and allocations. The problems and tolerances are described in
 * optim_util.h; torch.optim trajectories and state resume: test_optim_torch.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim_util.h"

/* ---- the update formulas, in double --------------------------------------- */

/* The same gradient in double, by hand, at the flat parameters q. */
static void ref_grad(const problem *pr, const double *q, double *g)
{
    if (pr->quad) {
        for (int i = 0; i < 9; i++) g[i] = pr->a[i] * (q[i] - pr->c[i]);
        return;
    }
    const double *W = q, *bias = q + 6;
    memset(g, 0, 8 * sizeof *g);
    for (int n = 0; n < 16; n++)
        for (int o = 0; o < 2; o++) {
            double r = bias[o] - pr->y->data[n * 2 + o];
            for (int k = 0; k < 3; k++) r += pr->x->data[n * 3 + k] * W[o * 3 + k];
            r *= 2.0 / 32;  /* d mean(r^2) / dr over 32 entries */
            for (int k = 0; k < 3; k++) g[o * 3 + k] += r * pr->x->data[n * 3 + k];
            g[6 + o] += r;
        }
}

typedef struct ref {
    double q[9], m[9], v[9], buf[9];
    int n, n_w;  /* all values; those of the 2-D weight (the rest is 1-D) */
    long t;
} ref;

/* One step at gradient g, textbook form: Adam with bias-corrected m-hat,
 * v-hat (Kingma & Ba), AdamW decaying p first, SGD as torch documents it. */
static void ref_step(ref *r, const tg_optim_opts *c, const double *g0)
{
    r->t++;
    for (int i = 0; i < r->n; i++) {
        double g = g0[i], *q = &r->q[i];
        double wd = c->no_decay_1d && i >= r->n_w ? 0 : c->weight_decay;
        if (c->kind == TG_SGD) {
            g += wd * *q;
            if (c->momentum != 0) {
                r->buf[i] = r->t == 1 ? g : c->momentum * r->buf[i] + (1 - c->dampening) * g;
                g = c->nesterov ? g + c->momentum * r->buf[i] : r->buf[i];
            }
            *q -= c->lr * g;
            continue;
        }
        if (c->kind == TG_ADAMW) *q -= c->lr * wd * *q;
        else g += wd * *q;
        r->m[i] = c->beta1 * r->m[i] + (1 - c->beta1) * g;
        r->v[i] = c->beta2 * r->v[i] + (1 - c->beta2) * g * g;
        double mhat = r->m[i] / (1 - pow(c->beta1, r->t)), vhat = r->v[i] / (1 - pow(c->beta2, r->t));
        *q -= c->lr * mhat / (sqrt(vhat) + c->eps);
    }
}

/* 100 steps of c, and of the formulas, compared after every step; with a
 * schedule s (NULL: c's constant lr) set before each step. */
static void check_formulas(const tg_safetensors *fx, bool quad, const char *name, const tg_optim_opts *c0,
                           const tg_schedule *s)
{
    problem pr;
    problem_init(&pr, fx, quad);
    tg_optim *o = optim_new(pr.p, c0);
    tg_optim_opts c = *c0;
    ref r = {.n = (int)tg_params_numel(pr.p), .n_w = 6};
    const tg_real *p = tg_params_data(pr.p);
    for (int i = 0; i < r.n; i++) r.q[i] = p[i];
    double g[9];
    for (int step = 1; step <= 100; step++) {
        if (s) {
            double lr = tg_lr_at(s, step - 1);
            optim_set_lr(o, lr);
            c.lr = lr;
        }
        problem_grad(&pr);
        optim_step(o);
        ref_grad(&pr, r.q, g);
        ref_step(&r, &c, g);
        for (int i = 0; i < r.n; i++)
            rel_close(p[i], r.q[i], FORMULA_TOL, FORMULA_FLOOR, "%s %s step %d p[%d] = %.17g, formula %.17g",
                      quad ? "quad" : "linreg", name, step, i, (double)p[i], r.q[i]);
    }
    tg_optim_free(o);
    problem_free(&pr);
}

Test(optim, formulas_100_steps)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    for (int k = 0; k < N_CONFIGS; k++) {
        tg_optim_opts c = config_from(fx, CONFIGS[k]);
        check_formulas(fx, true, CONFIGS[k], &c, NULL);
        check_formulas(fx, false, CONFIGS[k], &c, NULL);
    }
    /* L2 (coupled) decay with the 1-D parameters left out, on a schedule */
    tg_optim_opts c = config_from(fx, "adam_l2");
    c.no_decay_1d = true;
    tg_schedule cos = tg_schedule_cosine(0.05, 0.005, 10, 90);
    check_formulas(fx, true, "adam_l2_no1d", &c, &cos);
    check_formulas(fx, false, "adam_l2_no1d", &c, &cos);
    c = config_from(fx, "sgd_wd");
    tg_schedule lin = tg_schedule_linear(0.1, 0.01, 5, 80);
    check_formulas(fx, true, "sgd_wd_linear", &c, &lin);
    check_formulas(fx, false, "sgd_wd_linear", &c, &lin);
    tg_st_free(fx);
}

/* ---- gradient clipping ----------------------------------------------------- */

/* A store with grads {3, 4} ("w" [2]) and {0, 12} ("b" [2]): norm 13. */
static tg_params *clip_store(void)
{
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 1, (int[]){2});
    tg_params_add(p, "b", 1, (int[]){2});
    tg_real g[] = {3, 4, 0, 12};
    memcpy(tg_params_grad(p), g, sizeof g);
    return p;
}

Test(optim, clip_scales_to_max_norm_keeping_direction)
{
    tg_params *p = clip_store();
    tg_real g0[4];
    memcpy(g0, tg_params_grad(p), sizeof g0);
    double norm = tg_clip_grad_norm(p, 6.5);
    cr_assert_eq(norm, 13.0);
    const tg_real *g = tg_params_grad(p);
    double coef = 6.5 / (13 + 1e-6);  /* torch's formula */
    for (int i = 0; i < 4; i++) tu_close(g[i], g0[i] * coef, TU_TOL);
    /* direction: every component scaled by the same factor */
    for (int i = 0; i < 4; i++)
        if (g0[i] != 0) tu_close(g[i] / g0[i], g[1] / g0[1], TU_TOL);
    cr_assert_eq(g[2], 0);
    double after = tg_grad_norm(p);
    cr_assert(after <= 6.5 && after > 6.5 - 1e-5, "norm after clipping %.10g", after);
    tg_params_free(p);
}

Test(optim, clip_below_threshold_changes_nothing)
{
    tg_params *p = clip_store();
    tg_real g0[4];
    memcpy(g0, tg_params_grad(p), sizeof g0);
    cr_assert_eq(tg_clip_grad_norm(p, 13.1), 13.0);
    cr_assert_eq(memcmp(g0, tg_params_grad(p), sizeof g0), 0);
    cr_assert_eq(tg_clip_grad_norm(p, 1e9), 13.0);
    cr_assert_eq(memcmp(g0, tg_params_grad(p), sizeof g0), 0);
    tg_params_free(p);
}

Test(optim, clip_zero_and_nonfinite_grads)
{
    tg_params *p = clip_store();
    tg_real *g = tg_params_grad(p);
    tg_params_zero_grad(p);
    cr_assert_eq(tg_clip_grad_norm(p, 1.0), 0.0);
    cr_assert_eq(tg_clip_grad_norm(p, 0.0), 0.0);  /* 0 / (0 + 1e-6) = 0: scaled by 0, still 0 */
    for (int i = 0; i < 4; i++) cr_assert_eq(g[i], 0, "g[%d] = %g", i, (double)g[i]);
    /* max_norm 0 zeroes the grads, as torch */
    g[0] = 2;
    cr_assert_eq(tg_clip_grad_norm(p, 0.0), 2.0);
    cr_assert_eq(g[0], 0);
    /* a NaN or Inf norm is returned; the grads are left for the caller to see */
    g[0] = 1, g[1] = NAN;
    cr_assert(isnan(tg_clip_grad_norm(p, 1.0)));
    cr_assert_eq(g[0], 1);
    g[1] = INFINITY;
    cr_assert(isinf(tg_clip_grad_norm(p, 1.0)));
    cr_assert_eq(g[0], 1);
    /* bad max_norm */
    g[1] = 5;
    cr_assert_eq(tg_clip_grad_norm(p, -1.0), -1.0);
    cr_assert_str_eq(tg_error(), "tg_clip_grad_norm: max_norm = -1 must be >= 0");
    cr_assert_eq(tg_clip_grad_norm(p, NAN), -1.0);
    cr_assert_eq(tg_clip_grad_norm(NULL, 1.0), -1.0);
    cr_assert_eq(tg_grad_norm(NULL), -1.0);
    cr_assert_eq(g[1], 5);
    tg_params_free(p);
}

/* ---- schedules --------------------------------------------------------------- */

Test(optim, schedule_values_by_hand)
{
    tg_schedule cos = tg_schedule_cosine(1e-3, 1e-4, 10, 110);
    cr_assert_eq(tg_schedule_check(&cos), 0);
    tu_close(tg_lr_at(&cos, 0), 1e-4, 1e-15);   /* lr * 1/10: the first update moves */
    tu_close(tg_lr_at(&cos, 4), 5e-4, 1e-15);
    tu_close(tg_lr_at(&cos, 9), 1e-3, 1e-15);   /* end of warmup: the peak */
    tu_close(tg_lr_at(&cos, 10), 1e-3, 1e-15);  /* r = 0 */
    tu_close(tg_lr_at(&cos, 35), 8.681980515339464e-4, 1e-15);  /* r = 1/4: 1e-4 + 9e-4 (1 + cos(pi/4)) / 2 */
    tu_close(tg_lr_at(&cos, 60), 5.5e-4, 1e-15);  /* r = 1/2 */
    cr_assert_eq(tg_lr_at(&cos, 110), 1e-4);    /* the floor, exactly */
    cr_assert_eq(tg_lr_at(&cos, 100000), 1e-4);
    cr_assert_eq(tg_lr_at(&cos, -5), tg_lr_at(&cos, 0));

    tg_schedule lin = tg_schedule_linear(0.1, 0.01, 5, 95);
    tu_close(tg_lr_at(&lin, 0), 0.02, 1e-15);
    tu_close(tg_lr_at(&lin, 4), 0.1, 1e-15);
    tu_close(tg_lr_at(&lin, 50), 0.055, 1e-15);  /* r = 45/90 */
    tu_close(tg_lr_at(&lin, 77), 0.1 - 0.09 * 72.0 / 90, 1e-15);
    cr_assert_eq(tg_lr_at(&lin, 95), 0.01);
    cr_assert_eq(tg_lr_at(&lin, 96), 0.01);

    tg_schedule flat = tg_schedule_constant(0.3, 0), warm = tg_schedule_constant(0.3, 3);
    cr_assert_eq(tg_lr_at(&flat, 0), 0.3);
    cr_assert_eq(tg_lr_at(&flat, 1000000), 0.3);
    tu_close(tg_lr_at(&warm, 0), 0.1, 1e-15);
    tu_close(tg_lr_at(&warm, 1), 0.2, 1e-15);
    cr_assert_eq(tg_lr_at(&warm, 2), 0.3);
    cr_assert_eq(tg_lr_at(&warm, 3), 0.3);
}

Test(optim, schedule_continuous_monotone_and_reaches_floor)
{
    tg_schedule ss[] = {tg_schedule_cosine(6e-4, 6e-5, 20, 200), tg_schedule_linear(6e-4, 0, 20, 200),
                        tg_schedule_cosine(1.0, 0.5, 0, 7)};
    for (int k = 0; k < 3; k++) {
        const tg_schedule *s = &ss[k];
        cr_assert_eq(tg_schedule_check(s), 0);
        if (s->warmup) cr_assert_eq(tg_lr_at(s, s->warmup - 1), tg_lr_at(s, s->warmup));  /* continuity */
        cr_assert_eq(tg_lr_at(s, s->warmup), s->lr);
        /* no jump bigger than one step's share of the range anywhere */
        double max_jump = (s->lr - s->min_lr) * PI / 2 / (double)(s->total - s->warmup) + 1e-15;
        for (long i = 1; i < s->total + 10; i++) {
            double prev = tg_lr_at(s, i - 1), cur = tg_lr_at(s, i);
            if (i < s->warmup) cr_assert(cur > prev, "schedule %d step %ld", k, i);
            else cr_assert(cur <= prev && prev - cur <= max_jump, "schedule %d step %ld: %g -> %g", k, i, prev, cur);
        }
        cr_assert_eq(tg_lr_at(s, s->total), s->min_lr);
        cr_assert(tg_lr_at(s, s->total - 1) > s->min_lr);
    }
}

Test(optim, schedule_check_rejects)
{
    tg_schedule bad[] = {tg_schedule_cosine(1e-3, 1e-4, 10, 10), tg_schedule_linear(1e-3, 2e-3, 0, 10),
                         tg_schedule_cosine(-1, 0, 0, 10), tg_schedule_constant(1e-3, -1),
                         tg_schedule_linear(NAN, 0, 0, 10)};
    const char *expect[] = {"total = 10 must exceed warmup = 10", "min_lr", "lr = -1", "warmup = -1", "lr = nan"};
    for (int k = 0; k < 5; k++) {
        tg_error_clear();
        cr_assert_eq(tg_schedule_check(&bad[k]), -1, "case %d", k);
        cr_assert(strstr(tg_error(), expect[k]), "case %d: \"%s\"", k, tg_error());
    }
}

/* ---- a real fit, options, allocations ------------------------------------------ */

Test(optim, adam_fits_a_line)
{
    /* y = 3x - 2 on 32 points of [-1, 1] with Linear(1, 1) from zero */
    tg_params *p = tg_params_new();
    tg_tensor *w = tg_params_add(p, "weight", 2, (int[]){1, 1}), *b = tg_params_add(p, "bias", 1, (int[]){1});
    tg_tensor *x = tg_tensor_alloc(2, (int[]){32, 1}), *y = tg_tensor_alloc(2, (int[]){32, 1});
    for (int i = 0; i < 32; i++) {
        x->data[i] = (tg_real)(-1 + 2.0 * i / 31);
        y->data[i] = 3 * x->data[i] - 2;
    }
    tg_tape *t = tg_tape_new();
    tg_optim_opts o = tg_optim_defaults(TG_ADAM);
    o.lr = 0.1;
    tg_optim *a = optim_new(p, &o);
    tg_schedule s = tg_schedule_cosine(0.1, 1e-4, 10, 300);
    double loss = 0;
    for (int i = 0; i < 300; i++) {
        optim_set_lr(a, tg_lr_at(&s, tg_optim_steps(a)));
        loss = linreg_backward(t, p, x, y);
        optim_step(a);
    }
    cr_assert(fabs(w->data[0] - 3) < 1e-4 && fabs(b->data[0] + 2) < 1e-4, "w = %.8g, b = %.8g, loss %.3g",
              (double)w->data[0], (double)b->data[0], loss);
    tg_optim_free(a);
    tg_tape_free(t);
    tg_tensor_free(x);
    tg_tensor_free(y);
    tg_params_free(p);
}

/* Each case changes one field of its kind's defaults and must be refused
 * with a message naming it. */
Test(optim, bad_options_rejected_with_a_message)
{
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 2, (int[]){2, 2});
    tg_optim_opts ad = tg_optim_defaults(TG_ADAM), aw = tg_optim_defaults(TG_ADAMW), sd = tg_optim_defaults(TG_SGD);
    struct { tg_optim_opts o; const char *expect; } bad[] = {
        {ad, "lr = -0.1"}, {ad, "lr = nan"}, {ad, "beta1 = 1 is outside [0, 1)"}, {aw, "beta2 = -0.5"},
        {ad, "eps = 0"}, {aw, "eps = -1e-08"}, {ad, "weight_decay = -0.01"},
        {ad, "momentum, dampening and nesterov are SGD options, the kind is Adam"},
        {aw, "momentum, dampening and nesterov are SGD options, the kind is AdamW"},
        {sd, "lr = -1"}, {sd, "momentum = -0.9"}, {sd, "dampening = 1.5"}, {sd, "nesterov needs momentum > 0"},
        {sd, "nesterov needs momentum > 0 and dampening = 0"}, {sd, "weight_decay = -1"},
        {sd, "beta1, beta2 and eps are Adam options, the kind is SGD"}, {sd, "unknown kind 7"},
    };
    bad[0].o.lr = -0.1, bad[1].o.lr = NAN, bad[2].o.beta1 = 1, bad[3].o.beta2 = -0.5;
    bad[4].o.eps = 0, bad[5].o.eps = -1e-8, bad[6].o.weight_decay = -0.01, bad[7].o.momentum = 0.9;
    bad[8].o.nesterov = true, bad[9].o.lr = -1, bad[10].o.momentum = -0.9, bad[11].o.dampening = 1.5;
    bad[12].o.nesterov = true;
    bad[13].o = (tg_optim_opts){.kind = TG_SGD, .lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true};
    bad[14].o.weight_decay = -1, bad[15].o.eps = 1e-8, bad[16].o.kind = (tg_optim_kind)7;
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        tg_error_clear();
        cr_assert_null(tg_optim_new(p, &bad[k].o), "case %zu", k);
        cr_assert(strstr(tg_error(), bad[k].expect), "case %zu: \"%s\"", k, tg_error());
    }
    cr_assert_null(tg_optim_new(p, NULL));
    cr_assert_str_eq(tg_error(), "tg_optim: options are NULL");
    cr_assert_null(tg_optim_new(NULL, &sd));
    cr_assert_str_eq(tg_error(), "tg_optim_new: the parameter store is NULL");
    /* set_lr refuses a bad lr and keeps the old one */
    tg_optim *a = optim_new(p, &ad), *s = optim_new(p, &sd);
    cr_assert_eq(tg_optim_set_lr(a, -1), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_set_lr: lr = -1 must be finite and >= 0");
    cr_assert_eq(tg_optim_set_lr(a, NAN), -1);
    cr_assert_eq(tg_optim_lr(a), 1e-3);
    cr_assert_eq(tg_optim_set_lr(s, -1), -1);
    cr_assert_eq(tg_optim_lr(s), 1e-3);
    /* a store that grew after the optimizer was made: the step refuses */
    tg_params_add(p, "late", 1, (int[]){3});
    cr_assert_eq(tg_optim_step(a), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_step: the parameter store has 7 values, 4 when tg_optim_new made the "
                                 "optimizer: make a new one after adding parameters");
    cr_assert_eq(tg_optim_step(s), -1);
    cr_assert_eq(tg_optim_steps(a), 0);
    tg_optim_free(a);
    tg_optim_free(s);
    tg_params_free(p);
}

Test(optim, defaults_are_torchs)
{
    tg_optim_opts a = tg_optim_defaults(TG_ADAM), w = tg_optim_defaults(TG_ADAMW), s = tg_optim_defaults(TG_SGD);
    cr_assert(a.kind == TG_ADAM && a.lr == 1e-3 && a.beta1 == 0.9 && a.beta2 == 0.999 && a.eps == 1e-8 &&
              a.weight_decay == 0 && !a.no_decay_1d && a.momentum == 0);
    cr_assert(w.kind == TG_ADAMW && w.lr == 1e-3 && w.beta1 == 0.9 && w.beta2 == 0.999 && w.eps == 1e-8 &&
              w.weight_decay == 0.01 && !w.no_decay_1d);
    cr_assert(s.kind == TG_SGD && s.lr == 1e-3 && s.momentum == 0 && s.dampening == 0 && s.weight_decay == 0 &&
              !s.nesterov && s.beta1 == 0 && s.eps == 0);
}

/* Every kind of the list: its name parses back (case ignored), its
 * defaults are valid, and a checkpoint of one step restores into a fresh
 * optimizer of the kind. */
Test(optim, every_kind_is_a_complete_record)
{
    tg_params *p = tg_params_new();
    tg_tensor *w = tg_params_add(p, "w", 2, (int[]){2, 3});
    for (int k = 0; k < TG_OPTIM_KIND_COUNT; k++) {
        const char *name = tg_optim_kind_name((tg_optim_kind)k);
        cr_assert_not_null(name, "kind %d", k);
        char lower[16];
        size_t n = strlen(name);
        cr_assert_lt(n, sizeof lower);
        for (size_t i = 0; i <= n; i++) lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
        cr_assert_eq(tg_optim_kind_parse(lower), k, "%s", lower);
        tg_optim_opts o = tg_optim_defaults((tg_optim_kind)k);
        cr_assert_eq(o.kind, k);
        cr_assert_eq(tg_optim_check(&o), 0, "%s: %s", name, tg_error());
        o.momentum = o.kind == TG_SGD ? 0.9 : 0;  /* SGD with its buffer */
        tg_optim *a = optim_new(p, &o), *b = optim_new(p, &o);
        for (int i = 0; i < 6; i++) w->grad[i] = (tg_real)(i - 2);
        optim_step(a);
        tg_safetensors *st = tg_st_new();
        cr_assert_eq(tg_optim_state_save(a, st), 0, "%s: %s", name, tg_error());
        cr_assert_eq(tg_optim_state_load(b, st), 0, "%s: %s", name, tg_error());
        cr_assert_eq(tg_optim_steps(b), 1);
        tg_st_free(st);
        tg_optim_free(a);
        tg_optim_free(b);
    }
    cr_assert_null(tg_optim_kind_name(TG_OPTIM_KIND_COUNT));
    cr_assert_eq(tg_optim_kind_parse("adagrad"), -1);
    cr_assert_str_eq(tg_error(), "tg_optim: no optimizer is named 'adagrad'");
    tg_params_free(p);
}

Test(optim, zero_grad_clears_the_store)
{
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 1, (int[]){3});
    tg_optim_opts o = tg_optim_defaults(TG_SGD);
    tg_optim *s = optim_new(p, &o);
    for (int i = 0; i < 3; i++) tg_params_grad(p)[i] = (tg_real)(i + 1);
    tg_optim_zero_grad(s);
    for (int i = 0; i < 3; i++) cr_assert_eq(tg_params_grad(p)[i], 0);
    tg_optim_free(s);
    tg_params_free(p);
}

Test(optim, steps_allocate_nothing_and_oom_is_reported)
{
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 2, (int[]){8, 8});
    tg_params_add(p, "b", 1, (int[]){8});
    for (size_t i = 0; i < tg_params_numel(p); i++) tg_params_grad(p)[i] = (tg_real)(0.01 * (double)i - 0.3);
    tg_optim_opts ao = tg_optim_defaults(TG_ADAMW), so = tg_optim_defaults(TG_SGD);
    ao.weight_decay = 0.1;
    so.lr = 0.1, so.momentum = 0.9;
    tg_optim *a = optim_new(p, &ao), *s = optim_new(p, &so);
    uint64_t before = tg_alloc_count();
    for (int i = 0; i < 10; i++) {
        optim_step(a);
        optim_step(s);
        tg_clip_grad_norm(p, 0.5);
    }
    cr_assert_eq(tg_alloc_count(), before);
    tg_optim_free(a);
    tg_optim_free(s);
    for (uint64_t n = 1; n <= 2; n++) {
        tg_error_clear();
        tg_alloc_fail_at(n);
        cr_assert_null(tg_optim_new(p, &ao));
        tg_alloc_fail_at(0);
        cr_assert(strstr(tg_error(), "out of memory"), "%s", tg_error());
        tg_error_clear();
        tg_alloc_fail_at(n);
        cr_assert_null(tg_optim_new(p, &so));
        tg_alloc_fail_at(0);
        cr_assert(strstr(tg_error(), "out of memory"), "%s", tg_error());
    }
    tg_params_free(p);
}

Test(optim, optimizer_null_arguments)
{
    cr_assert_eq(tg_optim_check(NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_optim: options are NULL");
    cr_assert_eq(tg_schedule_check(NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_schedule: the schedule is NULL");
    tg_schedule bad = tg_schedule_constant(0.1, 0);
    bad.kind = (tg_schedule_kind)9;
    cr_assert_eq(tg_schedule_check(&bad), -1);
    cr_assert_str_eq(tg_error(), "tg_schedule: unknown kind 9");
    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_optim_state_save(NULL, s), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_state_save: NULL argument");
    cr_assert_eq(tg_optim_state_load(NULL, s), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_state_load: NULL argument");
    cr_assert_eq(tg_optim_step(NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_step: the optimizer is NULL");
    cr_assert_eq(tg_optim_set_lr(NULL, 0.1), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_set_lr: the optimizer is NULL");
    cr_assert_eq(tg_grad_norm(NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_grad_norm: the parameter store is NULL");
    cr_assert_eq(tg_clip_grad_norm(NULL, 1.0), -1);
    cr_assert_str_eq(tg_error(), "tg_clip_grad_norm: the parameter store is NULL");
    tg_st_free(s);
}

/* A store that gained a parameter after the optimizer was made: loading
 * state is refused with a message, a step with -1, and nothing changes. */
Test(optim, optimizer_store_changed)
{
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 1, (int[]){3});
    tg_optim *a = tg_optim_new(p, &(tg_optim_opts){.kind = TG_ADAM, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999,
                                                   .eps = 1e-8});
    tg_optim *g = tg_optim_new(p, &(tg_optim_opts){.kind = TG_SGD, .lr = 0.1, .momentum = 0.9});
    cr_assert(a && g, "%s", tg_error());
    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_optim_state_save(a, s), 0, "%s", tg_error());
    cr_assert_eq(tg_optim_state_save(g, s), 0, "%s", tg_error());
    tg_params_add(p, "b", 1, (int[]){2});
    cr_assert_eq(tg_optim_state_load(a, s), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_state_load: the parameter store has 5 values, 3 when tg_optim_new "
                                 "made the optimizer: make a new one after adding parameters");
    cr_assert_eq(tg_optim_state_load(g, s), -1);
    tu_assert_has(tg_error(), "tg_optim_state_load: the parameter store has 5 values");
    cr_assert_eq(tg_optim_step(a), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_step: the parameter store has 5 values, 3 when tg_optim_new made the "
                                 "optimizer: make a new one after adding parameters");
    cr_assert_eq(tg_optim_step(g), -1);
    tu_assert_has(tg_error(), "tg_optim_step: the parameter store has 5 values, 3 when tg_optim_new made");
    cr_assert_eq(tg_optim_steps(a), 0);
    cr_assert_eq(tg_optim_steps(g), 0);
    tg_st_free(s);
    tg_optim_free(g);
    tg_optim_free(a);
    tg_params_free(p);
}

/* "optim.adam.m." + a 505-byte parameter name does not fit a state key (512 bytes). */
Test(optim, optimizer_state_name_too_long)
{
    char name[506];
    memset(name, 'w', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    tg_params *p = tg_params_new();
    cr_assert_not_null(tg_params_add(p, name, 1, (int[]){2}));
    tg_optim_opts adam = tg_optim_defaults(TG_ADAM);
    tg_optim *a = tg_optim_new(p, &adam);
    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_optim_state_save(a, s), -1);
    tu_assert_has(tg_error(), "tg_optim_state_save: state name for parameter 'wwww");
    tu_assert_has(tg_error(), "' is too long");
    cr_assert_eq(tg_st_set_meta(s, "optim.adam.step", "1"), 0);
    cr_assert_eq(tg_optim_state_load(a, s), -1);
    tu_assert_has(tg_error(), "tg_optim_state_load: state name for parameter 'wwww");
    tu_assert_has(tg_error(), "' is too long");
    tg_st_free(s);
    tg_optim_free(a);
    tg_params_free(p);
}
