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

int tg_init_fans(const tg_tensor *x, long long *fan_in, long long *fan_out)
{
    TG_REFUSE_NULL(x, "the tensor", -1);
    if (x->ndim < 2)
        return tg_error_set("%s: fan in and fan out cannot be computed for a tensor of %d dims (at least 2)", __func__,
                            x->ndim);
    long long field = 1;
    for (int k = 2; k < x->ndim; k++) field *= x->shape[k];
    *fan_in = x->shape[1] * field;
    *fan_out = x->shape[0] * field;
    return 0;
}

double tg_calculate_gain(tg_nonlinearity nonlinearity, double param)
{
    switch (nonlinearity) {
    case TG_GAIN_TANH: return 5.0 / 3;
    case TG_GAIN_RELU: return sqrt(2.0);
    case TG_GAIN_LEAKY_RELU: return sqrt(2.0 / (1 + param * param));
    default: return 1;  /* linear, sigmoid */
    }
}

/* x ~ U(-sqrt(3) std, sqrt(3) std) (uniform) or N(0, std^2) */
static void draw(tg_tensor *x, double std, bool uniform, tg_rng *rng)
{
    if (uniform)
        tg_init_uniform(x, -sqrt(3.0) * std, sqrt(3.0) * std, rng);
    else
        tg_init_normal(x, 0, std, rng);
}

static int kaiming(const char *fn, tg_tensor *x, double a, tg_fan_mode mode, tg_nonlinearity nl, tg_rng *rng,
                   bool uniform)
{
    long long fan_in, fan_out;
    if (!x || !rng) return tg_error_set("%s: %s is NULL", fn, x ? "the rng" : "the tensor");
    if ((unsigned)mode > TG_FAN_OUT) return tg_error_set("%s: mode %d is not TG_FAN_IN or TG_FAN_OUT", fn, (int)mode);
    if ((unsigned)nl > TG_GAIN_LEAKY_RELU)
        return tg_error_set("%s: nonlinearity %d is not a tg_nonlinearity", fn, (int)nl);
    if (tg_init_fans(x, &fan_in, &fan_out)) return tg_error_set("%s: %s", fn, tg_error());
    if (!x->size) return 0;
    draw(x, tg_calculate_gain(nl, a) / sqrt((double)(mode == TG_FAN_IN ? fan_in : fan_out)), uniform, rng);
    return 0;
}

static int xavier(const char *fn, tg_tensor *x, double gain, tg_rng *rng, bool uniform)
{
    long long fan_in, fan_out;
    if (!x || !rng) return tg_error_set("%s: %s is NULL", fn, x ? "the rng" : "the tensor");
    if (tg_init_fans(x, &fan_in, &fan_out)) return tg_error_set("%s: %s", fn, tg_error());
    if (!x->size) return 0;
    draw(x, gain * sqrt(2.0 / (double)(fan_in + fan_out)), uniform, rng);
    return 0;
}

int tg_init_kaiming_uniform(tg_tensor *x, double a, tg_fan_mode mode, tg_nonlinearity nonlinearity, tg_rng *rng)
{
    return kaiming(__func__, x, a, mode, nonlinearity, rng, true);
}
int tg_init_kaiming_normal(tg_tensor *x, double a, tg_fan_mode mode, tg_nonlinearity nonlinearity, tg_rng *rng)
{
    return kaiming(__func__, x, a, mode, nonlinearity, rng, false);
}
int tg_init_xavier_uniform(tg_tensor *x, double gain, tg_rng *rng) { return xavier(__func__, x, gain, rng, true); }
int tg_init_xavier_normal(tg_tensor *x, double gain, tg_rng *rng) { return xavier(__func__, x, gain, rng, false); }
