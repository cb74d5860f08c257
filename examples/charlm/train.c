/* charlm: the train command and the model files.
 *
 * One step: the batch of (seed, step) -> forward (products in --precision)
 * -> mean cross-entropy over its B * T next bytes -> backward -> clip -> the
 * schedule's lr -> AdamW; f16 scales the loss, unscales the gradients before
 * the clip and skips a step whose gradients are not finite (amp.h).
 * The batch is a function of (seed, step), so the only training state is
 * the weights and the optimizer's, both in the checkpoint, and a resumed
 * run repeats the uninterrupted one bit for bit.
 *
 *   model.safetensors       the weights (state_dict names) and, in
 *                           __metadata__, every model, data and training
 *                           flag ("d_model", "context", "lr", ...), "format"
 *                           = "charlm-1", "step", "data_hash" and the last
 *                           held-out loss ("val_loss", nats per byte).
 *   checkpoint.safetensors  the same plus the optimizer's state,
 *                           "rng_dropout" (unused: no dropout; kept so
 *                           seqtask's sq_resume_state reads it) and, in f16,
 *                           the loss scaler's ("optim.grad_scaler.scale",
 *                           "optim.grad_scaler.growth_tracker") and
 *                           "skipped_steps", as seqtask's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/ops/ops.h>
#include <tapegrad/optim/optim.h>
#include "../seqtask/amp.h"
#include "../seqtask/checkpoint.h"
#include "../seqtask/cli.h"
#include "../seqtask/outdir.h"
#include "../seqtask/progress.h"
#include "../seqtask/run.h"
#include "../seqtask/stop.h"
#include "charlm.h"

#define LN2 0.69314718055994530942

int cl_model_build(const cl_config *c, tg_rng *rng, tg_params **p, tg_model *m)
{
    tg_model_config mc = cl_model_config(c);
    if (!(*p = tg_params_new())) return tg_error_set("out of memory for the parameter store");
    if (tg_model_init(m, *p, &mc, rng) == 0) return 0;
    tg_params_free(*p);
    *p = NULL;
    return -1;
}

static int meta_num(tg_safetensors *s, const char *key, const char *fmt, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    return tg_st_set_meta(s, key, buf);
}

/* o, sc and rng NULL: model.safetensors. */
static int cl_save(const char *path, const cl_config *c, const tg_params *p, const tg_optim *o,
                   const tg_grad_scaler *sc, const tg_rng *rng, long step, double val_loss,
                   unsigned long long data_hash)
{
    tg_safetensors *s = tg_st_new();
    int rc = -1;
    if (!s || tg_st_add_params(s, p) || (o && tg_optim_state_save(o, s)) || sq_scaler_state_save(s, sc, o, step) ||
        tg_st_set_meta(s, "format", CL_FORMAT) ||
        cl_config_to_meta(c, s) || meta_num(s, "step", "%.0f", (double)step) ||
        tg_st_set_meta(s, "tg_real", TG_REAL_NAME) || (val_loss >= 0 && meta_num(s, "val_loss", "%.6f", val_loss)))
        goto done;
    rc = sq_save_finish(s, path, rng, data_hash);
done:
    if (rc) tg_error_set("%s: cannot save: %s", path, tg_error());
    tg_st_free(s);
    return rc;
}

int cl_open(const char *path, cl_config *c, tg_params **p, tg_model *m, tg_safetensors **st)
{
    tg_safetensors *s;
    *p = NULL;
    if (tg_st_load(path, &s)) return -1;
    const char *fmt = tg_st_meta(s, "format");
    if (!fmt || strcmp(fmt, CL_FORMAT) != 0) {
        tg_error_set("%s: not a charlm model (metadata \"format\" is %s, expected \"%s\")", path,
                     fmt ? fmt : "missing", CL_FORMAT);
    } else if (cl_config_from_meta(c, s, path) == 0 && cl_model_build(c, NULL, p, m) == 0) {
        if (tg_st_load_params(*p, s, true, "optim.") == 0) {
            if (st) *st = s;
            else tg_st_free(s);
            return 0;
        }
        tg_error_set("%s: %s", path, tg_error());
        tg_model_free(m);
        tg_params_free(*p);
        *p = NULL;
    }
    tg_st_free(s);
    return -1;
}

typedef struct trainer {
    cl_config *c;
    cl_corpus k;
    tg_params *p;
    tg_model m;
    tg_optim *opt;
    sq_amp amp;                  /* --precision: autocast's type; f16's loss scaler */
    tg_schedule sched;
    tg_rng rng;                  /* saved as rng_dropout; charlm has no dropout */
    tg_tape *tape;
    int32_t *ids, *targets;
    sq_log log;
    sq_progress prog;
    long step;
    double val;                  /* last held-out loss, -1 before the first */
    char path[3][CL_PATH_MAX + 32];
} trainer;

enum { P_MODEL, P_CKPT, P_LOG };

static const char log_header[] = "step,loss,lr,grad_norm,ms,val_loss,val_bpb\n";

static void trainer_free(trainer *tr)
{
    sq_log_close(&tr->log);
    tg_free(tr->ids);
    tg_tape_free(tr->tape);
    tg_optim_free(tr->opt);
    sq_amp_free(&tr->amp);
    if (tr->p) {
        tg_model_free(&tr->m);
        tg_params_free(tr->p);
    }
    cl_corpus_free(&tr->k);
}

/* seqtask's --out rules (outdir.c) on charlm's directory. */
static int prepare_out(const cl_config *c)
{
    static sq_config sq;
    memset(&sq, 0, sizeof sq);
    snprintf(sq.out, sizeof sq.out, "%s", c->out);
    snprintf(sq.resume, sizeof sq.resume, "%s", c->resume);
    sq.overwrite = c->overwrite;
    bool here = sq_out_is_resume_dir(&sq);
    int status = sq_out_prepare(&sq, here);
    return status ? status : here ? -1 : 0;  /* -1: resumed in place */
}

/* The model (fresh from the seed, or the checkpoint's), the corpus, the
 * optimizer, the buffers, --out and the log. Returns an exit status. */
static int setup(trainer *tr)
{
    cl_config *c = tr->c;
    tg_safetensors *st = NULL;
    if (c->resume[0]) {
        if (cl_open(c->resume, c, &tr->p, &tr->m, &st)) return SQ_EXIT_USAGE;
        if (!cl_cli_was_set(c, "out")) sq_dirname(c->resume, c->out, sizeof c->out);
    }
    if (cl_corpus_load(&tr->k, c->data, (int)c->context)) {
        tg_st_free(st);
        return SQ_EXIT_USAGE;
    }
    tg_rng_seed(&tr->rng, (uint64_t)c->seed * 2 + 2);
    if (!st) {
        tg_rng init;
        tg_rng_seed(&init, (uint64_t)c->seed * 2 + 1);
        if (cl_model_build(c, &init, &tr->p, &tr->m)) return 1;
    }
    tg_optim_opts oo = tg_optim_defaults(TG_ADAMW);
    oo.lr = c->lr;
    oo.weight_decay = c->weight_decay;
    oo.beta2 = 0.95;
    oo.no_decay_1d = true;
    int status = 0;
    if (!(tr->opt = tg_optim_new(tr->p, &oo)) || sq_amp_init(&tr->amp, c->precision)) status = 1;
    if (!status && st && sq_resume_state(st, c->resume, tr->opt, tr->amp.scaler, &tr->step, &tr->rng))
        status = SQ_EXIT_USAGE;
    if (!status && st) {
        char hash[32];
        snprintf(hash, sizeof hash, "%016llx", tr->k.hash);
        const char *h = tg_st_meta(st, "data_hash");
        if (!h || strcmp(h, hash) != 0)
            fprintf(stderr, "note: %s differs from the text the checkpoint was trained on\n", tr->k.name);
    }
    tg_st_free(st);
    if (status) return status;
    tr->sched = tg_schedule_cosine(c->lr, c->lr / 10, c->warmup, c->steps);
    if (c->steps && tg_schedule_check(&tr->sched)) return SQ_EXIT_USAGE;
    size_t n = (size_t)c->batch * (size_t)c->context;
    tr->ids = tg_malloc(2 * n * sizeof *tr->ids);
    tr->targets = tr->ids + n;
    if (!(tr->tape = tg_tape_new()) || !tr->ids) return tg_error_set("out of memory"), 1;
    const char *names[] = {"model.safetensors", "checkpoint.safetensors", "log.csv"};
    for (int i = 0; i < 3; i++) snprintf(tr->path[i], sizeof tr->path[i], "%s/%s", c->out, names[i]);
    int here = prepare_out(c);
    if (here > 0) return here;
    if (sq_log_open_as(&tr->log, tr->path[P_LOG], here < 0 ? tr->step : 0, log_header)) return 1;
    tr->val = -1;
    return 0;
}

/* One optimizer step: *loss the batch's mean cross-entropy, *gnorm the
 * gradient norm before clipping. 0, or -1 with a message. */
static int train_step(trainer *tr, double *loss, double *gnorm, double *lr)
{
    const cl_config *c = tr->c;
    int B = (int)c->batch, T = (int)c->context;
    cl_corpus_batch(&tr->k, (uint64_t)c->seed, tr->step, B, T, tr->ids, tr->targets);
    tg_optim_zero_grad(tr->opt);
    tg_tape_reset(tr->tape);
    tg_tensor *x = tg_tensor_from_dtype(tr->tape, TG_I32, tr->ids, 2, (int[]){B, T});
    tg_dtype cast = tg_autocast_begin(tr->tape, tr->amp.cast);
    tg_tensor *logits = tg_model_forward(tr->tape, &tr->m, x, NULL, NULL);
    tg_autocast_end(tr->tape, cast);
    tg_tensor *y = tg_tensor_from_dtype(tr->tape, TG_I32, tr->targets, 2, (int[]){B, T});
    tg_tensor *l = logits && y ? tg_cross_entropy(tr->tape, logits, y, TG_IGNORE) : NULL;
    tg_tensor *scaled = sq_amp_loss(&tr->amp, tr->tape, l);
    if (!scaled || tg_backward(tr->tape, scaled) != 0)
        return tg_error_set("step %ld: %s", tr->step + 1, tg_tape_error(tr->tape));
    *loss = l->data[0];
    if (sq_amp_unscale(&tr->amp, tr->opt)) return tg_error_set("step %ld: %s", tr->step + 1, tg_error());
    *gnorm = c->clip > 0 ? tg_clip_grad_norm(tr->p, c->clip) : tg_grad_norm(tr->p);
    if (!sq_amp_finite(&tr->amp, *loss, *gnorm))
        return tg_error_set("step %ld: the loss (%g) or the gradient norm (%g) is not finite; try a lower --lr",
                            tr->step + 1, *loss, *gnorm);
    *lr = tg_lr_at(&tr->sched, tr->step);
    if (tg_optim_schedule_lr(tr->opt, &tr->sched, tr->step) || sq_amp_step(&tr->amp, tr->opt) < 0)
        return tg_error_set("step %ld: %s", tr->step + 1, tg_error());
    tr->step++;
    return 0;
}

static int evaluate(trainer *tr)
{
    double t0 = sq_now();
    if (cl_eval_loss(&tr->m, &tr->k, (int)tr->c->batch, (int)tr->c->context, &tr->val)) return -1;
    sq_progress_note(&tr->prog, "eval step %ld: held-out loss %.4f nats/byte, %.4f bits/byte (%.1f s)", tr->step,
                     tr->val, tr->val / LN2, sq_now() - t0);
    return 0;
}

static int save_checkpoint(trainer *tr)
{
    return cl_save(tr->path[P_CKPT], tr->c, tr->p, tr->opt, tr->amp.scaler, &tr->rng, tr->step, tr->val,
                   tr->k.hash);
}

/* 0: done; 1: stopped (a signal, or stop_after); -1: failed. */
static int train_loop(trainer *tr, long stop_after)
{
    const cl_config *c = tr->c;
    while (tr->step < c->steps) {
        if (tr->step >= stop_after) return 1;
        double t0 = sq_now(), loss = 0, gnorm = 0, lr = 0;
        if (train_step(tr, &loss, &gnorm, &lr)) return -1;
        double ms = 1000 * (sq_now() - t0);
        bool eval = (c->eval_every && tr->step % c->eval_every == 0) || tr->step == c->steps;
        if (eval && evaluate(tr)) return -1;
        if (sq_log_row(&tr->log, tr->step, loss, lr, gnorm, ms, eval ? tr->val : NAN, eval ? tr->val / LN2 : NAN))
            return -1;
        sq_progress_step(&tr->prog, tr->step, loss, lr, c->batch * c->context);
        if (sq_stop_requested()) return 1;
        if (c->save_every && tr->step % c->save_every == 0 && tr->step < c->steps && save_checkpoint(tr)) return -1;
    }
    return 0;
}

/* The model, the checkpoint, loss.png and the heatmap of a sample. */
static int finish(trainer *tr)
{
    const cl_config *c = tr->c;
    if (save_checkpoint(tr) || cl_save(tr->path[P_MODEL], c, tr->p, NULL, NULL, NULL, tr->step, tr->val, tr->k.hash))
        return -1;
    char png[CL_PATH_MAX + 32], title[256];
    snprintf(png, sizeof png, "%s/loss.png", c->out);
    snprintf(title, sizeof title, "charlm: %.200s", tr->k.name);
    static const char *const eval[2] = {"held-out loss (nats/byte)", "held-out bits per byte"};
    if (tr->log.n > 0 && sq_log_plot_as(&tr->log, png, title, eval, (const bool[2]){false, false}))
        fprintf(stderr, "warning: no loss.png: %s\n", tg_error());
    return sq_log_close(&tr->log);
}

int cl_cmd_train(cl_config *c) { return cl_train(c, c->steps); }

int cl_train(cl_config *c, long stop_after)
{
    trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.c = c;
    int threads = sq_set_threads(c->threads), status = setup(&tr);
    if (status) {
        fprintf(stderr, "charlm train: %s\n", tg_error());
        trainer_free(&tr);
        return status;
    }
    fprintf(stderr, "data     %s: %zu bytes (held out: the last %zu)\n", tr.k.name, tr.k.n, tr.k.n - tr.k.n_train);
    fprintf(stderr, "model    %s, %ld layers, d_model %ld, %ld heads (%d key/value), context %ld: %zu parameters\n",
            c->arch == CL_ARCH_GPT2 ? "gpt2" : "llama", c->layers, c->d_model, c->heads, tr.m.cfg.n_kv_heads,
            c->context, tg_params_numel(tr.p));
    fprintf(stderr,
            "training AdamW lr %g (warmup %ld, cosine), batch %ld x %ld bytes, %ld steps, %s products, %d threads "
            "-> %s\n",
            c->lr, c->warmup, c->batch, c->context, c->steps, tg_dtype_name(tr.amp.cast), threads, c->out);
    if (tr.step > 0) fprintf(stderr, "resuming at step %ld of %s\n", tr.step, c->resume);
    double t0 = sq_now();
    sq_progress_init(&tr.prog, tr.step + 1, c->steps, c->log_every);
    int loop = train_loop(&tr, stop_after);
    sq_progress_end(&tr.prog);
    if (loop >= 0 && tr.val < 0 && evaluate(&tr)) loop = -1;
    if (loop < 0 || finish(&tr)) {
        fprintf(stderr, "charlm train: %s\n", tg_error());
        status = 1;
    } else if (loop > 0) {
        fprintf(stderr, "%s at step %ld: saved %s (continue with --resume %s)\n",
                sq_stop_requested() ? "interrupted" : "stopped", tr.step, tr.path[P_CKPT], tr.path[P_CKPT]);
        status = sq_stop_requested() ? 130 : 0;
    } else {
        printf("step %ld, %.1f s: held-out loss %.4f nats/byte, %.4f bits/byte (uniform: 8)\n", tr.step,
               sq_now() - t0, tr.val, tr.val / LN2);
        sq_amp_report(stdout, sq_amp_scale(&tr.amp), tr.amp.skipped);
        printf("model      %s\ncheckpoint %s\nlog        %s\n", tr.path[P_MODEL], tr.path[P_CKPT], tr.path[P_LOG]);
        if (tr.log.n > 0) printf("loss       %s/loss.png\n", c->out);
    }
    trainer_free(&tr);
    return status;
}
