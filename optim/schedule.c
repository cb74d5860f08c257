/* tapegrad: learning-rate schedules (see optim/schedule.h). */
#include "schedule.h"

#include <math.h>
#include <stdio.h>

#include "../core/engine/error.h"

#define PI 3.14159265358979323846

tg_schedule tg_schedule_constant(double lr, long warmup)
{
    return (tg_schedule){.kind = TG_SCHED_CONSTANT, .lr = lr, .min_lr = lr, .warmup = warmup, .total = warmup + 1};
}

tg_schedule tg_schedule_cosine(double lr, double min_lr, long warmup, long total)
{
    return (tg_schedule){.kind = TG_SCHED_COSINE, .lr = lr, .min_lr = min_lr, .warmup = warmup, .total = total};
}

tg_schedule tg_schedule_linear(double lr, double min_lr, long warmup, long total)
{
    return (tg_schedule){.kind = TG_SCHED_LINEAR, .lr = lr, .min_lr = min_lr, .warmup = warmup, .total = total};
}

/* The comparisons are written so that NaN fails them. */
int tg_schedule_check(const tg_schedule *s)
{
    if (!s) return tg_error_set("tg_schedule: the schedule is NULL");
    if (s->kind != TG_SCHED_CONSTANT && s->kind != TG_SCHED_COSINE && s->kind != TG_SCHED_LINEAR)
        return tg_error_set("tg_schedule: unknown kind %d", (int)s->kind);
    if (!(s->lr >= 0 && isfinite(s->lr)))
        return tg_error_set("tg_schedule: lr = %g must be finite and >= 0", s->lr);
    if (s->warmup < 0) return tg_error_set("tg_schedule: warmup = %ld must be >= 0", s->warmup);
    if (s->kind == TG_SCHED_CONSTANT) return 0;
    if (!(s->min_lr >= 0 && s->min_lr <= s->lr))
        return tg_error_set("tg_schedule: min_lr = %g is outside [0, lr = %g]", s->min_lr, s->lr);
    if (s->total <= s->warmup)
        return tg_error_set("tg_schedule: total = %ld must exceed warmup = %ld", s->total, s->warmup);
    return 0;
}

double tg_lr_at(const tg_schedule *s, long step)
{
    TG_REFUSE_NULL(s, "the schedule", NAN);
    if (step < 0) step = 0;
    if (step < s->warmup) return s->lr * (double)(step + 1) / (double)s->warmup;
    if (s->kind == TG_SCHED_CONSTANT) return s->lr;
    if (step >= s->total) return s->min_lr;
    double r = (double)(step - s->warmup) / (double)(s->total - s->warmup);
    if (s->kind == TG_SCHED_COSINE) return s->min_lr + (s->lr - s->min_lr) * 0.5 * (1 + cos(PI * r));
    return s->lr - (s->lr - s->min_lr) * r;
}
