/* tapegrad internal: the optimizer object and the record each kind fills in
 * its own file (optim/sgd.c, optim/adam.c; the formulas are in
 * optim/optim.h). Not part of the public API. */
#ifndef TAPEGRAD_OPTIM_INTERNAL_H
#define TAPEGRAD_OPTIM_INTERNAL_H

#include <stdbool.h>

#include "optim.h"

/* One parameter group: the options its parameters are updated with (the
 * default's, with the group's lr and weight decay). */
/* The options that belong to some kinds only, as bits: a kind lists those
 * it takes, and tg_optim_check refuses the others when they are not 0
 * (their names are in optim/optim.c's table). */
enum { TG_OPTS_SGD_MOMENTUM = 1u << 0, TG_OPTS_ADAM_BETAS = 1u << 1 };

#define TG_OPTIM_BUFS_MAX 2

/* One optimizer kind. */
typedef struct tg_optim_def {
    const char *name;                      /* "AdamW": messages, tg_optim_kind_name */
    tg_optim_opts defaults;                /* torch's */
    unsigned options;                      /* TG_OPTS_* it takes */
    int (*check)(const tg_optim_opts *o);  /* its own options; -1 with a message */
    int (*n_bufs)(const tg_optim_opts *o); /* state buffers, each [numel], <= TG_OPTIM_BUFS_MAX */
    const char *buf_key[TG_OPTIM_BUFS_MAX];/* each buffer's checkpoint key prefix: "optim.adam.m." */
    const char *step_key;                  /* the step count's metadata key: "optim.adam.step" */
    /* One update of parameter x under o (its group's options) at step t
     * (1, 2, ...); buf[b]: x's slice [x->size] of buffer b. */
    void (*update)(tg_tensor *x, const tg_optim_opts *o, long t, tg_real *const *buf);
} tg_optim_def;

#define TG_OPTIM_KIND_DECL_(k, rec) extern const tg_optim_def rec;
TG_OPTIM_KINDS(TG_OPTIM_KIND_DECL_)
#undef TG_OPTIM_KIND_DECL_

typedef struct tg_optim_grp {
    char *prefix;             /* tg_strdup'ed; "" for the default group */
    tg_optim_opts o;
    double base_lr;           /* the lr it was made with, scaled by schedules (torch's initial_lr) */
    bool frozen;
} tg_optim_grp;

struct tg_optim {
    tg_params *p;
    size_t numel;             /* the store's size at creation */
    int count;                /* its number of tensors then */
    long t;                   /* steps taken */
    const tg_optim_def *def;  /* the kind */
    int n_bufs;               /* def->n_bufs of the default group's options */
    tg_real *buf[TG_OPTIM_BUFS_MAX];  /* [numel] each, the store's flat layout; one allocation */
    tg_optim_grp *groups;     /* [n_groups]; 0 is the default group (tg_optim_new's options) */
    int n_groups;
    int *group_of;            /* [count]: each parameter's group */
};

/* The groups of a checkpoint (metadata "optim.groups", "optim.group.<i>.*"),
 * checked against o's store, into *groups / *group_of (tg_malloc'ed, the
 * default group copied from o) and *n. Nothing allocated when s has no
 * groups (*n = 0: a checkpoint from before parameter groups) or only the
 * default (*n = 1, *groups NULL). -1 with a message. */
int tg_optim_groups_read(const tg_optim *o, const tg_safetensors *s, tg_optim_grp **groups, int *n,
                         int **group_of);
/* Adds the groups beyond the default to s's metadata. */
int tg_optim_groups_write(const tg_optim *o, tg_safetensors *s);
/* Frees groups [n] (their prefixes too). */
void tg_optim_groups_free(tg_optim_grp *groups, int n);

/* The count (a step count, a tracker) saved as metadata key: -1 with a
 * message naming what and key when absent or not a non-negative integer. */
int tg_optim_meta_count(const tg_safetensors *s, const char *key, long *count, const char *what);

/* Whether the step updates parameter k of o's store: not in a frozen
 * group, and requires_grad (torch skips a parameter whose grad is None). */
static inline bool tg_optim_moves(const tg_optim *o, int k)
{
    return !o->groups[o->group_of[k]].frozen && tg_params_at(o->p, k)->requires_grad;
}

/* Whether parameter x gets weight decay under o. */
static inline bool tg_optim_decays(const tg_optim_opts *o, const tg_tensor *x)
{
    return o->weight_decay != 0 && !(o->no_decay_1d && x->ndim < 2);
}

#endif
