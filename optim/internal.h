/* tapegrad internal: the update rules behind tg_optim (optim/sgd.c,
 * optim/adam.c; the formulas are in optim/optim.h). Not part of the public
 * API. */
#ifndef TAPEGRAD_OPTIM_INTERNAL_H
#define TAPEGRAD_OPTIM_INTERNAL_H

#include <stdbool.h>

#include "optim.h"

/* One parameter group: the options its parameters are updated with (the
 * default's, with the group's lr and weight decay). */
typedef struct tg_optim_grp {
    char *prefix;             /* tg_strdup'ed; "" for the default group */
    tg_optim_opts o;
    bool frozen;
} tg_optim_grp;

struct tg_optim {
    tg_params *p;
    size_t numel;             /* the store's size at creation */
    int count;                /* its number of tensors then */
    long t;                   /* steps taken */
    int n_bufs;               /* SGD: 1 with momentum, else 0; Adam: 2 */
    tg_real *buf[2];          /* [numel] each, the store's flat layout; one allocation */
    const char *prefix[2];    /* their state keys: "optim.adam.m." ... */
    const char *step_key;     /* "optim.sgd.step" or "optim.adam.step" */
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

/* Whether parameter x gets weight decay under o. */
static inline bool tg_optim_decays(const tg_optim_opts *o, const tg_tensor *x)
{
    return o->weight_decay != 0 && !(o->no_decay_1d && x->ndim < 2);
}

/* One SGD update of parameter x under o (its group's options). b: its
 * momentum buffer [x->size] (NULL without momentum); first: it takes the
 * gradient as is (torch's clone on the first step). */
void tg_sgd_update(tg_tensor *x, const tg_optim_opts *o, tg_real *b, bool first);

/* One Adam or AdamW update of parameter x under o at step t (1, 2, ...);
 * m, v: its moments [x->size]. */
void tg_adam_update(tg_tensor *x, const tg_optim_opts *o, long t, tg_real *m, tg_real *v);

#endif
