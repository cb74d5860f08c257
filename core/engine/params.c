/* tapegrad: the parameter store (see core/engine/params.h). */
#include "params.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"

struct tg_params {
    tg_tensor **items;
    int count, cap;
    tg_real *data, *grad;  /* flat buffers, numel each */
    size_t numel;
};

tg_params *tg_params_new(void) { return tg_calloc(1, sizeof(tg_params)); }

void tg_params_free(tg_params *p)
{
    if (!p) return;
    for (int i = 0; i < p->count; i++) {
        tg_free((char *)p->items[i]->name);
        tg_free(p->items[i]);
    }
    tg_free(p->items);
    tg_free(p->data);
    tg_free(p->grad);
    tg_free(p);
}

int tg_params_count(const tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    return p->count;
}

tg_tensor *tg_params_at(const tg_params *p, int i)
{
    TG_REFUSE_NULL(p, "the parameter store", NULL);
    return i >= 0 && i < p->count ? p->items[i] : NULL;
}

size_t tg_params_numel(const tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", 0);
    return p->numel;
}

tg_real *tg_params_data(const tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", NULL);
    return p->data;
}

tg_real *tg_params_grad(const tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", NULL);
    return p->grad;
}

void tg_params_zero_grad(tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", );
    if (p->grad) memset(p->grad, 0, p->numel * sizeof(tg_real));
}

tg_tensor *tg_params_get(const tg_params *p, const char *name)
{
    TG_REFUSE_NULL(p, "the parameter store", NULL);
    TG_REFUSE_NULL(name, "the name", NULL);
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->items[i]->name, name) == 0) return p->items[i];
    return NULL;
}

void tg_params_truncate(tg_params *p, int count)
{
    TG_REFUSE_NULL(p, "the parameter store", );
    if (count < 0) return;
    while (p->count > count) {
        tg_tensor *x = p->items[--p->count];
        p->numel -= x->size;
        tg_free((char *)x->name);
        tg_free(x);
    }
}

/* Points every tensor at its slice of the flat buffers. */
static void repoint(tg_params *p)
{
    size_t off = 0;
    for (int i = 0; i < p->count; i++) {
        p->items[i]->data = p->data + off;
        p->items[i]->grad = p->grad + off;
        off += p->items[i]->size;
    }
}

/* Grows a flat buffer to n values, zero-filling the new tail. */
static tg_real *grow(tg_real *buf, size_t old_n, size_t n)
{
    tg_real *b = tg_realloc(buf, (n ? n : 1) * sizeof(tg_real));
    if (b) memset(b + old_n, 0, (n - old_n) * sizeof(tg_real));
    return b;
}

tg_tensor *tg_params_add(tg_params *p, const char *name, int ndim, const int *shape)
{
    size_t size;
    if (!p || !name || !*name) {
        tg_error_set("tg_params_add: %s", !p ? "the parameter store is NULL" : !name ? "the name is NULL" : "empty name");
        return NULL;
    }
    TG_REFUSE_NULL(shape || ndim == 0, "the shape", NULL);
    if (tg_params_get(p, name)) {
        tg_error_set("tg_params_add: '%s' already exists", name);
        return NULL;
    }
    if (!tg_shape_size(ndim, shape, &size) || size > SIZE_MAX / sizeof(tg_real) - p->numel) {
        tg_error_set("tg_params_add: '%s' has an invalid shape", name);
        return NULL;
    }
    if (p->count == p->cap) {
        int cap = p->cap ? 2 * p->cap : 32;
        tg_tensor **items = tg_realloc(p->items, (size_t)cap * sizeof *items);
        if (!items) goto oom;
        p->items = items;
        p->cap = cap;
    }
    tg_real *data = grow(p->data, p->numel, p->numel + size);
    if (!data) goto oom;
    p->data = data;
    tg_real *grad = grow(p->grad, p->numel, p->numel + size);
    if (grad) p->grad = grad;
    repoint(p);  /* the buffers may have moved, whatever fails next */
    if (!grad) goto oom;
    tg_tensor *x = tg_calloc(1, sizeof *x);
    char *nm = tg_strdup(name);
    if (!x || !nm) {
        tg_free(x);
        tg_free(nm);
        goto oom;
    }
    tg_tensor_set_shape(x, ndim, shape, size);
    x->requires_grad = true;
    x->magic = TG_TENSOR_LIVE;
    x->name = nm;
    p->items[p->count++] = x;
    p->numel += size;
    repoint(p);
    return x;
oom:
    tg_error_set("out of memory adding parameter '%s'", name);
    return NULL;
}
