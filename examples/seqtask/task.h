/* seqtask: the tasks, the data file and the batches (docs/FORMATS.md).
 *
 * Tokens: PAD=0, BOS=1, SEP=2, EOS=3, symbol s (0-based, as written in data
 * files and --input) is token 4 + s. An example is a source x1..xn and a
 * target y1..ym; its sequence is BOS x1..xn SEP y1..ym EOS, n + m + 3 tokens,
 * at most Tmax = 2 * max_len + 3.
 *
 * A batch holds B sequences right-padded with PAD. The model reads the
 * sequence without its last token (EOS never predicts anything), so
 * T = longest sequence - 1, and targets[b, t] = seq[b, t + 1] at the
 * positions that predict y1..ym and EOS (t = n+1 .. n+m+1) and TG_IGNORE
 * everywhere else.
 *
 * Generated tasks split the space of sources in two by a fixed hash: one
 * source in SQ_HOLDOUT_MOD is held out. Training batches only draw the
 * others, evaluation sets only the held-out ones, so an evaluation of any
 * size never sees a training example. The batch of step k is a pure
 * function of (seed, k): a resumed run replays the same stream with no
 * state to save.
 */
#ifndef SEQTASK_TASK_H
#define SEQTASK_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tapegrad/core/engine/error.h>

enum { SQ_PAD = 0, SQ_BOS = 1, SQ_SEP = 2, SQ_EOS = 3, SQ_SYM0 = 4 };

#define SQ_HOLDOUT_MOD 16

typedef enum sq_task_kind { SQ_TASK_COPY, SQ_TASK_REVERSE, SQ_TASK_SORT, SQ_TASK_DATA } sq_task_kind;

/* "copy" / "reverse" / "sort" / "data". */
const char *sq_task_name(sq_task_kind k);
/* -1 when s names no generated task ("data" is not accepted here). */
int sq_task_parse(const char *s);

/* One example: symbols 0-based, src[n], tgt[m]. */
typedef struct sq_example {
    const int32_t *src, *tgt;
    int n, m;
} sq_example;

/* Examples read from a data file (or built in memory). */
typedef struct sq_dataset {
    int count, cap;
    sq_example *ex;
    int32_t *pool;               /* every example's symbols */
    size_t pool_used, pool_cap;
    uint64_t hash;               /* FNV-1a of the examples, to recognise the file on --resume */
} sq_dataset;

/* The task: where examples come from. */
typedef struct sq_task {
    sq_task_kind kind;
    int n_symbols, min_len, max_len;
    uint64_t seed;
    const sq_dataset *data;      /* SQ_TASK_DATA: the training lines */
    bool shuffle;                /* SQ_TASK_DATA: epoch-wise permutation, else file order */
    int32_t *perm;               /* the permutation of perm_epoch (data.count entries) */
    long perm_epoch;
} sq_task;

static inline int sq_tmax(int max_len) { return 2 * max_len + 3; }

/* y for x under a generated task (copy, reverse, sort); m = n. */
void sq_task_target(sq_task_kind k, const int32_t *src, int n, int32_t *tgt);
/* True when the source belongs to the held-out part of the space. */
bool sq_is_heldout(const int32_t *src, int n);

/* Reads a data file: one example a line, source symbols, a tab, target
 * symbols, each an integer in [0, n_symbols) separated by spaces. Empty
 * lines are skipped. A line that does not parse, a symbol out of range, an
 * empty side or a sequence longer than Tmax (= 2 * max_len + 3) is refused
 * with "FILE:LINE: what" in tg_error(); so is a file with no example.
 * 0, or -1 with *out untouched. */
int sq_data_load(const char *path, int n_symbols, int max_len, sq_dataset **out);
sq_dataset *sq_data_new(void);
int sq_data_add(sq_dataset *d, const int32_t *src, int n, const int32_t *tgt, int m);
void sq_data_free(sq_dataset *d);

/* Parses "7 3 9 4" (symbols separated by spaces) into src (room for max).
 * Returns the count, or -1 with a message in tg_error(). */
int sq_parse_symbols(const char *s, int n_symbols, int32_t *src, int max);

/* The task for a generated kind or a dataset. 0, or -1 on out of memory. */
int sq_task_init(sq_task *t, sq_task_kind kind, int n_symbols, int min_len, int max_len,
                 uint64_t seed, const sq_dataset *data, bool shuffle);
void sq_task_free(sq_task *t);

/* Training example i of step k's batch of B (sources from the training part
 * of the space). src/tgt need room for Tmax symbols. */
void sq_task_train_example(sq_task *t, long step, int B, int i, int32_t *src, int *n, int32_t *tgt,
                           int *m);

/* An evaluation set of `count` held-out examples of a generated task. */
sq_dataset *sq_task_eval_set(const sq_task *t, int count);

/* ---- batches ------------------------------------------------------------ */

typedef struct sq_batch {
    int B, T;                    /* this batch */
    int cap_B, cap_T;            /* allocated */
    int32_t *ids;                /* [B, T], PAD to the right */
    int32_t *targets;            /* [B, T], TG_IGNORE except y1..ym and EOS */
    int32_t *lens;               /* [B] tokens read by the model */
    sq_example *ex;              /* [cap_B] the examples of a training batch */
    int32_t *pool;               /* their symbols: 2 * (cap_T + 1) per example */
    int32_t *seq;                /* [cap_T + 1] scratch */
} sq_batch;

/* Room for cap_B sequences of up to cap_T + 1 tokens (cap_T = Tmax - 1).
 * 0, or -1 with "out of memory for the batch buffers: N MiB (B sequences x
 * T positions)". */
int sq_batch_init(sq_batch *b, int cap_B, int cap_T);
void sq_batch_free(sq_batch *b);
/* Fills b from n examples (n <= cap_B, each n + m + 3 <= cap_T + 1). */
void sq_batch_fill(sq_batch *b, const sq_example *ex, int n);
/* Writes sequence tokens BOS x SEP y EOS into seq; returns its length. */
int sq_sequence(const sq_example *e, int32_t *seq);
/* The B examples of training step k's batch into b->ex (sq_batch_fill makes
 * tensors of any run of them). Returns the batch's target tokens. */
long sq_batch_draw(sq_batch *b, sq_task *t, long step, int B);

#endif
