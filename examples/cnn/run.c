/* cnn: a training run.
 *
 * One step: B images of the epoch's shuffled order -> forward (products in
 * --precision) -> mean cross-entropy -> backward -> Adam, its rate on a
 * cosine from --lr to 0 over the run; f16 scales the loss, unscales the
 * gradients and skips a step whose gradients are not finite (amp.h). After every epoch (and at the last
 * step) the whole test set is evaluated. The files of --out:
 *
 *   log.csv            step,loss,lr,grad_norm,ms,test_acc,test_loss (the last
 *                      two on evaluation steps only)
 *   loss.png           the loss, the test loss and the test accuracy
 *   confusion.png      the test set's confusion matrix
 *   filters.png        conv1's 16 filters
 *   model.safetensors  the weights, PyTorch's state_dict names; metadata: format
 *                      "cnn-1", step, the flags that shape the weights
 *                      (cli.c), test_acc
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../seqtask/amp.h"
#include "../seqtask/progress.h"
#include "../seqtask/run.h"
#include "../seqtask/stop.h"
#include "cnn.h"

static const char *const out_files[] = {"log.csv", "loss.png", "confusion.png", "filters.png", "model.safetensors"};
enum { P_LOG, P_LOSS, P_CONFUSION, P_FILTERS, P_MODEL, N_FILES };
enum { TAIL = 50 };              /* result.last_loss: the mean of the last TAIL steps */

typedef struct trainer {
    const cnn_config *c;
    const cnn_set *train, *test;
    tg_params *p;
    cnn_model m;
    tg_optim *opt;
    sq_amp amp;                  /* --precision: autocast's type; f16's loss scaler */
    tg_schedule sched;
    tg_tape *tape;
    tg_rng shuffle;
    int *order;                  /* [train->n], the epoch's order */
    int32_t *y;                  /* [batch] */
    sq_log log;
    sq_progress prog;
    char path[N_FILES][CNN_PATH_MAX + 32];
} trainer;

/* mkdir -p; refuses a directory holding an earlier run's files unless
 * --overwrite, which removes them. 0, or an exit status with a message. */
static int prepare_out(trainer *tr)
{
    const cnn_config *c = tr->c;
    if (sq_mkdirs(c->out)) return 2;
    for (int i = 0; i < N_FILES; i++) {
        snprintf(tr->path[i], sizeof tr->path[i], "%s/%s", c->out, out_files[i]);
        if (access(tr->path[i], F_OK) != 0) continue;
        if (!c->overwrite)
            return tg_error_set("--out %s holds an earlier run (%s): give --overwrite to replace it, or another --out",
                                c->out, out_files[i]),
                   2;
        if (unlink(tr->path[i]) != 0)
            return tg_error_set("%s: cannot remove the earlier run's file: %s", tr->path[i], strerror(errno)), 1;
    }
    sq_remove_stale_temps(c->out);
    return 0;
}

static int setup(trainer *tr, long steps)
{
    const cnn_config *c = tr->c;
    if (tr->train->n < 1 || tr->test->n < 1) return tg_error_set("no training or test images"), 2;
    int status = prepare_out(tr);
    if (status) return status;
    tg_rng init;
    tg_rng_seed(&init, (uint64_t)c->seed * 2 + 1);
    tg_rng_seed(&tr->shuffle, (uint64_t)c->seed * 2 + 2);
    if (!(tr->p = tg_params_new()) || cnn_model_init(&tr->m, tr->p, &init)) return 1;
    tg_optim_opts o = tg_optim_defaults(TG_ADAM);
    o.lr = c->lr;
    tr->opt = tg_optim_new(tr->p, &o);
    tr->sched = tg_schedule_cosine(c->lr, 0, 0, steps);
    if (tg_schedule_check(&tr->sched)) return 2;
    tr->tape = tg_tape_new();
    tr->order = malloc((size_t)tr->train->n * sizeof *tr->order);
    tr->y = malloc((size_t)c->batch * sizeof *tr->y);
    if (!tr->opt || !tr->tape || !tr->order || !tr->y) return tg_error_set("out of memory"), 1;
    if (sq_amp_init(&tr->amp, c->precision)) return 1;
    return sq_log_open_as(&tr->log, tr->path[P_LOG], 0, "step,loss,lr,grad_norm,ms,test_acc,test_loss\n") ? 1 : 0;
}

static void trainer_free(trainer *tr)
{
    sq_log_close(&tr->log);
    free(tr->order);
    free(tr->y);
    tg_tape_free(tr->tape);
    tg_optim_free(tr->opt);
    sq_amp_free(&tr->amp);
    tg_params_free(tr->p);
}

/* Fisher-Yates: the order of the next epoch. */
static void shuffle(trainer *tr)
{
    int n = tr->train->n;
    for (int i = 0; i < n; i++) tr->order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)tg_rng_below(&tr->shuffle, (uint32_t)i + 1), k = tr->order[i];
        tr->order[i] = tr->order[j], tr->order[j] = k;
    }
}

/* The images order[0..B): *loss their mean cross-entropy. 0, or -1. */
static int train_step(trainer *tr, long step, const int *order, int B, double *loss, double *gnorm, double *lr)
{
    tg_tape_reset(tr->tape);
    tg_tensor *x = tg_tensor_new(tr->tape, 4, (int[]){B, 1, CNN_SIDE, CNN_SIDE});
    if (x) cnn_batch(tr->train, order, B, x->data, tr->y);
    tg_tensor *y = x ? tg_tensor_from_dtype(tr->tape, TG_I32, tr->y, 1, (int[]){B}) : NULL;
    tg_dtype cast = tg_autocast_begin(tr->tape, tr->amp.cast);
    tg_tensor *logits = y ? cnn_forward(tr->tape, &tr->m, x) : NULL;
    tg_autocast_end(tr->tape, cast);
    tg_tensor *l = logits ? tg_cross_entropy(tr->tape, logits, y, TG_IGNORE) : NULL;
    tg_tensor *scaled = sq_amp_loss(&tr->amp, tr->tape, l);
    tg_optim_zero_grad(tr->opt);
    if (!scaled || tg_backward(tr->tape, scaled) != 0)
        return tg_error_set("step %ld: %s", step, tg_tape_error(tr->tape));
    *loss = (double)l->data[0];
    if (sq_amp_unscale(&tr->amp, tr->opt)) return tg_error_set("step %ld: %s", step, tg_error());
    *gnorm = tg_grad_norm(tr->p);
    if (!isfinite(*loss)) return tg_error_set("step %ld: the loss is %g; try a lower --lr", step, *loss);
    *lr = tg_lr_at(&tr->sched, step - 1);
    if (tg_optim_schedule_lr(tr->opt, &tr->sched, step - 1) || sq_amp_step(&tr->amp, tr->opt) < 0)
        return tg_error_set("step %ld: %s", step, tg_error());
    return 0;
}

static int evaluate(trainer *tr, long step, cnn_result *r)
{
    double t0 = sq_now();
    if (cnn_evaluate(tr->tape, &tr->m, tr->test, &r->accuracy, &r->test_loss, r->confusion)) return -1;
    tr->prog.acc = r->accuracy;
    sq_progress_note(&tr->prog, "step %ld (epoch %.2f): test accuracy %.2f%%, test loss %.4f (%.1f s)", step,
                     (double)step * tr->c->batch / tr->train->n, 100 * r->accuracy, r->test_loss, sq_now() - t0);
    return 0;
}

/* 0: done (or stopped by a signal), -1: failed. */
static int train_loop(trainer *tr, long steps, cnn_result *r)
{
    const cnn_config *c = tr->c;
    int n = tr->train->n, pos = n;  /* pos: the next image of the epoch's order */
    double tail[TAIL];
    for (long step = 1; step <= steps; step++) {
        if (pos >= n) shuffle(tr), pos = 0;
        int B = n - pos < c->batch ? n - pos : (int)c->batch;  /* an epoch's last batch may be short */
        double t0 = sq_now(), loss = 0, gnorm = 0, lr = 0;
        if (train_step(tr, step, tr->order + pos, B, &loss, &gnorm, &lr)) return -1;
        double ms = 1000 * (sq_now() - t0);
        pos += B;
        r->steps = step;
        if (step == 1) r->first_loss = loss;
        tail[(step - 1) % TAIL] = loss;
        bool stop = sq_stop_requested(), eval = pos >= n || step == steps || stop;
        if (eval && evaluate(tr, step, r)) return -1;
        if (sq_log_row(&tr->log, step, loss, lr, gnorm, ms, eval ? r->accuracy : NAN, eval ? r->test_loss : NAN))
            return -1;
        sq_progress_step(&tr->prog, step, loss, lr, B);
        if (stop) break;
    }
    long k = r->steps < TAIL ? r->steps : TAIL;
    r->last_loss = 0;
    for (long i = 0; i < k; i++) r->last_loss += tail[i] / (double)k;
    return 0;
}

static int put_meta(void *ctx, const char *key, const char *value) { return tg_st_set_meta(ctx, key, value); }

/* The weights, with what made them: the format, the step count, the flags
 * that shape the weights and the test accuracy, as metadata strings. */
static int save_model(const trainer *tr, const cnn_result *r)
{
    char step[32], acc[32];
    snprintf(step, sizeof step, "%ld", r->steps);
    snprintf(acc, sizeof acc, "%.6f", r->accuracy);
    tg_safetensors *s = tg_st_new();
    int rc = !s || tg_st_add_params(s, tr->p) || tg_st_set_meta(s, "format", "cnn-1") ||
                     tg_st_set_meta(s, "step", step) || cnn_config_to_meta(tr->c, put_meta, s) ||
                     tg_st_set_meta(s, "test_acc", acc) || tg_st_save(s, tr->path[P_MODEL], TG_F32)
                 ? -1
                 : 0;
    tg_st_free(s);
    return rc;
}

static int write_files(trainer *tr, const cnn_result *r)
{
    static const char *const eval[2] = {"test accuracy", "test loss"};
    char title[96];
    snprintf(title, sizeof title, "Fashion-MNIST test set: %.2f%% right after %ld steps", 100 * r->accuracy,
             r->steps);
    if (save_model(tr, r) || sq_log_plot_as(&tr->log, tr->path[P_LOSS], "cnn on Fashion-MNIST", eval,
                                                   (const bool[2]){true, false}) ||
        cnn_confusion_png(tr->path[P_CONFUSION], r->confusion, title) ||
        cnn_filters_png(tr->path[P_FILTERS], tr->m.conv1.weight))
        return -1;
    return sq_log_close(&tr->log);
}

int cnn_run(const cnn_config *c, const cnn_set *train, const cnn_set *test, cnn_result *r)
{
    trainer tr = {.c = c, .train = train, .test = test};
    memset(r, 0, sizeof *r);
    long per_epoch = (train->n + c->batch - 1) / c->batch, steps = c->steps ? c->steps : c->epochs * per_epoch;
    int status = setup(&tr, steps);
    if (status) {
        trainer_free(&tr);
        return status;
    }
    fprintf(stderr, "model    conv 1->16 5x5, pool, conv 16->32 5x5, pool, linear 1568->10: %zu parameters\n",
            tg_params_numel(tr.p));
    fprintf(stderr,
            "training Adam lr %g (cosine to 0), batch %ld, %ld steps (%.2f epochs of %d images; test: %d), %s "
            "products -> %s\n",
            c->lr, c->batch, steps, (double)steps / per_epoch, train->n, test->n, tg_dtype_name(tr.amp.cast), c->out);
    sq_progress_init(&tr.prog, 1, steps, c->log_every);
    tr.prog.acc_name = "test acc";  /* the last epoch's */
    tr.prog.unit = "images";
    int loop = train_loop(&tr, steps, r);
    sq_progress_end(&tr.prog);
    status = loop || write_files(&tr, r) ? 1 : 0;
    r->loss_scale = sq_amp_scale(&tr.amp);
    r->skipped = tr.amp.skipped;
    trainer_free(&tr);
    return status;
}
