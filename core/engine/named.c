/* tapegrad: the ordered list of named tensors (see core/engine/named.h). */
#include "named.h"

#include <string.h>

#include "alloc.h"

int tg_named_find(const tg_named *l, const char *name)
{
    for (int i = 0; l && name && i < l->count; i++)
        if (strcmp(l->items[i]->name, name) == 0) return i;
    return -1;
}

tg_tensor *tg_named_at(const tg_named *l, int i)
{
    return i >= 0 && i < l->count ? l->items[i] : NULL;
}

int tg_named_reserve(tg_named *l)
{
    if (l->count < l->cap) return 0;
    int cap = l->cap ? 2 * l->cap : 16;
    tg_tensor **items = tg_realloc(l->items, (size_t)cap * sizeof *items);
    if (!items) return -1;
    l->items = items;
    l->cap = cap;
    return 0;
}

int tg_named_push(tg_named *l, tg_tensor *x, const char *name)
{
    char *nm = tg_strdup(name);
    if (!nm) return -1;
    x->name = nm;
    l->items[l->count++] = x;
    return 0;
}

void tg_named_truncate(tg_named *l, int count, void (*free_tensor)(tg_tensor *x))
{
    while (l->count > count) {
        tg_tensor *x = l->items[--l->count];
        tg_free((char *)x->name);
        x->name = NULL;
        free_tensor(x);
    }
    if (count == 0) {
        tg_free(l->items);
        *l = (tg_named){0};
    }
}
