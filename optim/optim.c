/* tapegrad: the optimizer object: options, state, steps and checkpoints (see
 * optim/optim.h). The update rules are in optim/sgd.c and optim/adam.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/engine/alloc.h"
#include "internal.h"

/* Longest state key, "<prefix><param name>", including the NUL. */
#define KEY_MAX 512

static const char *const kind_names[] = {"SGD", "Adam", "AdamW"};

tg_optim_opts tg_optim_defaults(tg_optim_kind kind)
{
    if (kind == TG_SGD) return (tg_optim_opts){.kind = TG_SGD, .lr = 1e-3};
    return (tg_optim_opts){.kind = kind, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                           .weight_decay = kind == TG_ADAMW ? 0.01 : 0};
}

/* The comparisons are written so that NaN fails them. */
int tg_optim_check(const tg_optim_opts *o)
{
    if (!o) return tg_error_set("tg_optim: options are NULL");
    if (o->kind != TG_SGD && o->kind != TG_ADAM && o->kind != TG_ADAMW)
        return tg_error_set("tg_optim: unknown kind %d (TG_SGD, TG_ADAM or TG_ADAMW)", (int)o->kind);
    if (!(o->lr >= 0 && isfinite(o->lr)))
        return tg_error_set("tg_optim: lr = %g must be finite and >= 0", o->lr);
    if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
        return tg_error_set("tg_optim: weight_decay = %g must be finite and >= 0", o->weight_decay);
    const char *kind = kind_names[o->kind];
    if (o->kind == TG_SGD) {
        if (o->beta1 != 0 || o->beta2 != 0 || o->eps != 0)
            return tg_error_set("tg_optim: beta1, beta2 and eps are Adam options, the kind is SGD "
                                "(start from tg_optim_defaults(TG_SGD))");
        if (!(o->momentum >= 0 && isfinite(o->momentum)))
            return tg_error_set("tg_optim: momentum = %g must be finite and >= 0", o->momentum);
        if (!(o->dampening >= 0 && o->dampening <= 1))
            return tg_error_set("tg_optim: dampening = %g is outside [0, 1]", o->dampening);
        if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
            return tg_error_set("tg_optim: nesterov needs momentum > 0 and dampening = 0 (momentum = %g, "
                                "dampening = %g)", o->momentum, o->dampening);
        return 0;
    }
    if (o->momentum != 0 || o->dampening != 0 || o->nesterov)
        return tg_error_set("tg_optim: momentum, dampening and nesterov are SGD options, the kind is %s "
                            "(start from tg_optim_defaults)", kind);
    if (!(o->beta1 >= 0 && o->beta1 < 1))
        return tg_error_set("tg_optim: beta1 = %g is outside [0, 1)", o->beta1);
    if (!(o->beta2 >= 0 && o->beta2 < 1))
        return tg_error_set("tg_optim: beta2 = %g is outside [0, 1)", o->beta2);
    if (!(o->eps > 0 && isfinite(o->eps)))
        return tg_error_set("tg_optim: eps = %g must be finite and > 0", o->eps);
    return 0;
}

tg_optim *tg_optim_new(tg_params *p, const tg_optim_opts *opts)
{
    if (!p) {
        tg_error_set("tg_optim_new: the parameter store is NULL");
        return NULL;
    }
    if (tg_optim_check(opts)) return NULL;
    bool sgd = opts->kind == TG_SGD;
    int n_bufs = sgd ? opts->momentum != 0 : 2;
    size_t n = tg_params_numel(p);
    int count = tg_params_count(p);
    tg_optim *o = tg_calloc(1, sizeof *o);
    tg_real *bufs = n_bufs && n <= SIZE_MAX / 2 ? tg_calloc((size_t)n_bufs * n, sizeof(tg_real)) : NULL;
    tg_optim_grp *groups = tg_calloc(1, sizeof *groups);
    char *none = tg_strdup("");
    int *group_of = tg_calloc(count ? (size_t)count : 1, sizeof *group_of);
    if (!o || (n_bufs && !bufs) || !groups || !none || !group_of) {
        tg_free(o);
        tg_free(bufs);
        tg_free(groups);
        tg_free(none);
        tg_free(group_of);
        tg_error_set("tg_optim_new: out of memory for the %s state of %zu parameters",
                     kind_names[opts->kind], n);
        return NULL;
    }
    groups[0] = (tg_optim_grp){.prefix = none, .o = *opts};
    *o = (tg_optim){.p = p, .numel = n, .count = count, .n_bufs = n_bufs, .groups = groups, .n_groups = 1,
                    .group_of = group_of};
    o->buf[0] = bufs;
    o->buf[1] = n_bufs == 2 ? bufs + n : NULL;
    if (sgd) {
        o->prefix[0] = "optim.sgd.momentum.";
        o->step_key = "optim.sgd.step";
    } else {
        o->prefix[0] = "optim.adam.m.";
        o->prefix[1] = "optim.adam.v.";
        o->step_key = "optim.adam.step";
    }
    return o;
}

void tg_optim_free(tg_optim *o)
{
    if (!o) return;
    tg_free(o->buf[0]);
    tg_optim_groups_free(o->groups, o->n_groups);
    tg_free(o->group_of);
    tg_free(o);
}

/* -1 with a message naming `what` when the store grew after tg_optim_new. */
static int check_store(const tg_optim *o, const char *what)
{
    if (tg_params_numel(o->p) == o->numel && tg_params_count(o->p) == o->count) return 0;
    return tg_error_set("%s: the parameter store has %zu values, %zu when tg_optim_new made the optimizer: "
                        "make a new one after adding parameters", what, tg_params_numel(o->p), o->numel);
}

int tg_optim_step(tg_optim *o)
{
    if (!o) return tg_error_set("tg_optim_step: the optimizer is NULL");
    if (check_store(o, "tg_optim_step")) return -1;
    o->t++;
    size_t off = 0;
    for (int k = 0; k < o->count; k++) {
        tg_tensor *x = tg_params_at(o->p, k);
        const tg_optim_grp *g = &o->groups[o->group_of[k]];
        if (!g->frozen && x->requires_grad) {
            if (g->o.kind == TG_SGD) tg_sgd_update(x, &g->o, o->buf[0] ? o->buf[0] + off : NULL, o->t == 1);
            else tg_adam_update(x, &g->o, o->t, o->buf[0] + off, o->buf[1] + off);
        }
        off += x->size;
    }
    return 0;
}

void tg_optim_zero_grad(tg_optim *o)
{
    TG_REFUSE_NULL(o, "the optimizer", );
    tg_params_zero_grad(o->p);
}

int tg_optim_set_lr(tg_optim *o, double lr)
{
    if (!o) return tg_error_set("tg_optim_set_lr: the optimizer is NULL");
    if (!(lr >= 0 && isfinite(lr))) return tg_error_set("tg_optim_set_lr: lr = %g must be finite and >= 0", lr);
    o->groups[0].o.lr = lr;
    return 0;
}

double tg_optim_lr(const tg_optim *o)
{
    TG_REFUSE_NULL(o, "the optimizer", NAN);
    return o->groups[0].o.lr;
}

long tg_optim_steps(const tg_optim *o)
{
    TG_REFUSE_NULL(o, "the optimizer", -1);
    return o->t;
}

const tg_optim_opts *tg_optim_options(const tg_optim *o)
{
    TG_REFUSE_NULL(o, "the optimizer", NULL);
    return &o->groups[0].o;
}

/* ---- state as named tensors ----------------------------------------------- */

static bool all_finite(const tg_real *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}

/* "<prefix><name>" into key, or -1 with a message when it does not fit. */
static int state_key(char *key, const char *prefix, const tg_tensor *x, const char *what)
{
    int n = snprintf(key, KEY_MAX, "%s%s", prefix, x->name);
    if (n >= 0 && n < KEY_MAX) return 0;
    return tg_error_set("%s: state name for parameter '%s' is too long", what, x->name);
}

int tg_optim_state_save(const tg_optim *o, tg_safetensors *s)
{
    const char *what = "tg_optim_state_save";
    char key[KEY_MAX], val[32];
    if (!o || !s) return tg_error_set("%s: NULL argument", what);
    for (int b = 0; b < o->n_bufs; b++) {
        size_t off = 0;
        for (int k = 0; k < tg_params_count(o->p); k++) {
            const tg_tensor *x = tg_params_at(o->p, k);
            if (state_key(key, o->prefix[b], x, what)) return -1;
            if (!all_finite(o->buf[b] + off, x->size))
                return tg_error_set("%s: '%s' holds a non-finite value: not saving a state that cannot "
                                    "be resumed", what, key);
            if (tg_st_add_data(s, key, o->buf[b] + off, x->ndim, x->shape))
                return tg_error_set("%s: %s", what, tg_error());
            off += x->size;
        }
    }
    snprintf(val, sizeof val, "%ld", o->t);
    if (tg_st_set_meta(s, o->step_key, val) || tg_optim_groups_write(o, s))
        return tg_error_set("%s: %s", what, tg_error());
    return 0;
}

/* The step count saved under key: -1 with a message when absent or not a
 * non-negative integer. */
static int load_step(const tg_safetensors *s, const char *key, long *step, const char *what)
{
    const char *val = tg_st_meta(s, key);
    if (!val) return tg_error_set("%s: missing metadata '%s'", what, key);
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (end == val || *end || errno || v < 0 || !(*val >= '0' && *val <= '9'))
        return tg_error_set("%s: metadata '%s' = \"%s\" is not a step count", what, key, val);
    *step = v;
    return 0;
}

int tg_optim_state_load(tg_optim *o, const tg_safetensors *s)
{
    const char *what = "tg_optim_state_load";
    char key[KEY_MAX], have[TG_SHAPE_STR], want[TG_SHAPE_STR];
    long t = 0;
    if (!o || !s) return tg_error_set("%s: NULL argument", what);
    if (check_store(o, what) || load_step(s, o->step_key, &t, what)) return -1;
    for (int b = 0; b < o->n_bufs; b++)  /* everything is checked before anything is copied */
        for (int k = 0; k < tg_params_count(o->p); k++) {
            const tg_tensor *x = tg_params_at(o->p, k);
            if (state_key(key, o->prefix[b], x, what)) return -1;
            const tg_tensor *y = tg_st_get(s, key);
            if (!y) return tg_error_set("%s: missing tensor '%s'", what, key);
            if (!tg_shape_equal(x, y))
                return tg_error_set("%s: '%s' is %s but parameter '%s' is %s", what, key, tg_shape_str(y, have),
                                    x->name, tg_shape_str(x, want));
            if (!all_finite(y->data, y->size))
                return tg_error_set("%s: '%s' holds a non-finite value: the state cannot be resumed", what, key);
        }
    tg_optim_grp *groups;
    int n_groups, *group_of;
    if (tg_optim_groups_read(o, s, &groups, &n_groups, &group_of))
        return tg_error_set("%s: %s", what, tg_error());
    for (int b = 0; b < o->n_bufs; b++) {
        size_t off = 0;
        for (int k = 0; k < tg_params_count(o->p); k++) {
            const tg_tensor *x = tg_params_at(o->p, k);
            snprintf(key, sizeof key, "%s%s", o->prefix[b], x->name);
            if (x->size) memcpy(o->buf[b] + off, tg_st_get(s, key)->data, x->size * sizeof(tg_real));
            off += x->size;
        }
    }
    o->t = t;
    if (n_groups == 1) {  /* the default group alone */
        for (int i = 1; i < o->n_groups; i++) tg_free(o->groups[i].prefix);
        o->n_groups = 1;
        for (int k = 0; k < o->count; k++) o->group_of[k] = 0;
    } else if (n_groups) {  /* else a state from before parameter groups: the caller's stay */
        tg_optim_groups_free(o->groups, o->n_groups);
        tg_free(o->group_of);
        o->groups = groups;
        o->n_groups = n_groups;
        o->group_of = group_of;
    }
    return 0;
}
