/* seqtask: model construction, the optimizer's options, model and checkpoint files. */
#include "checkpoint.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run.h"
#include "task.h"

/* ---- optimizer ---------------------------------------------------------- */

/* --optimizer's choices are the library's kind names; a kind not tuned
 * here runs with tg_optim_defaults. */
tg_optim_opts sq_optim_opts(const sq_config *c)
{
    tg_optim_opts o = tg_optim_defaults((tg_optim_kind)tg_optim_kind_parse(sq_cli_choice(c, "optimizer")));
    o.lr = c->lr;
    o.weight_decay = c->weight_decay;
    if (o.kind == TG_SGD) o.momentum = 0.9;
    if (o.kind == TG_ADAM || o.kind == TG_ADAMW) o.beta2 = 0.98;
    o.no_decay_1d = o.kind == TG_ADAMW;
    return o;
}

/* ---- the model ---------------------------------------------------------- */

tg_model_config sq_model_config(const sq_config *c)
{
    return (tg_model_config){
        .vocab = (int)c->symbols + SQ_SYM0,
        .d_model = (int)c->d_model,
        .n_layers = (int)c->layers,
        .n_heads = (int)c->heads,
        .n_kv_heads = (int)c->kv_heads,
        .d_head = (int)c->d_head,
        .d_ff = (int)c->d_ff,
        .max_len = sq_tmax((int)c->max_len),
        .dropout = c->dropout,
        .mode = c->mode == SQ_MODE_PER_HEAD ? TG_MHA_PER_HEAD : TG_MHA_FUSED,
        .pos = (tg_pos_kind)c->pos,
        .alibi = c->alibi,
        .norm = (tg_norm_kind)c->norm,
        .ff_act = (tg_ffn_act)c->ffn,
        .no_bias = c->no_bias,
        .tie_weights = c->tie,
    };
}

int sq_model_build(const sq_config *c, tg_rng *rng, tg_params **p, tg_model *m)
{
    *p = tg_params_new();
    if (!*p) {
        tg_error_set("out of memory for the parameter store");
        return -1;
    }
    tg_model_config mc = sq_model_config(c);
    if (tg_model_init(m, *p, &mc, rng) != 0) {
        tg_params_free(*p);
        *p = NULL;
        return -1;
    }
    return 0;
}

void sq_model_destroy(tg_params *p, tg_model *m)
{
    tg_model_free(m);
    tg_params_free(p);
}

/* ---- files -------------------------------------------------------------- */

static int put_meta(void *ctx, const char *key, const char *value)
{
    return tg_st_set_meta(ctx, key, value);
}

static const char *get_meta(void *ctx, const char *key) { return tg_st_meta(ctx, key); }

static int meta_long(tg_safetensors *s, const char *key, long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    return tg_st_set_meta(s, key, buf);
}

/* -1 with a message naming the first parameter of p holding NaN or Inf:
 * such a model is neither saved nor loaded (it could only give NaN). */
static int check_finite(const tg_params *p, const char *path, const char *what)
{
    for (int k = 0; k < tg_params_count(p); k++) {
        const tg_tensor *x = tg_params_at(p, k);
        for (size_t i = 0; i < x->size; i++)
            if (!isfinite(x->data[i]))
                return tg_error_set("%s: parameter '%s' holds a non-finite value (%g at element %zu): %s", path,
                                    x->name, (double)x->data[i], i, what);
    }
    return 0;
}

int sq_save_finish(tg_safetensors *s, const char *path, const tg_rng *rng, unsigned long long data_hash)
{
    char buf[64];
    if (data_hash) {
        snprintf(buf, sizeof buf, "%016llx", data_hash);
        if (tg_st_set_meta(s, "data_hash", buf)) return -1;
    }
    if (rng) {
        snprintf(buf, sizeof buf, "%" PRIu64 " %" PRIu64, rng->state, rng->inc);
        if (tg_st_set_meta(s, "rng_dropout", buf)) return -1;
    }
    return tg_st_save(s, path, sizeof(tg_real) == 8 ? TG_F64 : TG_F32);
}

int sq_scaler_state_save(tg_safetensors *s, const tg_grad_scaler *sc, const tg_optim *o, long step)
{
    /* steps the scaler skipped: the optimizer took that many fewer */
    return sc && (tg_grad_scaler_state_save(sc, s) || meta_long(s, "skipped_steps", step - tg_optim_steps(o))) ? -1 : 0;
}

int sq_save(const char *path, const sq_config *c, const tg_params *p, const tg_optim *o,
            const tg_grad_scaler *sc, const tg_rng *rng, long step, double acc, unsigned long long data_hash)
{
    if (check_finite(p, path, "not saving it")) return -1;
    tg_safetensors *s = tg_st_new();
    char buf[64];
    int rc = -1;
    if (!s) goto fail;
    if (tg_st_add_params(s, p)) goto fail;
    if (o && tg_optim_state_save(o, s)) goto fail;
    if (sq_scaler_state_save(s, sc, o, step)) goto fail;
    if (tg_st_set_meta(s, "format", SQ_FORMAT) ||
        sq_config_to_meta(c, SQ_META_MODEL | SQ_META_TASK | SQ_META_TRAIN, put_meta, s) ||
        meta_long(s, "step", step) || meta_long(s, "vocab", c->symbols + SQ_SYM0) ||
        meta_long(s, "tmax", sq_tmax((int)c->max_len)) ||
        tg_st_set_meta(s, "tg_real", TG_REAL_NAME))
        goto fail;
    if (acc >= 0) {
        snprintf(buf, sizeof buf, "%.6f", acc);
        if (tg_st_set_meta(s, "eval_acc", buf)) goto fail;
    }
    rc = sq_save_finish(s, path, rng, data_hash);
    tg_st_free(s);
    return rc;
fail:
    tg_error_set("%s: cannot save: %s", path, tg_error());
    tg_st_free(s);
    return -1;
}

/* path read with its checksums verified as `verify` says, or not at all
 * under --no-verify; a refusal for a missing table names --no-verify. */
static int read_file(const char *path, const sq_config *c, tg_st_verify verify, tg_safetensors **s)
{
    if (!tg_st_load_verify(path, c->no_verify ? TG_ST_VERIFY_OFF : verify, s)) return 0;
    if (strstr(tg_error(), "TG_ST_VERIFY_OFF")) tg_error_set("%s; seqtask: --no-verify", tg_error());
    return -1;
}

int sq_open(const char *path, sq_config *c, bool resume, tg_params **p, tg_model *m,
            tg_safetensors **st)
{
    tg_safetensors *s;
    *p = NULL;
    /* seqtask wrote every file it opens here: it must carry its checksums */
    if (read_file(path, c, TG_ST_VERIFY_REQUIRED, &s)) return -1;
    const char *fmt = tg_st_meta(s, "format");
    if (!fmt || strcmp(fmt, SQ_FORMAT) != 0) {
        tg_error_set("%s: not a seqtask model (metadata \"format\" is %s%s%s, expected \"%s\")",
                     path, fmt ? "\"" : "missing", fmt ? fmt : "", fmt ? "\"" : "", SQ_FORMAT);
        goto fail;
    }
    unsigned mask = SQ_META_MODEL | SQ_META_TASK | (resume ? SQ_META_TRAIN : 0);
    if (sq_config_from_meta(c, mask, resume ? SQ_META_MODEL | SQ_META_TASK : SQ_META_MODEL, get_meta,
                            s, path))
        goto fail;
    if (sq_cli_check(c)) goto fail;
    if (sq_model_build(c, NULL, p, m)) goto fail;
    if (tg_st_load_params(*p, s, true, "optim.")) {
        tg_error_set("%s: %s", path, tg_error());
        goto fail_model;
    }
    if (check_finite(*p, path, "refusing to use it")) goto fail_model;
    if (st) *st = s;
    else tg_st_free(s);
    return 0;
fail_model:
    sq_model_destroy(*p, m);
    *p = NULL;
fail:
    tg_st_free(s);
    return -1;
}

int sq_resume_state(const tg_safetensors *st, const char *path, tg_optim *o, tg_grad_scaler *sc, long *step,
                    tg_rng *rng)
{
    const char *s = tg_st_meta(st, "step"), *r = tg_st_meta(st, "rng_dropout"), *k = tg_st_meta(st, "skipped_steps");
    char *end;
    uint64_t a, b;
    if (!s || (*step = strtol(s, &end, 10)) < 0 || *end) {
        tg_error_set("%s: metadata \"step\" is missing or not a step count", path);
        return -1;
    }
    if (!r || sscanf(r, "%" SCNu64 " %" SCNu64, &a, &b) != 2 || !(b & 1)) {
        tg_error_set("%s: metadata \"rng_dropout\" is missing or not \"state inc\" (a "
                     "model.safetensors cannot be resumed: use checkpoint.safetensors)", path);
        return -1;
    }
    rng->state = a;
    rng->inc = b;
    long skipped = 0;
    if (k && ((skipped = strtol(k, &end, 10)) < 0 || *end || skipped > *step))
        return tg_error_set("%s: metadata \"skipped_steps\" is not a count of at most %ld steps", path, *step);
    if (tg_optim_state_load(o, st)) return tg_error_set("%s: %s", path, tg_error());
    if (tg_optim_steps(o) != *step - skipped)
        return tg_error_set("%s: the optimizer has taken %ld steps but the checkpoint says %ld (%ld skipped)", path,
                            tg_optim_steps(o), *step - skipped, skipped);
    /* a run that had no scaler (f32, bf16) resumed in f16 starts with a fresh one */
    if (sc && tg_st_meta(st, "optim.grad_scaler.scale") && tg_grad_scaler_state_load(sc, st))
        return tg_error_set("%s: %s", path, tg_error());
    return 0;
}

int sq_load_weights(const char *path, const sq_config *c, tg_params *p)
{
    tg_safetensors *s;
    /* a file of another tool (PyTorch's) has no checksums; one of seqtask's must */
    if (read_file(path, c, TG_ST_VERIFY_AUTO, &s)) return -1;
    const char *fmt = tg_st_meta(s, "format");
    if (!c->no_verify && !tg_st_verified(s) && fmt && strcmp(fmt, SQ_FORMAT) == 0) {
        tg_error_set("%s: metadata \"format\" is \"%s\" (seqtask wrote the file), but it has no checksum table "
                     "'tapegrad.crc32': it is damaged or was edited; refused (seqtask: --no-verify loads it "
                     "unchecked)", path, fmt);
        tg_st_free(s);
        return -1;
    }
    int rc = tg_st_load_params(p, s, true, "optim.");
    const char *other = c->mode == SQ_MODE_FUSED ? "blocks.0.attn.heads.0.q_proj.weight"
                                                 : "blocks.0.attn.in_proj_weight";
    if (rc && tg_st_get(s, other)) {
        tg_mha_mode to = c->mode == SQ_MODE_FUSED ? TG_MHA_FUSED : TG_MHA_PER_HEAD;
        tg_safetensors *conv = tg_mha_convert(s, to, (int)c->heads, (int)c->kv_heads);
        rc = conv ? tg_st_load_params(p, conv, true, "optim.") : -1;
        tg_st_free(conv);
        if (rc == 0)
            fprintf(stderr, "note: %s holds %s attention weights: converted to --mode %s\n", path,
                    c->mode == SQ_MODE_FUSED ? "per-head" : "fused",
                    c->mode == SQ_MODE_FUSED ? "fused" : "per-head");
    }
    if (rc) tg_error_set("%s: %s", path, tg_error());
    tg_st_free(s);
    return rc;
}
