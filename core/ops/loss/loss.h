/* tapegrad core ops, losses.
 * The conventions of every op are in core/ops/ops.h. */
#ifndef TAPEGRAD_OPS_LOSS_H
#define TAPEGRAD_OPS_LOSS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/op.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cross-entropy (core/ops/loss/cross_entropy.c) ---------------------------------
 * Mean cross-entropy of logits [..., V] (rows N = all but the last dim) with
 * class targets: a tensor of int64 or int32 (PyTorch's LongTensor) of
 * logits' shape without the last dim (another shape is an error naming both,
 * a float one is refused); no grad flows to it. The op runs in the logits'
 * dtype. Targets equal to ignore_index are skipped; the mean is over the others.
 * When all are ignored the loss is 0 and logits get an all-zero grad
 * (PyTorch gives NaN). Fused log-softmax + NLL.
 * tg_cross_entropy_sum is the sum instead (PyTorch's reduction='sum'). */
#define TG_IGNORE (-100)
tg_tensor *tg_cross_entropy(tg_tape *t, tg_tensor *logits, tg_tensor *targets, int ignore_index);
tg_tensor *tg_cross_entropy_sum(tg_tape *t, tg_tensor *logits, tg_tensor *targets, int ignore_index);

/* ---- with options (core/ops/loss/cross_entropy.c; elementwise ones: losses.c) ----
 * torch.nn.functional's, reduction TG_MEAN (0, the default), TG_SUM or
 * TG_NONE (one loss per element, or per row for cross-entropy). */
typedef enum tg_reduction { TG_MEAN, TG_SUM, TG_NONE } tg_reduction;
/* TG_CE_OPTS_DEFAULT is PyTorch's defaults (targets of -100 ignored); a
 * zeroed struct ignores no target, so a -100 there is an out-of-range error,
 * never a silently skipped class. */
typedef struct tg_ce_opts {
    tg_tensor *weight;        /* [C] class weights (no grad flows to them), or NULL */
    double label_smoothing;   /* in [0, 1] */
    tg_reduction reduction;
    int ignore_index;         /* with ignore: class targets equal to it count for nothing */
    bool ignore;
} tg_ce_opts;
#define TG_CE_OPTS_DEFAULT {NULL, 0, TG_MEAN, TG_IGNORE, true}
/* logits [..., C] (the class dim is the last; PyTorch's is dim 1), with
 * class targets (int64 or int32, logits' shape without C, as above) or
 * probabilities of logits' shape (with a grad; targets NULL): exactly one of
 * the two. opts NULL: the defaults.
 * The mean divides by the summed weights of the counted rows (class targets)
 * or by the rows (probabilities), as PyTorch; all rows ignored: 0 and zero
 * grads (PyTorch: NaN). TG_NONE gives [...] (logits' shape without C). */
tg_tensor *tg_cross_entropy_ex(tg_tape *t, tg_tensor *logits, tg_tensor *targets, tg_tensor *probs,
                               const tg_ce_opts *opts);
/* nll_loss of log-probabilities [..., C] and class targets as above (weight,
 * ignore_index, reduction; no smoothing) */
tg_tensor *tg_nll_loss(tg_tape *t, tg_tensor *logp, tg_tensor *targets, const tg_ce_opts *opts);
/* target has input's shape; grads flow to both */
tg_tensor *tg_mse_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction);
tg_tensor *tg_l1_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction);
tg_tensor *tg_smooth_l1_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction, double beta);
tg_tensor *tg_huber_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction, double delta);
/* input: probabilities in [0, 1] (anything else is an error); weight
 * broadcasts to input's shape (no grad) or is NULL; logs clamped at -100 */
tg_tensor *tg_binary_cross_entropy(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                                   tg_reduction reduction);
/* input: logits; pos_weight (e.g. [C], broadcast) and weight may be NULL */
tg_tensor *tg_binary_cross_entropy_with_logits(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                                               tg_tensor *pos_weight, tg_reduction reduction);

#ifdef __cplusplus
}
#endif

#endif
