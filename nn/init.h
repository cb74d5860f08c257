/* tapegrad: PyTorch's default initialisations.
 *
 * Every layer init fills its parameters (nn/names.h) like the
 * matching torch.nn module's reset_parameters() does, drawing from a tg_rng
 * (the values differ from PyTorch's, the distributions do not):
 *   nn.Linear        weight, bias ~ U(-1/sqrt(in), 1/sqrt(in))
 *                    (kaiming_uniform_(a=sqrt(5)) reduces to this bound)
 *   nn.Embedding     weight ~ N(0, 1)
 *   nn.LayerNorm     weight = 1, bias = 0
 *   nn.MultiheadAttention  in_proj_weight ~ xavier_uniform_
 *                    U(+-sqrt(6 / (fan_in + fan_out))), in_proj_bias = 0,
 *                    out_proj.weight as nn.Linear, out_proj.bias = 0
 * kaiming_* and xavier_* (below) are torch.nn.init's, with its fans and gains.
 * A layer given rng == NULL leaves its random parameters at zero (for a
 * checkpoint to be loaded next); constant ones (LayerNorm) are still set.
 */
#ifndef TAPEGRAD_NN_INIT_H
#define TAPEGRAD_NN_INIT_H

#include "../core/engine/rng.h"
#include "../core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x ~ U(lo, hi), N(mean, std^2), or the constant v, element by element. */
void tg_init_uniform(tg_tensor *x, double lo, double hi, tg_rng *rng);
void tg_init_normal(tg_tensor *x, double mean, double std, tg_rng *rng);
void tg_init_const(tg_tensor *x, double v);

/* nn.Linear: bound = 1/sqrt(fan_in), fan_in = the weight's last dim [out, in];
 * w and then b (may be NULL) ~ U(-bound, bound). */
double tg_linear_init_bound(int fan_in);
void tg_init_linear(tg_tensor *w, tg_tensor *b, tg_rng *rng);
/* xavier_uniform_ of a [fan_out, fan_in] matrix: sqrt(6 / (fan_in + fan_out)). */
double tg_xavier_bound(int fan_in, int fan_out);

/* torch.nn.init's fans of a weight of 2 or more dims: fan_in = size(1) *
 * receptive field, fan_out = size(0) * receptive field, the receptive field
 * the product of dims 2.. (1 for a matrix). -1 with tg_error() for fewer than
 * 2 dims or a NULL tensor, else 0. */
int tg_init_fans(const tg_tensor *x, long long *fan_in, long long *fan_out);
/* torch.nn.init.calculate_gain: linear and sigmoid 1, tanh 5/3, relu
 * sqrt(2), leaky_relu sqrt(2 / (1 + slope^2)) (param is the slope). */
typedef enum tg_nonlinearity {
    TG_GAIN_LINEAR, TG_GAIN_SIGMOID, TG_GAIN_TANH, TG_GAIN_RELU, TG_GAIN_LEAKY_RELU
} tg_nonlinearity;
double tg_calculate_gain(tg_nonlinearity nonlinearity, double param);
/* kaiming_uniform_ / kaiming_normal_(x, a, mode, nonlinearity): std =
 * gain(nonlinearity, a) / sqrt(fan), fan = fan_in or fan_out (mode);
 * U(-sqrt(3) std, sqrt(3) std) or N(0, std^2). xavier_uniform_ /
 * xavier_normal_(x, gain): std = gain sqrt(2 / (fan_in + fan_out)), the same
 * two draws. A tensor without elements is left as it is (PyTorch); 0 or -1
 * with tg_error() naming the function (fewer than 2 dims, NULL, a bad mode
 * or nonlinearity). */
typedef enum tg_fan_mode { TG_FAN_IN, TG_FAN_OUT } tg_fan_mode;
int tg_init_kaiming_uniform(tg_tensor *x, double a, tg_fan_mode mode, tg_nonlinearity nonlinearity, tg_rng *rng);
int tg_init_kaiming_normal(tg_tensor *x, double a, tg_fan_mode mode, tg_nonlinearity nonlinearity, tg_rng *rng);
int tg_init_xavier_uniform(tg_tensor *x, double gain, tg_rng *rng);
int tg_init_xavier_normal(tg_tensor *x, double gain, tg_rng *rng);

#ifdef __cplusplus
}
#endif

#endif
