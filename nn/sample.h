/* tapegrad: sampling a token from logits, and generating text with the
 * key/value cache.
 *
 * The filters are HuggingFace's top_k_top_p_filtering (nanoGPT's sample for
 * top-k), in this order on one row of logits [V]:
 *   1. temperature: logits / temperature (<= 0: greedy, the argmax, the first
 *      of equal maxima as torch.argmax);
 *   2. top-k: keep the logits >= the k-th largest (ties with it are kept, so
 *      more than k may survive);
 *   3. top-p: sort descending (stable: equal logits in index order), softmax,
 *      cumulative sum; remove the tokens whose cumulative probability is above
 *      p, shifted right by one so the first token past p is kept (the most
 *      likely token always is);
 *   4. softmax over what is left: the probabilities tg_sample draws from
 *      (removed tokens get exactly 0).
 * A draw is one tg_rng_uniform u, the first token whose cumulative
 * probability exceeds u (multinomial with one sample): a seed gives the same
 * tokens on every machine and in both builds but for a u within rounding of a
 * boundary. -inf logits are allowed (a banned token); NaN or +inf, or every
 * logit -inf, are errors.
 */
#ifndef TAPEGRAD_NN_SAMPLE_H
#define TAPEGRAD_NN_SAMPLE_H

#include <stdint.h>

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_sample_opts {
    double temperature; /* <= 0: greedy (argmax); 1: the model's distribution */
    int top_k;          /* 0: off; else keep the k most likely (and ties), k >= 1 */
    double top_p;       /* 0 or >= 1: off; else the nucleus of mass p, p in (0, 1) */
} tg_sample_opts;

/* probs [V] <- the distribution tg_sample draws from for logits [V]
 * (greedy: 1 at the argmax, 0 elsewhere). o NULL: temperature 1, no filter.
 * 0, or -1 with tg_error() naming what is wrong (NULL arrays, V <= 0, a
 * negative top_k, a top_p or temperature that is negative or NaN, NaN or
 * +inf logits, every logit -inf, out of memory). */
int tg_sample_probs(tg_real *probs, const tg_real *logits, int V, const tg_sample_opts *o);

/* *token <- one token id in [0, V) drawn from logits [V] with rng (not read
 * when greedy; may then be NULL). 0, or -1 with tg_error() as
 * tg_sample_probs (and a NULL rng when sampling). */
int tg_sample(int32_t *token, const tg_real *logits, int V, const tg_sample_opts *o, tg_rng *rng);

/* Text from a tg_model, one row: prefill prompt [n_prompt] (tg_model_prefill
 * into a tg_kv_cache of its own), then sample a token from the last logits,
 * decode it (tg_model_decode), and so on. out [max_new] receives the new
 * tokens, *n_out how many. Generation stops after max_new tokens, after a
 * token of stop [n_stop] (NULL when n_stop is 0; the stop token is written
 * to out, as HuggingFace's generate keeps its eos), or when the sequence fills the model's context (n_prompt +
 * *n_out == max_len: the model reads no longer sequence; not an error, as
 * *n_out < max_new without a stop token says). The tokens are those of
 * sampling from whole tg_model_forward passes over the growing sequence
 * with the same rng. Inference on a tape of its own: no dropout, no
 * gradient. 0, or -1 with tg_error() naming what is wrong (NULL arguments,
 * an uninitialised model, n_prompt outside [1, max_len], a prompt or stop
 * token outside [0, vocab), max_new < 0, n_stop < 0, bad sampling options,
 * out of memory); out then holds the tokens made so far and *n_out their
 * count. */
int tg_model_generate(const tg_model *m, int32_t *out, int max_new, const int32_t *prompt, int n_prompt,
                      const tg_sample_opts *o, const int32_t *stop, int n_stop, tg_rng *rng, int *n_out);

#ifdef __cplusplus
}
#endif

#endif
