/* optim/scaler.c: dynamic loss scaling against PyTorch's GradScaler rule
 * (tests/fixtures/scaler_*.safetensors, from bench/torch/make_scaler_fixtures.py:
 * scale, growth tracker and skipped steps exactly, parameters at the
 * optimizer suites' tolerances, optim_util.h), unscaling bit for bit by a
 * power of two, Inf/NaN found in any element, clipping after unscaling,
 * checkpoints, the disabled scaler, and misuse refused by name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/optim/scaler.h>
#include "optim_util.h"

#ifdef TAPEGRAD_DOUBLE
#define OWN_SCALER_FIXTURE "scaler_f64"
#define OTHER_SCALER_FIXTURE "scaler_f32"
#else
#define OWN_SCALER_FIXTURE "scaler_f32"
#define OTHER_SCALER_FIXTURE "scaler_f64"
#endif

static tg_grad_scaler *scaler_new(const tg_grad_scaler_opts *o)
{
    tg_grad_scaler *s = tg_grad_scaler_new(o);
    cr_assert_not_null(s, "%s", tg_error());
    return s;
}

static tg_grad_scaler *scaler_with(double init, double growth, double backoff, long interval)
{
    return scaler_new(&(tg_grad_scaler_opts){.init_scale = init, .growth_factor = growth, .backoff_factor = backoff,
                                             .growth_interval = interval, .enabled = true});
}

static void scaler_update(tg_grad_scaler *s) { cr_assert_eq(tg_grad_scaler_update(s), 0, "%s", tg_error()); }

/* call returns -1 with a message holding want */
#define REFUSED(call, want)                                                                              \
    do {                                                                                                 \
        tg_error_clear();                                                                                \
        cr_assert_eq((call), -1, "%s did not fail", #call);                                              \
        cr_assert(tg_error() && strstr(tg_error(), want), "%s: \"%s\", want \"%s\"", #call,              \
                  tg_error() ? tg_error() : "(none)", want);                                             \
    } while (0)

/* The linreg grads, of loss * S when s is not NULL. */
static void linreg_grads(problem *pr, tg_grad_scaler *s)
{
    tg_params_zero_grad(pr->p);
    tg_tensor *loss = linreg_loss(pr->t, pr->p, pr->x, pr->y);
    tg_tensor *scaled = s ? tg_grad_scaler_scale(s, pr->t, loss) : loss;
    cr_assert_eq(tg_backward(pr->t, scaled), 0, "%s", tg_tape_error(pr->t));
    tg_tape_reset(pr->t);
}

/* A store with one parameter "w" [n] and an SGD optimizer over it. */
typedef struct tiny {
    tg_params *p;
    tg_optim *o;
} tiny;

static tiny tiny_new(int n)
{
    tiny t = {.p = tg_params_new()};
    cr_assert_not_null(tg_params_add(t.p, "w", 1, (int[]){n}), "%s", tg_error());
    tg_optim_opts oo = tg_optim_defaults(TG_SGD);
    t.o = optim_new(t.p, &oo);
    return t;
}

static void tiny_free(tiny *t)
{
    tg_optim_free(t->o);
    tg_params_free(t->p);
}

/* ---- PyTorch's rule ---------------------------------------------------------- */

typedef struct config {
    tg_optim_opts opt;
    tg_grad_scaler_opts sc;
    double max_norm;  /* 0: no unscale and clip before the step */
} config;

/* The fixture's "config.<name>" = "kind lr momentum init_scale growth_factor
 * backoff_factor growth_interval max_norm". */
static config config_read(const tg_safetensors *fx, const char *name)
{
    char key[64], kind[16];
    snprintf(key, sizeof key, "config.%s", name);
    const char *s = tg_st_meta(fx, key);
    cr_assert_not_null(s, "fixture has no metadata '%s'", key);
    double lr, mom, init, growth, backoff, max_norm;
    long interval;
    cr_assert_eq(sscanf(s, "%15s %lf %lf %lf %lf %lf %ld %lf", kind, &lr, &mom, &init, &growth, &backoff, &interval,
                        &max_norm),
                 8, "'%s' = \"%s\"", key, s);
    config c = {.sc = {init, growth, backoff, interval, true}, .max_norm = max_norm};
    c.opt = tg_optim_defaults(strcmp(kind, "sgd") == 0 ? TG_SGD : TG_ADAM);
    c.opt.lr = lr;
    if (c.opt.kind == TG_SGD) c.opt.momentum = mom;
    return c;
}

/* The fixture's integer tensor "<name>.<field>". */
static const int64_t *fx_ints(const tg_safetensors *fx, const char *name, const char *field)
{
    char key[64];
    snprintf(key, sizeof key, "%s.%s", name, field);
    const int64_t *v = tg_st_ints(fx, key);
    cr_assert_not_null(v, "%s", tg_error());
    return v;
}

static void check_torch(const tg_safetensors *fx, const char *name, double tol, double lo)
{
    config c = config_read(fx, name);
    problem pr;
    problem_init(&pr, fx, false);
    tg_optim *o = optim_new(pr.p, &c.opt);
    tg_grad_scaler *sc = scaler_new(&c.sc);
    const tg_tensor *plan = fx_get(fx, "plan");
    const int64_t *pl = tg_st_ints(fx, "plan"), *tracker = fx_ints(fx, name, "tracker"),
                  *stepped = fx_ints(fx, name, "stepped"), *steps = fx_ints(fx, name, "steps");
    cr_assert_not_null(pl, "%s", tg_error());
    char key[64];
    snprintf(key, sizeof key, "%s.scale", name);
    const tg_real *scale = fx_get(fx, key)->data;
    int n = plan->shape[0];
    for (int k = 0; k < n; k++) {
        linreg_grads(&pr, sc);
        const int64_t *inj = pl + 3 * k;  /* kind, parameter, flat element */
        if (inj[0]) {
            const tg_real v[] = {0, INFINITY, -INFINITY, NAN};
            tg_params_at(pr.p, (int)inj[1])->grad[inj[2]] = v[inj[0]];
        }
        if (c.max_norm) {
            cr_assert_eq(tg_grad_scaler_unscale(sc, o), 0, "%s", tg_error());
            cr_assert(tg_clip_grad_norm(pr.p, c.max_norm) >= 0 || inj[0]);
        }
        int r = tg_grad_scaler_step(sc, o);
        cr_assert_neq(r, -1, "%s", tg_error());
        scaler_update(sc);
        cr_assert_eq(r, stepped[k], "%s step %d: stepped %d, torch %d", name, k + 1, r, (int)stepped[k]);
        cr_assert_eq(tg_grad_scaler_get_scale(sc), (double)scale[k], "%s step %d: scale %.9g, torch %.9g", name,
                     k + 1, tg_grad_scaler_get_scale(sc), (double)scale[k]);
        cr_assert_eq(tg_grad_scaler_growth_tracker(sc), tracker[k], "%s step %d: tracker %ld, torch %ld", name,
                     k + 1, tg_grad_scaler_growth_tracker(sc), (long)tracker[k]);
        cr_assert_eq(tg_optim_steps(o), steps[k], "%s step %d: %ld optimizer steps, torch %ld", name, k + 1,
                     tg_optim_steps(o), (long)steps[k]);
        for (int j = 0; j < 2; j++) {
            const tg_tensor *x = tg_params_at(pr.p, j);
            snprintf(key, sizeof key, "%s.%s", name, x->name);
            const tg_real *row = fx_get(fx, key)->data + (size_t)k * x->size;
            for (size_t i = 0; i < x->size; i++)
                rel_close(x->data[i], row[i], tol, lo, "%s step %d %s[%zu] = %.9g, torch %.9g", name, k + 1,
                          x->name, i, (double)x->data[i], (double)row[i]);
        }
    }
    tg_grad_scaler_free(sc);
    tg_optim_free(o);
    problem_free(&pr);
}

static void check_torch_all(const char *stem, double tol, double lo)
{
    tg_safetensors *fx = fixture(stem);
    check_torch(fx, "sgd", tol, lo);
    check_torch(fx, "adam", tol, lo);
    check_torch(fx, "adam_clip", tol, lo);
    tg_st_free(fx);
}

Test(scaler, torch_rule_same_precision) { check_torch_all(OWN_SCALER_FIXTURE, TORCH_TOL, TORCH_FLOOR); }
Test(scaler, torch_rule_other_precision) { check_torch_all(OTHER_SCALER_FIXTURE, CROSS_TOL, CROSS_FLOOR); }

Test(scaler, defaults_are_torchs)
{
    tg_grad_scaler_opts d = tg_grad_scaler_defaults();
    cr_assert(d.init_scale == 65536 && d.growth_factor == 2 && d.backoff_factor == 0.5 && d.growth_interval == 2000 &&
              d.enabled);
    tg_grad_scaler *s = scaler_new(&d);
    cr_assert_eq(tg_grad_scaler_get_scale(s), 65536);
    cr_assert_eq(tg_grad_scaler_growth_tracker(s), 0);
    tg_grad_scaler_free(s);
}

/* A float16 loss times 2^16 leaves float16's range: the product is a
 * float32, as torch's loss * scale (its scale a float32 tensor). */
Test(scaler, half_loss_scaled_in_float32)
{
    tg_tape *t = tg_tape_new();
    tg_grad_scaler_opts d = tg_grad_scaler_defaults();
    tg_grad_scaler *s = scaler_new(&d);
    const tg_dtype halves[] = {TG_F16, TG_BF16};
    for (int k = 0; k < 2; k++) {
        float two = 2;
        tg_tensor *h = tg_to(t, tg_tensor_from_dtype(t, TG_F32, &two, 0, NULL), halves[k]);
        tg_tensor *y = tg_grad_scaler_scale(s, t, h);
        cr_assert_not_null(y, "%s", tg_tape_error(t));
        cr_assert_eq(y->dtype, TG_F32, "%s", tg_dtype_name(halves[k]));
        cr_assert_eq(*(float *)tg_data(y, TG_F32), 131072.0f, "%s", tg_dtype_name(halves[k]));
    }
    tg_grad_scaler_free(s);
    tg_tape_free(t);
}

/* ---- unscale ---------------------------------------------------------------- */

/* The fixture's linreg problem and an SGD optimizer over it in *o. */
static problem linreg(tg_optim **o)
{
    tg_safetensors *fx = fixture(OWN_SCALER_FIXTURE);
    problem pr;
    problem_init(&pr, fx, false);
    tg_st_free(fx);
    tg_optim_opts oo = tg_optim_defaults(TG_SGD);
    *o = optim_new(pr.p, &oo);
    return pr;
}

static tg_real *grads_copy(const tg_params *p)
{
    size_t n = tg_params_numel(p);
    tg_real *g = malloc(n * sizeof *g);
    cr_assert_not_null(g);
    memcpy(g, tg_params_grad(p), n * sizeof *g);
    return g;
}

/* A scale 2^e moves every rounding of backward by 2^e exactly: the scaled
 * grads are the plain ones times S, and unscaling gives them back bit for
 * bit. */
Test(scaler, unscale_by_a_power_of_two_is_exact)
{
    tg_optim *o;
    problem pr = linreg(&o);
    linreg_grads(&pr, NULL);
    tg_real *plain = grads_copy(pr.p);
    size_t n = tg_params_numel(pr.p);
    const double scales[] = {1, 65536, 0.0625, 16777216};
    for (int k = 0; k < 4; k++) {
        tg_grad_scaler *s = scaler_with(scales[k], 2, 0.5, 2000);
        linreg_grads(&pr, s);
        const tg_real *g = tg_params_grad(pr.p);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(g[i], plain[i] * (tg_real)scales[k], "S = %g: scaled grad [%zu] = %.9g, want %.9g",
                         scales[k], i, (double)g[i], (double)(plain[i] * (tg_real)scales[k]));
        cr_assert_eq(tg_grad_scaler_unscale(s, o), 0, "%s", tg_error());
        cr_assert_eq(memcmp(g, plain, n * sizeof *g), 0, "S = %g: unscaled grads differ from the plain ones",
                     scales[k]);
        tg_grad_scaler_free(s);
    }
    free(plain);
    tg_optim_free(o);
    problem_free(&pr);
}

/* Not a power of two: each grad is multiplied by float32(1 / double(S)) in
 * the grad's precision, torch's inv_scale. */
Test(scaler, unscale_multiplies_by_torchs_inverse)
{
    tg_optim *o;
    problem pr = linreg(&o);
    tg_grad_scaler *s = scaler_with(1000, 2, 0.5, 2000);
    linreg_grads(&pr, s);
    tg_real *scaled = grads_copy(pr.p);
    cr_assert_eq(tg_grad_scaler_unscale(s, o), 0, "%s", tg_error());
    tg_real inv = (tg_real)(float)(1.0 / 1000.0);
    cr_assert_neq((double)(float)(1.0 / 1000.0), 1.0 / 1000.0);  /* the float32 rounding matters */
    for (size_t i = 0; i < tg_params_numel(pr.p); i++)
        cr_assert_eq(tg_params_grad(pr.p)[i], scaled[i] * inv, "[%zu]", i);
    free(scaled);
    tg_grad_scaler_free(s);
    tg_optim_free(o);
    problem_free(&pr);
}

/* Three parameters; an Inf, -Inf or NaN at the first, middle or last element
 * of any of them skips the step: parameters and Adam's state and step count
 * stay, the scale backs off. */
Test(scaler, non_finite_anywhere_skips_the_step)
{
    tg_params *p = tg_params_new();
    int sizes[] = {5, 7, 3};
    for (int j = 0; j < 3; j++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", j);
        tg_tensor *x = tg_params_add(p, name, 1, (int[]){sizes[j]});
        cr_assert_not_null(x, "%s", tg_error());
        for (int i = 0; i < sizes[j]; i++) x->data[i] = (tg_real)(0.1 * (i + 1) - 0.2 * j);
    }
    tg_optim_opts oo = tg_optim_defaults(TG_ADAM);
    tg_optim *o = optim_new(p, &oo);
    tg_grad_scaler *s = scaler_with(1024, 2, 0.5, 2000);
    size_t n = tg_params_numel(p);
    tg_real *g = tg_params_grad(p);
    for (size_t i = 0; i < n; i++) g[i] = (tg_real)(1024.0 * (0.25 * (double)i - 1));
    cr_assert_eq(tg_grad_scaler_step(s, o), 1, "%s", tg_error());  /* a clean step: Adam has state */
    scaler_update(s);
    tg_safetensors *before = tg_st_new();
    cr_assert_eq(tg_optim_state_save(o, before), 0, "%s", tg_error());
    tg_real *params = malloc(n * sizeof *params);
    memcpy(params, tg_params_data(p), n * sizeof *params);
    const tg_real bad[] = {INFINITY, -INFINITY, NAN};
    double want_scale = 1024;
    for (int j = 0; j < 3; j++)
        for (int where = 0; where < 3; where++)
            for (int b = 0; b < 3; b++) {
                tg_tensor *x = tg_params_at(p, j);
                size_t at = where == 0 ? 0 : where == 1 ? x->size / 2 : x->size - 1;
                for (size_t i = 0; i < n; i++) g[i] = (tg_real)(want_scale * 0.5);
                x->grad[at] = bad[b];
                cr_assert_eq(tg_grad_scaler_step(s, o), 0, "p%d[%zu] = %g: not skipped", j, at, (double)bad[b]);
                scaler_update(s);
                want_scale *= 0.5;
                cr_assert_eq(tg_grad_scaler_get_scale(s), want_scale);
                cr_assert_eq(tg_grad_scaler_growth_tracker(s), 0);
                cr_assert_eq(memcmp(tg_params_data(p), params, n * sizeof *params), 0, "p%d[%zu]: params moved", j,
                             at);
                cr_assert_eq(tg_optim_steps(o), 1);
            }
    tg_safetensors *after = tg_st_new();
    cr_assert_eq(tg_optim_state_save(o, after), 0, "%s", tg_error());
    cr_assert_eq(tg_st_count(after), tg_st_count(before));
    for (int i = 0; i < tg_st_count(before); i++) {
        const tg_tensor *x = tg_st_at(before, i), *y = tg_st_get(after, x->name);
        cr_assert(y && memcmp(x->data, y->data, x->size * sizeof(tg_real)) == 0, "'%s' changed", x->name);
    }
    tg_st_free(before);
    tg_st_free(after);
    free(params);
    tg_grad_scaler_free(s);
    tg_optim_free(o);
    tg_params_free(p);
}

/* A parameter the step does not move (a frozen group, requires_grad
 * false: torch's grad None) is neither looked at nor unscaled. */
Test(scaler, unmoved_parameters_are_left_alone)
{
    tg_params *p = tg_params_new();
    tg_tensor *a = tg_params_add(p, "a", 1, (int[]){2}), *f = tg_params_add(p, "frozen.b", 1, (int[]){2}),
              *n = tg_params_add(p, "c", 1, (int[]){2});
    cr_assert(a && f && n, "%s", tg_error());
    n->requires_grad = false;
    tg_optim_opts oo = tg_optim_defaults(TG_SGD);
    tg_optim *o = optim_new(p, &oo);
    cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "frozen.", .frozen = true}), 1, "%s", tg_error());
    tg_grad_scaler *s = scaler_with(4, 2, 0.5, 2000);
    a->grad[0] = a->grad[1] = 8;
    f->grad[0] = NAN, f->grad[1] = 8;
    n->grad[0] = INFINITY, n->grad[1] = 8;
    cr_assert_eq(tg_grad_scaler_step(s, o), 1, "%s", tg_error());
    cr_assert(a->grad[0] == 2 && a->grad[1] == 2);
    cr_assert(isnan(f->grad[0]) && f->grad[1] == 8 && isinf(n->grad[0]) && n->grad[1] == 8);
    scaler_update(s);
    cr_assert_eq(tg_grad_scaler_get_scale(s), 4);
    tg_grad_scaler_free(s);
    tg_optim_free(o);
    tg_params_free(p);
}

/* PyTorch's pattern: unscale, clip, step. The clip sees the true grads: the
 * same bits as clipping grads that were never scaled. */
Test(scaler, clip_after_unscale)
{
    tg_optim *o;
    problem pr = linreg(&o);
    linreg_grads(&pr, NULL);
    double plain_norm = tg_grad_norm(pr.p);
    cr_assert_gt(plain_norm, 0.5);
    cr_assert_geq(tg_clip_grad_norm(pr.p, 0.5), 0, "%s", tg_error());
    tg_real *clipped = grads_copy(pr.p);
    tg_grad_scaler *s = scaler_with(65536, 2, 0.5, 2000);
    linreg_grads(&pr, s);
    cr_assert_eq(tg_grad_scaler_unscale(s, o), 0, "%s", tg_error());
    cr_assert_eq(tg_clip_grad_norm(pr.p, 0.5), plain_norm);
    cr_assert_eq(memcmp(tg_params_grad(pr.p), clipped, tg_params_numel(pr.p) * sizeof *clipped), 0);
    cr_assert_eq(tg_grad_scaler_step(s, o), 1, "%s", tg_error());  /* no second unscale */
    scaler_update(s);
    free(clipped);
    tg_grad_scaler_free(s);
    tg_optim_free(o);
    problem_free(&pr);
}

/* ---- the update rule ---------------------------------------------------------- */

Test(scaler, growth_then_backoff)
{
    tiny w = tiny_new(2);
    tg_grad_scaler *s = scaler_with(8, 2, 0.25, 3);
    const double want_scale[] = {8, 8, 16, 16, 16, 32, 8, 2, 2};
    const long want_tracker[] = {1, 2, 0, 1, 2, 0, 0, 0, 1};
    for (int k = 0; k < 9; k++) {
        tg_params_grad(w.p)[0] = k == 6 || k == 7 ? NAN : 1;  /* two back-offs in a row */
        cr_assert_eq(tg_grad_scaler_step(s, w.o), k == 6 || k == 7 ? 0 : 1, "%s", tg_error());
        scaler_update(s);
        cr_assert_eq(tg_grad_scaler_get_scale(s), want_scale[k], "step %d: %g", k + 1, tg_grad_scaler_get_scale(s));
        cr_assert_eq(tg_grad_scaler_growth_tracker(s), want_tracker[k], "step %d", k + 1);
    }
    tg_grad_scaler_free(s);
    tiny_free(&w);
}

/* The largest float32 power of two does not grow to Inf (torch 2.1's guard). */
Test(scaler, growth_stops_short_of_inf)
{
    tiny w = tiny_new(1);
    tg_grad_scaler *s = scaler_with(ldexp(1, 127), 2, 0.5, 1);
    cr_assert_eq(tg_grad_scaler_step(s, w.o), 1, "%s", tg_error());
    scaler_update(s);
    cr_assert_eq(tg_grad_scaler_get_scale(s), ldexp(1, 127));
    cr_assert_eq(tg_grad_scaler_growth_tracker(s), 0);
    tg_grad_scaler_free(s);
    tiny_free(&w);
}

/* One scaler for two optimizers (torch's per-optimizer state): an Inf in
 * either backs the scale off; the clean one still steps. */
Test(scaler, two_optimizers_share_the_scale)
{
    tg_params *a = tg_params_new(), *b = tg_params_new();
    cr_assert(tg_params_add(a, "w", 1, (int[]){2}) && tg_params_add(b, "w", 1, (int[]){2}));
    tg_optim_opts oo = tg_optim_defaults(TG_SGD);
    tg_optim *oa = optim_new(a, &oo), *ob = optim_new(b, &oo);
    tg_grad_scaler *s = scaler_with(4, 2, 0.5, 1);
    tg_params_grad(a)[1] = INFINITY;
    tg_params_grad(b)[1] = 4;
    cr_assert_eq(tg_grad_scaler_step(s, oa), 0, "%s", tg_error());
    cr_assert_eq(tg_grad_scaler_step(s, ob), 1, "%s", tg_error());
    cr_assert_eq(tg_optim_steps(ob), 1);
    scaler_update(s);
    cr_assert_eq(tg_grad_scaler_get_scale(s), 2);
    tg_params_grad(a)[1] = 2;
    cr_assert_eq(tg_grad_scaler_step(s, oa), 1, "%s", tg_error());
    cr_assert_eq(tg_grad_scaler_step(s, ob), 1, "%s", tg_error());
    scaler_update(s);
    cr_assert_eq(tg_grad_scaler_get_scale(s), 4);
    tg_grad_scaler_free(s);
    tg_optim_free(oa);
    tg_optim_free(ob);
    tg_params_free(a);
    tg_params_free(b);
}

/* enabled false: GradScaler(enabled=False) is a pass-through. */
Test(scaler, disabled_passes_through)
{
    tg_optim *o;
    problem pr = linreg(&o);
    tg_grad_scaler_opts so = tg_grad_scaler_defaults();
    so.enabled = false;
    tg_grad_scaler *s = scaler_new(&so);
    cr_assert_eq(tg_grad_scaler_get_scale(s), 1);
    tg_tensor *loss = linreg_loss(pr.t, pr.p, pr.x, pr.y);
    cr_assert_eq(tg_grad_scaler_scale(s, pr.t, loss), loss);
    tg_tape_reset(pr.t);
    linreg_grads(&pr, NULL);
    tg_real *plain = grads_copy(pr.p);
    cr_assert_eq(tg_grad_scaler_unscale(s, o), 0);
    cr_assert_eq(tg_grad_scaler_unscale(s, o), 0);  /* no stages either */
    cr_assert_eq(memcmp(tg_params_grad(pr.p), plain, tg_params_numel(pr.p) * sizeof *plain), 0);
    tg_params_grad(pr.p)[0] = NAN;
    cr_assert_eq(tg_grad_scaler_step(s, o), 1, "%s", tg_error());
    cr_assert_eq(tg_optim_steps(o), 1);
    cr_assert_eq(tg_grad_scaler_update(s), 0);
    tg_safetensors *st = tg_st_new();
    cr_assert_eq(tg_grad_scaler_state_save(s, st), 0);
    cr_assert_eq(tg_st_meta_count(st), 0);
    cr_assert_eq(tg_grad_scaler_state_load(s, st), 0);
    tg_st_free(st);
    free(plain);
    tg_grad_scaler_free(s);
    tg_optim_free(o);
    problem_free(&pr);
}

/* ---- checkpoints ---------------------------------------------------------------- */

Test(scaler, state_round_trip)
{
    tiny w = tiny_new(1);
    tg_grad_scaler *s = scaler_with(1000, 1.1, 0.3, 5);
    for (int k = 0; k < 8; k++) {  /* 5 clean (a growth), 1 bad, 2 clean */
        tg_params_grad(w.p)[0] = k == 5 ? INFINITY : 1;
        cr_assert_neq(tg_grad_scaler_step(s, w.o), -1, "%s", tg_error());
        scaler_update(s);
    }
    cr_assert_eq(tg_grad_scaler_growth_tracker(s), 2);
    cr_assert_eq(tg_grad_scaler_get_scale(s), (double)(float)((double)(float)(1000 * 1.1) * 0.3));
    tg_safetensors *st = tg_st_new();
    cr_assert_eq(tg_grad_scaler_state_save(s, st), 0, "%s", tg_error());
    uint8_t *buf;
    size_t len;
    tg_safetensors *back = NULL;
    cr_assert_eq(tg_st_to_bytes(st, ST_DTYPE, &buf, &len), 0, "%s", tg_error());
    cr_assert_eq(tg_st_parse(buf, len, "scaler", &back), 0, "%s", tg_error());
    tg_grad_scaler *r = scaler_with(1000, 1.1, 0.3, 5);
    cr_assert_eq(tg_grad_scaler_state_load(r, back), 0, "%s", tg_error());
    cr_assert_eq(tg_grad_scaler_get_scale(r), tg_grad_scaler_get_scale(s));
    cr_assert_eq(tg_grad_scaler_growth_tracker(r), 2);
    for (int k = 0; k < 4; k++) {  /* both grow at the same step */
        tg_params_grad(w.p)[0] = 1;
        cr_assert_eq(tg_grad_scaler_step(s, w.o), 1, "%s", tg_error());
        cr_assert_eq(tg_grad_scaler_step(r, w.o), 1, "%s", tg_error());
        scaler_update(s);
        scaler_update(r);
        cr_assert_eq(tg_grad_scaler_get_scale(r), tg_grad_scaler_get_scale(s));
        cr_assert_eq(tg_grad_scaler_growth_tracker(r), tg_grad_scaler_growth_tracker(s));
    }
    tg_free(buf);
    tg_st_free(st);
    tg_st_free(back);
    tg_grad_scaler_free(s);
    tg_grad_scaler_free(r);
    tiny_free(&w);
}

Test(scaler, bad_state_refused_by_name)
{
    static const struct {
        const char *scale, *tracker, *want;
    } cases[] = {
        {NULL, "0", "missing metadata 'optim.grad_scaler.scale'"},
        {"65536", NULL, "missing metadata 'optim.grad_scaler.growth_tracker'"},
        {"abc", "0", "'optim.grad_scaler.scale' = \"abc\" is not a finite, positive float32"},
        {"0", "0", "is not a finite, positive float32"},
        {"-2", "0", "is not a finite, positive float32"},
        {"inf", "0", "is not a finite, positive float32"},
        {"nan", "0", "is not a finite, positive float32"},
        {"1e39", "0", "is not a finite, positive float32"},
        {"0.1", "0", "'optim.grad_scaler.scale' = \"0.1\" is not a finite, positive float32"},
        {"65536", "-3", "'optim.grad_scaler.growth_tracker' = \"-3\" is not a step count"},
        {"65536", "2x", "is not a step count"},
        {"65536", "2000", "'optim.grad_scaler.growth_tracker' = 2000 is not below growth_interval = 2000"},
    };
    tg_grad_scaler_opts d = tg_grad_scaler_defaults();
    tg_grad_scaler *s = scaler_new(&d);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_safetensors *st = tg_st_new();
        if (cases[i].scale) cr_assert_eq(tg_st_set_meta(st, "optim.grad_scaler.scale", cases[i].scale), 0);
        if (cases[i].tracker) cr_assert_eq(tg_st_set_meta(st, "optim.grad_scaler.growth_tracker", cases[i].tracker), 0);
        REFUSED(tg_grad_scaler_state_load(s, st), cases[i].want);
        cr_assert_eq(tg_grad_scaler_get_scale(s), 65536, "case %zu changed the scale", i);
        cr_assert_eq(tg_grad_scaler_growth_tracker(s), 0, "case %zu changed the tracker", i);
        tg_st_free(st);
    }
    REFUSED(tg_grad_scaler_state_load(s, NULL), "tg_grad_scaler_state_load: NULL argument");
    REFUSED(tg_grad_scaler_state_save(s, NULL), "tg_grad_scaler_state_save: NULL argument");
    tg_grad_scaler_free(s);
}

/* ---- misuse ------------------------------------------------------------------- */

Test(scaler, bad_options_refused_by_name)
{
    static const struct {
        double init, growth, backoff;
        long interval;
        const char *want;
    } cases[] = {
        {0, 2, 0.5, 1, "init_scale = 0 must be > 0 and finite as a float32"},
        {-1, 2, 0.5, 1, "init_scale = -1 must be > 0"},
        {NAN, 2, 0.5, 1, "init_scale = nan must be > 0"},
        {INFINITY, 2, 0.5, 1, "init_scale = inf must be > 0"},
        {1e39, 2, 0.5, 1, "init_scale = 1e+39 must be > 0 and finite as a float32"},
        {1e-50, 2, 0.5, 1, "init_scale = 1e-50 must be > 0 and finite as a float32"},
        {1, 1, 0.5, 1, "growth_factor = 1 must be finite and > 1"},
        {1, 0.5, 0.5, 1, "growth_factor = 0.5 must be finite and > 1"},
        {1, NAN, 0.5, 1, "growth_factor = nan must be finite and > 1"},
        {1, INFINITY, 0.5, 1, "growth_factor = inf must be finite and > 1"},
        {1, 2, 0, 1, "backoff_factor = 0 must be in (0, 1)"},
        {1, 2, 1, 1, "backoff_factor = 1 must be in (0, 1)"},
        {1, 2, -0.5, 1, "backoff_factor = -0.5 must be in (0, 1)"},
        {1, 2, NAN, 1, "backoff_factor = nan must be in (0, 1)"},
        {1, 2, 0.5, 0, "growth_interval = 0 must be > 0"},
        {1, 2, 0.5, -3, "growth_interval = -3 must be > 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_grad_scaler_opts o = {cases[i].init, cases[i].growth, cases[i].backoff, cases[i].interval, true};
        REFUSED(tg_grad_scaler_check(&o), cases[i].want);
        tg_error_clear();
        cr_assert_null(tg_grad_scaler_new(&o));
        cr_assert(strstr(tg_error(), cases[i].want), "new: %s", tg_error());
        o.enabled = false;  /* checked all the same */
        cr_assert_null(tg_grad_scaler_new(&o));
    }
    tg_error_clear();
    cr_assert_null(tg_grad_scaler_new(NULL));
    cr_assert_str_eq(tg_error(), "tg_grad_scaler: options are NULL");
    tg_grad_scaler_opts d = tg_grad_scaler_defaults();
    tg_alloc_fail_at(1);
    cr_assert_null(tg_grad_scaler_new(&d));
    tg_alloc_fail_at(0);
    cr_assert_str_eq(tg_error(), "tg_grad_scaler_new: out of memory");
}

Test(scaler, misuse_refused_by_name)
{
    tiny w = tiny_new(2);
    tg_grad_scaler_opts d = tg_grad_scaler_defaults();
    tg_grad_scaler *s = scaler_new(&d);
    tg_tape *t = tg_tape_new();

    REFUSED(tg_grad_scaler_unscale(NULL, w.o), "tg_grad_scaler_unscale: the scaler is NULL");
    REFUSED(tg_grad_scaler_unscale(s, NULL), "tg_grad_scaler_unscale: the optimizer is NULL");
    REFUSED(tg_grad_scaler_step(NULL, w.o), "tg_grad_scaler_step: the scaler is NULL");
    REFUSED(tg_grad_scaler_step(s, NULL), "tg_grad_scaler_step: the optimizer is NULL");
    REFUSED(tg_grad_scaler_update(NULL), "tg_grad_scaler_update: the scaler is NULL");
    tg_tensor *x = tg_tensor_zeros(t, 1, (int[]){1});
    cr_assert_null(tg_grad_scaler_scale(NULL, t, x));
    cr_assert_str_eq(tg_tape_error(t), "tg_grad_scaler_scale: the scaler is NULL");
    tg_tape_reset(t);
    cr_assert_null(tg_grad_scaler_scale(s, t, NULL));  /* an earlier op's failure passes through */
    cr_assert(isnan(tg_grad_scaler_get_scale(NULL)));
    cr_assert_eq(tg_grad_scaler_growth_tracker(NULL), -1);
    tg_grad_scaler_free(NULL);

    /* torch's stages: once per update */
    REFUSED(tg_grad_scaler_update(s), "tg_grad_scaler_update: no inf checks were recorded prior to update");
    cr_assert_eq(tg_grad_scaler_unscale(s, w.o), 0, "%s", tg_error());
    REFUSED(tg_grad_scaler_unscale(s, w.o),
            "tg_grad_scaler_unscale: tg_grad_scaler_unscale has already been called on this optimizer since the "
            "last tg_grad_scaler_update");
    cr_assert_eq(tg_grad_scaler_step(s, w.o), 1, "%s", tg_error());
    REFUSED(tg_grad_scaler_unscale(s, w.o), "tg_grad_scaler_unscale: tg_grad_scaler_unscale is being called after "
                                          "tg_grad_scaler_step");
    REFUSED(tg_grad_scaler_step(s, w.o),
            "tg_grad_scaler_step: tg_grad_scaler_step has already been called since the last tg_grad_scaler_update");
    cr_assert_eq(tg_optim_steps(w.o), 1);
    scaler_update(s);
    REFUSED(tg_grad_scaler_update(s), "no inf checks were recorded");  /* update forgot them */
    cr_assert_eq(tg_grad_scaler_step(s, w.o), 1, "%s", tg_error());     /* a new iteration */
    scaler_update(s);

    /* more optimizers than the table holds between two updates */
    tg_optim *many[TG_GRAD_SCALER_OPTIMS + 1];
    for (int i = 0; i <= TG_GRAD_SCALER_OPTIMS; i++) many[i] = optim_new(w.p, tg_optim_options(w.o));
    for (int i = 0; i < TG_GRAD_SCALER_OPTIMS; i++) cr_assert_eq(tg_grad_scaler_unscale(s, many[i]), 0);
    REFUSED(tg_grad_scaler_unscale(s, many[TG_GRAD_SCALER_OPTIMS]), "more than 8 optimizers between two updates");
    scaler_update(s);
    for (int i = 0; i <= TG_GRAD_SCALER_OPTIMS; i++) tg_optim_free(many[i]);

    /* a store that grew after tg_optim_new: the step's own error, passed on */
    cr_assert_not_null(tg_params_add(w.p, "v", 1, (int[]){1}));
    REFUSED(tg_grad_scaler_step(s, w.o), "tg_optim_step: the parameter store has");
    tg_tape_free(t);
    tg_grad_scaler_free(s);
    tiny_free(&w);
}
