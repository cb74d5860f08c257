/* tapegrad: the optimizer's parameter groups (torch's param_groups; see
 * optim/optim.h): which parameter is in which group, adding groups, and
 * their checkpoint metadata. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/engine/alloc.h"
#include "internal.h"

void tg_optim_groups_free(tg_optim_grp *groups, int n)
{
    for (int i = 0; groups && i < n; i++) tg_free(groups[i].prefix);
    tg_free(groups);
}

static bool starts_with(const char *name, const char *prefix)
{
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

static int check_group(const tg_optim_group *g, const char *what)
{
    if (!g || !g->prefix) return tg_error_set("%s: the group or its prefix is NULL", what);
    if (!(g->lr >= 0 && isfinite(g->lr)))
        return tg_error_set("%s: group '%s': lr = %g must be finite and >= 0", what, g->prefix, g->lr);
    if (!(g->weight_decay >= 0 && isfinite(g->weight_decay)))
        return tg_error_set("%s: group '%s': weight_decay = %g must be finite and >= 0", what, g->prefix,
                            g->weight_decay);
    return 0;
}

/* Each parameter's group for groups [n] (group 0 the default) into
 * group_of [o->count]. -1 with a message when a group takes no parameter
 * or a parameter matches two added groups. */
static int assign(const tg_optim *o, const tg_optim_grp *groups, int n, int *group_of, const char *what)
{
    for (int k = 0; k < o->count; k++) group_of[k] = 0;
    for (int i = 1; i < n; i++) {
        bool any = false;
        for (int k = 0; k < o->count; k++) {
            const char *name = tg_params_at(o->p, k)->name;
            if (!starts_with(name, groups[i].prefix)) continue;
            if (group_of[k])
                return tg_error_set("%s: parameter '%s' is in group %d ('%s') and group %d ('%s'): a parameter "
                                    "has one group", what, name, group_of[k], groups[group_of[k]].prefix, i,
                                    groups[i].prefix);
            group_of[k] = i;
            any = true;
        }
        if (!any) return tg_error_set("%s: group %d: no parameter name starts with '%s'", what, i, groups[i].prefix);
    }
    return 0;
}

/* groups [n] with g appended as an added group: a new array, the old
 * entries moved (not copied) into it. NULL on OOM. */
static tg_optim_grp *grow(const tg_optim_grp *groups, int n, const tg_optim_grp *g)
{
    tg_optim_grp *a = tg_malloc((size_t)(n + 1) * sizeof *a);
    if (!a) return NULL;
    memcpy(a, groups, (size_t)n * sizeof *a);
    a[n] = *g;
    return a;
}

/* The default group's options with g's lr (its base rate too), weight
 * decay and frozen flag. */
static tg_optim_grp make(const tg_optim *o, const tg_optim_group *g, char *prefix)
{
    tg_optim_grp r = {.prefix = prefix, .o = o->groups[0].o, .base_lr = g->lr, .frozen = g->frozen};
    r.o.lr = g->lr;
    r.o.weight_decay = g->weight_decay;
    return r;
}

int tg_optim_add_group(tg_optim *o, const tg_optim_group *g)
{
    const char *what = "tg_optim_add_group";
    if (!o) return tg_error_set("%s: the optimizer is NULL", what);
    if (check_group(g, what)) return -1;
    char *prefix = tg_strdup(g->prefix);
    tg_optim_grp r = make(o, g, prefix);
    tg_optim_grp *groups = prefix ? grow(o->groups, o->n_groups, &r) : NULL;
    int *group_of = tg_malloc((o->count ? (size_t)o->count : 1) * sizeof *group_of);
    if (!groups || !group_of) {
        tg_free(prefix);
        tg_free(groups);
        tg_free(group_of);
        return tg_error_set("%s: out of memory", what);
    }
    if (assign(o, groups, o->n_groups + 1, group_of, what)) {
        tg_free(prefix);
        tg_free(groups);
        tg_free(group_of);
        return -1;
    }
    tg_free(o->groups);  /* its entries live on in groups */
    tg_free(o->group_of);
    o->groups = groups;
    o->group_of = group_of;
    return o->n_groups++;
}

int tg_optim_group_count(const tg_optim *o)
{
    TG_REFUSE_NULL(o, "the optimizer", -1);
    return o->n_groups;
}

int tg_optim_group_get(const tg_optim *o, int i, tg_optim_group *g)
{
    TG_REFUSE_NULL(o, "the optimizer", -1);
    TG_REFUSE_NULL(g, "the group", -1);
    if (i < 0 || i >= o->n_groups)
        return tg_error_set("tg_optim_group_get: group %d of %d", i, o->n_groups);
    const tg_optim_grp *r = &o->groups[i];
    *g = (tg_optim_group){.prefix = r->prefix, .lr = r->o.lr, .weight_decay = r->o.weight_decay,
                          .frozen = r->frozen};
    return 0;
}

int tg_optim_group_set_lr(tg_optim *o, int i, double lr)
{
    if (!o) return tg_error_set("tg_optim_group_set_lr: the optimizer is NULL");
    if (i < 0 || i >= o->n_groups)
        return tg_error_set("tg_optim_group_set_lr: group %d of %d", i, o->n_groups);
    if (!(lr >= 0 && isfinite(lr)))
        return tg_error_set("tg_optim_group_set_lr: lr = %g must be finite and >= 0", lr);
    o->groups[i].o.lr = lr;
    return 0;
}

/* lr * (base / peak): a group whose base is the schedule's peak gets
 * tg_lr_at's value exactly (the ratio is 1), so a run with one group has the
 * bits of tg_optim_set_lr(o, tg_lr_at(s, step)). */
int tg_optim_schedule_lr(tg_optim *o, const tg_schedule *s, long step)
{
    if (!o) return tg_error_set("tg_optim_schedule_lr: the optimizer is NULL");
    if (tg_schedule_check(s)) return tg_error_set("tg_optim_schedule_lr: %s", tg_error());
    double lr = tg_lr_at(s, step);
    for (int i = 0; i < o->n_groups; i++)
        o->groups[i].o.lr = s->lr > 0 ? lr * (o->groups[i].base_lr / s->lr) : 0;
    return 0;
}

/* ---- checkpoint metadata ------------------------------------------------------------- */

/* "%.17g": every double reads back exactly. */
static int put_num(tg_safetensors *s, const char *key, double v)
{
    char val[32];
    snprintf(val, sizeof val, "%.17g", v);
    return tg_st_set_meta(s, key, val);
}

int tg_optim_groups_write(const tg_optim *o, tg_safetensors *s)
{
    char key[64];
    if (put_num(s, "optim.groups", o->n_groups - 1)) return -1;
    for (int i = 1; i < o->n_groups; i++) {
        const tg_optim_grp *g = &o->groups[i];
        int rc = 0;
        snprintf(key, sizeof key, "optim.group.%d.prefix", i);
        rc |= tg_st_set_meta(s, key, g->prefix);
        snprintf(key, sizeof key, "optim.group.%d.lr", i);
        rc |= put_num(s, key, g->o.lr);
        snprintf(key, sizeof key, "optim.group.%d.initial_lr", i);
        rc |= put_num(s, key, g->base_lr);
        snprintf(key, sizeof key, "optim.group.%d.weight_decay", i);
        rc |= put_num(s, key, g->o.weight_decay);
        snprintf(key, sizeof key, "optim.group.%d.frozen", i);
        rc |= tg_st_set_meta(s, key, g->frozen ? "true" : "false");
        if (rc) return -1;
    }
    return 0;
}

/* Metadata "optim.group.<i>.<field>", or NULL with a message. */
static const char *field(const tg_safetensors *s, int i, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "optim.group.%d.%s", i, name);
    const char *v = tg_st_meta(s, key);
    if (!v) tg_error_set("missing metadata '%s'", key);
    return v;
}

static int parse_num(const char *v, int i, const char *name, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno)
        return tg_error_set("metadata 'optim.group.%d.%s' = \"%s\" is not a number", i, name, v);
    *out = d;
    return 0;
}

/* Group i of s into *g (g->prefix points into s) and its base rate into
 * *base: its lr in a checkpoint from before schedules scaled every group. */
static int read_one(const tg_safetensors *s, int i, tg_optim_group *g, double *base)
{
    const char *prefix = field(s, i, "prefix"), *lr = prefix ? field(s, i, "lr") : NULL,
               *wd = lr ? field(s, i, "weight_decay") : NULL, *fr = wd ? field(s, i, "frozen") : NULL;
    if (!fr) return -1;
    *g = (tg_optim_group){.prefix = prefix, .frozen = strcmp(fr, "true") == 0};
    if (!g->frozen && strcmp(fr, "false") != 0)
        return tg_error_set("metadata 'optim.group.%d.frozen' = \"%s\" is not true or false", i, fr);
    if (parse_num(lr, i, "lr", &g->lr) || parse_num(wd, i, "weight_decay", &g->weight_decay)) return -1;
    if (check_group(g, "the checkpoint")) return -1;
    char key[64];
    snprintf(key, sizeof key, "optim.group.%d.initial_lr", i);
    const char *b = tg_st_meta(s, key);
    *base = g->lr;
    if (b && parse_num(b, i, "initial_lr", base)) return -1;
    if (!(*base >= 0 && isfinite(*base)))
        return tg_error_set("the checkpoint: group '%s': initial_lr = %g must be finite and >= 0", g->prefix, *base);
    return 0;
}

int tg_optim_groups_read(const tg_optim *o, const tg_safetensors *s, tg_optim_grp **groups, int *n,
                         int **group_of)
{
    *groups = NULL;
    *group_of = NULL;
    *n = 0;
    const char *v = tg_st_meta(s, "optim.groups");
    if (!v) return 0;
    char *end;
    errno = 0;
    long m = strtol(v, &end, 10);
    if (end == v || *end || errno || m < 0 || m > 100000)
        return tg_error_set("metadata 'optim.groups' = \"%s\" is not a number of groups", v);
    if (m == 0) {  /* the default group alone: nothing to allocate */
        *n = 1;
        return 0;
    }
    tg_optim_grp *a = tg_calloc((size_t)m + 1, sizeof *a);
    int *of = tg_malloc((o->count ? (size_t)o->count : 1) * sizeof *of);
    int rc = a && of ? 0 : tg_error_set("out of memory for %ld parameter groups", m);
    tg_optim_group g = {.prefix = ""};
    double base = 0;
    for (int i = 0; i <= m && !rc; i++) {
        if (i > 0) rc = read_one(s, i, &g, &base);
        char *prefix = rc ? NULL : tg_strdup(g.prefix);
        if (!rc && !prefix) rc = tg_error_set("out of memory for %ld parameter groups", m);
        if (!rc) a[i] = i ? make(o, &g, prefix) : o->groups[0];
        if (!rc) a[i].prefix = prefix;
        if (!rc && i) a[i].base_lr = base;
    }
    if (!rc) rc = assign(o, a, (int)m + 1, of, "the checkpoint");
    if (rc) {
        tg_optim_groups_free(a, (int)m + 1);
        tg_free(of);
        return -1;
    }
    *groups = a;
    *n = (int)m + 1;
    *group_of = of;
    return 0;
}
