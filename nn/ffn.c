/* tapegrad: feed-forward block (see nn/ffn.h). */
#include "ffn.h"

#include <stdio.h>
#include <string.h>

static bool gated(tg_ffn_act a) { return a == TG_FFN_SWIGLU || a == TG_FFN_GEGLU; }

int tg_ffn_init(tg_ffn *f, tg_params *p, const char *prefix, const tg_ffn_config *cfg, tg_rng *rng)
{
    if (tg_nn_check_init("tg_ffn_init", f, p, cfg)) return -1;
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", prefix ? prefix : "");
    int n0 = tg_params_count(p);
    if (!(cfg->dropout >= 0 && cfg->dropout < 1)) {
        tg_error_set("tg_ffn '%s': dropout %g must be in [0, 1)", f->name, cfg->dropout);
        return tg_nn_init_undo(f, sizeof *f, f->name, p, n0);
    }
    if (cfg->act < TG_FFN_GELU || cfg->act > TG_FFN_GEGLU) {
        tg_error_set("tg_ffn '%s': act %d is not a tg_ffn_act", f->name, (int)cfg->act);
        return tg_nn_init_undo(f, sizeof *f, f->name, p, n0);
    }
    f->dropout = cfg->dropout;
    f->act = cfg->act;
    bool g = gated(cfg->act);
    char sub[TG_NN_NAME_MAX];
    tg_linear_config in = {.in = cfg->d_model, .out = cfg->d_ff, .bias = !cfg->no_bias};
    tg_linear_config out = {.in = cfg->d_ff, .out = cfg->d_model, .bias = !cfg->no_bias};
    if (tg_nn_name(sub, prefix, g ? "gate_proj" : "fc1") || tg_linear_init(&f->fc1, p, sub, &in, rng) ||
        (g && (tg_nn_name(sub, prefix, "up_proj") || tg_linear_init(&f->up, p, sub, &in, rng))) ||
        tg_nn_name(sub, prefix, g ? "down_proj" : "fc2") || tg_linear_init(&f->fc2, p, sub, &out, rng))
        return tg_nn_init_undo(f, sizeof *f, f->name, p, n0);
    return 0;
}

/* [..., D] -> fc1 [..., d_ff] -> act (* up [..., d_ff]) -> fc2 [..., D] -> dropout */
tg_tensor *tg_ffn_forward(tg_tape *t, const tg_ffn *f, tg_tensor *x, tg_rng *rng)
{
    if (tg_nn_check_forward("tg_ffn_forward", t, f, f && f->fc2.weight)) return NULL;
    tg_tensor *h = tg_linear_forward(t, &f->fc1, x);
    h = f->act == TG_FFN_SILU || f->act == TG_FFN_SWIGLU ? tg_silu(t, h) : tg_gelu(t, h);
    if (gated(f->act)) h = tg_mul(t, h, tg_linear_forward(t, &f->up, x));
    h = tg_linear_forward(t, &f->fc2, h);
    return tg_dropout(t, h, f->dropout, rng);
}
