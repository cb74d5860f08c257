/* tapegrad: the parameter store (see core/engine/params.h). */
#include "params.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "named.h"

struct tg_params {
    tg_named list;         /* the tensors: headers owned here, data in the flat buffers */
    tg_real *data, *grad;  /* flat buffers, numel each */
    size_t numel;
};

tg_params *tg_params_new(void) { return tg_calloc(1, sizeof(tg_params)); }

static void free_header(tg_tensor *x) { tg_free(x); }

void tg_params_free(tg_params *p)
{
    if (!p) return;
    tg_named_truncate(&p->list, 0, free_header);
    tg_free(p->data);
    tg_free(p->grad);
    tg_free(p);
}

int tg_params_count(const tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", -1);
    return p->list.count;
}

tg_tensor *tg_params_at(const tg_params *p, int i)
{
    TG_REFUSE_NULL(p, "the parameter store", NULL);
    return tg_named_at(&p->list, i);
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
    return tg_named_at(&p->list, tg_named_find(&p->list, name));
}

void tg_params_truncate(tg_params *p, int count)
{
    TG_REFUSE_NULL(p, "the parameter store", );
    if (count < 0) return;
    for (int i = count; i < p->list.count; i++) p->numel -= p->list.items[i]->size;
    tg_named_truncate(&p->list, count, free_header);
}

/* Points every tensor at its slice of the flat buffers. */
static void repoint(tg_params *p)
{
    size_t off = 0;
    for (int i = 0; i < p->list.count; i++) {
        tg_tensor *x = p->list.items[i];
        x->data = p->data + off;
        x->grad = p->grad + off;
        off += x->size;
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
    if (tg_named_reserve(&p->list)) goto oom;
    tg_real *data = grow(p->data, p->numel, p->numel + size);
    if (!data) goto oom;
    p->data = data;
    tg_real *grad = grow(p->grad, p->numel, p->numel + size);
    if (grad) p->grad = grad;
    repoint(p);  /* the buffers may have moved, whatever fails next */
    if (!grad) goto oom;
    tg_tensor *x = tg_calloc(1, sizeof *x);
    if (!x || tg_named_push(&p->list, x, name)) {
        tg_free(x);
        goto oom;
    }
    tg_tensor_set_shape(x, ndim, shape, size);
    x->requires_grad = true;
    x->magic = TG_TENSOR_LIVE;
    p->numel += size;
    repoint(p);
    return x;
oom:
    tg_error_set("out of memory adding parameter '%s'", name);
    return NULL;
}
