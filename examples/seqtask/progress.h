/* seqtask: what a training run tells the person watching it and the files
 * that record it.
 *
 * Progress goes to stderr. On a terminal it is one live line redrawn in place
 * (step/total, loss, last accuracy, tokens/s or another unit's, ETA), at most ten times a
 * second; otherwise a plain line every --log-every steps. Notes (evaluations,
 * saves) print on lines of their own either way.
 *
 * log.csv has a header, then one row per step:
 *   step,loss,lr,grad_norm,ms,eval_acc,eval_token_acc
 * with the two eval columns empty except on evaluation steps. Losses are
 * printed with enough digits to round-trip, so two runs can be compared bit
 * for bit. The rows are also kept in memory for loss.png.
 *
 * Each row is one write(2); one that fails (a full disk, a file size limit)
 * is cut off again, so the file holds whole rows only, and is an error: the
 * run stops (docs/FORMATS.md, "log.csv").
 */
#ifndef SEQTASK_PROGRESS_H
#define SEQTASK_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Seconds on a monotonic clock. */
double sq_now(void);

typedef struct sq_progress {
    bool tty;
    long first, total, log_every;
    double t0, last_draw, tokens;
    double acc;                  /* last evaluation, NaN before the first */
    const char *acc_name;        /* its label: "acc" unless set after init */
    const char *unit;            /* what the step's count counts: "tok" unless set after init */
    bool live;                   /* a live line is on the screen */
} sq_progress;

void sq_progress_init(sq_progress *p, long first_step, long total, long log_every);
/* After step `step` (1-based) of `tokens` tokens. */
void sq_progress_step(sq_progress *p, long step, double loss, double lr, long tokens);
/* A line of its own (clears the live line first). */
void sq_progress_note(sq_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the live line. */
void sq_progress_end(sq_progress *p);

typedef struct sq_log {
    int fd;
    bool is_open;
    off_t good;                  /* bytes of whole rows written */
    char path[1100];
    const char *header;          /* the first line, with its '\n' */
    long n, cap;
    double *step, *loss, *acc, *tacc;  /* history, NaN where not evaluated */
} sq_log;

/* Opens path for writing. With keep_upto > 0 (a resumed run) the rows of an
 * existing file up to that step are kept (and loaded into the history);
 * later rows are dropped. 0, or -1 with a message naming the file. */
int sq_log_open(sq_log *l, const char *path, long keep_upto);
/* The same with another header naming the last two columns (charlm's
 * held-out loss and bits per byte instead of the accuracies). */
int sq_log_open_as(sq_log *l, const char *path, long keep_upto, const char *header);
/* acc / tacc NaN: not an evaluation step. 0, or -1 with a message naming
 * the file and the step (the file then ends with the row before). */
int sq_log_row(sq_log *l, long step, double loss, double lr, double grad_norm, double ms, double acc,
               double tacc);
/* fsync, close, free. 0, or -1 with a message when the file could not be
 * written. */
int sq_log_close(sq_log *l);
/* loss.png: the loss and the held-out accuracies against the step. */
int sq_log_plot(const sq_log *l, const char *path, const char *title);
/* The same with the two evaluation series named eval[0], eval[1]; right:
 * each on the right axis. */
int sq_log_plot_as(const sq_log *l, const char *path, const char *title, const char *const eval[2],
                   const bool right[2]);

#endif
