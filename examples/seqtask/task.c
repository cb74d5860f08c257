/* seqtask: task generators, the held-out split and the training stream. */
#include "task.h"

#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/engine/rng.h>
#include <tapegrad/core/ops/ops.h>

/* Stream ids, so the training, evaluation and shuffling streams of one seed
 * never share an RNG sequence. */
enum { SQ_STREAM_TRAIN = 1, SQ_STREAM_EVAL = 2, SQ_STREAM_EPOCH = 3 };

static const char *const task_names[] = {"copy", "reverse", "sort", "data"};

const char *sq_task_name(sq_task_kind k) { return task_names[k]; }

int sq_task_parse(const char *s)
{
    for (int k = SQ_TASK_COPY; k <= SQ_TASK_SORT; k++)
        if (strcmp(s, task_names[k]) == 0) return k;
    return -1;
}

/* splitmix64's finaliser: a well-mixed 64-bit hash of x. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void seed_stream(tg_rng *r, uint64_t seed, uint64_t stream, uint64_t index)
{
    tg_rng_seed(r, mix64(mix64(mix64(seed) ^ stream) ^ index));
}

bool sq_is_heldout(const int32_t *src, int n)
{
    uint64_t h = mix64((uint64_t)n);
    for (int i = 0; i < n; i++) h = mix64(h ^ (uint32_t)src[i]);
    return h % SQ_HOLDOUT_MOD == 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void sq_task_target(sq_task_kind k, const int32_t *src, int n, int32_t *tgt)
{
    for (int i = 0; i < n; i++) tgt[i] = k == SQ_TASK_REVERSE ? src[n - 1 - i] : src[i];
    if (k == SQ_TASK_SORT) qsort(tgt, (size_t)n, sizeof *tgt, cmp_i32);
}

/* A random source; tries up to `tries` times for one on the wanted side of
 * the split and returns whether it got one. */
static bool draw_source(const sq_task *t, tg_rng *r, bool heldout, int tries, int32_t *src, int *n)
{
    for (int k = 0; k < tries; k++) {
        *n = t->min_len + (int)tg_rng_below(r, (uint32_t)(t->max_len - t->min_len + 1));
        for (int i = 0; i < *n; i++) src[i] = (int32_t)tg_rng_below(r, (uint32_t)t->n_symbols);
        if (sq_is_heldout(src, *n) == heldout) return true;
    }
    return false;
}

int sq_task_init(sq_task *t, sq_task_kind kind, int n_symbols, int min_len, int max_len,
                 uint64_t seed, const sq_dataset *data, bool shuffle)
{
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->n_symbols = n_symbols;
    t->min_len = min_len;
    t->max_len = max_len;
    t->seed = seed;
    t->data = data;
    t->shuffle = shuffle;
    t->perm_epoch = -1;
    if (kind == SQ_TASK_DATA && shuffle) {
        t->perm = tg_malloc((size_t)data->count * sizeof *t->perm);
        if (!t->perm) return -1;
    }
    return 0;
}

void sq_task_free(sq_task *t)
{
    tg_free(t->perm);
    t->perm = NULL;
}

/* The line of the file at global position g of the shuffled stream: epoch
 * e = g / count is a Fisher-Yates permutation seeded by (seed, e). */
static int data_line(sq_task *t, long g)
{
    long count = t->data->count;
    if (!t->shuffle) return (int)(g % count);
    long epoch = g / count;
    if (epoch != t->perm_epoch) {
        tg_rng r;
        seed_stream(&r, t->seed, SQ_STREAM_EPOCH, (uint64_t)epoch);
        for (long i = 0; i < count; i++) t->perm[i] = (int32_t)i;
        for (long i = count - 1; i > 0; i--) {
            long j = (long)tg_rng_below(&r, (uint32_t)(i + 1));
            int32_t tmp = t->perm[i];
            t->perm[i] = t->perm[j];
            t->perm[j] = tmp;
        }
        t->perm_epoch = epoch;
    }
    return t->perm[g % count];
}

void sq_task_train_example(sq_task *t, long step, int B, int i, int32_t *src, int *n, int32_t *tgt,
                           int *m)
{
    long g = step * (long)B + i;
    if (t->kind == SQ_TASK_DATA) {
        const sq_example *e = &t->data->ex[data_line(t, g)];
        memcpy(src, e->src, (size_t)e->n * sizeof *src);
        memcpy(tgt, e->tgt, (size_t)e->m * sizeof *tgt);
        *n = e->n;
        *m = e->m;
        return;
    }
    tg_rng r;
    seed_stream(&r, t->seed, SQ_STREAM_TRAIN, (uint64_t)g);
    /* A space too small to have a training side falls back to any source. */
    if (!draw_source(t, &r, false, 1000, src, n)) draw_source(t, &r, true, 1, src, n);
    sq_task_target(t->kind, src, *n, tgt);
    *m = *n;
}

sq_dataset *sq_task_eval_set(const sq_task *t, int count)
{
    sq_dataset *d = sq_data_new();
    if (!d) return NULL;
    int32_t *src = tg_malloc(2 * (size_t)(t->max_len + 1) * sizeof *src), *tgt = src + t->max_len + 1;
    if (!src) {
        sq_data_free(d);
        return NULL;
    }
    tg_rng r;
    seed_stream(&r, t->seed, SQ_STREAM_EVAL, 0);
    for (int k = 0; k < count; k++) {
        int n;
        /* When no held-out source turns up the space is tiny: use any. */
        if (!draw_source(t, &r, true, 100000, src, &n)) draw_source(t, &r, false, 1, src, &n);
        sq_task_target(t->kind, src, n, tgt);
        if (sq_data_add(d, src, n, tgt, n) != 0) {
            sq_data_free(d);
            d = NULL;
            break;
        }
    }
    tg_free(src);
    return d;
}

/* ---- batches ------------------------------------------------------------ */

int sq_batch_init(sq_batch *b, int cap_B, int cap_T)
{
    memset(b, 0, sizeof *b);
    size_t bt = (size_t)cap_B * (size_t)cap_T, row = (size_t)cap_T + 1;
    b->cap_B = cap_B;
    b->cap_T = cap_T;
    b->ids = tg_malloc(bt * sizeof *b->ids);
    b->targets = tg_malloc(bt * sizeof *b->targets);
    b->lens = tg_malloc((size_t)cap_B * sizeof *b->lens);
    b->ex = tg_malloc((size_t)cap_B * sizeof *b->ex);
    b->pool = tg_malloc(2 * row * (size_t)cap_B * sizeof *b->pool);
    b->seq = tg_malloc(row * sizeof *b->seq);
    if (!b->ids || !b->targets || !b->lens || !b->ex || !b->pool || !b->seq) {
        sq_batch_free(b);
        double bytes = (double)bt * 2 * sizeof(int32_t) + (double)cap_B * (sizeof(int32_t) + sizeof(sq_example)) +
                       (2.0 * (double)cap_B + 1) * (double)row * sizeof(int32_t);
        return tg_error_set("out of memory for the batch buffers: %.0f MiB (%d sequences x %d positions)",
                            bytes / (1 << 20), cap_B, cap_T);
    }
    return 0;
}

void sq_batch_free(sq_batch *b)
{
    tg_free(b->ids);
    tg_free(b->targets);
    tg_free(b->lens);
    tg_free(b->ex);
    tg_free(b->pool);
    tg_free(b->seq);
    memset(b, 0, sizeof *b);
}

int sq_sequence(const sq_example *e, int32_t *seq)
{
    int L = 0;
    seq[L++] = SQ_BOS;
    for (int i = 0; i < e->n; i++) seq[L++] = SQ_SYM0 + e->src[i];
    seq[L++] = SQ_SEP;
    for (int i = 0; i < e->m; i++) seq[L++] = SQ_SYM0 + e->tgt[i];
    seq[L++] = SQ_EOS;
    return L;
}

/* Writes one row: the sequence minus its last token, then PAD; the target of
 * position t is token t + 1 where that token is y1..ym or EOS (the SEP
 * position, n + 1, predicts y1). */
static void fill_row(sq_batch *b, int row, const sq_example *e)
{
    int L = sq_sequence(e, b->seq);
    int32_t *ids = b->ids + (size_t)row * b->T, *tg = b->targets + (size_t)row * b->T;
    for (int t = 0; t < b->T; t++) {
        ids[t] = t < L - 1 ? b->seq[t] : SQ_PAD;
        tg[t] = (t > e->n && t < L - 1) ? b->seq[t + 1] : TG_IGNORE;
    }
    b->lens[row] = L - 1;
}

void sq_batch_fill(sq_batch *b, const sq_example *ex, int n)
{
    int T = 1;
    for (int i = 0; i < n; i++)
        if (ex[i].n + ex[i].m + 2 > T) T = ex[i].n + ex[i].m + 2;
    b->B = n;
    b->T = T;
    for (int i = 0; i < n; i++) fill_row(b, i, &ex[i]);
}

long sq_batch_draw(sq_batch *b, sq_task *t, long step, int B)
{
    size_t row = (size_t)b->cap_T + 1;
    long targets = 0;
    for (int i = 0; i < B; i++) {
        int32_t *src = b->pool + 2 * row * (size_t)i, *tgt = src + row;
        sq_example *e = &b->ex[i];
        sq_task_train_example(t, step, B, i, src, &e->n, tgt, &e->m);
        e->src = src;
        e->tgt = tgt;
        targets += e->m + 1;  /* y1..ym and EOS */
    }
    return targets;
}
