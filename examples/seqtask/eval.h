/* seqtask: greedy decoding and held-out accuracy.
 *
 * Decoding feeds BOS x1..xn SEP and appends the most likely token until EOS
 * or until the sequence fills Tmax. To evaluate a batch it first runs one
 * teacher-forced pass: under a causal mask the greedy output agrees with the
 * target up to the first position where the teacher-forced prediction is
 * wrong, and takes that wrong token there. So a correct example costs one
 * pass, and only the failures are decoded further, token by token. The
 * result is exactly greedy decoding, at the cost of about one forward pass
 * once the model is good. That pass also fills a key/value cache
 * (tg_model_prefill), from which the failures are decoded on, all pending
 * rows one token per decode (tg_model_decode): each new token costs O(length),
 * not a pass over the whole prefix, a finished row costs nothing more, and
 * memory stays O(length).
 *
 * Exact-sequence accuracy: the output is y1..ym EOS. Token accuracy: of the
 * m + 1 expected tokens (y1..ym, EOS), those the output has at the same
 * position.
 *
 * The decoder owns a tape of its own with recording and training off.
 */
#ifndef SEQTASK_EVAL_H
#define SEQTASK_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tapegrad/core/engine/tape.h>
#include <tapegrad/nn/model.h>
#include "task.h"

typedef struct sq_decoder {
    const tg_model *m;
    tg_tape *tape;
    int tmax, cap;               /* Tmax; rows per forward pass */
    sq_batch batch;              /* teacher-forced passes */
    int32_t *seq;                /* [cap, tmax] the rows being decoded */
    int *len, *row;              /* [cap] tokens so far; the row in each cache row of a decode */
    bool *done;                  /* [cap] */
    int32_t *ids, *pos;          /* [cap] tokens and positions of a decode */
    tg_kv_cache kv;              /* keys and values of cap rows of Tmax positions */
    const tg_tensor *hm;         /* head mask of the current evaluation */
} sq_decoder;

int sq_decoder_init(sq_decoder *d, const tg_model *m);
void sq_decoder_free(sq_decoder *d);

typedef struct sq_eval_result {
    long examples, exact;
    long tokens, tokens_ok;
} sq_eval_result;

static inline double sq_exact_acc(const sq_eval_result *r)
{
    return r->examples ? (double)r->exact / (double)r->examples : 0;
}
static inline double sq_token_acc(const sq_eval_result *r)
{
    return r->tokens ? (double)r->tokens_ok / (double)r->tokens : 0;
}

/* Decodes every example of set (head_mask: float [layers, heads], 0 silencing
 * a head, or NULL) and
 * counts. The first `show` failures are printed to f as input / expected /
 * got (f may be NULL). 0, or -1 with the tape's message. */
int sq_evaluate(sq_decoder *d, const sq_dataset *set, const tg_tensor *head_mask, sq_eval_result *r,
                FILE *f, int show);

/* Greedy output of one source (symbols 0-based): the generated tokens
 * (symbols as tokens, ending in EOS unless Tmax was reached) in out (room for
 * Tmax), their count in *n_out. */
int sq_generate(sq_decoder *d, const int32_t *src, int n, int32_t *out, int *n_out);
/* A source of n symbols fits the model (BOS, the source, SEP and at least
 * one generated token within Tmax); sq_generate refuses one that does not. */
bool sq_generate_fits(const sq_decoder *d, int n);

/* "3" for token 7 (symbol 3), "BOS", "SEP", "EOS", "PAD" for the others. */
const char *sq_token_str(int32_t tok, char *buf, size_t len);
/* Tokens as text separated by spaces, symbols numbered from 0. */
void sq_print_tokens(FILE *f, const int32_t *tok, int n);

#endif
