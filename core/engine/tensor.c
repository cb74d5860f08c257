/* tapegrad: tensor shapes and standalone heap tensors. */
#include "tensor.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"

bool tg_shape_size(int ndim, const int *shape, size_t *size)
{
    TG_REFUSE_NULL(size, "size", false);
    *size = 0;
    if (ndim < 0 || ndim > TG_MAX_DIMS || (ndim > 0 && !shape)) return false;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return false;
        if (shape[i] > 0 && n > SIZE_MAX / 8 / (size_t)shape[i]) return false;
        n *= (size_t)shape[i];
    }
    *size = n;
    return true;
}

bool tg_shape_equal(const tg_tensor *a, const tg_tensor *b)
{
    TG_REFUSE_NULL(a && b, "a tensor", false);
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

void tg_tensor_set_shape(tg_tensor *x, int ndim, const int *shape, size_t size)
{
    TG_REFUSE_NULL(x, "the tensor", );
    TG_REFUSE_NULL(shape || ndim == 0, "the shape", );
    x->ndim = ndim;
    for (int i = 0; i < TG_MAX_DIMS; i++) x->shape[i] = i < ndim ? shape[i] : 1;
    x->size = size;
}

const char *tg_shape_str(const tg_tensor *x, char *buf)
{
    TG_REFUSE_NULL(buf, "the buffer", "");
    if (!x) return strcpy(buf, "NULL");
    int n = snprintf(buf, TG_SHAPE_STR, "[");
    for (int i = 0; i < x->ndim && n < TG_SHAPE_STR; i++)
        n += snprintf(buf + n, (size_t)(TG_SHAPE_STR - n), i ? ",%d" : "%d", x->shape[i]);
    if (n < TG_SHAPE_STR) snprintf(buf + n, (size_t)(TG_SHAPE_STR - n), "]");
    return buf;
}

size_t tg_rows(const tg_tensor *x)
{
    TG_REFUSE_NULL(x, "the tensor", 0);
    size_t r = 1;
    for (int i = 0; i + 1 < x->ndim; i++) r *= (size_t)x->shape[i];
    return r;
}

int tg_cols(const tg_tensor *x)
{
    TG_REFUSE_NULL(x, "the tensor", 0);
    return x->ndim ? x->shape[x->ndim - 1] : 1;
}

void tg_tensor_fill(tg_tensor *x, double v)
{
    TG_REFUSE_NULL(x, "the tensor", );
    for (size_t i = 0; i < x->size; i++) tg_dtype_store(x->dtype, x->data, i, v);
}

tg_dtype tg_dtype_promoted(tg_tensor *const *x, int n)
{
    tg_dtype dt = TG_DTYPE_COUNT;
    for (int k = 0; x && k < n; k++) {
        if (!x[k] || x[k]->magic != TG_TENSOR_LIVE || !tg_dtype_is_float(x[k]->dtype) || x[k]->dtype == dt) continue;
        if (x[k]->dtype == TG_F64) return TG_F64;
        dt = dt == TG_DTYPE_COUNT ? x[k]->dtype : TG_F32;  /* float32 with a half type, or the two half types */
    }
    return dt;
}

void *tg_data(const tg_tensor *x, tg_dtype dt)
{
    TG_REFUSE_NULL(x, "the tensor", NULL);
    if (x->dtype != dt)
        return tg_error_set("tg_data: the tensor is %s, not %s", tg_dtype_name(x->dtype), tg_dtype_name(dt)), NULL;
    return x->data;
}

tg_tensor *tg_tensor_alloc_dtype(tg_dtype dt, int ndim, const int *shape)
{
    size_t size;
    if (!tg_dtype_size(dt)) {
        tg_error_set("tg_tensor_alloc: %d is not a dtype", (int)dt);
        return NULL;
    }
    if (ndim > 0 && !shape) {
        tg_error_set("tg_tensor_alloc: the shape is NULL");
        return NULL;
    }
    if (!tg_shape_size(ndim, shape, &size)) {
        tg_error_set("tg_tensor_alloc: invalid shape (ndim %d must be 0..%d, dims >= 0, size must not "
                     "overflow)", ndim, TG_MAX_DIMS);
        return NULL;
    }
    tg_tensor *x = tg_calloc(1, sizeof *x);
    if (!x) return NULL;
    x->data = tg_calloc(size ? size : 1, tg_dtype_size(dt));
    if (!x->data) {
        tg_free(x);
        return NULL;
    }
    tg_tensor_set_shape(x, ndim, shape, size);
    x->dtype = dt;
    x->owns_data = true;
    x->magic = TG_TENSOR_LIVE;
    return x;
}

bool tg_tensor_alloc_grad(tg_tensor *x)
{
    TG_REFUSE_NULL(x, "the tensor", false);
    if (x->grad) return true;
    x->grad = tg_calloc(x->size ? x->size : 1, tg_dtype_size(x->dtype));
    return x->grad != NULL;
}

/* The headers of the last FREED_KEEP freed tensors stay allocated, marked
 * dead, so that an op given one of them reports it instead of reading freed
 * memory. Each free hands the oldest one back to the system. */
#define FREED_KEEP 64
static _Atomic(tg_tensor *) freed[FREED_KEEP];
static atomic_uint freed_next;

void tg_tensor_free(tg_tensor *x)
{
    if (!x || x->magic != TG_TENSOR_LIVE || !x->owns_data) return;
    tg_free(x->data);
    tg_free(x->grad);
    x->data = x->grad = NULL;
    x->magic = 0;
    unsigned i = atomic_fetch_add(&freed_next, 1) % FREED_KEEP;
    tg_free(atomic_exchange(&freed[i], x));
}
