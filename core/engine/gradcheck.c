/* tapegrad: central-difference gradient checking (see core/engine/gradcheck.h). */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "rng.h"

tg_gradcheck_opts tg_gradcheck_defaults_for(tg_dtype dt)
{
    if (dt == TG_F64) return (tg_gradcheck_opts){.eps = 1e-6, .atol = 1e-5, .rtol = 1e-3, .seed = 1234};
    return (tg_gradcheck_opts){.eps = 1e-3, .atol = 1e-3, .rtol = 1e-2, .seed = 1234};
}

/* sum(w * out) in double, or NAN when f failed. */
static double weighted_output(tg_tape *t, tg_gradcheck_fn f, tg_tensor **inputs, void *ctx,
                              const void *w, size_t n_w)
{
    tg_tape_reset(t);
    bool prev = tg_no_grad_begin(t);
    tg_tensor *out = f(t, inputs, ctx);
    tg_no_grad_end(t, prev);
    if (!out || out->size != n_w) return NAN;
    double s = 0;
    for (size_t i = 0; i < n_w; i++) s += tg_dtype_load(out->dtype, w, i) * tg_dtype_load(out->dtype, out->data, i);
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
                        int k, void *ctx, const void *w, size_t n_w, const tg_gradcheck_opts *o)
{
    tg_tensor *x = inputs[k];
    for (size_t i = 0; i < x->size; i++) {
        double v = tg_dtype_load(x->dtype, x->data, i);
        tg_dtype_store(x->dtype, x->data, i, v + o->eps);
        double xp = tg_dtype_load(x->dtype, x->data, i);
        double lp = weighted_output(t, f, inputs, ctx, w, n_w);
        tg_dtype_store(x->dtype, x->data, i, v - o->eps);
        double xm = tg_dtype_load(x->dtype, x->data, i);
        double lm = weighted_output(t, f, inputs, ctx, w, n_w);
        tg_dtype_store(x->dtype, x->data, i, v);
        if (isnan(lp) || isnan(lm)) {
            fail("a perturbed forward failed", t);
            return false;
        }
        /* divide by the perturbation actually applied (float rounds v +- eps) */
        double numeric = (lp - lm) / (xp - xm);
        double analytic = tg_dtype_load(x->dtype, x->grad, i);
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

/* The check itself, on inputs that are ready (grads allocated and zeroed). */
static tg_gradcheck_result run(tg_gradcheck_fn f, void *ctx, tg_tensor **inputs, int n_inputs,
                               const tg_gradcheck_opts *o)
{
    tg_gradcheck_result r = {.ok = false, .worst_input = -1};
    tg_tape *t = tg_tape_new();
    if (!t) {
        fail("out of memory for the tape", NULL);
        return r;
    }
    tg_tensor *out = f(t, inputs, ctx);
    void *w = out ? tg_malloc(out->size * tg_dtype_size(out->dtype) + 1) : NULL;
    size_t n_w = out ? out->size : 0;
    if (!out || !w) {
        fail(out ? "out of memory for the weighting" : "the forward pass failed", t);
        goto done;
    }
    tg_rng rng;
    tg_rng_seed(&rng, o->seed);
    for (size_t i = 0; i < n_w; i++)  /* (0.5,1.5): no cancellation */
        tg_dtype_store(out->dtype, w, i, n_w == 1 ? 1 : 0.5 + tg_rng_uniform(&rng));
    if (tg_backward_seed(t, out, w) != 0) {
        fail("backward failed", t);
        goto done;
    }
    for (int k = 0; k < n_inputs; k++)
        if (inputs[k]->requires_grad && !check_input(&r, t, f, inputs, k, ctx, w, n_w, o)) goto done;
    r.ok = r.worst_input < 0 || r.worst_ratio <= 1.0;
    if (!r.ok)
        tg_error_set("gradcheck FAILED: worst input %d index %zu analytic %.10g numeric %.10g (%.3g of tolerance)",
                     r.worst_input, r.worst_index, r.analytic, r.numeric, r.worst_ratio);
done:
    tg_free(w);
    tg_tape_free(t);
    return r;
}

/* What a float32 heap input held while the check ran on its float64 copy. */
typedef struct saved {
    void *data, *grad;
} saved;

/* Every float input is a float32 heap tensor or already float64: the check
 * can run in float64 on copies of the float32 ones. */
static bool promotable(tg_tensor **inputs, int n)
{
    bool any = false;
    for (int k = 0; k < n; k++) {
        if (inputs[k]->dtype == TG_F32 && !inputs[k]->owns_data) return false;
        any |= inputs[k]->dtype == TG_F32;
    }
    return any;
}

/* Input k (float32) now holds a float64 copy of its data and a float64 grad;
 * false on out of memory, with input k unchanged. */
static bool promote(tg_tensor *x, saved *s)
{
    double *d = tg_malloc(x->size * sizeof *d + 1), *g = tg_calloc(x->size + 1, sizeof *g);
    if (!d || !g) {
        tg_free(d);
        tg_free(g);
        return false;
    }
    for (size_t i = 0; i < x->size; i++) d[i] = tg_dtype_load(TG_F32, x->data, i);
    *s = (saved){x->data, x->grad};
    x->data = (void *)d;
    x->grad = (void *)g;
    x->dtype = TG_F64;
    return true;
}

/* Input x back to float32, its float64 grad rounded into its own. */
static void demote(tg_tensor *x, const saved *s)
{
    if (s->grad)
        for (size_t i = 0; i < x->size; i++) tg_dtype_store(TG_F32, s->grad, i, tg_dtype_load(TG_F64, x->grad, i));
    tg_free(x->data);
    tg_free(x->grad);
    x->data = s->data;
    x->grad = s->grad;
    x->dtype = TG_F32;
}

tg_gradcheck_result tg_gradcheck(tg_gradcheck_fn f, void *ctx, tg_tensor **inputs, int n_inputs,
                                 const tg_gradcheck_opts *opts)
{
    tg_gradcheck_result r = {.ok = false, .worst_input = -1};
    if (!f || !inputs || n_inputs <= 0) {
        fail(!f ? "the function is NULL" : !inputs ? "the inputs are NULL" : "no inputs", NULL);
        return r;
    }
    for (int k = 0; k < n_inputs; k++) {
        if (!inputs[k]) {
            fail("an input is NULL", NULL);
            return r;
        }
        if (inputs[k]->requires_grad && !tg_dtype_is_float(inputs[k]->dtype)) {
            tg_error_set("gradcheck: input %d is %s, which takes no grad", k, tg_dtype_name(inputs[k]->dtype));
            return r;
        }
        if (inputs[k]->requires_grad && !inputs[k]->grad && !tg_tensor_alloc_grad(inputs[k])) {
            fail("out of memory for an input's grad", NULL);
            return r;
        }
        if (inputs[k]->requires_grad) memset(inputs[k]->grad, 0, inputs[k]->size * tg_dtype_size(inputs[k]->dtype));
    }
    bool in_f64 = !(opts && opts->same_dtype) && promotable(inputs, n_inputs);
    tg_gradcheck_opts o = tg_gradcheck_defaults_for(in_f64 ? TG_F64 : inputs[0]->dtype);
    if (opts) {
        if (opts->eps > 0) o.eps = opts->eps;
        if (opts->atol > 0) o.atol = opts->atol;
        if (opts->rtol > 0) o.rtol = opts->rtol;
        if (opts->seed) o.seed = opts->seed;
    }
    saved *s = in_f64 ? tg_calloc((size_t)n_inputs, sizeof *s) : NULL;
    bool ready = !in_f64 || s;
    for (int k = 0; in_f64 && ready && k < n_inputs; k++)
        if (inputs[k]->dtype == TG_F32) ready = promote(inputs[k], &s[k]);
    if (ready) r = run(f, ctx, inputs, n_inputs, &o);
    else fail("out of memory for the inputs' float64 copies", NULL);
    for (int k = 0; s && k < n_inputs; k++)
        if (s[k].data) demote(inputs[k], &s[k]);
    tg_free(s);
    return r;
}
