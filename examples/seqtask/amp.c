/* seqtask, charlm, cnn: --precision's training step (see amp.h). */
#include "amp.h"

#include <math.h>
#include <string.h>

int sq_amp_init(sq_amp *a, int precision)
{
    static const tg_dtype casts[] = {TG_F32, TG_BF16, TG_F16};
    memset(a, 0, sizeof *a);
    a->cast = casts[precision];
    if (precision != SQ_PRECISION_F16) return 0;
    tg_grad_scaler_opts so = tg_grad_scaler_defaults();
    return (a->scaler = tg_grad_scaler_new(&so)) ? 0 : -1;
}

void sq_amp_free(sq_amp *a)
{
    tg_grad_scaler_free(a->scaler);
    a->scaler = NULL;
}

tg_tensor *sq_amp_loss(sq_amp *a, tg_tape *t, tg_tensor *loss)
{
    return loss && a->scaler ? tg_grad_scaler_scale(a->scaler, t, loss) : loss;
}

int sq_amp_unscale(sq_amp *a, tg_optim *o) { return a->scaler ? tg_grad_scaler_unscale(a->scaler, o) : 0; }

int sq_amp_step(sq_amp *a, tg_optim *o)
{
    if (!a->scaler) return tg_optim_step(o) ? -1 : 1;
    int stepped = tg_grad_scaler_step(a->scaler, o);
    if (stepped < 0 || tg_grad_scaler_update(a->scaler)) return -1;
    a->skipped += !stepped;
    return stepped;
}

bool sq_amp_finite(const sq_amp *a, double loss, double gnorm)
{
    return isfinite(loss) && (isfinite(gnorm) || a->scaler);
}

double sq_amp_scale(const sq_amp *a) { return a->scaler ? tg_grad_scaler_get_scale(a->scaler) : 0; }

void sq_amp_report(FILE *f, double scale, long skipped)
{
    if (scale > 0) fprintf(f, "loss scale %g (%ld steps skipped for an Inf or NaN gradient)\n", scale, skipped);
}
