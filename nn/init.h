/* tapegrad: creating parameters and PyTorch's default initialisations.
 *
 * Every layer init adds its parameters to a tg_params store under
 * "<prefix>.<suffix>" (PyTorch state_dict keys) and fills them like the
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

#include <stdbool.h>
#include <stddef.h>

#include "../core/engine/params.h"
#include "../core/engine/rng.h"
#include "../core/engine/tape.h"
#include "../core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest parameter name / layer prefix nn accepts (bytes, with the NUL). */
#define TG_NN_NAME_MAX 128

/* dst (TG_NN_NAME_MAX bytes) = "<prefix>.<suffix>", or suffix alone when
 * prefix is NULL or "". -1 with a message in tg_error() when it does not fit. */
int tg_nn_name(char *dst, const char *prefix, const char *suffix);

/* Adds the zero-filled parameter "<prefix>.<suffix>" (just suffix when prefix
 * is NULL or ""). NULL with a message in tg_error() when the name is too long, taken
 * or the shape is bad. */
tg_tensor *tg_nn_param(tg_params *p, const char *prefix, const char *suffix, int ndim,
                       const int *shape);

/* The checks every layer's init and forward start with; fn names the caller
 * in the message. tg_nn_check_init: -1 with "<fn>: the layer is NULL" (or
 * the parameter store, or the configuration: pass cfg = layer when there is
 * none) in tg_error(). tg_nn_check_forward: false, with "<fn>: the tape is
 * NULL", "<fn>: the layer is NULL" or, unless ready (the layer's last
 * parameter exists), "<fn>: the layer is not initialised ..." in the tape
 * and tg_error(). */
int tg_nn_check_init(const char *fn, const void *layer, const tg_params *p, const void *cfg);
/* A failed init leaves nothing usable: the parameters added to p after its
 * first `count` leave the store and the layer (size bytes) is zeroed but for
 * its name (NULL: none), so its forward refuses it as not initialised and
 * the same prefix can be tried again. Keeps tg_error() (a NULL layer or p
 * is skipped, not reported over it); returns -1. */
int tg_nn_init_undo(void *layer, size_t size, char *name, tg_params *p, int count);
bool tg_nn_check_forward(const char *fn, tg_tape *t, const void *layer, bool ready);

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
