/* charlm: the corpus, the batch of a step, and the held-out loss. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/engine/error.h>
#include <tapegrad/core/ops/ops.h>
#include "charlm.h"

/* Debian's base-files, on every Debian and Ubuntu system: ~240 KB of
 * English legal prose, no download. */
#define CL_DEFAULT_DIR "/usr/share/common-licenses"

/* Appends the file at path to k->bytes. */
static int append_file(cl_corpus *k, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return tg_error_set("%s: cannot open: %s", path, strerror(errno));
    int rc = 0;
    for (;;) {
        uint8_t *q = tg_realloc(k->bytes, k->n + 65536);
        if (!q) {
            rc = tg_error_set("%s: out of memory", path);
            break;
        }
        k->bytes = q;
        size_t got = fread(k->bytes + k->n, 1, 65536, f);
        k->n += got;
        if (got < 65536) {
            if (ferror(f)) rc = tg_error_set("%s: cannot read: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of CL_DEFAULT_DIR (not the symlinks: GPL -> GPL-3
 * would repeat a text) in name order. */
static int load_default(cl_corpus *k)
{
    DIR *d = opendir(CL_DEFAULT_DIR);
    if (!d) return tg_error_set("%s: cannot open the default corpus (give --data FILE): %s", CL_DEFAULT_DIR,
                                strerror(errno));
    char *names[64];
    int n = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        char path[CL_PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", CL_DEFAULT_DIR, e->d_name);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (names[n] = tg_malloc(strlen(path) + 1)))
            memcpy(names[n++], path, strlen(path) + 1);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        if (!rc) rc = append_file(k, names[i]);
        tg_free(names[i]);
    }
    snprintf(k->name, sizeof k->name, "the default corpus (%d files of %s)", n, CL_DEFAULT_DIR);
    return rc;
}

int cl_corpus_load(cl_corpus *k, const char *path, int T)
{
    memset(k, 0, sizeof *k);
    int rc;
    if (path[0]) {
        rc = append_file(k, path);
        snprintf(k->name, sizeof k->name, "%s", path);
    } else {
        rc = load_default(k);
    }
    if (rc) {
        cl_corpus_free(k);
        return -1;
    }
    k->n_train = k->n - k->n / 10;
    if (k->n - k->n_train < (size_t)T + 1) {
        tg_error_set("%s: %zu bytes: its held-out tenth needs at least --context + 1 = %d bytes (a file of "
                     "at least %d bytes)", k->name, k->n, T + 1, 10 * (T + 1));
        cl_corpus_free(k);
        return -1;
    }
    k->hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < k->n; i++) k->hash = (k->hash ^ k->bytes[i]) * 0x100000001b3ull;
    return 0;
}

void cl_corpus_free(cl_corpus *k)
{
    tg_free(k->bytes);
    k->bytes = NULL;
    k->n = k->n_train = 0;
}

void cl_corpus_batch(const cl_corpus *k, uint64_t seed, long step, int B, int T, int32_t *ids, int32_t *targets)
{
    tg_rng r;
    tg_rng_seed(&r, seed * 0x9e3779b97f4a7c15ull + (uint64_t)step);
    uint32_t starts = (uint32_t)(k->n_train - (size_t)T);  /* windows [s, s + T] inside the training part */
    for (int b = 0; b < B; b++) {
        const uint8_t *w = k->bytes + tg_rng_below(&r, starts);
        for (int t = 0; t < T; t++) {
            ids[b * T + t] = w[t];
            targets[b * T + t] = w[t + 1];
        }
    }
}

int cl_eval_loss(const tg_model *m, const cl_corpus *k, int B, int T, double *loss)
{
    size_t held = k->n - k->n_train, windows = (held - 1) / (size_t)T;
    int32_t *ids = tg_malloc(2 * (size_t)B * (size_t)T * sizeof *ids), *tg = ids + (size_t)B * T;
    tg_tape *t = tg_tape_new();
    double sum = 0;
    int rc = -1;
    if (!ids || !t) {
        tg_error_set("out of memory for the held-out loss");
        goto done;
    }
    tg_no_grad_begin(t);
    tg_tape_set_training(t, false);
    for (size_t w0 = 0; w0 < windows; w0 += (size_t)B) {
        int nb = (int)(windows - w0 < (size_t)B ? windows - w0 : (size_t)B);
        for (int b = 0; b < nb; b++) {
            const uint8_t *w = k->bytes + k->n_train + (w0 + (size_t)b) * (size_t)T;
            for (int i = 0; i < T; i++) {
                ids[b * T + i] = w[i];
                tg[b * T + i] = w[i + 1];
            }
        }
        tg_tape_reset(t);
        tg_tensor *x = tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){nb, T});
        tg_tensor *logits = tg_model_forward(t, m, x, NULL, NULL);
        tg_tensor *y = tg_tensor_from_dtype(t, TG_I32, tg, 2, (int[]){nb, T});
        tg_tensor *s = logits && y ? tg_cross_entropy_sum(t, logits, y, TG_IGNORE) : NULL;
        if (!s) {
            tg_error_set("held-out loss: %s", tg_tape_error(t));
            goto done;
        }
        sum += s->data[0];
    }
    *loss = sum / ((double)windows * T);
    rc = 0;
done:
    tg_tape_free(t);
    tg_free(ids);
    return rc;
}
