/* tapegrad: parameter creation and PyTorch default inits (see nn/init.h). */
#include "init.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int tg_nn_name(char *dst, const char *prefix, const char *suffix)
{
    TG_REFUSE_NULL(dst && suffix, "dst or suffix", -1);
    int n = prefix && *prefix ? snprintf(dst, TG_NN_NAME_MAX, "%s.%s", prefix, suffix)
                              : snprintf(dst, TG_NN_NAME_MAX, "%s", suffix);
    if (n >= 0 && n < TG_NN_NAME_MAX) return 0;
    return tg_error_set("name '%s.%s' is longer than %d bytes", prefix ? prefix : "", suffix,
                        TG_NN_NAME_MAX - 1);
}

tg_tensor *tg_nn_param(tg_params *p, const char *prefix, const char *suffix, int ndim,
                       const int *shape)
{
    char name[TG_NN_NAME_MAX];
    if (tg_nn_name(name, prefix, suffix)) return NULL;
    return tg_params_add(p, name, ndim, shape);
}

int tg_nn_check_init(const char *fn, const void *layer, const tg_params *p, const void *cfg)
{
    if (!layer) return tg_error_set("%s: the layer is NULL", fn);
    if (!p) return tg_error_set("%s: the parameter store is NULL", fn);
    if (!cfg) return tg_error_set("%s: the configuration is NULL", fn);
    return 0;
}

int tg_nn_init_undo(void *layer, size_t size, char *name, tg_params *p, int count)
{
    char keep[TG_NN_NAME_MAX] = "";
    if (name) memcpy(keep, name, sizeof keep);
    if (layer) memset(layer, 0, size);
    if (name) memcpy(name, keep, sizeof keep);
    if (p) tg_params_truncate(p, count);
    return -1;
}

bool tg_nn_check_forward(const char *fn, tg_tape *t, const void *layer, bool ready)
{
    if (!t) tg_fail(NULL, "%s: the tape is NULL", fn);
    else if (!layer) tg_fail(t, "%s: the layer is NULL", fn);
    else if (!ready) tg_fail(t, "%s: the layer is not initialised (its init failed or was not called)", fn);
    return t && layer && ready;
}

void tg_init_uniform(tg_tensor *x, double lo, double hi, tg_rng *rng)
{
    TG_REFUSE_NULL(x, "the tensor", );
    TG_REFUSE_NULL(rng, "the rng", );
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)(lo + (hi - lo) * tg_rng_uniform(rng));
}

void tg_init_normal(tg_tensor *x, double mean, double std, tg_rng *rng)
{
    TG_REFUSE_NULL(x, "the tensor", );
    TG_REFUSE_NULL(rng, "the rng", );
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)(mean + std * tg_rng_normal(rng));
}

void tg_init_const(tg_tensor *x, double v)
{
    TG_REFUSE_NULL(x, "the tensor", );
    tg_tensor_fill(x, (tg_real)v);
}

double tg_linear_init_bound(int fan_in) { return fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 0.0; }

void tg_init_linear(tg_tensor *w, tg_tensor *b, tg_rng *rng)
{
    TG_REFUSE_NULL(w, "the weight", );
    double bound = tg_linear_init_bound(w->shape[w->ndim - 1]);
    tg_init_uniform(w, -bound, bound, rng);
    if (b) tg_init_uniform(b, -bound, bound, rng);
}

double tg_xavier_bound(int fan_in, int fan_out)
{
    return fan_in + fan_out > 0 ? sqrt(6.0 / (double)(fan_in + fan_out)) : 0.0;
}
