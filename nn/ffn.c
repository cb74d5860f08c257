/* tapegrad: feed-forward block (see nn/ffn.h). */
#include "ffn.h"

#include <stdio.h>
#include <string.h>

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
    f->dropout = cfg->dropout;
    char sub[TG_NN_NAME_MAX];
    tg_linear_config fc1 = {.in = cfg->d_model, .out = cfg->d_ff, .bias = true};
    tg_linear_config fc2 = {.in = cfg->d_ff, .out = cfg->d_model, .bias = true};
    if (tg_nn_name(sub, prefix, "fc1") || tg_linear_init(&f->fc1, p, sub, &fc1, rng) ||
        tg_nn_name(sub, prefix, "fc2") || tg_linear_init(&f->fc2, p, sub, &fc2, rng))
        return tg_nn_init_undo(f, sizeof *f, f->name, p, n0);
    return 0;
}

/* [..., D] -> fc1 [..., d_ff] -> gelu -> fc2 [..., D] -> dropout */
tg_tensor *tg_ffn_forward(tg_tape *t, const tg_ffn *f, tg_tensor *x, tg_rng *rng)
{
    if (tg_nn_check_forward("tg_ffn_forward", t, f, f && f->fc2.weight)) return NULL;
    tg_tensor *h = tg_linear_forward(t, &f->fc1, x);
    h = tg_gelu(t, h);
    h = tg_linear_forward(t, &f->fc2, h);
    return tg_dropout(t, h, f->dropout, rng);
}
