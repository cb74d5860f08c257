/* tapegrad: dynamic loss scaling, PyTorch's GradScaler (see optim/scaler.h). */
#include "scaler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/engine/alloc.h"
#include "../core/ops/ops.h"
#include "internal.h"

#define KEY_SCALE "optim.grad_scaler.scale"
#define KEY_TRACKER "optim.grad_scaler.growth_tracker"

/* torch's OptState: where an optimizer is between two updates. */
typedef enum { STAGE_READY, STAGE_UNSCALED, STAGE_STEPPED } stage;

struct tg_grad_scaler {
    tg_grad_scaler_opts o;
    float scale;        /* S: a float32 in both builds, as torch's */
    long tracker;       /* clean steps since S last changed */
    int n;              /* optimizers unscaled since the last update */
    struct {
        const tg_optim *o;
        stage stage;
        bool found_inf;
    } seen[TG_GRAD_SCALER_OPTIMS];
};

tg_grad_scaler_opts tg_grad_scaler_defaults(void)
{
    return (tg_grad_scaler_opts){
        .init_scale = 65536.0, .growth_factor = 2.0, .backoff_factor = 0.5, .growth_interval = 2000, .enabled = true};
}

/* The comparisons are written so that NaN fails them. */
int tg_grad_scaler_check(const tg_grad_scaler_opts *o)
{
    if (!o) return tg_error_set("tg_grad_scaler: options are NULL");
    float s = (float)o->init_scale;
    if (!(o->init_scale > 0 && s > 0 && isfinite(s)))
        return tg_error_set("tg_grad_scaler: init_scale = %g must be > 0 and finite as a float32", o->init_scale);
    if (!(o->growth_factor > 1 && isfinite(o->growth_factor)))
        return tg_error_set("tg_grad_scaler: growth_factor = %g must be finite and > 1", o->growth_factor);
    if (!(o->backoff_factor > 0 && o->backoff_factor < 1))
        return tg_error_set("tg_grad_scaler: backoff_factor = %g must be in (0, 1)", o->backoff_factor);
    if (!(o->growth_interval > 0))
        return tg_error_set("tg_grad_scaler: growth_interval = %ld must be > 0", o->growth_interval);
    return 0;
}

tg_grad_scaler *tg_grad_scaler_new(const tg_grad_scaler_opts *o)
{
    if (tg_grad_scaler_check(o)) return NULL;
    tg_grad_scaler *s = tg_calloc(1, sizeof *s);
    if (!s) {
        tg_error_set("tg_grad_scaler_new: out of memory");
        return NULL;
    }
    s->o = *o;
    s->scale = (float)o->init_scale;
    return s;
}

void tg_grad_scaler_free(tg_grad_scaler *s) { tg_free(s); }

tg_tensor *tg_grad_scaler_scale(tg_grad_scaler *s, tg_tape *t, tg_tensor *loss)
{
    if (!s) return tg_fail(t, "tg_grad_scaler_scale: the scaler is NULL");
    if (!s->o.enabled || !loss) return loss;
    /* torch's loss * scale promotes a half loss to the scale's float32:
     * the product in float16 would overflow from 2^16 up */
    if (tg_dtype_is_half(tg_dtype_promoted(&loss, 1))) loss = tg_to(t, loss, TG_F32);
    return tg_scale(t, loss, (double)s->scale);
}

/* o's entry since the last update, added when new; -1 with a message when
 * the table is full. */
static int entry_of(tg_grad_scaler *s, const tg_optim *o, const char *what)
{
    for (int i = 0; i < s->n; i++)
        if (s->seen[i].o == o) return i;
    if (s->n == TG_GRAD_SCALER_OPTIMS)
        return tg_error_set("%s: more than %d optimizers between two updates", what, TG_GRAD_SCALER_OPTIMS);
    s->seen[s->n].o = o;
    s->seen[s->n].stage = STAGE_READY;
    s->seen[s->n].found_inf = false;
    return s->n++;
}

/* Every gradient g of the parameters o's step moves times inv (none when
 * inv is 1); whether one was Inf or NaN before. torch's
 * _amp_foreach_non_finite_check_and_unscale_ over the grads that are not
 * None. */
static bool grads_unscale(const tg_optim *o, float inv)
{
    bool found = false;
    for (int k = 0; k < o->count; k++) {
        if (!tg_optim_moves(o, k)) continue;
        tg_tensor *x = tg_params_at(o->p, k);
        for (size_t i = 0; i < x->size; i++) found |= !isfinite(x->grad[i]);
        if (inv != 1.0f)
            for (size_t i = 0; i < x->size; i++) x->grad[i] *= (tg_real)inv;
    }
    return found;
}

/* Unscales o once (entry e); -1 with torch's messages when it was already. */
static int unscale_entry(tg_grad_scaler *s, tg_optim *o, int e, const char *what)
{
    if (s->seen[e].stage == STAGE_UNSCALED)
        return tg_error_set("%s: tg_grad_scaler_unscale has already been called on this optimizer since the "
                            "last tg_grad_scaler_update", what);
    if (s->seen[e].stage == STAGE_STEPPED)
        return tg_error_set("%s: tg_grad_scaler_unscale is being called after tg_grad_scaler_step", what);
    /* the reciprocal in double, as torch: float32 division may be inexact */
    s->seen[e].found_inf = grads_unscale(o, (float)(1.0 / (double)s->scale));
    s->seen[e].stage = STAGE_UNSCALED;
    return 0;
}

int tg_grad_scaler_unscale(tg_grad_scaler *s, tg_optim *o)
{
    TG_DISPATCH_ON(tg_grad_scaler_unscale, o && o->p && tg_params_dtype(o->p) == TG_OTHER_DTYPE, (s, o));
    const char *what = "tg_grad_scaler_unscale";
    if (!s) return tg_error_set("%s: the scaler is NULL", what);
    if (!o) return tg_error_set("%s: the optimizer is NULL", what);
    if (!s->o.enabled) return 0;
    int e = entry_of(s, o, what);
    return e < 0 ? -1 : unscale_entry(s, o, e, what);
}

int tg_grad_scaler_step(tg_grad_scaler *s, tg_optim *o)
{
    TG_DISPATCH_ON(tg_grad_scaler_step, o && o->p && tg_params_dtype(o->p) == TG_OTHER_DTYPE, (s, o));
    const char *what = "tg_grad_scaler_step";
    if (!s) return tg_error_set("%s: the scaler is NULL", what);
    if (!o) return tg_error_set("%s: the optimizer is NULL", what);
    if (!s->o.enabled) return tg_optim_step(o) ? -1 : 1;
    int e = entry_of(s, o, what);
    if (e < 0) return -1;
    if (s->seen[e].stage == STAGE_STEPPED)
        return tg_error_set("%s: tg_grad_scaler_step has already been called since the last tg_grad_scaler_update",
                            what);
    if (s->seen[e].stage == STAGE_READY && unscale_entry(s, o, e, what)) return -1;
    if (s->seen[e].found_inf) {
        s->seen[e].stage = STAGE_STEPPED;
        return 0;
    }
    if (tg_optim_step(o)) return -1;
    s->seen[e].stage = STAGE_STEPPED;
    return 1;
}

int tg_grad_scaler_update(tg_grad_scaler *s)
{
    if (!s) return tg_error_set("tg_grad_scaler_update: the scaler is NULL");
    if (!s->o.enabled) return 0;
    if (!s->n)
        return tg_error_set("tg_grad_scaler_update: no inf checks were recorded prior to update "
                            "(tg_grad_scaler_step or tg_grad_scaler_unscale first)");
    bool found_inf = false;
    for (int i = 0; i < s->n; i++) found_inf |= s->seen[i].found_inf;
    s->n = 0;
    /* torch's _amp_update_scale_: float * double, narrowed to float */
    if (found_inf) {
        s->scale = (float)((double)s->scale * s->o.backoff_factor);
        s->tracker = 0;
    } else if (s->tracker + 1 == s->o.growth_interval) {
        float grown = (float)((double)s->scale * s->o.growth_factor);
        if (isfinite(grown)) s->scale = grown;  /* torch >= 2.1 (1.13 grew it to Inf, for good) */
        s->tracker = 0;
    } else {
        s->tracker++;
    }
    return 0;
}

double tg_grad_scaler_get_scale(const tg_grad_scaler *s)
{
    TG_REFUSE_NULL(s, "the scaler", NAN);
    return s->o.enabled ? (double)s->scale : 1.0;
}

long tg_grad_scaler_growth_tracker(const tg_grad_scaler *s)
{
    TG_REFUSE_NULL(s, "the scaler", -1);
    return s->o.enabled ? s->tracker : 0;
}

/* ---- checkpoints ------------------------------------------------------------ */

int tg_grad_scaler_state_save(const tg_grad_scaler *s, tg_safetensors *st)
{
    const char *what = "tg_grad_scaler_state_save";
    if (!s || !st) return tg_error_set("%s: NULL argument", what);
    if (!s->o.enabled) return 0;
    char val[32];
    snprintf(val, sizeof val, "%.17g", (double)s->scale);
    if (tg_st_set_meta(st, KEY_SCALE, val)) return tg_error_set("%s: %s", what, tg_error());
    snprintf(val, sizeof val, "%ld", s->tracker);
    if (tg_st_set_meta(st, KEY_TRACKER, val)) return tg_error_set("%s: %s", what, tg_error());
    return 0;
}

int tg_grad_scaler_state_load(tg_grad_scaler *s, const tg_safetensors *st)
{
    const char *what = "tg_grad_scaler_state_load";
    if (!s || !st) return tg_error_set("%s: NULL argument", what);
    if (!s->o.enabled) return 0;
    const char *val = tg_st_meta(st, KEY_SCALE);
    if (!val) return tg_error_set("%s: missing metadata '%s'", what, KEY_SCALE);
    char *end;
    double v = strtod(val, &end);
    if (end == val || *end || !(v > 0) || !isfinite((float)v) || (double)(float)v != v)
        return tg_error_set("%s: metadata '%s' = \"%s\" is not a finite, positive float32", what, KEY_SCALE, val);
    long tracker;
    if (tg_optim_meta_count(st, KEY_TRACKER, &tracker, what)) return -1;
    if (tracker >= s->o.growth_interval)
        return tg_error_set("%s: metadata '%s' = %ld is not below growth_interval = %ld", what, KEY_TRACKER,
                            tracker, s->o.growth_interval);
    s->scale = (float)v;
    s->tracker = tracker;
    return 0;
}
