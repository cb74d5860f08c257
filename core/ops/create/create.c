/* tapegrad: tensors made from numbers, not from other tensors: arange,
 * linspace, full / zeros / ones, eye, and rand / randn / randint drawn from a
 * tg_rng. Each returns a new arena tensor that requires no grad (set
 * requires_grad to make it a leaf) and records no node. Random tensors take
 * one draw (two for randn's uniform pair: tg_rng_normal) per element in
 * row-major order on the calling thread, so the values are the same on any
 * number of threads. As in PyTorch, a shape with a negative dim, a zero
 * arange step, a step of the wrong sign and negative linspace steps are
 * errors; so is an empty randint range. randint makes int64 tensors.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* An output of dtype dt and the given shape, or NULL with "<op>: shape ... is invalid". */
static tg_tensor *made(tg_tape *t, const char *op, tg_dtype dt, int ndim, const int *shape)
{
    size_t size;
    if (ndim > 0 && !shape) return tg_fail(t, "%s: the shape is NULL", op);
    if (ndim < 0 || ndim > TG_MAX_DIMS || (ndim > 0 && !shape))
        return tg_fail(t, "%s: a shape of %d dims (0 to %d, and a shape array)", op, ndim, TG_MAX_DIMS);
    if (!tg_dtype_size(dt)) return tg_fail(t, "%s: %d is not a dtype", op, (int)dt);
    if (!tg_shape_size(ndim, shape, &size)) {
        tg_tensor h = {.ndim = ndim};
        memcpy(h.shape, shape, (size_t)ndim * sizeof *shape);
        char s[TG_SHAPE_STR];
        return tg_fail(t, "%s: shape %s is invalid (sizes >= 0, the element count must not overflow)", op,
                       tg_shape_str(&h, s));
    }
    return tg_new_dtype(t, op, dt, ndim, shape);
}

/* x filled with value in x's dtype (+0 is all zero bytes in every dtype) */
static tg_tensor *filled(tg_tensor *x, double value)
{
    if (x && value == 0 && !signbit(value)) memset(x->data, 0, x->size * tg_dtype_size(x->dtype));
    else if (x) tg_tensor_fill(x, value);
    return x;
}

tg_tensor *tg_full_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape, double value)
{
    return filled(made(t, "tg_full_dtype", dt, ndim, shape), value);
}

tg_tensor *tg_zeros_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape)
{
    return filled(made(t, "tg_zeros_dtype", dt, ndim, shape), 0);
}

tg_tensor *tg_ones_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape)
{
    return filled(made(t, "tg_ones_dtype", dt, ndim, shape), 1);
}

tg_tensor *tg_full(tg_tape *t, int ndim, const int *shape, double value)
{
    return filled(made(t, "tg_full", TG_REAL_DTYPE, ndim, shape), value);
}

tg_tensor *tg_zeros(tg_tape *t, int ndim, const int *shape)
{
    return filled(made(t, "tg_zeros", TG_REAL_DTYPE, ndim, shape), 0);
}

tg_tensor *tg_ones(tg_tape *t, int ndim, const int *shape)
{
    return filled(made(t, "tg_ones", TG_REAL_DTYPE, ndim, shape), 1);
}

/* A range in dt: not bool (PyTorch's refusal) */
static bool range_dtype_ok(tg_tape *t, const char *op, tg_dtype dt)
{
    if (dt != TG_BOOL) return true;
    tg_fail(t, "%s: a range cannot be bool", op);
    return false;
}

static tg_tensor *arange_as(tg_tape *t, const char *op, tg_dtype dt, double start, double end, double step)
{
    if (!range_dtype_ok(t, op, dt)) return NULL;
    if (!isfinite(start) || !isfinite(end) || !isfinite(step) || step == 0)
        return tg_fail(t, "%s: start %g, end %g and step %g must be finite, step nonzero", op, start, end, step);
    double n = ceil((end - start) / step);
    if (n < 0)
        return tg_fail(t, "%s: step %g goes away from end %g (start %g)", op, step, end, start);
    if (n > INT32_MAX) return tg_fail(t, "%s: %g elements are too many (start %g, end %g, step %g)", op, n, start, end, step);
    tg_tensor *x = made(t, op, dt, 1, (int[]){(int)n});
    for (int i = 0; x && i < (int)n; i++) tg_dtype_store(dt, x->data, (size_t)i, start + i * step);
    return x;
}

tg_tensor *tg_arange_dtype(tg_tape *t, tg_dtype dt, double start, double end, double step)
{
    return arange_as(t, "tg_arange_dtype", dt, start, end, step);
}

tg_tensor *tg_arange(tg_tape *t, double start, double end, double step)
{
    return arange_as(t, "tg_arange", TG_REAL_DTYPE, start, end, step);
}

static tg_tensor *linspace_as(tg_tape *t, const char *op, tg_dtype dt, double start, double end, int steps)
{
    if (!range_dtype_ok(t, op, dt)) return NULL;
    if (!isfinite(start) || !isfinite(end) || steps < 0)
        return tg_fail(t, "%s: start %g and end %g must be finite, steps %d >= 0", op, start, end, steps);
    tg_tensor *x = made(t, op, dt, 1, (int[]){steps});
    if (!x) return NULL;
    /* PyTorch's: the first half counts up from start, the second down from end, so both ends are exact */
    double step = steps > 1 ? (end - start) / (steps - 1) : 0;
    for (int i = 0; i < steps; i++)
        tg_dtype_store(dt, x->data, (size_t)i, i < steps / 2 || steps == 1 ? start + i * step : end - (steps - 1 - i) * step);
    return x;
}

tg_tensor *tg_linspace_dtype(tg_tape *t, tg_dtype dt, double start, double end, int steps)
{
    return linspace_as(t, "tg_linspace_dtype", dt, start, end, steps);
}

tg_tensor *tg_linspace(tg_tape *t, double start, double end, int steps)
{
    return linspace_as(t, "tg_linspace", TG_REAL_DTYPE, start, end, steps);
}

static tg_tensor *eye_as(tg_tape *t, const char *op, tg_dtype dt, int n, int m)
{
    if (n < 0 || m < 0) return tg_fail(t, "%s: n %d and m %d must be >= 0", op, n, m);
    tg_tensor *x = filled(made(t, op, dt, 2, (int[]){n, m}), 0);
    for (int i = 0; x && i < n && i < m; i++) tg_dtype_store(dt, x->data, (size_t)i * m + i, 1);
    return x;
}

tg_tensor *tg_eye_dtype(tg_tape *t, tg_dtype dt, int n, int m) { return eye_as(t, "tg_eye_dtype", dt, n, m); }

tg_tensor *tg_eye(tg_tape *t, int n, int m) { return eye_as(t, "tg_eye", TG_REAL_DTYPE, n, m); }

/* rng required; the output for shape */
static tg_tensor *random_out(tg_tape *t, const char *op, tg_dtype dt, int ndim, const int *shape, const tg_rng *rng)
{
    if (!rng) return tg_fail(t, "%s: the rng is NULL", op);
    return made(t, op, dt, ndim, shape);
}

tg_tensor *tg_rand(tg_tape *t, int ndim, const int *shape, tg_rng *rng)
{
    tg_tensor *x = random_out(t, "tg_rand", TG_REAL_DTYPE, ndim, shape, rng);
    /* a double just below 1 rounds to 1 in float: keep PyTorch's [0, 1) */
    const tg_real below_one = (tg_real)1 - (tg_real)(sizeof(tg_real) == 4 ? 0x1p-24 : 0x1p-53);
    for (size_t i = 0; x && i < x->size; i++) {
        tg_real v = (tg_real)tg_rng_uniform(rng);
        x->data[i] = v < 1 ? v : below_one;
    }
    return x;
}

tg_tensor *tg_randn(tg_tape *t, int ndim, const int *shape, tg_rng *rng)
{
    tg_tensor *x = random_out(t, "tg_randn", TG_REAL_DTYPE, ndim, shape, rng);
    for (size_t i = 0; x && i < x->size; i++) x->data[i] = (tg_real)tg_rng_normal(rng);
    return x;
}

tg_tensor *tg_randint(tg_tape *t, int64_t low, int64_t high, int ndim, const int *shape, tg_rng *rng)
{
    const char *op = "tg_randint";
    uint64_t span = (uint64_t)high - (uint64_t)low;  /* exact when high > low */
    if (high <= low || span > (uint64_t)UINT32_MAX + 1)
        return tg_fail(t, "%s: range [%lld, %lld) must be non-empty and at most 2^32 wide", op, (long long)low,
                       (long long)high);
    tg_tensor *x = random_out(t, op, TG_I64, ndim, shape, rng);
    int64_t *v = x ? tg_data(x, TG_I64) : NULL;
    for (size_t i = 0; v && i < x->size; i++)
        v[i] = (int64_t)((uint64_t)low + (span > UINT32_MAX ? tg_rng_u32(rng) : tg_rng_below(rng, (uint32_t)span)));
    return x;
}
