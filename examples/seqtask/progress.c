/* seqtask: the progress line, log.csv and loss.png. */
#include "progress.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/engine/tensor.h>
#include <tapegrad/viz/plot.h>

double sq_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sq_progress_init(sq_progress *p, long first_step, long total, long log_every)
{
    memset(p, 0, sizeof *p);
    p->tty = isatty(fileno(stderr));
    p->first = first_step;
    p->total = total;
    p->log_every = log_every;
    p->t0 = sq_now();
    p->acc = NAN;
    p->acc_name = "acc";
    p->unit = "tok";
}

static void fmt_duration(double s, char *buf, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void sq_progress_step(sq_progress *p, long step, double loss, double lr, long tokens)
{
    p->tokens += (double)tokens;
    double now = sq_now(), el = now - p->t0;
    bool last = step == p->total;
    if (p->tty ? (now - p->last_draw < 0.1 && !last) : (step % p->log_every != 0 && !last)) return;
    p->last_draw = now;
    long done = step - p->first + 1;
    double tps = el > 0 ? p->tokens / el : 0, eta = done > 0 ? el / (double)done * (double)(p->total - step) : 0;
    char acc[32], etas[32], els[32];
    if (isnan(p->acc)) snprintf(acc, sizeof acc, "-");
    else snprintf(acc, sizeof acc, "%.1f%%", 100 * p->acc);
    fmt_duration(eta, etas, sizeof etas);
    fmt_duration(el, els, sizeof els);
    if (p->tty) {
        fprintf(stderr, "\r\033[Kstep %ld/%ld  loss %.4f  %s %s  %.1fk %s/s  ETA %s", step, p->total, loss,
                p->acc_name, acc, tps / 1000, p->unit, etas);
        p->live = true;
    } else {
        fprintf(stderr, "step %ld/%ld  loss %.4f  lr %.2e  %s %s  %.1fk %s/s  elapsed %s  ETA %s\n", step,
                p->total, loss, lr, p->acc_name, acc, tps / 1000, p->unit, els, etas);
    }
    fflush(stderr);
}

void sq_progress_note(sq_progress *p, const char *fmt, ...)
{
    if (p->live) fprintf(stderr, "\r\033[K");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    p->live = false;
    p->last_draw = 0;  /* redraw the live line at the next step */
    fflush(stderr);
}

void sq_progress_end(sq_progress *p)
{
    if (p->live) fputc('\n', stderr);
    p->live = false;
}

/* ---- log.csv ------------------------------------------------------------ */

static const char log_header[] = "step,loss,lr,grad_norm,ms,eval_acc,eval_token_acc\n";

static int history_add(sq_log *l, double step, double loss, double acc, double tacc)
{
    if (l->n == l->cap) {
        long cap = l->cap ? 2 * l->cap : 1024;
        double *a[4] = {l->step, l->loss, l->acc, l->tacc};
        for (int k = 0; k < 4; k++) {
            double *q = tg_realloc(a[k], (size_t)cap * sizeof *q);
            if (!q) return -1;
            a[k] = q;
            if (k == 0) l->step = q;
            if (k == 1) l->loss = q;
            if (k == 2) l->acc = q;
            if (k == 3) l->tacc = q;
        }
        l->cap = cap;
    }
    l->step[l->n] = step;
    l->loss[l->n] = loss;
    l->acc[l->n] = acc;
    l->tacc[l->n] = tacc;
    l->n++;
    return 0;
}

/* An empty CSV field is NaN. */
static double field(const char **s)
{
    double v = NAN;
    if (**s && **s != ',' && **s != '\n') v = strtod(*s, NULL);
    *s += strcspn(*s, ",\n");
    if (**s == ',') (*s)++;
    return v;
}

/* Reads the rows of an earlier log up to keep_upto into memory. A missing
 * file is fine (the resumed run may write elsewhere). */
static int read_old(sq_log *l, const char *path, long keep_upto, char **kept, size_t *kept_len)
{
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : -1;
    char *line = NULL;
    size_t cap = 0, used = 0, room = 0;
    int rc = 0;
    *kept = NULL;
    for (long k = 0; getline(&line, &cap, f) > 0; k++) {
        if (k == 0) continue;  /* header */
        const char *s = line;
        double v[7];
        for (int i = 0; i < 7; i++) v[i] = field(&s);
        size_t len = strlen(line);
        if (!(v[0] >= 1 && v[0] <= (double)keep_upto) || line[len - 1] != '\n') break;  /* a cut row ends it */
        if (used + len + 1 > room) {
            room = 2 * (used + len + 1) + 4096;
            char *q = tg_realloc(*kept, room);
            if (!q) { rc = -1; break; }
            *kept = q;
        }
        memcpy(*kept + used, line, len + 1);
        used += len;
        if (history_add(l, v[0], v[1], v[5], v[6]) != 0) { rc = -1; break; }
    }
    free(line);
    fclose(f);
    *kept_len = used;
    return rc;
}

/* Writes n bytes at the end of the log's complete rows. On a failure (a
 * full disk, a file size limit) the file is cut back to its complete rows,
 * so it never holds a partial one; -1 with errno. */
static int log_write(sq_log *l, const char *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t k = write(l->fd, buf + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            if (ftruncate(l->fd, l->good) != 0 || lseek(l->fd, l->good, SEEK_SET) < 0) { /* best effort */ }
            errno = e;
            return -1;
        }
        done += (size_t)k;
    }
    l->good += (off_t)n;
    return 0;
}

int sq_log_open(sq_log *l, const char *path, long keep_upto)
{
    return sq_log_open_as(l, path, keep_upto, log_header);
}

int sq_log_open_as(sq_log *l, const char *path, long keep_upto, const char *header)
{
    memset(l, 0, sizeof *l);
    l->header = header;
    snprintf(l->path, sizeof l->path, "%s", path);
    char *kept = NULL;
    size_t kept_len = 0;
    if (keep_upto > 0 && read_old(l, path, keep_upto, &kept, &kept_len) != 0) {
        tg_error_set("%s: cannot read the earlier log: %s", path, strerror(errno));
        tg_free(kept);
        return -1;
    }
    l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (l->fd < 0) {
        tg_error_set("%s: cannot write: %s", path, strerror(errno));
        tg_free(kept);
        return -1;
    }
    l->is_open = true;
    int rc = 0;
    if (log_write(l, l->header, strlen(l->header)) || (kept_len && log_write(l, kept, kept_len)))
        rc = tg_error_set("%s: cannot write: %s", path, strerror(errno));
    tg_free(kept);
    return rc;
}

int sq_log_row(sq_log *l, long step, double loss, double lr, double grad_norm, double ms, double acc,
               double tacc)
{
    /* %.9g round-trips a float, %.17g a double: the loss column compares bit for bit */
    const char *rf = sizeof(tg_real) == 4 ? "%.9g" : "%.17g";
    char row[256];
    size_t n = (size_t)snprintf(row, sizeof row, "%ld,", step);
    n += (size_t)snprintf(row + n, sizeof row - n, rf, loss);
    n += (size_t)snprintf(row + n, sizeof row - n, ",%.9g,%.9g,%.3f,", lr, grad_norm, ms);
    if (!isnan(acc)) n += (size_t)snprintf(row + n, sizeof row - n, "%.6f,%.6f\n", acc, tacc);
    else n += (size_t)snprintf(row + n, sizeof row - n, ",\n");
    /* one write of the whole row: on a failure the file keeps only whole rows */
    if (n >= sizeof row || log_write(l, row, n))
        return tg_error_set("%s: cannot write the row of step %ld: %s; it holds every step before it, "
                            "each row whole", l->path, step, n >= sizeof row ? "row too long" : strerror(errno));
    return history_add(l, (double)step, loss, acc, tacc);
}

int sq_log_close(sq_log *l)
{
    int rc = 0;
    if (l->is_open) {
        int e = fsync(l->fd) != 0 ? errno : 0;
        if (close(l->fd) != 0 && !e) e = errno;
        if (e) rc = tg_error_set("%s: cannot write: %s", l->path, strerror(e));
    }
    tg_free(l->step);
    tg_free(l->loss);
    tg_free(l->acc);
    tg_free(l->tacc);
    memset(l, 0, sizeof *l);
    return rc;
}

int sq_log_plot(const sq_log *l, const char *path, const char *title)
{
    static const char *const eval[2] = {"held-out exact-sequence accuracy", "held-out token accuracy"};
    return sq_log_plot_as(l, path, title, eval, (const bool[2]){true, true});
}

int sq_log_plot_as(const sq_log *l, const char *path, const char *title, const char *const eval[2],
                   const bool right[2])
{
    if (l->n == 0) {
        tg_error_set("%s: no steps to plot", path);
        return -1;
    }
    tg_plot_series s[3] = {
        {"train loss", l->step, l->loss, (int)l->n, false},
        {eval[0], l->step, l->acc, (int)l->n, right[0]},
        {eval[1], l->step, l->tacc, (int)l->n, right[1]},
    };
    return tg_plot_lines_png(path, title, "step", s, 3);
}
