/* optim/: Adam, AdamW and SGD against torch.optim trajectories
 * (tests/fixtures/optim_*.safetensors, from bench/torch/make_optim_fixtures.py)
 * in both precisions; state export, exact resume and rejected bad state. The
 * problems and tolerances are described in optim_util.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "optim_util.h"

/* ---- torch.optim trajectories --------------------------------------------- */

static void check_torch(const tg_safetensors *fx, bool quad, const char *name, double tol, double lo)
{
    tg_optim_opts c = config_from(fx, name);
    problem pr;
    problem_init(&pr, fx, quad);
    tg_optim *o = optim_new(pr.p, &c);
    const char *pname = quad ? "quad" : "linreg";
    for (int step = 1; step <= 100; step++) {
        problem_grad(&pr);
        optim_step(o);
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
    tg_optim_free(o);
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
    tg_safetensors *out = NULL;
    if (via == VIA_OBJECT) return st;
    if (via == VIA_BYTES) {
        uint8_t *buf;
        size_t len;
        cr_assert_eq(tg_st_to_bytes(st, ST_DTYPE, &buf, &len), 0, "%s", tg_error());
        cr_assert_eq(tg_st_parse(buf, len, tag, &out), 0, "%s", tg_error());
        tg_free(buf);
    } else {
        char path[512];
        snprintf(path, sizeof path, "%s/test_optim_%s_%ld.safetensors", TG_BINARY_DIR, tag, (long)getpid());
        cr_assert_eq(tg_st_save(st, path, ST_DTYPE), 0, "%s", tg_error());
        cr_assert_eq(tg_st_load(path, &out), 0, "%s", tg_error());
        remove(path);
    }
    tg_st_free(st);
    return out;
}

/* One linreg step on a cosine schedule read at the optimizer's own step. */
static void sched_step(problem *pr, tg_optim *o, const tg_schedule *s)
{
    optim_set_lr(o, tg_lr_at(s, tg_optim_steps(o)));
    problem_grad(pr);
    optim_step(o);
}

/* 100 steps straight, and `split` steps + save + restore into a fresh store
 * and optimizer + the rest: the parameters must be bit-identical. */
static void check_resume(const tg_optim_opts *c, long split, int via, const char *tag)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    tg_schedule s = tg_schedule_cosine(c->lr, 1e-3, 10, 80);
    problem a, b;
    problem_init(&a, fx, false);
    tg_optim *oa = optim_new(a.p, c);
    for (int i = 0; i < 100; i++) sched_step(&a, oa, &s);

    problem_init(&b, fx, false);
    tg_optim *ob = optim_new(b.p, c);
    for (long i = 0; i < split; i++) sched_step(&b, ob, &s);
    tg_safetensors *st = tg_st_new();
    cr_assert_eq(tg_st_add_params(st, b.p), 0, "%s", tg_error());
    cr_assert_eq(tg_optim_state_save(ob, st), 0, "%s", tg_error());
    tg_optim_free(ob);
    problem_free(&b);

    st = travel(st, via, tag);
    problem_init(&b, fx, false);  /* fresh: initial values, then the checkpoint's */
    cr_assert_eq(tg_st_load_params(b.p, st, true, "optim."), 0, "%s", tg_error());
    ob = optim_new(b.p, c);
    cr_assert_eq(tg_optim_state_load(ob, st), 0, "%s", tg_error());
    cr_assert_eq(tg_optim_steps(ob), split);
    while (tg_optim_steps(ob) < 100) sched_step(&b, ob, &s);
    cr_assert_eq(memcmp(tg_params_data(a.p), tg_params_data(b.p), tg_params_numel(a.p) * sizeof(tg_real)), 0,
                 "%s: resumed run differs from the uninterrupted one", tag);
    tg_st_free(st);
    tg_optim_free(oa);
    tg_optim_free(ob);
    problem_free(&a);
    problem_free(&b);
    tg_st_free(fx);
}

Test(optim, resume_is_bit_identical)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    tg_optim_opts adamw = config_from(fx, "adamw_no1d"), nesterov = config_from(fx, "sgd_nesterov");
    tg_optim_opts damp = config_from(fx, "sgd_dampening"), plain = config_from(fx, "sgd");
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
    tg_safetensors *o = tg_st_new();
    for (int i = 0; i < tg_st_count(s); i++) {
        const tg_tensor *x = tg_st_at(s, i);
        if (drop && strcmp(x->name, drop) == 0) continue;
        bool rs = reshape && strcmp(x->name, reshape) == 0;
        int rc = rs ? tg_st_add_data(o, x->name, x->data, 2, (int[]){3, 2})
                    : tg_st_add(o, x->name, x);
        cr_assert_eq(rc, 0, "%s", tg_error());
    }
    for (int i = 0; i < tg_st_meta_count(s); i++) {
        const char *k = tg_st_meta_key(s, i);
        if (meta && strcmp(k, meta) == 0) continue;
        cr_assert_eq(tg_st_set_meta(o, k, tg_st_meta(s, k)), 0, "%s", tg_error());
    }
    if (meta && value) cr_assert_eq(tg_st_set_meta(o, meta, value), 0, "%s", tg_error());
    return o;
}

/* A failed load names the culprit and leaves the optimizer as it was: it
 * keeps stepping exactly like a twin that never saw the load. */
static void check_bad_load(const tg_optim_opts *c, const tg_safetensors *bad, const char *expect)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    problem a, b;
    problem_init(&a, fx, false);
    problem_init(&b, fx, false);
    tg_optim *oa = optim_new(a.p, c), *ob = optim_new(b.p, c);
    for (int i = 0; i < 5; i++) {
        problem_grad(&a), optim_step(oa);
        problem_grad(&b), optim_step(ob);
    }
    cr_assert_eq(tg_optim_state_load(oa, bad), -1);
    cr_assert(strstr(tg_error(), expect), "message \"%s\" does not mention \"%s\"", tg_error(), expect);
    cr_assert_eq(tg_optim_steps(oa), 5);
    for (int i = 0; i < 5; i++) {
        problem_grad(&a), optim_step(oa);
        problem_grad(&b), optim_step(ob);
    }
    cr_assert_eq(memcmp(tg_params_data(a.p), tg_params_data(b.p), tg_params_numel(a.p) * sizeof(tg_real)), 0);
    tg_optim_free(oa);
    tg_optim_free(ob);
    problem_free(&a);
    problem_free(&b);
    tg_st_free(fx);
}

/* The state of `c` after 20 linreg steps. */
static tg_safetensors *trained_state(const tg_optim_opts *c)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE), *st = tg_st_new();
    problem pr;
    problem_init(&pr, fx, false);
    tg_optim *o = optim_new(pr.p, c);
    for (int i = 0; i < 20; i++) problem_grad(&pr), optim_step(o);
    cr_assert_eq(tg_optim_state_save(o, st), 0, "%s", tg_error());
    tg_optim_free(o);
    problem_free(&pr);
    tg_st_free(fx);
    return st;
}

Test(optim, bad_state_rejected_and_optimizer_unchanged)
{
    tg_safetensors *fx = fixture(OWN_FIXTURE);
    tg_optim_opts adam = config_from(fx, "adam"), sgd = config_from(fx, "sgd_momentum");
    tg_st_free(fx);
    struct {
        const tg_optim_opts *c;
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
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 1, (int[]){4});
    tg_optim_opts adam = tg_optim_defaults(TG_ADAM);
    tg_optim *a = optim_new(p, &adam);
    tg_safetensors *st = tg_st_new();
    cr_assert_eq(tg_optim_state_save(a, st), 0, "%s", tg_error());
    cr_assert_eq(tg_optim_state_save(a, st), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_state_save: tg_st_add: tensor name 'optim.adam.m.w' is already taken");
    tg_st_free(st);
    tg_optim_free(a);
    tg_params_free(p);
}
