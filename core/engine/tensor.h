/* tapegrad: tensors.
 *
 * A tensor is up to 8-D (TG_MAX_DIMS), row-major and always contiguous (no strides). Three
 * owners exist and are never mixed up (docs/DESIGN.md "Tensors and owners"):
 *   - parameters live in a tg_params store (core/engine/params.h); their grad is
 *     allocated with them and persists until tg_params_zero_grad;
 *   - temporaries come from a tape's arena (tg_tensor_new) and die at
 *     tg_tape_reset; their grad is allocated lazily, zeroed, when a backward
 *     first needs it.
 *   - standalone heap tensors come from tg_tensor_alloc and die at
 *     tg_tensor_free (tests, gradcheck inputs, file I/O); their grad is
 *     allocated on first need.
 * Every tensor carries a magic word and, from a tape, that tape's id and
 * generation: an op refuses a freed tensor, one from before tg_tape_reset and
 * one of another tape (core/engine/tape.h).
 */
#ifndef TAPEGRAD_TENSOR_H
#define TAPEGRAD_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dtype.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_MAX_DIMS 8

/* data and grad are seen as the including program's tg_real; a tensor of
 * another dtype is read through tg_data (below) or by its dtype. */
typedef struct tg_tensor {
    tg_real *data;
    tg_real *grad;           /* NULL until a backward needs it (temporaries) */
    tg_dtype dtype;
    int ndim;                /* 0 (scalar) .. TG_MAX_DIMS */
    int shape[TG_MAX_DIMS];  /* unused trailing entries are 1 */
    size_t size;             /* number of elements */
    bool requires_grad;
    bool owns_data;          /* heap tensor from tg_tensor_alloc */
    bool retains_grad;       /* an op output whose grad backward keeps (tg_retain_grad) */
    const char *name;        /* parameters only: the state_dict key */
    struct tg_tensor *view_of; /* a view made before its base had a grad: */
    size_t view_off;           /* its grad is view_of's grad + view_off (tg_grad) */
    /* Stamped by the library, checked by every op and by tg_backward: */
    uint32_t magic;          /* TG_TENSOR_LIVE until freed */
    uint32_t tape, gen;      /* arena tensors: the making tape's id and generation; else 0 */
} tg_tensor;

/* The magic of a tensor the library made and has not freed. A tensor made any
 * other way (on the stack, by hand) is refused by every op. */
#define TG_TENSOR_LIVE 0x7e45a11eu

/* Reaching the other float copy of a typed source's function (docs/DESIGN.md
 * "Dtypes"): the copy is named by its symbol (fn, or fn__f64 for the float64
 * one), which the renaming header hides from C in the float64 copy. Ops begin
 * with TG_DISPATCH (core/ops/internal.h); a function whose data is not a
 * tensor's says when with TG_DISPATCH_ON. */
#ifdef TAPEGRAD_DOUBLE
#define TG_OTHER_DTYPE TG_F32
#define TG_OTHER_SYMBOL(name) name
#else
#define TG_OTHER_DTYPE TG_F64
#define TG_OTHER_SYMBOL(name) name "__f64"
#endif
/* Returns fn's other copy called with args when cond says the data is of
 * the other float type (an optimizer's store). */
#define TG_DISPATCH_ON(fn, cond, args) TG_DISPATCH_(fn, #fn, fn##_other_copy, cond, args)
/* name and local are made from fn before the renaming header can expand it. */
#define TG_DISPATCH_(fn, name, local, cond, args)                        \
    do {                                                                  \
        if (cond) {                                                       \
            extern __typeof__(fn) local __asm__(TG_OTHER_SYMBOL(name));   \
            return local args;                                            \
        }                                                                 \
    } while (0)

/* PyTorch's promotion among the float tensors of x[0..n) (NULL and dead
 * ones skipped): float64 when one is, else float32 when one is or when
 * bfloat16 meets float16, else the half type they share, else
 * TG_DTYPE_COUNT. */
tg_dtype tg_dtype_promoted(tg_tensor *const *x, int n);

/* A standalone heap tensor of dtype dt, zero-filled, grad NULL. NULL
 * (tg_error() says why) on a bad shape or dtype or out of memory.
 * tg_tensor_alloc makes one of the program's default dtype. */
tg_tensor *tg_tensor_alloc_dtype(tg_dtype dt, int ndim, const int *shape);
static inline tg_tensor *tg_tensor_alloc(int ndim, const int *shape)
{
    return tg_tensor_alloc_dtype(TG_REAL_DTYPE, ndim, shape);
}
/* Frees a heap tensor; does nothing for NULL, arena tensors, parameters and
 * a tensor already freed (recently enough to be known: its header stays
 * allocated, marked dead, for the next 64 frees, so an op given it reports it). */
void tg_tensor_free(tg_tensor *x);
/* Allocates x->grad (zeroed) if it is NULL; heap tensors only. false on OOM. */
bool tg_tensor_alloc_grad(tg_tensor *x);

/* Number of elements of a shape; 0 and false when ndim or a dim is invalid
 * or the product overflows. */
bool tg_shape_size(int ndim, const int *shape, size_t *size);
bool tg_shape_equal(const tg_tensor *a, const tg_tensor *b);
/* Sets x's ndim, shape (trailing entries 1) and size from a shape that
 * tg_shape_size accepted. */
void tg_tensor_set_shape(tg_tensor *x, int ndim, const int *shape, size_t size);
/* "[32,16,64]" into buf (at least TG_SHAPE_STR bytes: 8 dims of 10 digits fit); returns buf. */
#define TG_SHAPE_STR 96
const char *tg_shape_str(const tg_tensor *x, char *buf);
/* Product of all dims but the last (rows) and the last dim (cols). */
size_t tg_rows(const tg_tensor *x);
int tg_cols(const tg_tensor *x);

/* Every element set to v, converted to x's dtype. */
void tg_tensor_fill(tg_tensor *x, double v);
/* x's data when x has dtype dt, else NULL and tg_error() naming both dtypes:
 *   int64_t *ids = tg_data(x, TG_I64); */
void *tg_data(const tg_tensor *x, tg_dtype dt);

/* A readable form of x like PyTorch's repr: the values in nested brackets
 * (more than 1000 elements: the first and last 3 along each dim, "..."
 * between), then its shape and whether it requires grad:
 *   tensor([[ 0.5000, -1.2500],
 *           [ 3.0000,  4.0000]], shape=[2,2], requires_grad=True)
 * Integral values print as "3.", values spanning more than 1e4 or beyond
 * 1e8 in scientific form. Writes at most cap bytes (NUL included) into buf
 * and returns the full length, as snprintf (buf may be NULL when cap is 0).
 * A NULL x prints as "tensor(NULL)". */
size_t tg_tensor_str(const tg_tensor *x, char *buf, size_t cap);
/* The same, and a newline, to f; -1 on a write error or out of memory. */
int tg_tensor_print(FILE *f, const tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
