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

#ifdef __cplusplus
}
#endif

#endif
