/* tapegrad: the optimizer object: options, state, steps and checkpoints (see
 * optim/optim.h). The update rules are in optim/sgd.c and optim/adam.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/engine/alloc.h"
#include "internal.h"

/* Longest state key, "<prefix><param name>", including the NUL. */
#define KEY_MAX 512

#define KIND_ROW_(k, rec) [k] = &rec,
static const tg_optim_def *const kinds[TG_OPTIM_KIND_COUNT] = {TG_OPTIM_KINDS(KIND_ROW_)};
#undef KIND_ROW_

/* The options that some kinds only take; a kind refuses the others unless 0. */
static bool sgd_momentum_given(const tg_optim_opts *o)
{
    return o->momentum != 0 || o->dampening != 0 || o->nesterov;
}

static bool adam_betas_given(const tg_optim_opts *o)
{
    return o->beta1 != 0 || o->beta2 != 0 || o->eps != 0;
}

static const struct {
    unsigned bit;
    const char *names;
    bool (*given)(const tg_optim_opts *o);
} kind_options[] = {
    {TG_OPTS_SGD_MOMENTUM, "momentum, dampening and nesterov", sgd_momentum_given},
    {TG_OPTS_ADAM_BETAS, "beta1, beta2 and eps", adam_betas_given},
};

static const tg_optim_def *kind_def(tg_optim_kind kind)
{
    return (unsigned)kind < TG_OPTIM_KIND_COUNT ? kinds[kind] : NULL;
}

/* The first kind that takes the options of bit. */
static const char *options_owner(unsigned bit)
{
    for (int k = 0; k < TG_OPTIM_KIND_COUNT; k++)
        if (kinds[k]->options & bit) return kinds[k]->name;
    return "no";
}

const char *tg_optim_kind_name(tg_optim_kind kind)
{
    const tg_optim_def *d = kind_def(kind);
    return d ? d->name : NULL;
}

int tg_optim_kind_parse(const char *name)
{
    TG_REFUSE_NULL(name, "the name", -1);
    for (int k = 0; k < TG_OPTIM_KIND_COUNT; k++)
        if (strcasecmp(name, kinds[k]->name) == 0) return k;
    return tg_error_set("tg_optim: no optimizer is named '%s'", name);
}

tg_optim_opts tg_optim_defaults(tg_optim_kind kind)
{
    const tg_optim_def *d = kind_def(kind);
    return d ? d->defaults : (tg_optim_opts){.kind = kind};
}

/* The comparisons are written so that NaN fails them. */
int tg_optim_check(const tg_optim_opts *o)
{
    if (!o) return tg_error_set("tg_optim: options are NULL");
    const tg_optim_def *d = kind_def(o->kind);
    if (!d) return tg_error_set("tg_optim: unknown kind %d (0 to %d)", (int)o->kind, TG_OPTIM_KIND_COUNT - 1);
    if (!(o->lr >= 0 && isfinite(o->lr)))
        return tg_error_set("tg_optim: lr = %g must be finite and >= 0", o->lr);
    if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
        return tg_error_set("tg_optim: weight_decay = %g must be finite and >= 0", o->weight_decay);
    for (size_t i = 0; i < sizeof kind_options / sizeof *kind_options; i++)
        if (!(d->options & kind_options[i].bit) && kind_options[i].given(o))
            return tg_error_set("tg_optim: %s are %s options, the kind is %s (start from tg_optim_defaults)",
                                kind_options[i].names, options_owner(kind_options[i].bit), d->name);
    return d->check(o);
}

tg_optim *tg_optim_new(tg_params *p, const tg_optim_opts *opts)
{
    TG_DISPATCH_ON(tg_optim_new, p && tg_params_dtype(p) == TG_OTHER_DTYPE, (p, opts));
    if (!p) {
        tg_error_set("tg_optim_new: the parameter store is NULL");
        return NULL;
    }
    if (tg_optim_check(opts)) return NULL;
    const tg_optim_def *def = kinds[opts->kind];
    int n_bufs = def->n_bufs(opts);
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
                     def->name, n);
        return NULL;
    }
    groups[0] = (tg_optim_grp){.prefix = none, .o = *opts, .base_lr = opts->lr};
    *o = (tg_optim){.p = p, .numel = n, .count = count, .def = def, .n_bufs = n_bufs, .groups = groups,
                    .n_groups = 1, .group_of = group_of};
    for (int b = 0; b < n_bufs; b++) o->buf[b] = bufs + (size_t)b * n;
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
    TG_DISPATCH_ON(tg_optim_step, o && o->p && tg_params_dtype(o->p) == TG_OTHER_DTYPE, (o));
    if (!o) return tg_error_set("tg_optim_step: the optimizer is NULL");
    if (check_store(o, "tg_optim_step")) return -1;
    o->t++;
    size_t off = 0;
    for (int k = 0; k < o->count; k++) {
        tg_tensor *x = tg_params_at(o->p, k);
        if (tg_optim_moves(o, k)) {
            tg_real *buf[TG_OPTIM_BUFS_MAX] = {NULL};
            for (int b = 0; b < o->n_bufs; b++) buf[b] = o->buf[b] + off;
            o->def->update(x, &o->groups[o->group_of[k]].o, o->t, buf);
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
    TG_DISPATCH_ON(tg_optim_state_save, o && o->p && tg_params_dtype(o->p) == TG_OTHER_DTYPE, (o, s));
    const char *what = "tg_optim_state_save";
    char key[KEY_MAX], val[32];
    if (!o || !s) return tg_error_set("%s: NULL argument", what);
    for (int b = 0; b < o->n_bufs; b++) {
        size_t off = 0;
        for (int k = 0; k < tg_params_count(o->p); k++) {
            const tg_tensor *x = tg_params_at(o->p, k);
            if (state_key(key, o->def->buf_key[b], x, what)) return -1;
            if (!all_finite(o->buf[b] + off, x->size))
                return tg_error_set("%s: '%s' holds a non-finite value: not saving a state that cannot "
                                    "be resumed", what, key);
            if (tg_st_add_data(s, key, o->buf[b] + off, x->ndim, x->shape))
                return tg_error_set("%s: %s", what, tg_error());
            off += x->size;
        }
    }
    snprintf(val, sizeof val, "%ld", o->t);
    if (tg_st_set_meta(s, o->def->step_key, val) || tg_optim_groups_write(o, s))
        return tg_error_set("%s: %s", what, tg_error());
    return 0;
}

int tg_optim_meta_count(const tg_safetensors *s, const char *key, long *count, const char *what)
{
    const char *val = tg_st_meta(s, key);
    if (!val) return tg_error_set("%s: missing metadata '%s'", what, key);
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (end == val || *end || errno || v < 0 || !(*val >= '0' && *val <= '9'))
        return tg_error_set("%s: metadata '%s' = \"%s\" is not a step count", what, key, val);
    *count = v;
    return 0;
}

int tg_optim_state_load(tg_optim *o, const tg_safetensors *s)
{
    TG_DISPATCH_ON(tg_optim_state_load, o && o->p && tg_params_dtype(o->p) == TG_OTHER_DTYPE, (o, s));
    const char *what = "tg_optim_state_load";
    char key[KEY_MAX], have[TG_SHAPE_STR], want[TG_SHAPE_STR];
    long t = 0;
    if (!o || !s) return tg_error_set("%s: NULL argument", what);
    if (check_store(o, what) || tg_optim_meta_count(s, o->def->step_key, &t, what)) return -1;
    for (int b = 0; b < o->n_bufs; b++)  /* everything is checked before anything is copied */
        for (int k = 0; k < tg_params_count(o->p); k++) {
            const tg_tensor *x = tg_params_at(o->p, k);
            if (state_key(key, o->def->buf_key[b], x, what)) return -1;
            const tg_tensor *y = tg_st_get(s, key);
            if (!y) return tg_error_set("%s: missing tensor '%s'", what, key);
            if (!tg_shape_equal(x, y))
                return tg_error_set("%s: '%s' is %s but parameter '%s' is %s", what, key, tg_shape_str(y, have),
                                    x->name, tg_shape_str(x, want));
            if (y->dtype != x->dtype)
                return tg_error_set("%s: '%s' is %s but parameter '%s' is %s", what, key, tg_dtype_name(y->dtype),
                                    x->name, tg_dtype_name(x->dtype));
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
            snprintf(key, sizeof key, "%s%s", o->def->buf_key[b], x->name);
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
