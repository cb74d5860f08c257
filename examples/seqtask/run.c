/* seqtask: data, task, held-out set, the model commands' session, threads,
 * directories. */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tapegrad/core/kernels/threads.h>
#include "checkpoint.h"
#include "cli.h"

/* The first `count` examples of src, copied. */
static sq_dataset *head_of(const sq_dataset *src, long count)
{
    sq_dataset *d = sq_data_new();
    for (long i = 0; d && i < count && i < src->count; i++)
        if (sq_data_add(d, src->ex[i].src, src->ex[i].n, src->ex[i].tgt, src->ex[i].m) != 0) {
            sq_data_free(d);
            d = NULL;
        }
    return d;
}

int sq_run_init(sq_run *r, sq_config *c)
{
    memset(r, 0, sizeof *r);
    sq_dataset *held = NULL;  /* --eval-data */
    if (c->kind == SQ_TASK_DATA &&
        (sq_data_load(c->data, (int)c->symbols, (int)c->max_len, &r->data) != 0 ||
         (c->eval_data[0] &&
          sq_data_load(c->eval_data, (int)c->symbols, (int)c->max_len, &held) != 0)))
        goto fail;
    if (sq_cli_check_values(c) != 0) goto fail;
    if (sq_task_init(&r->task, c->kind, (int)c->symbols, (int)c->min_len, (int)c->max_len,
                     (uint64_t)c->seed, r->data, !c->no_shuffle) != 0)
        goto oom;
    if (c->kind != SQ_TASK_DATA) r->eval = sq_task_eval_set(&r->task, (int)c->eval_size);
    else r->eval = head_of(held ? held : r->data, c->eval_size);
    if (!r->eval) goto oom;
    sq_data_free(held);
    return 0;
oom:
    tg_error_set("out of memory for the examples");
fail:
    sq_data_free(held);
    sq_run_free(r);
    return -1;
}

void sq_run_free(sq_run *r)
{
    sq_task_free(&r->task);
    sq_data_free(r->data);
    sq_data_free(r->eval);
    memset(r, 0, sizeof *r);
}

int sq_session_open(sq_session *s, sq_config *c, bool with_set)
{
    *s = (sq_session){.with_set = with_set};
    sq_set_threads(c->threads);
    int status = SQ_EXIT_USAGE;
    if (sq_open(c->model, c, false, &s->p, &s->m, NULL) == 0) {
        if (!with_set || sq_run_init(&s->run, c) == 0) {
            status = 1;
            if (sq_decoder_init(&s->d, &s->m) == 0) return 0;
            if (with_set) sq_run_free(&s->run);
        }
        sq_model_destroy(s->p, &s->m);
    }
    fprintf(stderr, "seqtask %s: %s\n", sq_command_name(c->cmd), tg_error());
    return status;
}

void sq_session_close(sq_session *s)
{
    sq_decoder_free(&s->d);
    if (s->with_set) sq_run_free(&s->run);
    sq_model_destroy(s->p, &s->m);
}

int sq_session_generate(sq_session *s, const sq_config *c, int32_t *src, int *n, int32_t *out, int *n_out)
{
    const char *cmd = sq_command_name(c->cmd);
    if ((*n = sq_parse_symbols(c->input, (int)c->symbols, src, s->m.cfg.max_len)) < 0) {
        fprintf(stderr, "seqtask %s: --input '%s': %s\n", cmd, c->input, tg_error());
        return SQ_EXIT_USAGE;
    }
    if (sq_generate(&s->d, src, *n, out, n_out) == 0) return 0;
    fprintf(stderr, "seqtask %s: %s\n", cmd, tg_error());
    return sq_generate_fits(&s->d, *n) ? 1 : SQ_EXIT_USAGE;
}

int sq_set_threads(long n)
{
    tg_threads_set((int)n);  /* n <= 0: one per core; sets OpenBLAS's too */
    return tg_threads_get();
}

void sq_dirname(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, len, ".");
    else if (slash == path) snprintf(buf, len, "/");
    else snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

void sq_remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char path[1200];
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "model.safetensors.tmp.", 22) != 0 &&
            strncmp(e->d_name, "checkpoint.safetensors.tmp.", 27) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

int sq_mkdirs(const char *dir)
{
    char buf[1100];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *s = buf + 1;; s++) {
        if (*s != '/' && *s != '\0') continue;
        char c = *s;
        *s = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            tg_error_set("%s: cannot create the directory: %s", buf, strerror(errno));
            return -1;
        }
        *s = c;
        if (c == '\0') break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        tg_error_set("%s: not a directory", dir);
        return -1;
    }
    return 0;
}
