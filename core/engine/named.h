/* tapegrad internal: an ordered list of uniquely named tensors, the one
 * container under the parameter store (core/engine/params.c) and the
 * safetensors set (core/io/read.c). Each name is a tg_strdup'ed copy owned
 * by the list; who owns the tensors (and their data) is the user's
 * business, told by the free function passed to tg_named_truncate. Not part
 * of the public API. */
#ifndef TAPEGRAD_NAMED_H
#define TAPEGRAD_NAMED_H

#include "tensor.h"

typedef struct tg_named {
    tg_tensor **items;  /* [count], in insertion order; cap allocated */
    int count, cap;
} tg_named;

/* The index of name, or -1 (also for NULL arguments). Names are compared
 * by strcmp: uniqueness is the adder's check. */
int tg_named_find(const tg_named *l, const char *name);
/* items[i], or NULL when i is out of range. */
tg_tensor *tg_named_at(const tg_named *l, int i);
/* Room for one more item: 0, or -1 out of memory with nothing changed. A
 * user with arrays parallel to items grows them to the new cap. */
int tg_named_reserve(tg_named *l);
/* Appends x under a copy of name (x->name), after tg_named_reserve. -1 out
 * of memory: x not taken, nothing changed. */
int tg_named_push(tg_named *l, tg_tensor *x, const char *name);
/* Drops the items after the first count (the names freed, each tensor passed
 * to free_tensor), then, when count is 0, the list's own memory. */
void tg_named_truncate(tg_named *l, int count, void (*free_tensor)(tg_tensor *x));

#endif
