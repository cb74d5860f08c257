/* seqtask: the train command.
 *
 * One step: the batch of (seed, step) -> forward -> cross-entropy ->
 * zero_grad -> backward -> clip -> lr of the schedule at this step ->
 * optimizer step. Evaluations use the decoder's own tape (recording off), so
 * they change nothing the training depends on; the only training state is
 * the weights, the optimizer and the dropout RNG, all in the checkpoint.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/ops/ops.h>
#include "checkpoint.h"
#include "cli.h"
#include "commands.h"
#include "eval.h"
#include "progress.h"
#include "run.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct trainer {
    sq_config *c;
    sq_run run;
    tg_params *p;
    tg_model m;
    bool have_model;
    sq_opt opt;
    tg_schedule sched;
    tg_rng drop;
    tg_tape *tape;
    sq_batch batch;
    sq_decoder dec;
    sq_log log;
    sq_progress prog;
    long step;                   /* updates done */
    double acc, tacc;            /* last evaluation, -1 before the first */
    char path[3][SQ_PATH_MAX + 32];  /* model, checkpoint, log */
} trainer;

enum { P_MODEL, P_CKPT, P_LOG };

static void trainer_free(trainer *tr)
{
    sq_log_close(&tr->log);
    if (tr->dec.tape) sq_decoder_free(&tr->dec);
    sq_batch_free(&tr->batch);
    tg_tape_free(tr->tape);
    sq_opt_free(&tr->opt);
    if (tr->have_model) sq_model_destroy(tr->p, &tr->m);
    sq_run_free(&tr->run);
}

/* Resume: model, flags, optimizer state, step and dropout RNG from the
 * checkpoint. Fresh run: model from the seed (or --init). Returns an exit
 * status (0: go on). */
static int setup_model(trainer *tr, char *err, size_t errlen)
{
    sq_config *c = tr->c;
    tg_safetensors *st = NULL;
    if (c->resume[0]) {
        if (sq_open(c->resume, c, true, &tr->p, &tr->m, &st, err, errlen)) return SQ_EXIT_USAGE;
        tr->have_model = true;
        if (!sq_cli_was_set(c, "out")) sq_dirname(c->resume, c->out, sizeof c->out);
    }
    int status = sq_run_init(&tr->run, c, err, errlen) ? SQ_EXIT_USAGE : 0;
    if (!status && !st) {
        tg_rng init;
        tg_rng_seed(&init, (uint64_t)c->seed * 2 + 1);
        status = sq_model_build(c, &init, &tr->p, &tr->m, err, errlen) ? 1 : 0;
        tr->have_model = !status;
        if (!status && c->init[0] && sq_load_weights(c->init, c, tr->p, err, errlen))
            status = SQ_EXIT_USAGE;
    }
    if (!status && sq_opt_new(&tr->opt, tr->p, c, err, errlen)) status = 1;
    tg_rng_seed(&tr->drop, (uint64_t)c->seed * 2 + 2);
    if (!status && st && sq_resume_state(st, c->resume, &tr->opt, &tr->step, &tr->drop, err, errlen))
        status = SQ_EXIT_USAGE;
    if (!status && st && tr->run.data) {
        char hash[32];
        snprintf(hash, sizeof hash, "%016llx", (unsigned long long)tr->run.data->hash);
        const char *h = tg_st_meta(st, "data_hash");
        if (!h || strcmp(h, hash) != 0)
            fprintf(stderr, "note: %s differs from the file the checkpoint was trained on: the "
                    "resumed run will not repeat the original bit for bit\n", c->data);
    }
    tg_st_free(st);
    return status;
}

/* The model, then the output directory, the schedule, the buffers and the
 * log. Returns an exit status. */
static int setup(trainer *tr, char *err, size_t errlen)
{
    sq_config *c = tr->c;
    int status = setup_model(tr, err, errlen);
    if (status) return status;
    if (!c->out[0]) snprintf(c->out, sizeof c->out, "out/%s", c->data[0] ? "data" : sq_task_name(c->kind));
    if (sq_mkdirs(c->out, err, errlen)) return SQ_EXIT_USAGE;
    sq_remove_stale_temps(c->out);
    const char *names[] = {"model.safetensors", "checkpoint.safetensors", "log.csv"};
    for (int i = 0; i < 3; i++) snprintf(tr->path[i], sizeof tr->path[i], "%s/%s", c->out, names[i]);
    if (c->schedule == SQ_SCHED_CONSTANT) tr->sched = tg_schedule_constant(c->lr, c->warmup);
    else if (c->schedule == SQ_SCHED_COSINE)
        tr->sched = tg_schedule_cosine(c->lr, c->lr / 10, c->warmup, c->steps);
    else tr->sched = tg_schedule_linear(c->lr, c->lr / 10, c->warmup, c->steps);
    if (tg_schedule_check(&tr->sched, err, errlen)) return SQ_EXIT_USAGE;
    tr->tape = tg_tape_new();
    if (!tr->tape || sq_batch_init(&tr->batch, (int)c->batch, sq_tmax((int)c->max_len) - 1) ||
        sq_decoder_init(&tr->dec, &tr->m, err, errlen)) {
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    /* a resumed run keeps the rows of its own log up to the checkpoint */
    char dir[SQ_PATH_MAX];
    struct stat a, b;
    sq_dirname(c->resume, dir, sizeof dir);
    bool same = c->resume[0] && stat(dir, &a) == 0 && stat(c->out, &b) == 0 && a.st_dev == b.st_dev &&
                a.st_ino == b.st_ino;
    if (sq_log_open(&tr->log, tr->path[P_LOG], same ? tr->step : 0, err, errlen)) return 1;
    tr->acc = tr->tacc = -1;
    return 0;
}

static void print_header(const trainer *tr, int threads)
{
    const sq_config *c = tr->c;
    static const char *const opt[] = {"adam", "adamw", "sgd"}, *const sch[] = {"constant", "cosine", "linear"};
    size_t n = tg_params_numel(tr->p);
    if (c->kind == SQ_TASK_DATA)
        fprintf(stderr, "task     %s: %d lines, %ld symbols (held-out: %d examples)\n", c->data,
                tr->run.data->count, c->symbols, tr->run.eval->count);
    else
        fprintf(stderr, "task     %s, %ld symbols, lengths %ld-%ld (held-out: %d examples)\n",
                sq_task_name(c->kind), c->symbols, c->min_len, c->max_len, tr->run.eval->count);
    fprintf(stderr, "model    %ld layers, d_model %ld, %ld heads x %ld (%s), d_ff %ld: %zu parameters\n",
            c->layers, c->d_model, c->heads, c->d_head, c->mode ? "per-head" : "fused", c->d_ff, n);
    fprintf(stderr, "training %s lr %g (%s, warmup %ld), batch %ld, %ld steps, %d threads -> %s\n",
            opt[c->optimizer], c->lr, sch[c->schedule], c->warmup, c->batch, c->steps, threads, c->out);
    if (tr->step > 0) fprintf(stderr, "resuming at step %ld of %s\n", tr->step, c->resume);
    if (c->kind == SQ_TASK_DATA && !c->eval_data[0])
        fprintf(stderr, "note: no --eval-data: evaluating on the first %d lines of the training file\n",
                tr->run.eval->count);
}

/* One optimizer step; *loss and *gnorm receive the step's loss and the
 * gradient norm before clipping. 0, or -1 with a message. */
static int train_step(trainer *tr, double *loss, double *gnorm, double *lr, long *tokens, char *err,
                      size_t errlen)
{
    const sq_config *c = tr->c;
    sq_batch *b = &tr->batch;
    sq_batch_train(b, &tr->run.task, tr->step, (int)c->batch);
    tg_tape_reset(tr->tape);
    tg_tensor *logits = tg_model_forward(tr->tape, &tr->m, b->ids, b->B, b->T, b->lens, NULL, &tr->drop, NULL);
    tg_tensor *l = tg_cross_entropy(tr->tape, logits, b->targets, TG_IGNORE);
    tg_params_zero_grad(tr->p);
    if (!l || tg_backward(tr->tape, l) != 0) {
        snprintf(err, errlen, "step %ld: %s", tr->step + 1, tg_tape_error(tr->tape));
        return -1;
    }
    *loss = l->data[0];
    *gnorm = c->clip > 0 ? tg_clip_grad_norm(tr->p, c->clip) : tg_grad_norm(tr->p);
    if (!isfinite(*loss) || !isfinite(*gnorm)) {
        snprintf(err, errlen, "step %ld: the loss (%g) or the gradient norm (%g) is not finite; try a "
                 "lower --lr or --clip 1", tr->step + 1, *loss, *gnorm);
        return -1;
    }
    *lr = tg_lr_at(&tr->sched, tr->step);
    if (sq_opt_step(&tr->opt, *lr) != 0) {
        snprintf(err, errlen, "step %ld: the optimizer refused the step", tr->step + 1);
        return -1;
    }
    *tokens = 0;
    for (int i = 0; i < b->B; i++) *tokens += b->lens[i];
    tr->step++;
    return 0;
}

static int evaluate(trainer *tr, char *err, size_t errlen)
{
    sq_eval_result r;
    double t0 = sq_now();
    if (sq_evaluate(&tr->dec, tr->run.eval, NULL, &r, NULL, 0, err, errlen)) return -1;
    tr->acc = sq_exact_acc(&r);
    tr->tacc = sq_token_acc(&r);
    tr->prog.acc = tr->acc;
    sq_progress_note(&tr->prog, "eval step %ld: exact-sequence %.2f%%, token %.2f%% (%.1f s)", tr->step,
                     100 * tr->acc, 100 * tr->tacc, sq_now() - t0);
    return 0;
}

static int save_checkpoint(trainer *tr, char *err, size_t errlen)
{
    unsigned long long h = tr->run.data ? tr->run.data->hash : 0;
    return sq_save(tr->path[P_CKPT], tr->c, tr->p, &tr->opt, &tr->drop, tr->step, tr->acc, h, err, errlen);
}

/* The loop; returns an exit status. */
static int train_loop(trainer *tr, char *err, size_t errlen)
{
    const sq_config *c = tr->c;
    while (tr->step < c->steps && !interrupted) {
        double t0 = sq_now(), loss, gnorm, lr;
        long tokens;
        if (train_step(tr, &loss, &gnorm, &lr, &tokens, err, errlen)) return 1;
        double ms = 1000 * (sq_now() - t0);
        bool eval = (c->eval_every && tr->step % c->eval_every == 0) || tr->step == c->steps;
        if (eval && evaluate(tr, err, errlen)) return 1;
        sq_log_row(&tr->log, tr->step, loss, lr, gnorm, ms, eval ? tr->acc : NAN, eval ? tr->tacc : NAN);
        sq_progress_step(&tr->prog, tr->step, loss, lr, tokens);
        if (eval && c->target_acc > 0 && tr->acc >= c->target_acc) {
            sq_progress_note(&tr->prog, "reached the target accuracy %.2f%% at step %ld",
                             100 * c->target_acc, tr->step);
            break;
        }
        if (c->save_every && tr->step % c->save_every == 0 && tr->step < c->steps &&
            save_checkpoint(tr, err, errlen))
            return 1;
    }
    return 0;
}

/* attention.png: the first held-out example as the model decodes it. */
static int attention_png(trainer *tr, const char *png, char *err, size_t errlen)
{
    const sq_example *e = &tr->run.eval->ex[0];
    int tmax = sq_tmax((int)tr->c->max_len), L = 0, n_out, rc = -1;
    int32_t *got = tg_malloc(2 * (size_t)tmax * sizeof *got), *seq = got + tmax;
    if (!got) {
        snprintf(err, errlen, "out of memory");
    } else if (sq_generate(&tr->dec, e->src, e->n, got, &n_out, err, errlen) == 0) {
        seq[L++] = SQ_BOS;
        for (int i = 0; i < e->n; i++) seq[L++] = SQ_SYM0 + e->src[i];
        seq[L++] = SQ_SEP;
        for (int i = 0; i < n_out && L < tmax; i++) seq[L++] = got[i];
        if (L > e->n + 3 && seq[L - 1] == SQ_EOS) L--;  /* EOS predicts nothing */
        rc = sq_attention_png(&tr->m, seq, L, png, err, errlen);
    }
    tg_free(got);
    return rc;
}

/* The files of the end of a run (or of an interrupted one). The model and
 * checkpoint must be written; a picture that cannot be drawn is a warning. */
static int finish(trainer *tr, char *err, size_t errlen)
{
    const sq_config *c = tr->c;
    unsigned long long h = tr->run.data ? tr->run.data->hash : 0;
    if (save_checkpoint(tr, err, errlen) ||
        sq_save(tr->path[P_MODEL], c, tr->p, NULL, NULL, tr->step, tr->acc, h, err, errlen))
        return -1;
    char png[SQ_PATH_MAX + 32], title[256], why[1024];
    snprintf(png, sizeof png, "%s/loss.png", c->out);
    snprintf(title, sizeof title, "seqtask %.200s: training loss and held-out accuracy",
             c->data[0] ? c->data : sq_task_name(c->kind));
    if (tr->log.n > 0 && sq_log_plot(&tr->log, png, title, why, sizeof why))
        fprintf(stderr, "warning: no loss.png: %s\n", why);
    snprintf(png, sizeof png, "%s/attention.png", c->out);
    if (attention_png(tr, png, why, sizeof why)) fprintf(stderr, "warning: no attention.png: %s\n", why);
    return 0;
}

int sq_cmd_train(sq_config *c)
{
    char err[1024];
    trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.c = c;
    int threads = sq_set_threads(c->threads), status = setup(&tr, err, sizeof err);
    if (status) {
        fprintf(stderr, "seqtask train: %s\n", err);
        trainer_free(&tr);
        return status;
    }
    print_header(&tr, threads);
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    double t0 = sq_now();
    sq_progress_init(&tr.prog, tr.step + 1, c->steps, c->log_every);
    status = train_loop(&tr, err, sizeof err);
    sq_progress_end(&tr.prog);
    double secs = sq_now() - t0;
    /* a resumed run that had nothing left to do still reports its accuracy */
    if (status == 0 && !interrupted && tr.acc < 0 && evaluate(&tr, err, sizeof err)) status = 1;
    if (status == 0 && finish(&tr, err, sizeof err)) status = 1;
    if (status) {
        fprintf(stderr, "seqtask train: %s\n", err);
    } else if (interrupted) {
        fprintf(stderr, "interrupted at step %ld: saved %s (continue with --resume %s)\n", tr.step,
                tr.path[P_CKPT], tr.path[P_CKPT]);
        status = 130;
    } else {
        printf("step %ld, %.1f s: held-out exact-sequence accuracy %.2f%%, token accuracy %.2f%%\n",
               tr.step, secs, 100 * tr.acc, 100 * tr.tacc);
        printf("model      %s\ncheckpoint %s\nlog        %s\nloss       %s/loss.png\nattention  %s/attention.png\n",
               tr.path[P_MODEL], tr.path[P_CKPT], tr.path[P_LOG], c->out, c->out);
    }
    trainer_free(&tr);
    return status;
}
