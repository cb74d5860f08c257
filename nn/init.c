/* tapegrad: PyTorch default inits (see nn/init.h). */
#include "init.h"

#include <math.h>

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
