/* Parameter groups and frozen parameters: a frozen parameter (requires_grad
 * false, or in a frozen group) stays bit for bit what it was under every
 * optimizer; a group's parameters follow the trajectory of an optimizer made
 * with the group's options alone; groups survive a checkpoint, and a state
 * saved without groups still loads. */
#include <math.h>

#include "test_util.h"

/* "enc.w" [2,3], "enc.b" [3], "dec.w" [3,2]: fixed values and gradients. */
static tg_params *store(void)
{
    tg_params *p = tg_params_new();
    tg_tensor *x[3] = {tg_params_add(p, "enc.w", 2, (int[]){2, 3}), tg_params_add(p, "enc.b", 1, (int[]){3}),
                       tg_params_add(p, "dec.w", 2, (int[]){3, 2})};
    for (int k = 0; k < 3; k++) cr_assert_not_null(x[k]);
    for (size_t i = 0; i < tg_params_numel(p); i++) tg_params_data(p)[i] = (tg_real)(0.1 * (double)i - 0.4);
    return p;
}

/* Some gradient that changes with the values, so the steps differ. */
static void fake_grads(tg_params *p)
{
    for (int k = 0; k < tg_params_count(p); k++) {
        tg_tensor *x = tg_params_at(p, k);
        for (size_t i = 0; i < x->size; i++) x->grad[i] = (tg_real)(0.3 * sin((double)x->data[i] * 3 + (double)i));
    }
}

static void run(tg_optim *o, tg_params *p, int steps)
{
    for (int s = 0; s < steps; s++) {
        fake_grads(p);
        cr_assert_eq(tg_optim_step(o), 0, "%s", tg_error());
    }
}

static tg_optim_opts configs(int i)
{
    tg_optim_opts o;
    switch (i) {
    case 0: o = tg_optim_defaults(TG_SGD); o.weight_decay = 0.1; break;
    case 1: o = tg_optim_defaults(TG_SGD); o.momentum = 0.9; o.weight_decay = 0.1; o.nesterov = true; break;
    case 2: o = tg_optim_defaults(TG_ADAM); o.weight_decay = 0.1; break;
    default: o = tg_optim_defaults(TG_ADAMW); o.weight_decay = 0.5; break;
    }
    o.lr = 0.05;
    return o;
}
#define N_CONFIGS 4

static bool same_bits(const tg_tensor *x, const tg_real *before)
{
    return memcmp(x->data, before, x->size * sizeof(tg_real)) == 0;
}

Test(optim_groups, requires_grad_false_stays_bit_identical_under_every_optimizer)
{
    for (int c = 0; c < N_CONFIGS; c++) {
        tg_params *p = store();
        tg_tensor *frozen = tg_params_get(p, "enc.b"), *live = tg_params_get(p, "enc.w");
        frozen->requires_grad = false;
        tg_real before[3], live_before[6];
        memcpy(before, frozen->data, sizeof before);
        memcpy(live_before, live->data, sizeof live_before);
        tg_optim_opts oo = configs(c);
        tg_optim *o = tg_optim_new(p, &oo);
        run(o, p, 10);  /* its grad is nonzero: only the flag keeps it still */
        cr_assert(same_bits(frozen, before), "config %d: a requires_grad = false parameter moved", c);
        cr_assert(!same_bits(live, live_before), "config %d: the live parameter did not move", c);
        tg_optim_free(o);
        tg_params_free(p);
    }
}

Test(optim_groups, frozen_group_stays_bit_identical_under_every_optimizer)
{
    for (int c = 0; c < N_CONFIGS; c++) {
        tg_params *p = store();
        tg_optim_opts oo = configs(c);
        tg_optim *o = tg_optim_new(p, &oo);
        cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "enc.", .lr = 0.05, .weight_decay = 0.5,
                                                              .frozen = true}), 1, "%s", tg_error());
        tg_real before[15];
        memcpy(before, tg_params_data(p), sizeof before);
        run(o, p, 10);
        cr_assert(same_bits(tg_params_get(p, "enc.w"), before) && same_bits(tg_params_get(p, "enc.b"), before + 6),
                  "config %d: a frozen group moved", c);
        cr_assert(!same_bits(tg_params_get(p, "dec.w"), before + 9), "config %d: the default group did not move", c);
        tg_optim_free(o);
        tg_params_free(p);
    }
}

/* A store holding a copy of one parameter of p. */
static tg_params *alone(const tg_params *p, const char *name)
{
    const tg_tensor *x = tg_params_get(p, name);
    tg_params *q = tg_params_new();
    tg_tensor *y = tg_params_add(q, name, x->ndim, x->shape);
    memcpy(y->data, x->data, x->size * sizeof(tg_real));
    return q;
}

Test(optim_groups, a_group_follows_an_optimizer_with_its_own_options_bit_for_bit)
{
    for (int c = 0; c < N_CONFIGS; c++) {
        tg_params *p = store(), *dec = alone(p, "dec.w");
        tg_optim_opts oo = configs(c), go = oo;
        go.lr = 0.2;
        go.weight_decay = 0.03;
        tg_optim *o = tg_optim_new(p, &oo), *ref = tg_optim_new(dec, &go);
        cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "dec.w", .lr = go.lr,
                                                              .weight_decay = go.weight_decay}), 1);
        for (int s = 0; s < 10; s++) {
            tg_optim_set_lr(o, 0.05 / (s + 1));  /* the default group's lr only */
            run(o, p, 1);
            run(ref, dec, 1);
        }
        cr_assert(same_bits(tg_params_get(p, "dec.w"), tg_params_get(dec, "dec.w")->data), "config %d", c);
        tg_optim_group g;
        cr_assert_eq(tg_optim_group_get(o, 1, &g), 0);
        cr_assert(g.lr == 0.2 && g.weight_decay == 0.03 && !g.frozen && strcmp(g.prefix, "dec.w") == 0);
        cr_assert_eq(tg_optim_group_get(o, 0, &g), 0);
        cr_assert(g.lr == 0.05 / 10 && strcmp(g.prefix, "") == 0);
        tg_optim_free(o);
        tg_optim_free(ref);
        tg_params_free(p);
        tg_params_free(dec);
    }
}

/* torch's LRScheduler: every group's lr is its base rate times the
 * schedule's factor, so a no-decay group made at half the peak follows half
 * the curve, and group 0 (its base the peak) follows tg_lr_at exactly. */
Test(optim_groups, a_schedule_moves_every_group_from_its_own_base_rate)
{
    tg_params *p = store();
    tg_optim_opts oo = configs(3);
    tg_optim *o = tg_optim_new(p, &oo);
    cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "enc.b", .lr = oo.lr / 2}), 1);
    cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "dec.", .lr = oo.lr, .frozen = true}), 2);
    tg_schedule s = tg_schedule_cosine(oo.lr, oo.lr / 10, 3, 20);
    for (long step = 0; step < 25; step++) {
        cr_assert_eq(tg_optim_schedule_lr(o, &s, step), 0, "%s", tg_error());
        double want = tg_lr_at(&s, step);
        tg_optim_group g[3];
        for (int i = 0; i < 3; i++) cr_assert_eq(tg_optim_group_get(o, i, &g[i]), 0);
        cr_assert(g[0].lr == want, "step %ld: group 0 lr %.17g, want %.17g", step, g[0].lr, want);
        cr_assert(g[2].lr == want, "step %ld: a group at the peak rate must follow the curve exactly", step);
        cr_assert(g[1].lr == want / 2, "step %ld: the half-rate group has lr %.17g, want %.17g", step, g[1].lr,
                  want / 2);
        cr_assert_eq(tg_optim_lr(o), g[0].lr);
    }
    tg_optim_group g;
    cr_assert_eq(tg_optim_group_get(o, 1, &g), 0);
    cr_assert(g.lr == s.min_lr / 2 && g.weight_decay == 0);
    s.total = 1;  /* before the warmup's end: refused, the rates unchanged */
    cr_assert_eq(tg_optim_schedule_lr(o, &s, 0), -1);
    cr_assert(strstr(tg_error(), "tg_optim_schedule_lr: tg_schedule: total = 1 must exceed warmup = 3"), "%s", tg_error());
    cr_assert_eq(tg_optim_group_get(o, 1, &g), 0);
    cr_assert(g.lr == s.min_lr / 2);
    cr_assert_eq(tg_optim_schedule_lr(NULL, &s, 0), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_schedule_lr: the optimizer is NULL");
    s = tg_schedule_constant(0, 0);  /* a zero peak: every rate 0, not 0/0 */
    cr_assert_eq(tg_optim_schedule_lr(o, &s, 5), 0);
    cr_assert_eq(tg_optim_group_get(o, 1, &g), 0);
    cr_assert(g.lr == 0 && tg_optim_lr(o) == 0);
    tg_optim_free(o);
    tg_params_free(p);
}

/* One group: the schedule gives the bits of setting tg_lr_at's value. */
Test(optim_groups, a_schedule_over_one_group_is_set_lr_of_the_curve_bit_for_bit)
{
    for (int c = 0; c < N_CONFIGS; c++) {
        tg_params *p = store(), *q = store();
        tg_optim_opts oo = configs(c);
        tg_optim *o = tg_optim_new(p, &oo), *r = tg_optim_new(q, &oo);
        tg_schedule s = tg_schedule_linear(oo.lr, oo.lr / 7, 2, 9);
        for (int k = 0; k < 12; k++) {
            cr_assert_eq(tg_optim_schedule_lr(o, &s, tg_optim_steps(o)), 0);
            cr_assert_eq(tg_optim_set_lr(r, tg_lr_at(&s, tg_optim_steps(r))), 0);
            run(o, p, 1);
            run(r, q, 1);
        }
        cr_assert_eq(memcmp(tg_params_data(p), tg_params_data(q), tg_params_numel(p) * sizeof(tg_real)), 0,
                     "config %d", c);
        tg_optim_free(o);
        tg_optim_free(r);
        tg_params_free(p);
        tg_params_free(q);
    }
}

#define expect_err(call, needle)                                                                   \
    do {                                                                                           \
        cr_assert_eq((call), -1);                                                                  \
        cr_assert(strstr(tg_error(), (needle)), "got \"%s\", want \"%s\"", tg_error(), (needle)); \
    } while (0)

Test(optim_groups, bad_groups_are_refused_by_name)
{
    tg_params *p = store();
    tg_optim_opts oo = tg_optim_defaults(TG_ADAMW);
    tg_optim *o = tg_optim_new(p, &oo);
    expect_err(tg_optim_add_group(o, &(tg_optim_group){.prefix = "nope."}), "no parameter name starts with 'nope.'");
    expect_err(tg_optim_add_group(o, &(tg_optim_group){.prefix = "enc.", .lr = -1}), "lr = -1");
    expect_err(tg_optim_add_group(o, &(tg_optim_group){.prefix = "enc.", .weight_decay = NAN}), "weight_decay");
    expect_err(tg_optim_add_group(o, NULL), "NULL");
    cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "enc."}), 1);
    expect_err(tg_optim_add_group(o, &(tg_optim_group){.prefix = "enc.b"}), "'enc.b' is in group 1");
    expect_err(tg_optim_group_set_lr(o, 2, 0.1), "group 2 of 2");
    expect_err(tg_optim_group_set_lr(o, 1, INFINITY), "tg_optim_group_set_lr: lr = inf");
    expect_err(tg_optim_group_set_lr(NULL, 0, 0.1), "tg_optim_group_set_lr: the optimizer is NULL");
    tg_optim_group g;
    expect_err(tg_optim_group_get(o, -1, &g), "tg_optim_group_get: group -1 of 2");
    expect_err(tg_optim_group_get(NULL, 0, &g), "tg_optim_group_get: the optimizer is NULL");
    expect_err(tg_optim_add_group(NULL, &(tg_optim_group){.prefix = "enc."}), "tg_optim_add_group: the optimizer is NULL");
    cr_assert_eq(tg_optim_group_count(o), 2);
    tg_optim_free(o);
    tg_params_free(p);
}

/* Saves o's state into a new set (through bytes, as a file would go). */
static tg_safetensors *roundtrip(const tg_optim *o)
{
    tg_safetensors *s = tg_st_new(), *back = NULL;
    cr_assert_eq(tg_optim_state_save(o, s), 0, "%s", tg_error());
    uint8_t *buf;
    size_t len;
    cr_assert_eq(tg_st_to_bytes(s, TG_F64, &buf, &len), 0);
    cr_assert_eq(tg_st_parse(buf, len, NULL, &back), 0, "%s", tg_error());
    tg_free(buf);
    tg_st_free(s);
    return back;
}

Test(optim_groups, checkpoint_keeps_the_groups_and_resumes_bit_for_bit)
{
    tg_params *p = store(), *q = store();
    tg_optim_opts oo = configs(3);
    tg_optim *o = tg_optim_new(p, &oo), *r = tg_optim_new(q, &oo);
    cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "enc.b", .lr = 0.01, .frozen = true}), 1);
    cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "dec.", .lr = 0.3, .weight_decay = 0.125}), 2);
    run(o, p, 5);
    tg_safetensors *s = roundtrip(o);
    memcpy(tg_params_data(q), tg_params_data(p), tg_params_numel(p) * sizeof(tg_real));
    cr_assert_eq(tg_optim_state_load(r, s), 0, "%s", tg_error());  /* r had no groups: they come back */
    cr_assert_eq(tg_optim_group_count(r), 3);
    tg_optim_group g;
    tg_optim_group_get(r, 2, &g);
    cr_assert(strcmp(g.prefix, "dec.") == 0 && g.lr == 0.3 && g.weight_decay == 0.125 && !g.frozen);
    tg_optim_group_get(r, 1, &g);
    cr_assert(strcmp(g.prefix, "enc.b") == 0 && g.lr == 0.01 && g.frozen);
    run(o, p, 5);
    run(r, q, 5);
    cr_assert_eq(memcmp(tg_params_data(p), tg_params_data(q), tg_params_numel(p) * sizeof(tg_real)), 0);
    tg_st_free(s);
    tg_optim_free(o);
    tg_optim_free(r);
    tg_params_free(p);
    tg_params_free(q);
}

Test(optim_groups, a_state_saved_without_groups_loads_and_keeps_the_callers)
{
    tg_params *p = store();
    tg_optim_opts oo = configs(2);
    tg_optim *o = tg_optim_new(p, &oo);
    run(o, p, 3);
    tg_safetensors *s = roundtrip(o), *old = tg_st_new();
    /* the same state as a checkpoint from before groups: no optim.group* metadata */
    for (int i = 0; i < tg_st_count(s); i++) cr_assert_eq(tg_st_add(old, NULL, tg_st_at(s, i)), 0);
    cr_assert_eq(tg_st_set_meta(old, "optim.adam.step", "3"), 0);
    cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "dec.", .frozen = true}), 1);
    cr_assert_eq(tg_optim_state_load(o, old), 0, "%s", tg_error());
    cr_assert_eq(tg_optim_group_count(o), 2);
    cr_assert_eq(tg_optim_steps(o), 3);
    /* a checkpoint's groups that the store cannot take are refused, o unchanged */
    cr_assert_eq(tg_st_set_meta(old, "optim.groups", "1"), 0);
    expect_err(tg_optim_state_load(o, old), "missing metadata 'optim.group.1.prefix'");
    cr_assert_eq(tg_st_set_meta(old, "optim.group.1.prefix", "gone."), 0);
    cr_assert_eq(tg_st_set_meta(old, "optim.group.1.lr", "0.1"), 0);
    cr_assert_eq(tg_st_set_meta(old, "optim.group.1.weight_decay", "0"), 0);
    cr_assert_eq(tg_st_set_meta(old, "optim.group.1.frozen", "false"), 0);
    expect_err(tg_optim_state_load(o, old), "no parameter name starts with 'gone.'");
    static const char *const bad[][3] = {
        {"optim.group.1.frozen", "maybe", "'optim.group.1.frozen' = \"maybe\" is not true or false"},
        {"optim.group.1.lr", "fast", "'optim.group.1.lr' = \"fast\" is not a number"},
        {"optim.group.1.lr", "-1", "group 'gone.': lr = -1 must be finite"},
        {"optim.groups", "-1", "'optim.groups' = \"-1\" is not a number of groups"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tg_safetensors *e = tg_st_new();
        for (int k = 0; k < tg_st_meta_count(old); k++)
            tg_st_set_meta(e, tg_st_meta_key(old, k), tg_st_meta(old, tg_st_meta_key(old, k)));
        for (int k = 0; k < tg_st_count(old); k++) tg_st_add(e, NULL, tg_st_at(old, k));
        cr_assert_eq(tg_st_set_meta(e, bad[i][0], bad[i][1]), 0);
        expect_err(tg_optim_state_load(o, e), bad[i][2]);
        tg_st_free(e);
    }
    cr_assert_eq(tg_optim_group_count(o), 2);
    tg_st_free(s);
    tg_st_free(old);
    tg_optim_free(o);
    tg_params_free(p);
}

/* A resumed run's schedule scales the saved base rates, not the scaled
 * ones; a checkpoint from before base rates takes each group's lr. */
Test(optim_groups, checkpoint_keeps_the_base_rates_a_schedule_scales)
{
    tg_params *p = store();
    tg_optim_opts oo = configs(3);
    tg_optim *o = tg_optim_new(p, &oo), *r = tg_optim_new(p, &oo);
    cr_assert_eq(tg_optim_add_group(o, &(tg_optim_group){.prefix = "dec.", .lr = 0.01}), 1);
    tg_schedule s = tg_schedule_linear(oo.lr, 0, 0, 10);
    cr_assert_eq(tg_optim_schedule_lr(o, &s, 5), 0);  /* half way: dec. at 0.005 */
    tg_safetensors *st = roundtrip(o);
    cr_assert_str_eq(tg_st_meta(st, "optim.group.1.initial_lr"), "0.01");
    cr_assert_eq(tg_optim_state_load(r, st), 0, "%s", tg_error());
    tg_optim_group g;
    cr_assert_eq(tg_optim_schedule_lr(r, &s, 8), 0);
    cr_assert_eq(tg_optim_group_get(r, 1, &g), 0);
    cr_assert(g.lr == tg_lr_at(&s, 8) * (0.01 / oo.lr), "lr %.17g", g.lr);
    /* without initial_lr, the saved lr (here the scaled 0.005) is the base */
    tg_safetensors *old = tg_st_new();
    for (int k = 0; k < tg_st_meta_count(st); k++)
        if (strcmp(tg_st_meta_key(st, k), "optim.group.1.initial_lr") != 0)
            tg_st_set_meta(old, tg_st_meta_key(st, k), tg_st_meta(st, tg_st_meta_key(st, k)));
    for (int k = 0; k < tg_st_count(st); k++) tg_st_add(old, NULL, tg_st_at(st, k));
    cr_assert_eq(tg_optim_state_load(r, old), 0, "%s", tg_error());
    cr_assert_eq(tg_optim_schedule_lr(r, &s, 0), 0);
    cr_assert_eq(tg_optim_group_get(r, 1, &g), 0);
    cr_assert(g.lr == tg_lr_at(&s, 0) * (0.005 / oo.lr), "lr %.17g", g.lr);
    cr_assert_eq(tg_st_set_meta(old, "optim.group.1.initial_lr", "-2"), 0);
    expect_err(tg_optim_state_load(r, old), "group 'dec.': initial_lr = -2 must be finite and >= 0");
    cr_assert_eq(tg_st_set_meta(old, "optim.group.1.initial_lr", "slow"), 0);
    expect_err(tg_optim_state_load(r, old), "'optim.group.1.initial_lr' = \"slow\" is not a number");
    tg_st_free(old);
    tg_st_free(st);
    tg_optim_free(o);
    tg_optim_free(r);
    tg_params_free(p);
}

Test(optim_groups, non_finite_state_is_neither_saved_nor_loaded)
{
    tg_params *p = store();
    tg_optim_opts oo = configs(3);
    tg_optim *o = tg_optim_new(p, &oo);
    run(o, p, 2);
    tg_safetensors *s = roundtrip(o), *t = tg_st_new();
    tg_st_get(s, "optim.adam.v.dec.w")->data[4] = (tg_real)NAN;
    expect_err(tg_optim_state_load(o, s), "'optim.adam.v.dec.w' holds a non-finite value");
    cr_assert_eq(tg_optim_steps(o), 2);
    tg_params_grad(p)[0] = (tg_real)INFINITY;  /* the moments of enc.w become inf */
    cr_assert_eq(tg_optim_step(o), 0);
    expect_err(tg_optim_state_save(o, t), "'optim.adam.m.enc.w' holds a non-finite value");
    tg_st_free(s);
    tg_st_free(t);
    tg_optim_free(o);
    tg_params_free(p);
}
