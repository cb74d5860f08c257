/* A user-defined op: y = sigmoid(slope * x), written with the same API as
 * every core op (core/engine/op.h), then checked against finite differences.
 * tests/test_custom_op.c includes this file (with CUSTOM_OP_NO_MAIN) and
 * holds the op to more. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tapegrad/tapegrad.h>

/* What backward needs besides the output and the inputs. */
typedef struct sigmoid_ctx {
    double slope;
} sigmoid_ctx;

/* out = sigmoid(slope * x), same shape: dx += dout * slope * out * (1 - out).
 * Elements go through tg_dtype_load / tg_dtype_store (as doubles), so the op
 * runs in every float dtype: tg_gradcheck runs it in float64. */
TG_BACKWARD(sigmoid_backward, sigmoid_ctx)
{
    tg_dtype dt = out->dtype;
    void *dx = tg_grad_as(t, in[0], dt);
    if (!dx) return;
    for (size_t i = 0; i < out->size; i++) {
        double y = tg_dtype_load(dt, out->data, i), dy = tg_dtype_load(dt, out->grad, i);
        tg_dtype_store(dt, dx, i, tg_dtype_load(dt, dx, i) + dy * ctx->slope * y * (1 - y));
    }
}

/* The op's name is written here only: every error below reports under it. */
TG_OP(sigmoid_op, "my_sigmoid", sigmoid_backward, sigmoid_ctx);

static tg_tensor *my_sigmoid(tg_tape *t, tg_tensor *x, double slope)
{
    /* NULL, freed, stale, foreign; not a float type */
    tg_dtype dt = x && tg_dtype_is_float(x->dtype) ? x->dtype : TG_REAL_DTYPE;
    if (!tg_inputs_check_dtype(t, &sigmoid_op, dt, &x, 1, 1)) return NULL;
    tg_tensor *out = tg_new_like(t, &sigmoid_op, x);
    if (!out) return NULL;
    for (size_t i = 0; i < x->size; i++)
        tg_dtype_store(dt, out->data, i, 1 / (1 + exp(-slope * tg_dtype_load(dt, x->data, i))));
    if (!tg_op_record(t, &sigmoid_op, out, &x, 1, &(sigmoid_ctx){slope})) return NULL;
    return tg_op_done(t, &sigmoid_op, out);
}

#ifndef CUSTOM_OP_NO_MAIN
static tg_tensor *f(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return my_sigmoid(t, in[0], 1.5);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0)
        return fputs("usage: custom_op\n\nGradchecks my_sigmoid, an op written outside the library with "
                     "core/engine/op.h;\nprints \"gradcheck ok\" or what failed. It takes no flags.\n", stdout), 0;
    if (argc > 1) return fprintf(stderr, "custom_op: unknown flag %s (custom_op --help)\n", argv[1]), 2;
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tg_tensor_alloc(2, (int[]){3, 4});
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)(4 * tg_rng_uniform(&rng) - 2);
    x->requires_grad = true;
    tg_gradcheck_result r = tg_gradcheck(f, NULL, &x, 1, NULL);
    puts(r.ok ? "gradcheck ok" : tg_error());
    tg_tensor_free(x);
    return r.ok ? 0 : 1;
}
#endif
