/* tapegrad: optimizers (one include for optim/).
 *
 *   optim/adam.h      Adam and AdamW (torch.optim.Adam / AdamW)
 *   optim/sgd.h       SGD with momentum, dampening, nesterov, weight decay
 *   optim/clip.h      clip by global gradient norm (clip_grad_norm_)
 *   optim/schedule.h  learning-rate schedules: warmup, cosine / linear decay
 *
 * A training step:
 *
 *   tg_params_zero_grad(params);
 *   tg_backward(tape, loss);
 *   tg_clip_grad_norm(params, 1.0);
 *   tg_adam_set_lr(opt, tg_lr_at(&sched, tg_adam_steps(opt)));
 *   tg_adam_step(opt);
 *
 * Optimizer state is exported as named tensors "optim.<kind>.<buffer>.<param
 * name>" (PyTorch state_dict keys for the parameter part) plus a step count
 * in the metadata, so a checkpoint holds model and optimizer in one
 * safetensors file and a resumed run continues bit for bit.
 *
 * The functions below are the shared pieces of that export, for the
 * optimizers here and for users writing their own.
 */
#ifndef TAPEGRAD_OPTIM_H
#define TAPEGRAD_OPTIM_H

#include <stddef.h>

#include "adam.h"
#include "clip.h"
#include "schedule.h"
#include "sgd.h"
#include "../core/engine/params.h"
#include "../core/io/io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest state key, "<prefix><param name>", including the NUL. */
#define TG_OPTIM_KEY_MAX 512

/* buf holds tg_params_numel(p) values in the store's flat layout; adds one
 * tensor per parameter to s: "<prefix><param name>", shaped like the
 * parameter. 0, or -1 with a message starting with `what`. */
int tg_optim_save_bufs(tg_safetensors *s, const tg_params *p, const char *prefix, const tg_real *buf,
                       const char *what);
/* 0 when s holds "<prefix><name>" with the parameter's shape for every
 * parameter of p; else -1 naming the first one missing or mis-shaped. */
int tg_optim_check_bufs(const tg_safetensors *s, const tg_params *p, const char *prefix,
                        const char *what);
/* Copies those tensors into buf (call after tg_optim_check_bufs succeeded). */
void tg_optim_load_bufs(const tg_safetensors *s, const tg_params *p, const char *prefix, tg_real *buf);

/* The step count as decimal metadata under key. */
int tg_optim_save_step(tg_safetensors *s, const char *key, long step, const char *what);
/* Reads it back: -1 with a message when absent or not a non-negative integer. */
int tg_optim_load_step(const tg_safetensors *s, const char *key, long *step, const char *what);

#ifdef __cplusplus
}
#endif

#endif
