/* seqtask: every rank's resolved configuration against rank 0's (see
 * ranks.h). The configuration is "key=value\n" text; rank 0's is broadcast
 * one byte per double (it is a few hundred bytes, once per run). */
#include "ranks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/dist/dist.h>
#include "cli.h"

#define TEXT_MAX 16384

typedef struct text {
    char buf[TEXT_MAX];
    size_t n;
} text;

static int put(void *ctx, const char *key, const char *value)
{
    text *t = ctx;
    /* paths may differ between hosts: data_hash compares the contents */
    if (strcmp(key, "data") == 0 || strcmp(key, "eval_data") == 0) return 0;
    int n = snprintf(t->buf + t->n, TEXT_MAX - t->n, "%s=%s\n", key, value);
    if (n < 0 || (size_t)n >= TEXT_MAX - t->n) return tg_error_set("the configuration is too long to compare");
    t->n += (size_t)n;
    return 0;
}

static int put_u64(text *t, const char *key, unsigned long long v)
{
    char val[32];
    snprintf(val, sizeof val, "%016llx", v);
    return put(t, key, val);
}

/* FNV-1a of the optimizer state's bytes (moments and step), 0 when it
 * cannot be exported. */
static unsigned long long state_hash(const tg_optim *o)
{
    tg_safetensors *s = tg_st_new();
    uint8_t *buf = NULL;
    size_t len = 0;
    unsigned long long h = 0xcbf29ce484222325ULL;
    if (s && tg_optim_state_save(o, s) == 0 && tg_st_to_bytes(s, TG_F64, &buf, &len) == 0)
        for (size_t i = 0; i < len; i++) h = (h ^ buf[i]) * 0x100000001b3ULL;
    tg_free(buf);
    tg_st_free(s);
    return h;
}

static int describe(const sq_config *c, const sq_run_state *st, text *t)
{
    char val[64];
    t->n = 0;
    if (sq_config_to_meta(c, SQ_META_MODEL | SQ_META_TASK | SQ_META_TRAIN, put, t)) return -1;
    snprintf(val, sizeof val, "%ld", c->accum);
    if (put(t, "accum", val)) return -1;
    snprintf(val, sizeof val, "%ld", st->step);
    if (put(t, "the starting step", val)) return -1;
    snprintf(val, sizeof val, "%zu", st->numel);
    if (put(t, "the number of parameters", val)) return -1;
    if (put_u64(t, "the --data contents (hash)", st->data_hash)) return -1;
    if (put_u64(t, "the optimizer state (hash)", state_hash(st->opt))) return -1;
    snprintf(val, sizeof val, "%" PRIx64 " %" PRIx64, st->drop->state, st->drop->inc);
    return put(t, "the dropout RNG state", val);
}

/* Rank 0's text into theirs; every rank takes part. */
static void bcast_text(const text *mine, text *theirs)
{
    double n = (double)mine->n;
    if (tg_dist_bcast(&n, 1)) tg_dist_abort(1, tg_error());
    double *v = tg_malloc(((size_t)n + 1) * sizeof *v);
    if (!v) tg_dist_abort(1, "out of memory comparing the ranks' configurations");
    for (size_t i = 0; i < (size_t)n; i++) v[i] = (unsigned char)mine->buf[i];
    if (tg_dist_bcast(v, (int)n)) tg_dist_abort(1, tg_error());
    for (size_t i = 0; i < (size_t)n; i++) theirs->buf[i] = (char)v[i];
    theirs->n = (size_t)n;
    theirs->buf[theirs->n] = '\0';
    tg_free(v);
}

/* The next "key=value" line of s: key and value split in place. */
static char *next_line(char **s, char **value)
{
    char *line = *s, *nl = line ? strchr(line, '\n') : NULL, *eq;
    if (!nl) return NULL;
    *nl = '\0';
    *s = nl + 1;
    eq = strchr(line, '=');
    *eq = '\0';
    *value = eq + 1;
    return line;
}

/* "--heads" for a flag's key "heads", the key itself for the rest. */
static void flag_name(const char *key, char *buf, size_t len)
{
    if (strchr(key, ' ')) {
        snprintf(buf, len, "%.80s", key);
        return;
    }
    snprintf(buf, len, "--%.80s", key);
    for (char *p = buf; *p; p++)
        if (*p == '_') *p = '-';
}

int sq_ranks_agree(const sq_config *c, const sq_run_state *st)
{
    static text mine, theirs, copy;
    int rank = tg_dist_rank();
    bool differ = false;
    if (tg_dist_size() == 1) return 0;
    int rc = describe(c, st, &mine);
    double failed = rc != 0;  /* a rank that cannot describe itself stops every rank */
    if (tg_dist_sum(&failed, 1)) tg_dist_abort(1, tg_error());
    if (failed > 0) {
        if (rc) fprintf(stderr, "rank %d: seqtask train: %s\n", rank, tg_error());
        return SQ_EXIT_USAGE;
    }
    bcast_text(&mine, &theirs);
    if (rank == 0 || (mine.n == theirs.n && memcmp(mine.buf, theirs.buf, mine.n) == 0)) return 0;
    memcpy(copy.buf, mine.buf, mine.n);
    copy.buf[mine.n] = '\0';
    char *a = copy.buf, *b = theirs.buf, *va, *vb, *ka, *kb, name[96];
    while ((ka = next_line(&a, &va)) && (kb = next_line(&b, &vb))) {
        if (strcmp(ka, kb) != 0) break;
        if (strcmp(va, vb) == 0) continue;
        flag_name(ka, name, sizeof name);
        fprintf(stderr, "rank %d: seqtask train: %s is %s here but %s on rank 0: every rank needs the same "
                "command line and files\n", rank, name, va, vb);
        differ = true;
    }
    if (!differ) fprintf(stderr, "rank %d: seqtask train: the configuration differs from rank 0's\n", rank);
    return SQ_EXIT_USAGE;
}
