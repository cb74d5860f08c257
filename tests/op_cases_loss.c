/* Rows of the losses (tests/op_cases.h): logits or inputs [2, 3]; element 1
 * (row 0) is the NaN. Class targets are an int64 [2] input: 1, 2. */
#include "op_cases.h"

OC_BUILD(b_cross_entropy, tg_cross_entropy(t, x[0], x[1], TG_IGNORE))
OC_BUILD(b_cross_entropy_sum, tg_cross_entropy_sum(t, x[0], x[1], TG_IGNORE))
/* class weights, label smoothing, one ignored row */
static tg_tensor *b_cross_entropy_ex(const oc_call *c)
{
    tg_ce_opts o = {c->in[2], 0.1, TG_MEAN, 2, true};
    return tg_cross_entropy_ex(c->t, c->in[0], c->in[1], NULL, &o);
}
/* probabilities as targets, a loss per row */
static tg_tensor *b_cross_entropy_probs(const oc_call *c)
{
    tg_ce_opts o = {NULL, 0.2, TG_NONE, 0, false};
    return tg_cross_entropy_ex(c->t, c->in[0], NULL, c->in[1], &o);
}
static tg_tensor *b_nll_loss(const oc_call *c)
{
    tg_ce_opts o = {c->in[2], 0, TG_NONE, TG_IGNORE, true};
    return tg_nll_loss(c->t, c->in[0], c->in[1], &o);
}
OC_BUILD(b_mse_loss, tg_mse_loss(t, x[0], x[1], TG_MEAN))
OC_BUILD(b_l1_loss, tg_l1_loss(t, x[0], x[1], TG_SUM))
OC_BUILD(b_smooth_l1_loss, tg_smooth_l1_loss(t, x[0], x[1], TG_NONE, 0.5))
OC_BUILD(b_huber_loss, tg_huber_loss(t, x[0], x[1], TG_NONE, 0.5))
OC_BUILD(b_binary_cross_entropy, tg_binary_cross_entropy(t, x[0], x[1], x[2], TG_MEAN))
OC_BUILD(b_binary_cross_entropy_with_logits,
         tg_binary_cross_entropy_with_logits(t, x[0], x[1], x[2], x[3], TG_NONE))

#define LOGITS OC_IN(-2, 2, 2, 3)
#define CLASSES OC_INK(OC_CLASS, 1, 3, 2)
#define PAIR OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 3)

/* The input-target pairs differ by more than eps (l1's kink, smooth_l1's and
 * huber's switch at 0.5 are far from every pair at these seeds). NaN: the
 * mean is NaN; a NaN row's loss is NaN; cross_entropy_ex ignores row 1 (its
 * target is the ignore_index) but row 0 has the NaN. */
static const op_case rows[] = {
    {"tg_cross_entropy", b_cross_entropy, 2, 2, 0, {LOGITS, CLASSES}, 0, OC_NAN_ALL, NULL},
    {"tg_cross_entropy_sum", b_cross_entropy_sum, 2, 2, 0, {LOGITS, CLASSES}, 0, OC_NAN_ALL, NULL},
    {"tg_cross_entropy_ex", b_cross_entropy_ex, 3, 2, 0, {LOGITS, CLASSES, OC_INK(OC_FIXED, 0.5, 2, 3)}, 0, OC_NAN_ALL, NULL},
    {"tg_cross_entropy_ex", b_cross_entropy_probs, 2, 2, 0, {LOGITS, OC_IN(0, 1, 2, 3)}, 0, "n.", NULL},
    {"tg_nll_loss", b_nll_loss, 3, 2, 0, {LOGITS, CLASSES, OC_INK(OC_FIXED, 0.5, 2, 3)}, 0, "n.", NULL},
    {"tg_mse_loss", b_mse_loss, 2, 2, 0, {PAIR}, OC_GROWS, OC_NAN_ALL, NULL},
    {"tg_l1_loss", b_l1_loss, 2, 2, 0, {PAIR}, OC_GROWS, OC_NAN_ALL, NULL},
    {"tg_smooth_l1_loss", b_smooth_l1_loss, 2, 2, 0, {PAIR}, OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_huber_loss", b_huber_loss, 2, 2, 0, {PAIR}, OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_binary_cross_entropy", b_binary_cross_entropy, 3, 2, 0,
     {OC_IN(0.1, 0.9, 2, 3), OC_IN(0, 1, 2, 3), OC_INK(OC_FIXED, 0.5, 2, 3)}, OC_GROWS, NULL,
     "NaN: an input outside [0, 1] is an error (PyTorch's too)"},
    {"tg_binary_cross_entropy_with_logits", b_binary_cross_entropy_with_logits, 4, 2, 0,
     {LOGITS, OC_IN(0, 1, 2, 3), OC_INK(OC_FIXED, 0.5, 2, 3), OC_INK(OC_FIXED, 0.5, 2, 3)}, OC_GROWS, OC_NAN_SAME, NULL},
};

const oc_family oc_loss = {"loss", rows, sizeof rows / sizeof rows[0]};
