/* optim/: Adam, AdamW and SGD against the update formulas (computed here in
 * double) and against torch.optim trajectories (tests/fixtures/optim_*.
 * safetensors, from bench/torch/make_optim_fixtures.py); gradient clipping;
 * learning-rate schedules; state export and exact resume; option checks.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io.h"
#include "optim/optim.h"
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

static const char *CONFIGS[] = {"adam", "adam_l2", "adam_eps", "adamw", "adamw_no1d", "sgd",
                                "sgd_momentum", "sgd_nesterov", "sgd_dampening", "sgd_wd"};
#define N_CONFIGS (int)(sizeof CONFIGS / sizeof *CONFIGS)

static tg_safetensors *fixture(const char *stem)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s.safetensors", TG_SOURCE_DIR, stem);
    tg_safetensors *s = NULL;
    cr_assert_eq(tg_st_load(path, &s, err, sizeof err), 0, "%s", err);
    return s;
}

static const tg_tensor *fx_get(const tg_safetensors *s, const char *name)
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

static void copy_fx(tg_real *dst, const tg_safetensors *fx, const char *name, size_t n)
{
    const tg_tensor *x = fx_get(fx, name);
    cr_assert_eq(x->size, n, "%s", name);
    memcpy(dst, x->data, n * sizeof(tg_real));
}

static void problem_init(problem *pr, const tg_safetensors *fx, bool quad)
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

static void problem_free(problem *pr)
{
    tg_params_free(pr->p);
    tg_tensor_free(pr->x);
    tg_tensor_free(pr->y);
    tg_tape_free(pr->t);
}

/* loss = mean((x W^T + b - y)^2) through the tape; returns it. */
static double linreg_backward(tg_tape *t, tg_params *p, tg_tensor *x, tg_tensor *y)
{
    tg_tensor *w = tg_params_at(p, 0), *b = tg_params_at(p, 1);
    tg_tensor *d = tg_sub(t, tg_matmul(t, x, w, b, TG_TRANS_B), y);
    tg_tensor *loss = tg_mean(t, tg_mul(t, d, d));
    cr_assert_not_null(loss, "%s", tg_tape_error(t));
    tg_params_zero_grad(p);
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    double v = loss->data[0];
    tg_tape_reset(t);
    return v;
}

/* The store's grads at its current parameters. */
static void problem_grad(problem *pr)
{
    if (!pr->quad) {
        linreg_backward(pr->t, pr->p, pr->x, pr->y);
        return;
    }
    const tg_real *p = tg_params_data(pr->p);
    tg_real *g = tg_params_grad(pr->p);
    for (int i = 0; i < 9; i++) g[i] = pr->a[i] * (p[i] - pr->c[i]);
}

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

/* ---- configurations and a common face for both optimizers ---------------- */

typedef struct config {
    bool adam;
    tg_adam_opts ao;
    tg_sgd_opts so;
} config;

static config config_from(const tg_safetensors *fx, const char *name)
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
    config c = {.adam = strncmp(name, "adam", 4) == 0};
    cr_assert_eq(n, c.adam ? 7 : 5, "'%s' = \"%s\"", key, tg_st_meta(fx, key));
    if (c.adam)
        c.ao = (tg_adam_opts){.lr = v[0], .beta1 = v[1], .beta2 = v[2], .eps = v[3],
                              .weight_decay = v[4], .adamw = v[5] != 0, .no_decay_1d = v[6] != 0};
    else
        c.so = (tg_sgd_opts){.lr = v[0], .momentum = v[1], .dampening = v[2], .weight_decay = v[3],
                             .nesterov = v[4] != 0};
    return c;
}

typedef struct opt {
    tg_adam *adam;
    tg_sgd *sgd;
} opt;

static opt opt_new(tg_params *p, const config *c)
{
    char err[256] = "";
    opt o = {0};
    if (c->adam) o.adam = tg_adam_new(p, &c->ao, err, sizeof err);
    else o.sgd = tg_sgd_new(p, &c->so, err, sizeof err);
    cr_assert(o.adam || o.sgd, "%s", err);
    return o;
}

static void opt_step(opt *o) { cr_assert_eq(o->adam ? tg_adam_step(o->adam) : tg_sgd_step(o->sgd), 0); }
static long opt_steps(const opt *o) { return o->adam ? tg_adam_steps(o->adam) : tg_sgd_steps(o->sgd); }
static void opt_set_lr(opt *o, double lr)
{
    cr_assert_eq(o->adam ? tg_adam_set_lr(o->adam, lr) : tg_sgd_set_lr(o->sgd, lr), 0);
}
static int opt_save(const opt *o, tg_safetensors *st, char *err, size_t n)
{
    return o->adam ? tg_adam_state_save(o->adam, st, err, n) : tg_sgd_state_save(o->sgd, st, err, n);
}
static int opt_load(opt *o, const tg_safetensors *st, char *err, size_t n)
{
    return o->adam ? tg_adam_state_load(o->adam, st, err, n) : tg_sgd_state_load(o->sgd, st, err, n);
}
static void opt_free(opt *o)
{
    tg_adam_free(o->adam);
    tg_sgd_free(o->sgd);
}

/* ---- the update formulas, in double --------------------------------------- */

typedef struct ref {
    double q[9], m[9], v[9], buf[9];
    int n, n_w;  /* all values; those of the 2-D weight (the rest is 1-D) */
    long t;
} ref;

/* One step at gradient g, textbook form: Adam with bias-corrected m-hat,
 * v-hat (Kingma & Ba), AdamW decaying p first, SGD as torch documents it. */
static void ref_step(ref *r, const config *c, const double *g0)
{
    r->t++;
    for (int i = 0; i < r->n; i++) {
        double g = g0[i], *q = &r->q[i];
        if (c->adam) {
            const tg_adam_opts *o = &c->ao;
            double wd = o->no_decay_1d && i >= r->n_w ? 0 : o->weight_decay;
            if (o->adamw) *q -= o->lr * wd * *q;
            else g += wd * *q;
            r->m[i] = o->beta1 * r->m[i] + (1 - o->beta1) * g;
            r->v[i] = o->beta2 * r->v[i] + (1 - o->beta2) * g * g;
            double mhat = r->m[i] / (1 - pow(o->beta1, r->t)), vhat = r->v[i] / (1 - pow(o->beta2, r->t));
            *q -= o->lr * mhat / (sqrt(vhat) + o->eps);
        } else {
            const tg_sgd_opts *o = &c->so;
            g += o->weight_decay * *q;
            if (o->momentum != 0) {
                r->buf[i] = r->t == 1 ? g : o->momentum * r->buf[i] + (1 - o->dampening) * g;
                g = o->nesterov ? g + o->momentum * r->buf[i] : r->buf[i];
            }
            *q -= o->lr * g;
        }
    }
}

/* 100 steps of c, and of the formulas, compared after every step; with a
 * schedule s (NULL: c's constant lr) set before each step. */
static void check_formulas(const tg_safetensors *fx, bool quad, const char *name, const config *c0,
                           const tg_schedule *s)
{
    problem pr;
    problem_init(&pr, fx, quad);
    opt o = opt_new(pr.p, c0);
    config c = *c0;
    ref r = {.n = (int)tg_params_numel(pr.p), .n_w = 6};
    const tg_real *p = tg_params_data(pr.p);
    for (int i = 0; i < r.n; i++) r.q[i] = p[i];
    double g[9];
    for (int step = 1; step <= 100; step++) {
        if (s) {
            double lr = tg_lr_at(s, step - 1);
            opt_set_lr(&o, lr);
            *(c.adam ? &c.ao.lr : &c.so.lr) = lr;
        }
        problem_grad(&pr);
        opt_step(&o);
        ref_grad(&pr, r.q, g);
        ref_step(&r, &c, g);
        for (int i = 0; i < r.n; i++)
            rel_close(p[i], r.q[i], FORMULA_TOL, FORMULA_FLOOR, "%s %s step %d p[%d] = %.17g, formula %.17g",
                      quad ? "quad" : "linreg", name, step, i, (double)p[i], r.q[i]);
    }
    opt_free(&o);
    problem_free(&pr);
}

Test(optim, formulas_100_steps)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    for (int k = 0; k < N_CONFIGS; k++) {
        config c = config_from(fx, CONFIGS[k]);
        check_formulas(fx, true, CONFIGS[k], &c, NULL);
        check_formulas(fx, false, CONFIGS[k], &c, NULL);
    }
    /* L2 (coupled) decay with the 1-D parameters left out, on a schedule */
    config c = config_from(fx, "adam_l2");
    c.ao.no_decay_1d = true;
    tg_schedule cos = tg_schedule_cosine(0.05, 0.005, 10, 90);
    check_formulas(fx, true, "adam_l2_no1d", &c, &cos);
    check_formulas(fx, false, "adam_l2_no1d", &c, &cos);
    c = config_from(fx, "sgd_wd");
    tg_schedule lin = tg_schedule_linear(0.1, 0.01, 5, 80);
    check_formulas(fx, true, "sgd_wd_linear", &c, &lin);
    check_formulas(fx, false, "sgd_wd_linear", &c, &lin);
    tg_st_free(fx);
}

/* ---- torch.optim trajectories --------------------------------------------- */

static void check_torch(const tg_safetensors *fx, bool quad, const char *name, double tol, double lo)
{
    config c = config_from(fx, name);
    problem pr;
    problem_init(&pr, fx, quad);
    opt o = opt_new(pr.p, &c);
    const char *pname = quad ? "quad" : "linreg";
    for (int step = 1; step <= 100; step++) {
        problem_grad(&pr);
        opt_step(&o);
        if (step % 10) continue;
        for (int k = 0; k < 2; k++) {
            const tg_tensor *x = tg_params_at(pr.p, k);
            char key[128];
            snprintf(key, sizeof key, "traj.%s.%s.%s", pname, name, x->name);
            const tg_tensor *want = fx_get(fx, key);
            cr_assert_eq(want->size, 10 * x->size, "%s", key);
            const tg_real *row = want->data + (step / 10 - 1) * x->size;
            for (size_t i = 0; i < x->size; i++)
                rel_close(x->data[i], row[i], tol, lo, "%s step %d [%zu] = %.9g, torch %.9g", key, step, i,
                          (double)x->data[i], (double)row[i]);
        }
    }
    opt_free(&o);
    problem_free(&pr);
}

static void check_torch_all(const char *stem, double tol, double lo)
{
    tg_safetensors *fx = fixture(stem);
    for (int k = 0; k < N_CONFIGS; k++) {
        check_torch(fx, true, CONFIGS[k], tol, lo);
        check_torch(fx, false, CONFIGS[k], tol, lo);
    }
    tg_st_free(fx);
}

Test(optim, torch_trajectories_same_precision) { check_torch_all(OWN_FIXTURE, TORCH_TOL, TORCH_FLOOR); }
Test(optim, torch_trajectories_other_precision) { check_torch_all(OTHER_FIXTURE, CROSS_TOL, CROSS_FLOOR); }

/* ---- state export and exact resume ------------------------------------------ */

/* How the state travels between the two halves of a run. */
enum { VIA_OBJECT, VIA_BYTES, VIA_FILE };

static tg_safetensors *travel(tg_safetensors *st, int via, const char *tag)
{
    char err[512];
    tg_safetensors *out = NULL;
    if (via == VIA_OBJECT) return st;
    if (via == VIA_BYTES) {
        uint8_t *buf;
        size_t len;
        cr_assert_eq(tg_st_to_bytes(st, ST_DTYPE, &buf, &len, err, sizeof err), 0, "%s", err);
        cr_assert_eq(tg_st_parse(buf, len, tag, &out, err, sizeof err), 0, "%s", err);
        tg_free(buf);
    } else {
        char path[512];
        snprintf(path, sizeof path, "%s/test_optim_%s_%ld.safetensors", TG_BINARY_DIR, tag, (long)getpid());
        cr_assert_eq(tg_st_save(st, path, ST_DTYPE, err, sizeof err), 0, "%s", err);
        cr_assert_eq(tg_st_load(path, &out, err, sizeof err), 0, "%s", err);
        remove(path);
    }
    tg_st_free(st);
    return out;
}

/* One linreg step on a cosine schedule read at the optimizer's own step. */
static void sched_step(problem *pr, opt *o, const tg_schedule *s)
{
    opt_set_lr(o, tg_lr_at(s, opt_steps(o)));
    problem_grad(pr);
    opt_step(o);
}

/* 100 steps straight, and `split` steps + save + restore into a fresh store
 * and optimizer + the rest: the parameters must be bit-identical. */
static void check_resume(const config *c, long split, int via, const char *tag)
{
    char err[512];
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    tg_schedule s = tg_schedule_cosine(c->adam ? c->ao.lr : c->so.lr, 1e-3, 10, 80);
    problem a, b;
    problem_init(&a, fx, false);
    opt oa = opt_new(a.p, c);
    for (int i = 0; i < 100; i++) sched_step(&a, &oa, &s);

    problem_init(&b, fx, false);
    opt ob = opt_new(b.p, c);
    for (long i = 0; i < split; i++) sched_step(&b, &ob, &s);
    tg_safetensors *st = tg_st_new();
    cr_assert_eq(tg_st_add_params(st, b.p, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opt_save(&ob, st, err, sizeof err), 0, "%s", err);
    opt_free(&ob);
    problem_free(&b);

    st = travel(st, via, tag);
    problem_init(&b, fx, false);  /* fresh: initial values, then the checkpoint's */
    cr_assert_eq(tg_st_load_params(b.p, st, true, "optim.", err, sizeof err), 0, "%s", err);
    ob = opt_new(b.p, c);
    cr_assert_eq(opt_load(&ob, st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opt_steps(&ob), split);
    while (opt_steps(&ob) < 100) sched_step(&b, &ob, &s);
    cr_assert_eq(memcmp(tg_params_data(a.p), tg_params_data(b.p), tg_params_numel(a.p) * sizeof(tg_real)), 0,
                 "%s: resumed run differs from the uninterrupted one", tag);
    tg_st_free(st);
    opt_free(&oa);
    opt_free(&ob);
    problem_free(&a);
    problem_free(&b);
    tg_st_free(fx);
}

Test(optim, resume_is_bit_identical)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    config adamw = config_from(fx, "adamw_no1d"), nesterov = config_from(fx, "sgd_nesterov");
    config damp = config_from(fx, "sgd_dampening"), plain = config_from(fx, "sgd");
    tg_st_free(fx);
    check_resume(&adamw, 37, VIA_OBJECT, "adamw_object");
    check_resume(&adamw, 37, VIA_BYTES, "adamw_bytes");
    check_resume(&adamw, 37, VIA_FILE, "adamw_file");
    check_resume(&nesterov, 42, VIA_FILE, "nesterov_file");
    check_resume(&damp, 0, VIA_BYTES, "dampening_at_step_0");  /* buffers not yet live */
    check_resume(&damp, 1, VIA_BYTES, "dampening_at_step_1");
    check_resume(&plain, 50, VIA_FILE, "sgd_file");           /* no buffers at all */
}

/* A copy of s without tensor `drop`, with tensor `reshape` given shape
 * [3,2] instead, and metadata key `meta` set to `value` (NULL: removed). */
static tg_safetensors *mangle(const tg_safetensors *s, const char *drop, const char *reshape,
                              const char *meta, const char *value)
{
    char err[256];
    tg_safetensors *o = tg_st_new();
    for (int i = 0; i < tg_st_count(s); i++) {
        const tg_tensor *x = tg_st_at(s, i);
        if (drop && strcmp(x->name, drop) == 0) continue;
        bool rs = reshape && strcmp(x->name, reshape) == 0;
        int rc = rs ? tg_st_add_data(o, x->name, x->data, 2, (int[]){3, 2}, err, sizeof err)
                    : tg_st_add(o, x->name, x, err, sizeof err);
        cr_assert_eq(rc, 0, "%s", err);
    }
    for (int i = 0; i < tg_st_meta_count(s); i++) {
        const char *k = tg_st_meta_key(s, i);
        if (meta && strcmp(k, meta) == 0) continue;
        cr_assert_eq(tg_st_set_meta(o, k, tg_st_meta(s, k), err, sizeof err), 0, "%s", err);
    }
    if (meta && value) cr_assert_eq(tg_st_set_meta(o, meta, value, err, sizeof err), 0, "%s", err);
    return o;
}

/* A failed load names the culprit and leaves the optimizer as it was: it
 * keeps stepping exactly like a twin that never saw the load. */
static void check_bad_load(const config *c, const tg_safetensors *bad, const char *expect)
{
    char err[512] = "";
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    problem a, b;
    problem_init(&a, fx, false);
    problem_init(&b, fx, false);
    opt oa = opt_new(a.p, c), ob = opt_new(b.p, c);
    for (int i = 0; i < 5; i++) {
        problem_grad(&a), opt_step(&oa);
        problem_grad(&b), opt_step(&ob);
    }
    cr_assert_eq(opt_load(&oa, bad, err, sizeof err), -1);
    cr_assert(strstr(err, expect), "message \"%s\" does not mention \"%s\"", err, expect);
    cr_assert_eq(opt_steps(&oa), 5);
    for (int i = 0; i < 5; i++) {
        problem_grad(&a), opt_step(&oa);
        problem_grad(&b), opt_step(&ob);
    }
    cr_assert_eq(memcmp(tg_params_data(a.p), tg_params_data(b.p), tg_params_numel(a.p) * sizeof(tg_real)), 0);
    opt_free(&oa);
    opt_free(&ob);
    problem_free(&a);
    problem_free(&b);
    tg_st_free(fx);
}

/* The state of `c` after 20 linreg steps. */
static tg_safetensors *trained_state(const config *c)
{
    char err[256];
    tg_safetensors *fx = fixture(OWN_FIXTURE), *st = tg_st_new();
    problem pr;
    problem_init(&pr, fx, false);
    opt o = opt_new(pr.p, c);
    for (int i = 0; i < 20; i++) problem_grad(&pr), opt_step(&o);
    cr_assert_eq(opt_save(&o, st, err, sizeof err), 0, "%s", err);
    opt_free(&o);
    problem_free(&pr);
    tg_st_free(fx);
    return st;
}

Test(optim, bad_state_rejected_and_optimizer_unchanged)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    config adam = config_from(fx, "adam"), sgd = config_from(fx, "sgd_momentum");
    tg_st_free(fx);
    struct {
        const config *c;
        const char *drop, *reshape, *meta, *value, *expect;
    } cases[] = {
        /* the last tensor saved: a one-pass loader would already have copied the others */
        {&adam, "optim.adam.v.bias", NULL, NULL, NULL, "missing tensor 'optim.adam.v.bias'"},
        {&adam, NULL, "optim.adam.m.weight", NULL, NULL, "'optim.adam.m.weight' is [3,2] but parameter 'weight' is [2,3]"},
        {&adam, NULL, NULL, "optim.adam.step", NULL, "missing metadata 'optim.adam.step'"},
        {&adam, NULL, NULL, "optim.adam.step", "-3", "not a step count"},
        {&adam, NULL, NULL, "optim.adam.step", "12x", "not a step count"},
        {&sgd, "optim.sgd.momentum.bias", NULL, NULL, NULL, "missing tensor 'optim.sgd.momentum.bias'"},
        {&sgd, NULL, "optim.sgd.momentum.weight", NULL, NULL, "'optim.sgd.momentum.weight' is [3,2]"},
        {&sgd, NULL, NULL, "optim.sgd.step", "", "not a step count"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tg_safetensors *st = trained_state(cases[k].c);
        tg_safetensors *bad = mangle(st, cases[k].drop, cases[k].reshape, cases[k].meta, cases[k].value);
        check_bad_load(cases[k].c, bad, cases[k].expect);
        tg_st_free(bad);
        tg_st_free(st);
    }
    /* Adam state is not SGD state */
    tg_safetensors *st = trained_state(&adam);
    check_bad_load(&sgd, st, "missing metadata 'optim.sgd.step'");
    tg_st_free(st);
}

Test(optim, save_into_taken_names_fails)
{
    char err[256] = "";
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 1, (int[]){4});
    tg_adam *a = tg_adam_new(p, NULL, err, sizeof err);
    tg_safetensors *st = tg_st_new();
    cr_assert_eq(tg_adam_state_save(a, st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tg_adam_state_save(a, st, err, sizeof err), -1);
    cr_assert(strstr(err, "tg_adam_state_save"), "%s", err);
    tg_st_free(st);
    tg_adam_free(a);
    tg_params_free(p);
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
    cr_assert_eq(tg_schedule_check(&cos, NULL, 0), 0);
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
        cr_assert_eq(tg_schedule_check(s, NULL, 0), 0);
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
    char err[256];
    tg_schedule bad[] = {tg_schedule_cosine(1e-3, 1e-4, 10, 10), tg_schedule_linear(1e-3, 2e-3, 0, 10),
                         tg_schedule_cosine(-1, 0, 0, 10), tg_schedule_constant(1e-3, -1),
                         tg_schedule_linear(NAN, 0, 0, 10)};
    const char *expect[] = {"total = 10 must exceed warmup = 10", "min_lr", "lr = -1", "warmup = -1", "lr = nan"};
    for (int k = 0; k < 5; k++) {
        err[0] = '\0';
        cr_assert_eq(tg_schedule_check(&bad[k], err, sizeof err), -1, "case %d", k);
        cr_assert(strstr(err, expect[k]), "case %d: \"%s\"", k, err);
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
    tg_adam_opts o = tg_adam_defaults();
    o.lr = 0.1;
    tg_adam *a = tg_adam_new(p, &o, NULL, 0);
    tg_schedule s = tg_schedule_cosine(0.1, 1e-4, 10, 300);
    double loss = 0;
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(tg_adam_set_lr(a, tg_lr_at(&s, tg_adam_steps(a))), 0);
        loss = linreg_backward(t, p, x, y);
        tg_adam_step(a);
    }
    cr_assert(fabs(w->data[0] - 3) < 1e-4 && fabs(b->data[0] + 2) < 1e-4, "w = %.8g, b = %.8g, loss %.3g",
              (double)w->data[0], (double)b->data[0], loss);
    tg_adam_free(a);
    tg_tape_free(t);
    tg_tensor_free(x);
    tg_tensor_free(y);
    tg_params_free(p);
}

Test(optim, bad_options_rejected_with_a_message)
{
    char err[256];
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 2, (int[]){2, 2});
    tg_adam_opts ad = tg_adam_defaults();
    struct { tg_adam_opts o; const char *expect; } adam[] = {
        {ad, NULL}, {ad, "lr = -0.1"}, {ad, "lr = nan"}, {ad, "beta1 = 1 is outside [0, 1)"},
        {ad, "beta2 = -0.5"}, {ad, "eps = 0"}, {ad, "eps = -1e-08"}, {ad, "weight_decay = -0.01"},
    };
    adam[1].o.lr = -0.1, adam[2].o.lr = NAN, adam[3].o.beta1 = 1, adam[4].o.beta2 = -0.5;
    adam[5].o.eps = 0, adam[6].o.eps = -1e-8, adam[7].o.weight_decay = -0.01;
    for (size_t k = 1; k < sizeof adam / sizeof *adam; k++) {
        err[0] = '\0';
        cr_assert_null(tg_adam_new(p, &adam[k].o, err, sizeof err), "case %zu", k);
        cr_assert(strstr(err, adam[k].expect), "case %zu: \"%s\"", k, err);
    }
    tg_sgd_opts sd = tg_sgd_defaults();
    struct { tg_sgd_opts o; const char *expect; } sgd[] = {
        {sd, NULL}, {sd, "lr = -1"}, {sd, "momentum = -0.9"}, {sd, "dampening = 1.5"},
        {sd, "nesterov needs momentum > 0"}, {sd, "nesterov needs momentum > 0 and dampening = 0"},
        {sd, "weight_decay = -1"},
    };
    sgd[1].o.lr = -1, sgd[2].o.momentum = -0.9, sgd[3].o.dampening = 1.5, sgd[4].o.nesterov = true;
    sgd[5].o = (tg_sgd_opts){.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true};
    sgd[6].o.weight_decay = -1;
    for (size_t k = 1; k < sizeof sgd / sizeof *sgd; k++) {
        err[0] = '\0';
        cr_assert_null(tg_sgd_new(p, &sgd[k].o, err, sizeof err), "case %zu", k);
        cr_assert(strstr(err, sgd[k].expect), "case %zu: \"%s\"", k, err);
    }
    cr_assert_null(tg_adam_new(NULL, NULL, err, sizeof err));
    cr_assert(strstr(err, "NULL"), "%s", err);
    cr_assert_null(tg_sgd_new(NULL, NULL, NULL, 0));
    /* set_lr refuses a bad lr and keeps the old one */
    tg_adam *a = tg_adam_new(p, NULL, err, sizeof err);
    cr_assert_eq(tg_adam_set_lr(a, -1), -1);
    cr_assert_eq(tg_adam_set_lr(a, NAN), -1);
    cr_assert_eq(tg_adam_lr(a), 1e-3);
    tg_sgd *s = tg_sgd_new(p, NULL, err, sizeof err);
    cr_assert_eq(tg_sgd_set_lr(s, -1), -1);
    cr_assert_eq(tg_sgd_lr(s), 1e-3);
    /* a store that grew after the optimizer was made: the step refuses */
    tg_params_add(p, "late", 1, (int[]){3});
    cr_assert_eq(tg_adam_step(a), -1);
    cr_assert_eq(tg_sgd_step(s), -1);
    cr_assert_eq(tg_adam_steps(a), 0);
    tg_adam_free(a);
    tg_sgd_free(s);
    tg_params_free(p);
}

Test(optim, defaults_are_torchs)
{
    tg_adam_opts a = tg_adam_defaults();
    cr_assert(a.lr == 1e-3 && a.beta1 == 0.9 && a.beta2 == 0.999 && a.eps == 1e-8 && a.weight_decay == 0);
    cr_assert(!a.adamw && !a.no_decay_1d);
    tg_sgd_opts s = tg_sgd_defaults();
    cr_assert(s.lr == 1e-3 && s.momentum == 0 && s.dampening == 0 && s.weight_decay == 0 && !s.nesterov);
}

Test(optim, steps_allocate_nothing_and_oom_is_reported)
{
    char err[256];
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 2, (int[]){8, 8});
    tg_params_add(p, "b", 1, (int[]){8});
    for (size_t i = 0; i < tg_params_numel(p); i++) tg_params_grad(p)[i] = (tg_real)(0.01 * (double)i - 0.3);
    tg_adam_opts ao = tg_adam_defaults();
    ao.weight_decay = 0.1, ao.adamw = true;
    tg_adam *a = tg_adam_new(p, &ao, err, sizeof err);
    tg_sgd *s = tg_sgd_new(p, &(tg_sgd_opts){.lr = 0.1, .momentum = 0.9}, err, sizeof err);
    uint64_t before = tg_alloc_count();
    for (int i = 0; i < 10; i++) {
        tg_adam_step(a);
        tg_sgd_step(s);
        tg_clip_grad_norm(p, 0.5);
    }
    cr_assert_eq(tg_alloc_count(), before);
    tg_adam_free(a);
    tg_sgd_free(s);
    for (uint64_t n = 1; n <= 2; n++) {
        err[0] = '\0';
        tg_alloc_fail_at(n);
        cr_assert_null(tg_adam_new(p, NULL, err, sizeof err));
        tg_alloc_fail_at(0);
        cr_assert(strstr(err, "out of memory"), "%s", err);
        tg_alloc_fail_at(n);
        cr_assert_null(tg_sgd_new(p, &(tg_sgd_opts){.lr = 0.1, .momentum = 0.9}, err, sizeof err));
        tg_alloc_fail_at(0);
        cr_assert(strstr(err, "out of memory"), "%s", err);
    }
    tg_params_free(p);
}
