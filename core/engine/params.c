/* tapegrad: the parameter store (see core/engine/params.h). */
#include "params.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "named.h"

struct tg_params {
    tg_named list;         /* the tensors: headers owned here, data in the flat buffers */
    unsigned char *data, *grad;  /* flat buffers, numel elements of dtype each */
    size_t numel;
    tg_dtype dtype;
};

tg_params *tg_params_new_dtype(tg_dtype dt)
{
    if (dt != TG_F32 && dt != TG_F64) {  /* a half-type model is float32 weights used through tg_to */
        tg_error_set("tg_params_new: parameters are float32 or float64 tensors, not %s", tg_dtype_name(dt));
        return NULL;
    }
    tg_params *p = tg_calloc(1, sizeof(tg_params));
    if (p) p->dtype = dt;
    return p;
}

tg_dtype tg_params_dtype(const tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", TG_F32);
    return p->dtype;
}

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

void *tg_params_flat(const tg_params *p, tg_dtype dt, bool grad)
{
    if (!p) return tg_error_set("tg_params_%s: the parameter store is NULL", grad ? "grad" : "data"), NULL;
    if (dt != p->dtype)
        return tg_error_set("tg_params_%s: the store holds %s, not %s", grad ? "grad" : "data",
                            tg_dtype_name(p->dtype), tg_dtype_name(dt)), NULL;
    return grad ? p->grad : p->data;
}

void tg_params_zero_grad(tg_params *p)
{
    TG_REFUSE_NULL(p, "the parameter store", );
    if (p->grad) memset(p->grad, 0, p->numel * tg_dtype_size(p->dtype));
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
    size_t off = 0, es = tg_dtype_size(p->dtype);
    for (int i = 0; i < p->list.count; i++) {
        tg_tensor *x = p->list.items[i];
        x->data = (void *)(p->data + off * es);
        x->grad = (void *)(p->grad + off * es);
        off += x->size;
    }
}

/* Grows a flat buffer to n elements of es bytes, zero-filling the new tail. */
static unsigned char *grow(unsigned char *buf, size_t old_n, size_t n, size_t es)
{
    unsigned char *b = tg_realloc(buf, (n ? n : 1) * es);
    if (b) memset(b + old_n * es, 0, (n - old_n) * es);
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
    if (!tg_shape_size(ndim, shape, &size) || size > SIZE_MAX / 8 - p->numel) {
        tg_error_set("tg_params_add: '%s' has an invalid shape", name);
        return NULL;
    }
    if (tg_named_reserve(&p->list)) goto oom;
    size_t es = tg_dtype_size(p->dtype);
    unsigned char *data = grow(p->data, p->numel, p->numel + size, es);
    if (!data) goto oom;
    p->data = data;
    unsigned char *grad = grow(p->grad, p->numel, p->numel + size, es);
    if (grad) p->grad = grad;
    repoint(p);  /* the buffers may have moved, whatever fails next */
    if (!grad) goto oom;
    tg_tensor *x = tg_calloc(1, sizeof *x);
    if (!x || tg_named_push(&p->list, x, name)) {
        tg_free(x);
        goto oom;
    }
    tg_tensor_set_shape(x, ndim, shape, size);
    x->dtype = p->dtype;
    x->requires_grad = true;
    x->magic = TG_TENSOR_LIVE;
    p->numel += size;
    repoint(p);
    return x;
oom:
    tg_error_set("out of memory adding parameter '%s'", name);
    return NULL;
}
