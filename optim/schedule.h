/* tapegrad: learning-rate schedules.
 *
 * tg_lr_at is a pure function of the step, so a resumed run continues on
 * the same curve: call tg_optim_schedule_lr(opt, &s, tg_optim_steps(opt))
 * before each tg_optim_step. It scales every parameter group's own base
 * rate by tg_lr_at(&s, step) / s.lr (torch's LRScheduler), so make the
 * peak lr the optimizer's lr: group 0 then follows this curve exactly.
 *
 * `step` counts updates already taken: step 0 is the learning rate of the
 * first update, step k that of update k+1. With W = warmup, T = total:
 *
 *   step < W:        lr * (step + 1) / W           linear warmup (nanoGPT): the
 *                                                  first update already moves, step
 *                                                  W-1 reaches lr
 *   W <= step < T:   r = (step - W) / (T - W)      in [0, 1)
 *     constant:      lr
 *     cosine:        min_lr + (lr - min_lr) * (1 + cos(pi * r)) / 2
 *     linear:        lr - (lr - min_lr) * r
 *   step >= T:       min_lr (constant: lr)         the floor, held forever
 *
 * The curve is continuous: step W-1 and step W both give lr, and the decay
 * reaches min_lr exactly at step T. A negative step counts as step 0.
 */
#ifndef TAPEGRAD_OPTIM_SCHEDULE_H
#define TAPEGRAD_OPTIM_SCHEDULE_H

#include <stddef.h>

#include "../core/engine/dtype.h" /* the float64 copy's names */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_schedule_kind {
    TG_SCHED_CONSTANT,  /* warmup (optional) then lr */
    TG_SCHED_COSINE,    /* warmup then cosine decay to min_lr at step total */
    TG_SCHED_LINEAR     /* warmup then linear decay to min_lr at step total */
} tg_schedule_kind;

typedef struct tg_schedule {
    tg_schedule_kind kind;
    double lr;      /* peak learning rate, reached at the end of warmup */
    double min_lr;  /* the floor of the decays (ignored by constant) */
    long warmup;    /* warmup steps, >= 0 (0: start at lr) */
    long total;     /* decays: the step at which min_lr is reached, > warmup */
} tg_schedule;

tg_schedule tg_schedule_constant(double lr, long warmup);
tg_schedule tg_schedule_cosine(double lr, double min_lr, long warmup, long total);
tg_schedule tg_schedule_linear(double lr, double min_lr, long warmup, long total);

/* 0 when the schedule is valid (lr >= 0, 0 <= min_lr <= lr, warmup >= 0,
 * total > warmup for the decays); else -1 with a message in tg_error(). */
int tg_schedule_check(const tg_schedule *s);

double tg_lr_at(const tg_schedule *s, long step);

#ifdef __cplusplus
}
#endif

#endif
