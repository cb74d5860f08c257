/* seqtask: the train command.
 *
 * One step: the batch of (seed, step) -> zero_grad -> for each micro-batch
 * of this rank's share: forward -> summed cross-entropy / the batch's target
 * tokens -> backward (grads add up) -> sum of the grads over the ranks ->
 * clip -> lr of the schedule at this step -> optimizer step. The loss is
 * the mean over every target token of the whole batch, however it is split
 * (--accum N micro-batches, P ranks under mpirun). Evaluations use the
 * decoder's own tape (recording off), so they change nothing the training
 * depends on; the only training state is the weights, the optimizer and the
 * dropout RNG, all in the checkpoint.
 *
 * Under mpirun every rank trains; rank 0 alone evaluates, logs and writes
 * files. Each step ends in collectives every rank takes part in, and they
 * carry any rank's failure, so all ranks stop at the same step (dist.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/ops/ops.h>
#include <tapegrad/dist/dist.h>
#include "amp.h"
#include "checkpoint.h"
#include "cli.h"
#include "commands.h"
#include "eval.h"
#include "outdir.h"
#include "progress.h"
#include "ranks.h"
#include "run.h"
#include "stop.h"

typedef struct trainer {
    sq_config *c;
    sq_run run;
    tg_params *p;
    tg_model m;
    bool have_model;
    tg_optim *opt;
    sq_amp amp;                  /* --precision: autocast's type; f16's loss scaler */
    tg_schedule sched;
    tg_rng drop;
    tg_tape *tape;
    sq_batch batch;
    sq_decoder dec;
    sq_log log;
    sq_progress prog;
    int rank, ranks;             /* this process of how many (1 without mpirun) */
    bool interrupted;            /* some rank got SIGINT or SIGUSR1: every rank stops after the same step */
    long step;                   /* updates done */
    double slowest;              /* seconds: the slowest step so far, rank 0's work after it included */
    bool timed_eval;             /* a step with an evaluation is in slowest */
    const char *ckpt;            /* rank 0: the last checkpoint on disk (--resume's or ours), NULL before */
    long ckpt_step;
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
    tg_optim_free(tr->opt);
    sq_amp_free(&tr->amp);
    if (tr->have_model) sq_model_destroy(tr->p, &tr->m);
    sq_run_free(&tr->run);
}

/* Resume: model, flags, optimizer state, step and dropout RNG from the
 * checkpoint. Fresh run: model from the seed (or --init). Returns an exit
 * status (0: go on). */
static int setup_model(trainer *tr)
{
    sq_config *c = tr->c;
    tg_safetensors *st = NULL;
    if (c->resume[0]) {
        if (sq_open(c->resume, c, true, &tr->p, &tr->m, &st)) return SQ_EXIT_USAGE;
        tr->have_model = true;
        tr->ckpt = c->resume;
        if (!sq_cli_was_set(c, "out")) sq_dirname(c->resume, c->out, sizeof c->out);
    }
    int status = sq_run_init(&tr->run, c) ? SQ_EXIT_USAGE : 0;
    if (!status && !st) {
        tg_rng init;
        tg_rng_seed(&init, (uint64_t)c->seed * 2 + 1);
        status = sq_model_build(c, &init, &tr->p, &tr->m) ? 1 : 0;
        tr->have_model = !status;
        if (!status && c->init[0] && sq_load_weights(c->init, c, tr->p))
            status = SQ_EXIT_USAGE;
    }
    tg_optim_opts oo = sq_optim_opts(c);
    if (!status && !(tr->opt = tg_optim_new(tr->p, &oo))) status = 1;
    if (!status && sq_amp_init(&tr->amp, c->precision)) status = 1;
    tg_rng_seed(&tr->drop, (uint64_t)c->seed * 2 + 2);
    if (!status && st && sq_resume_state(st, c->resume, tr->opt, tr->amp.scaler, &tr->step, &tr->drop))
        status = SQ_EXIT_USAGE;
    tr->ckpt_step = tr->step;
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
static int setup(trainer *tr)
{
    sq_config *c = tr->c;
    int status = setup_model(tr);
    if (status) return status;
    if (!c->out[0]) snprintf(c->out, sizeof c->out, "out/%s", c->data[0] ? "data" : sq_task_name(c->kind));
    if (c->batch < c->accum * tr->ranks) {
        tg_error_set("--batch %ld is less than --accum %ld x %d ranks: every micro-batch needs "
                     "an example", c->batch, c->accum, tr->ranks);
        return SQ_EXIT_USAGE;
    }
    const char *names[] = {"model.safetensors", "checkpoint.safetensors", "log.csv"};
    for (int i = 0; i < 3; i++) snprintf(tr->path[i], sizeof tr->path[i], "%s/%s", c->out, names[i]);
    if (c->schedule == SQ_SCHED_CONSTANT) tr->sched = tg_schedule_constant(c->lr, c->warmup);
    else if (c->schedule == SQ_SCHED_COSINE)
        tr->sched = tg_schedule_cosine(c->lr, c->lr / 10, c->warmup, c->steps);
    else tr->sched = tg_schedule_linear(c->lr, c->lr / 10, c->warmup, c->steps);
    if (tg_schedule_check(&tr->sched)) return SQ_EXIT_USAGE;
    tr->tape = tg_tape_new();
    if (!tr->tape) {
        tg_error_set("out of memory for the tape");
        return 1;
    }
    if (sq_batch_init(&tr->batch, (int)c->batch, sq_tmax((int)c->max_len) - 1) ||
        (tr->rank == 0 && sq_decoder_init(&tr->dec, &tr->m)))
        return 1;
    tr->acc = tr->tacc = -1;
    return 0;
}

/* tg_error() on stderr, naming the rank under mpirun. */
static void say_error(const trainer *tr)
{
    if (tr->ranks > 1) fprintf(stderr, "rank %d: seqtask train: %s\n", tr->rank, tg_error());
    else fprintf(stderr, "seqtask train: %s\n", tg_error());
}

/* Rank 0, once every rank agrees on the run: the output directory (a run
 * already there is refused unless --overwrite, sq_out_prepare) and the log.
 * Returns an exit status. */
static int open_out(trainer *tr)
{
    const sq_config *c = tr->c;
    if (tr->rank != 0) return 0;
    bool resumed_here = sq_out_is_resume_dir(c);
    int status = sq_out_prepare(c, resumed_here);
    /* a resumed run keeps the rows of its own log up to the checkpoint */
    if (!status && sq_log_open(&tr->log, tr->path[P_LOG], resumed_here ? tr->step : 0)) status = 1;
    if (status) say_error(tr);
    return status;
}

static void print_header(const trainer *tr, int threads)
{
    const sq_config *c = tr->c;
    size_t n = tg_params_numel(tr->p);
    if (c->kind == SQ_TASK_DATA)
        fprintf(stderr, "task     %s: %d lines, %ld symbols (held-out: %d examples)\n", c->data,
                tr->run.data->count, c->symbols, tr->run.eval->count);
    else
        fprintf(stderr, "task     %s, %ld symbols, lengths %ld-%ld (held-out: %d examples)\n",
                sq_task_name(c->kind), c->symbols, c->min_len, c->max_len, tr->run.eval->count);
    fprintf(stderr, "model    %ld layers, d_model %ld, %ld heads x %ld (%s), d_ff %ld: %zu parameters\n",
            c->layers, c->d_model, c->heads, c->d_head, c->mode ? "per-head" : "fused", c->d_ff, n);
    fprintf(stderr, "training %s lr %g (%s, warmup %ld), batch %ld, %ld steps, %s, %d threads -> %s\n",
            sq_cli_choice(c, "optimizer"), c->lr, sq_cli_choice(c, "schedule"), c->warmup, c->batch, c->steps,
            sq_cli_choice(c, "precision"), threads, c->out);
    if (c->accum > 1 || tr->ranks > 1)
        fprintf(stderr, "split    %d rank%s x %ld micro-batch%s of about %ld examples (%d threads each)\n",
                tr->ranks, tr->ranks > 1 ? "s" : "", c->accum, c->accum > 1 ? "es" : "",
                c->batch / (tr->ranks * c->accum), threads);
    if (tr->step > 0) fprintf(stderr, "resuming at step %ld of %s\n", tr->step, c->resume);
    if (c->kind == SQ_TASK_DATA && !c->eval_data[0])
        fprintf(stderr, "note: no --eval-data: evaluating on the first %d lines of the training file\n",
                tr->run.eval->count);
}

/* The micro-batches of this rank's share of the drawn batch: forward and
 * backward of each, grads adding up. *sums gets the summed cross-entropy,
 * the tokens read and 1 when this rank failed (the message in tg_error()). */
static void micro_batches(trainer *tr, long targets, double sums[3])
{
    const sq_config *c = tr->c;
    sq_batch *b = &tr->batch;
    int B = (int)c->batch, lo = (int)((long)B * tr->rank / tr->ranks), hi = (int)((long)B * (tr->rank + 1) / tr->ranks);
    tg_rng mine, *drop = &tr->drop;
    if (tr->ranks > 1 && c->dropout > 0) {
        /* every rank draws the same seed from the saved stream, then its own masks */
        uint64_t s = (uint64_t)tg_rng_u32(&tr->drop) << 32 | tg_rng_u32(&tr->drop);
        tg_rng_seed(&mine, s ^ (0x9e3779b97f4a7c15ull * (uint64_t)(tr->rank + 1)));
        drop = &mine;
    }
    for (long j = 0; j < c->accum; j++) {
        int first = lo + (int)((hi - lo) * j / c->accum), last = lo + (int)((hi - lo) * (j + 1) / c->accum);
        sq_batch_fill(b, b->ex + first, last - first);
        tg_tape_reset(tr->tape);
        tg_tensor *ids = tg_tensor_from_dtype(tr->tape, TG_I32, b->ids, 2, (int[]){b->B, b->T});
        tg_tensor *lens = tg_tensor_from_dtype(tr->tape, TG_I32, b->lens, 1, (int[]){b->B});
        tg_dtype cast = tg_autocast_begin(tr->tape, tr->amp.cast);
        tg_tensor *logits = tg_model_forward(tr->tape, &tr->m, ids, &(tg_model_opts){.lens = lens, .rng = drop}, NULL);
        tg_autocast_end(tr->tape, cast);
        tg_tensor *y = tg_tensor_from_dtype(tr->tape, TG_I32, b->targets, 2, (int[]){b->B, b->T});
        tg_tensor *sum = y ? tg_cross_entropy_sum(tr->tape, logits, y, TG_IGNORE) : NULL;
        /* 1/targets of the whole batch: each row's grad is the one of the whole batch's mean;
         * times the loss scale in f16 */
        tg_tensor *loss = sum ? tg_scale(tr->tape, sum, 1.0 / (double)targets) : NULL;
        loss = sq_amp_loss(&tr->amp, tr->tape, loss);
        if (!loss || tg_backward(tr->tape, loss) != 0) {
            tg_error_set("step %ld: %s", tr->step + 1, tg_tape_error(tr->tape));
            sums[2] = 1;
            return;
        }
        sums[0] += sum->data[0];
        for (int i = 0; i < b->B; i++) sums[1] += b->lens[i];
    }
}

/* One optimizer step; *loss and *gnorm receive the step's loss and the
 * gradient norm before clipping. 0, or -1 with a message (on every rank). */
static int train_step(trainer *tr, double *loss, double *gnorm, double *lr, long *tokens)
{
    const sq_config *c = tr->c;
    long targets = sq_batch_draw(&tr->batch, &tr->run.task, tr->step, (int)c->batch);
    tg_optim_zero_grad(tr->opt);
    double sums[4] = {0, 0, 0, sq_stop_requested() ? 1 : 0};  /* loss sum, tokens, failed ranks, interrupted */
    micro_batches(tr, targets, sums);
    bool failed_here = sums[2] > 0;
    if (tg_dist_sum(sums, 4)) tg_dist_abort(1, tg_error());
    if (sums[2] > 0) {
        /* the failed rank says why; rank 0 says that it stopped */
        if (failed_here) return -1;
        if (tr->rank == 0) tg_error_set("step %ld: stopping: another rank failed", tr->step + 1);
        else tg_error_clear();
        return -1;
    }
    tr->interrupted = sums[3] > 0;
    if (tg_dist_allreduce_grads(tr->p)) tg_dist_abort(1, tg_error());
    *loss = sums[0] / (double)targets;
    /* f16: the grads divided by the scale again, and looked at for Inf/NaN
     * (every rank has the same grads, so every rank finds the same) */
    if (sq_amp_unscale(&tr->amp, tr->opt)) {
        tg_error_set("step %ld: %s", tr->step + 1, tg_error());
        return -1;
    }
    *gnorm = c->clip > 0 ? tg_clip_grad_norm(tr->p, c->clip) : tg_grad_norm(tr->p);
    if (!sq_amp_finite(&tr->amp, *loss, *gnorm)) {
        tg_error_set("step %ld: the loss (%g) or the gradient norm (%g) is not finite; try a "
                     "lower --lr or --clip 1", tr->step + 1, *loss, *gnorm);
        return -1;
    }
    *lr = tg_lr_at(&tr->sched, tr->step);
    if (tg_optim_schedule_lr(tr->opt, &tr->sched, tr->step) || sq_amp_step(&tr->amp, tr->opt) < 0) {
        tg_error_set("step %ld: %s", tr->step + 1, tg_error());
        return -1;
    }
    *tokens = (long)sums[1];
    tr->step++;
    return 0;
}

static int evaluate(trainer *tr)
{
    sq_eval_result r;
    double t0 = sq_now();
    if (sq_evaluate(&tr->dec, tr->run.eval, NULL, &r, NULL, 0)) return -1;
    tr->acc = sq_exact_acc(&r);
    tr->tacc = sq_token_acc(&r);
    tr->prog.acc = tr->acc;
    sq_progress_note(&tr->prog, "eval step %ld: exact-sequence %.2f%%, token %.2f%% (%.1f s)", tr->step,
                     100 * tr->acc, 100 * tr->tacc, sq_now() - t0);
    return 0;
}

static int save_checkpoint(trainer *tr)
{
    unsigned long long h = tr->run.data ? tr->run.data->hash : 0;
    if (sq_save(tr->path[P_CKPT], tr->c, tr->p, tr->opt, tr->amp.scaler, &tr->drop, tr->step, tr->acc, h)) return -1;
    tr->ckpt = tr->path[P_CKPT];
    tr->ckpt_step = tr->step;
    return 0;
}

/* The deadline of the collectives to come (tg_dist_set_timeout): the
 * --collective-timeout given, else SQ_TIMEOUT_START until a step with an
 * evaluation has been timed (the other ranks wait for rank 0's), then
 * max(SQ_TIMEOUT_MIN, SQ_TIMEOUT_STEPS x the slowest step). The message of
 * a timeout says when, and on rank 0 which checkpoint it leaves intact
 * (checkpoints are written to a temporary file and renamed). */
static void set_timeout(const trainer *tr, const char *when)
{
    const sq_config *c = tr->c;
    if (tr->ranks == 1) return;
    double s = sq_cli_was_set(c, "collective-timeout") ? c->collective_timeout
             : !tr->timed_eval ? SQ_TIMEOUT_START
             : fmax(SQ_TIMEOUT_MIN, SQ_TIMEOUT_STEPS * tr->slowest);
    char why[SQ_PATH_MAX + 200];
    int n = snprintf(why, sizeof why, "%s (--collective-timeout %g s); ending the job", when, s);
    if (tr->rank == 0 && tr->ckpt)
        snprintf(why + n, sizeof why - (size_t)n, ": the last checkpoint %s (step %ld) is intact", tr->ckpt,
                 tr->ckpt_step);
    else if (tr->rank == 0)
        snprintf(why + n, sizeof why - (size_t)n, ": no checkpoint was written yet");
    tg_dist_set_timeout(s, why);  /* the flag's range is the function's */
}

/* Whether rank 0 evaluates after the step just done (every rank knows). */
static bool eval_due(const trainer *tr)
{
    return (tr->c->eval_every && tr->step % tr->c->eval_every == 0) || tr->step == tr->c->steps;
}

/* Rank 0's work after a step: evaluation, log, progress, checkpoint. 0 (go
 * on), 1 (stop: target reached) or -1 (failed, message in tg_error()). */
static int after_step(trainer *tr, double loss, double gnorm, double lr, long tokens, double ms)
{
    const sq_config *c = tr->c;
    bool eval = eval_due(tr);
    if (eval && evaluate(tr)) return -1;
    /* a row that cannot be written stops the run: the last checkpoint and the rows before it stay */
    if (sq_log_row(&tr->log, tr->step, loss, lr, gnorm, ms, eval ? tr->acc : NAN, eval ? tr->tacc : NAN))
        return -1;
    sq_progress_step(&tr->prog, tr->step, loss, lr, tokens);
    if (eval && c->target_acc > 0 && tr->acc >= c->target_acc) {
        sq_progress_note(&tr->prog, "reached the target accuracy %.2f%% at step %ld",
                         100 * c->target_acc, tr->step);
        return 1;
    }
    if (c->save_every && tr->step % c->save_every == 0 && tr->step < c->steps &&
        save_checkpoint(tr))
        return -1;
    return 0;
}

/* The loop; returns an exit status. */
static int train_loop(trainer *tr)
{
    const sq_config *c = tr->c;
    while (tr->step < c->steps && !tr->interrupted) {
        double t0 = sq_now(), loss, gnorm, lr;
        long tokens;
        char when[48];
        snprintf(when, sizeof when, "at step %ld", tr->step + 1);
        set_timeout(tr, when);
        if (train_step(tr, &loss, &gnorm, &lr, &tokens)) return 1;
        double ms = 1000 * (sq_now() - t0), next = 0;
        if (tr->rank == 0) next = after_step(tr, loss, gnorm, lr, tokens, ms);
        /* rank 0 tells the others whether to go on */
        if (tg_dist_bcast(&next, 1)) tg_dist_abort(1, tg_error());
        tr->slowest = fmax(tr->slowest, sq_now() - t0);
        tr->timed_eval |= eval_due(tr);
        if (next < 0) {
            if (tr->rank != 0) tg_error_clear();  /* rank 0 says why */
            return 1;
        }
        if (next > 0) break;
    }
    return 0;
}

/* attention.png: the first held-out example as the model decodes it. */
static int attention_png(trainer *tr, const char *png)
{
    const sq_example *e = &tr->run.eval->ex[0];
    int tmax = sq_tmax((int)tr->c->max_len), L = 0, n_out, rc = -1;
    int32_t *got = tg_malloc(2 * (size_t)tmax * sizeof *got), *seq = got + tmax;
    if (!got) {
        tg_error_set("out of memory");
    } else if (sq_generate(&tr->dec, e->src, e->n, got, &n_out) == 0) {
        seq[L++] = SQ_BOS;
        for (int i = 0; i < e->n; i++) seq[L++] = SQ_SYM0 + e->src[i];
        seq[L++] = SQ_SEP;
        for (int i = 0; i < n_out && L < tmax; i++) seq[L++] = got[i];
        if (L > e->n + 3 && seq[L - 1] == SQ_EOS) L--;  /* EOS predicts nothing */
        rc = sq_attention_png(&tr->m, seq, L, png);
    }
    tg_free(got);
    return rc;
}

/* The files of the end of a run (or of an interrupted one). The model and
 * checkpoint must be written and the log closed whole; a picture that cannot
 * be drawn is a warning. */
static int finish(trainer *tr)
{
    const sq_config *c = tr->c;
    unsigned long long h = tr->run.data ? tr->run.data->hash : 0;
    if (save_checkpoint(tr) ||
        sq_save(tr->path[P_MODEL], c, tr->p, NULL, NULL, NULL, tr->step, tr->acc, h))
        return -1;
    char png[SQ_PATH_MAX + 32], title[256];
    snprintf(png, sizeof png, "%s/loss.png", c->out);
    snprintf(title, sizeof title, "seqtask %.200s: training loss and held-out accuracy",
             c->data[0] ? c->data : sq_task_name(c->kind));
    if (tr->log.n > 0 && sq_log_plot(&tr->log, png, title))
        fprintf(stderr, "warning: no loss.png: %s\n", tg_error());
    snprintf(png, sizeof png, "%s/attention.png", c->out);
    if (attention_png(tr, png)) fprintf(stderr, "warning: no attention.png: %s\n", tg_error());
    return sq_log_close(&tr->log);
}

/* Every rank's status becomes the worst one; a rank that failed printed
 * its message, the others say which rank stopped them. */
static int agree(const trainer *tr, int status, const char *what)
{
    double v[2] = {status != 0, status != 0 ? status : 0};
    if (tg_dist_sum(v, 2)) tg_dist_abort(1, tg_error());
    if (v[0] > 0 && status == 0) {
        if (tr->rank == 0) fprintf(stderr, "seqtask train: %s failed on %.0f rank(s) (see above)\n", what, v[0]);
        return (int)v[1] / (int)v[0];
    }
    return status;
}

/* Ranks whose weights differ would each go on training their own model. */
static int check_ranks_agree(const trainer *tr)
{
    bool same;
    if (tg_dist_params_agree(tr->p, &same)) return -1;
    if (!same) {
        return tg_error_set("the ranks' weights differ at step %ld: the all-reduce did not give every "
                            "rank the same sum", tr->step);
    }
    return 0;
}

int sq_cmd_train(sq_config *c)
{
    trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.c = c;
    tr.rank = tg_dist_rank();
    tr.ranks = tg_dist_size();
    int threads = sq_set_threads(c->threads), status = setup(&tr);
    if (status) say_error(&tr);
    set_timeout(&tr, "during the setup");
    status = agree(&tr, status, "setup");
    sq_run_state rs = {.step = tr.step, .numel = status ? 0 : tg_params_numel(tr.p), .opt = tr.opt,
                       .drop = &tr.drop, .data_hash = tr.run.data ? tr.run.data->hash : 0};
    if (!status) status = agree(&tr, sq_ranks_agree(c, &rs), "the check of the configuration");
    /* ranks that built the same model from the same seed already agree;
     * the broadcast also covers an --init file that differs between hosts */
    if (!status && tg_dist_bcast_params(tr.p)) tg_dist_abort(1, tg_error());
    if (!status) status = agree(&tr, open_out(&tr), "opening --out");
    if (status) {
        trainer_free(&tr);
        return status;
    }
    if (tr.rank == 0) print_header(&tr, threads);
    double t0 = sq_now();
    sq_progress_init(&tr.prog, tr.step + 1, c->steps, c->log_every);
    status = train_loop(&tr);
    if (tr.rank == 0) sq_progress_end(&tr.prog);
    double secs = sq_now() - t0;
    if (status == 0 && check_ranks_agree(&tr)) status = 1;
    /* a resumed run that had nothing left to do still reports its accuracy */
    if (status == 0 && tr.rank == 0 && !tr.interrupted && tr.acc < 0 && evaluate(&tr)) status = 1;
    if (status == 0 && tr.rank == 0 && finish(&tr)) status = 1;
    double end = status;
    if (tg_dist_bcast(&end, 1)) tg_dist_abort(1, tg_error());
    if (status) {
        if (tg_error()) fprintf(stderr, "seqtask train: %s\n", tg_error());
    } else if (end) {
        status = (int)end;  /* rank 0 could not write its files and said so */
    } else if (tr.rank != 0) {
        /* rank 0 reports */
    } else if (tr.interrupted) {
        fprintf(stderr, "interrupted at step %ld: saved %s (continue with --resume %s)\n", tr.step,
                tr.path[P_CKPT], tr.path[P_CKPT]);
        status = 130;
    } else {
        printf("step %ld, %.1f s: held-out exact-sequence accuracy %.2f%%, token accuracy %.2f%%\n",
               tr.step, secs, 100 * tr.acc, 100 * tr.tacc);
        sq_amp_report(stdout, sq_amp_scale(&tr.amp), tr.amp.skipped);
        printf("model      %s\ncheckpoint %s\nlog        %s\nloss       %s/loss.png\nattention  %s/attention.png\n",
               tr.path[P_MODEL], tr.path[P_CKPT], tr.path[P_LOG], c->out, c->out);
    }
    trainer_free(&tr);
    return status;
}
