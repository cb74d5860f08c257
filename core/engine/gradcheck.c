/* tapegrad: central-difference gradient checking (see core/engine/gradcheck.h). */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "rng.h"

tg_gradcheck_opts tg_gradcheck_defaults(void)
{
#ifdef TAPEGRAD_DOUBLE
    return (tg_gradcheck_opts){.eps = 1e-6, .atol = 1e-5, .rtol = 1e-3, .seed = 1234};
#else
    return (tg_gradcheck_opts){.eps = 1e-3, .atol = 1e-3, .rtol = 1e-2, .seed = 1234};
#endif
}

/* sum(w * out) in double, or NAN when f failed. */
static double weighted_output(tg_tape *t, tg_gradcheck_fn f, tg_tensor **inputs, void *ctx,
                              const tg_real *w, size_t n_w)
{
    tg_tape_reset(t);
    bool prev = tg_no_grad_begin(t);
    tg_tensor *out = f(t, inputs, ctx);
    tg_no_grad_end(t, prev);
    if (!out || out->size != n_w) return NAN;
    double s = 0;
    for (size_t i = 0; i < n_w; i++) s += (double)w[i] * (double)out->data[i];
    return s;
}

/* The message of a check that could not run to the end. */
static void fail(const char *what, const tg_tape *t)
{
    tg_error_set("gradcheck: %s%s%s", what, t && tg_tape_error(t) ? ": " : "",
                 t && tg_tape_error(t) ? tg_tape_error(t) : "");
}

/* Compares every element of input k, updating the worst one in r; false
 * (with the message in tg_error()) when a forward pass failed. */
static bool check_input(tg_gradcheck_result *r, tg_tape *t, tg_gradcheck_fn f, tg_tensor **inputs,
                        int k, void *ctx, const tg_real *w, size_t n_w, const tg_gradcheck_opts *o)
{
    tg_tensor *x = inputs[k];
    for (size_t i = 0; i < x->size; i++) {
        tg_real v = x->data[i];
        tg_real xp = (tg_real)(v + o->eps), xm = (tg_real)(v - o->eps);
        x->data[i] = xp;
        double lp = weighted_output(t, f, inputs, ctx, w, n_w);
        x->data[i] = xm;
        double lm = weighted_output(t, f, inputs, ctx, w, n_w);
        x->data[i] = v;
        if (isnan(lp) || isnan(lm)) {
            fail("a perturbed forward failed", t);
            return false;
        }
        /* divide by the perturbation actually applied (float rounds v +- eps) */
        double numeric = (lp - lm) / ((double)xp - (double)xm);
        double analytic = x->grad[i];
        double ratio = fabs(analytic - numeric) / (o->atol + o->rtol * fabs(numeric));
        if (!(ratio <= r->worst_ratio) || r->worst_input < 0) {
            r->worst_ratio = ratio;
            r->worst_input = k;
            r->worst_index = i;
            r->analytic = analytic;
            r->numeric = numeric;
        }
    }
    return true;
}

tg_gradcheck_result tg_gradcheck(tg_gradcheck_fn f, void *ctx, tg_tensor **inputs, int n_inputs,
                                 const tg_gradcheck_opts *opts)
{
    tg_gradcheck_result r = {.ok = false, .worst_input = -1};
    tg_gradcheck_opts o = tg_gradcheck_defaults();
    if (opts) {
        if (opts->eps > 0) o.eps = opts->eps;
        if (opts->atol > 0) o.atol = opts->atol;
        if (opts->rtol > 0) o.rtol = opts->rtol;
        if (opts->seed) o.seed = opts->seed;
    }
    if (!f || !inputs || n_inputs <= 0) {
        fail(!f ? "the function is NULL" : !inputs ? "the inputs are NULL" : "no inputs", NULL);
        return r;
    }
    for (int k = 0; k < n_inputs; k++) {
        if (!inputs[k]) {
            fail("an input is NULL", NULL);
            return r;
        }
        if (inputs[k]->requires_grad && !inputs[k]->grad && !tg_tensor_alloc_grad(inputs[k])) {
            fail("out of memory for an input's grad", NULL);
            return r;
        }
        if (inputs[k]->requires_grad) memset(inputs[k]->grad, 0, inputs[k]->size * sizeof(tg_real));
    }
    tg_tape *t = tg_tape_new();
    if (!t) {
        fail("out of memory for the tape", NULL);
        return r;
    }
    tg_tensor *out = f(t, inputs, ctx);
    tg_real *w = out ? tg_malloc(out->size * sizeof *w + 1) : NULL;
    size_t n_w = out ? out->size : 0;
    if (!out || !w) {
        fail(out ? "out of memory for the weighting" : "the forward pass failed", t);
        goto done;
    }
    tg_rng rng;
    tg_rng_seed(&rng, o.seed);
    for (size_t i = 0; i < n_w; i++) w[i] = (tg_real)(0.5 + tg_rng_uniform(&rng)); /* (0.5,1.5): no cancellation */
    if (n_w == 1) w[0] = 1;
    if (tg_backward_seed(t, out, w) != 0) {
        fail("backward failed", t);
        goto done;
    }
    for (int k = 0; k < n_inputs; k++)
        if (inputs[k]->requires_grad && !check_input(&r, t, f, inputs, k, ctx, w, n_w, &o)) goto done;
    r.ok = r.worst_input < 0 || r.worst_ratio <= 1.0;
    if (!r.ok)
        tg_error_set("gradcheck FAILED: worst input %d index %zu analytic %.10g numeric %.10g (%.3g of tolerance)",
                     r.worst_input, r.worst_index, r.analytic, r.numeric, r.worst_ratio);
done:
    tg_free(w);
    tg_tape_free(t);
    return r;
}
