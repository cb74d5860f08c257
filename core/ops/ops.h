/* tapegrad: every core op. Each returns its output (a new arena tensor, or a
 * view where said), or NULL with the tape's error set; a NULL input gives NULL
 * and keeps the first message. Forward and backward of each op sit side by
 * side in core/ops/<family>.c. */
#ifndef TAPEGRAD_OPS_H
#define TAPEGRAD_OPS_H

#include "decode.h"
#include "mask.h"
#include "nn/conv.h"
#include "../engine/op.h"
#include "../engine/rng.h"
#include "../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- matmul (core/ops/matmul.c) ------------------------------------------
 * out = op(a) @ op(b) + bias, op = transpose when TG_TRANS_A / TG_TRANS_B.
 * a is [..., M, K] (or [..., K, M] with TG_TRANS_A), 2-D to 8-D.
 * b is [K, N] (or [N, K] with TG_TRANS_B): 2-D broadcast over a's batch dims,
 *   or with the same batch dims as a (batched).
 * bias is [N] or NULL. out is [..., M, N]. Through tg_gemm (core/kernels/blas.h):
 * tapegrad's own SGEMM in the float build, OpenBLAS's dgemm in the double.
 * Empty dims are allowed: K = 0 gives out = bias (or zeros), and every input
 * that requires a grad gets one, all zeros where nothing flows back. */
enum { TG_TRANS_A = 1, TG_TRANS_B = 2 };
tg_tensor *tg_matmul(tg_tape *t, tg_tensor *a, tg_tensor *b, tg_tensor *bias, unsigned flags);

/* ---- elementwise (core/ops/elementwise.c) --------------------------------
 * add/sub/mul/div broadcast as NumPy / PyTorch: shapes align from the last
 * dim and each pair of dims is equal or one of them 1 (or missing), which
 * stretches; out has the broadcast shape, and a stretched operand's grad is
 * summed over the dims it was stretched along. Anything else is an error
 * naming both shapes. x / 0 is +-inf, 0 / 0 NaN (IEEE, as PyTorch). */
tg_tensor *tg_add(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_sub(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_mul(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_div(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* a + b written over a's memory (b broadcasts to a's shape; the bits of
 * tg_add): the result shares a's data, and a holds the sum afterwards. Only for a temporary whose values nothing reads again:
 * no op has read it yet, and the op that made it never reads its output in
 * backward (matmul, embedding, dropout, add do not; exp, tanh, softmax do).
 * The transformer block's residual adds write over the branch's output,
 * which saves one [B, T, D] buffer per add. */
tg_tensor *tg_add_inplace(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* Elementwise, out has a's shape. Domain errors give what PyTorch gives, not
 * an error: log(x < 0), sqrt(x < 0), pow(x < 0, non-integer p) are NaN,
 * log(0) = -inf (anomaly mode reports them). */
tg_tensor *tg_scale(tg_tape *t, tg_tensor *a, double s);  /* s * a */
tg_tensor *tg_neg(tg_tape *t, tg_tensor *a);
tg_tensor *tg_abs(tg_tape *t, tg_tensor *a);              /* grad sign(a), 0 at 0 */
tg_tensor *tg_exp(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log(tg_tape *t, tg_tensor *a);
tg_tensor *tg_sqrt(tg_tape *t, tg_tensor *a);
tg_tensor *tg_pow(tg_tape *t, tg_tensor *a, double p);    /* a^p; p = 0: grad 0 */
tg_tensor *tg_sigmoid(tg_tape *t, tg_tensor *a);
tg_tensor *tg_tanh(tg_tape *t, tg_tensor *a);
tg_tensor *tg_relu(tg_tape *t, tg_tensor *a);
/* GELU, erf form (PyTorch's default approximate='none'). */
tg_tensor *tg_gelu(tg_tape *t, tg_tensor *a);
/* min(max(a, lo), hi) as torch.clamp (NaN stays NaN, lo > hi gives hi); the
 * grad passes where lo <= a <= hi. Pass -INFINITY or INFINITY for one side.
 * NaN bounds are an error. */
tg_tensor *tg_clamp(tg_tape *t, tg_tensor *a, double lo, double hi);
/* Sum / mean of all elements: a 0-d tensor. */
tg_tensor *tg_sum(tg_tape *t, tg_tensor *a);
tg_tensor *tg_mean(tg_tape *t, tg_tensor *a);

/* ---- reductions along a dim (core/ops/reduce.c) ----------------------------
 * Reduce dim `dim` of a (negative counts from the end: -1 is the last); out
 * is a's shape without that dim, or with it as 1 when keepdim (a 0-d a takes
 * dim 0 or -1 and gives itself). As PyTorch: sum over an empty dim is 0,
 * mean NaN, logsumexp -inf; max needs a non-empty dim. */
tg_tensor *tg_sum_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_mean_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
/* The values of torch.max(a, dim): NaN if any element is NaN; the gradient
 * goes to the first maximum (the first NaN) only. */
tg_tensor *tg_max_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
/* log sum exp, stable (max subtracted); a slice that is all -inf gives -inf
 * and zero grad (PyTorch: NaN grad). */
tg_tensor *tg_logsumexp_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);

/* ---- shape (core/ops/shape.c) ---------------------------------------------
 * reshape and rows_view (and squeeze / unsqueeze below) are VIEWS: they
 * share data and grad with a (no node, no copy). Every other shape op writes
 * a new tensor. */
/* a -1 dim is inferred */
tg_tensor *tg_reshape(tg_tape *t, tg_tensor *a, int ndim, const int *shape);
/* a[start : start + len] along the first dim (PyTorch's a.narrow(0, start, len)) */
tg_tensor *tg_rows_view(tg_tape *t, tg_tensor *a, int start, int len);
/* out.shape[i] = a.shape[perm[i]]; perm has a->ndim entries, negative ones
 * counting from the end (-1 is the last dim). */
tg_tensor *tg_permute(tg_tape *t, tg_tensor *a, const int *perm);
tg_tensor *tg_transpose(tg_tape *t, tg_tensor *a, int d0, int d1);
/* [B, L, H*dk] -> [B, H, L, dk] and back. */
tg_tensor *tg_split_heads(tg_tape *t, tg_tensor *x, int n_heads);
tg_tensor *tg_merge_heads(tg_tape *t, tg_tensor *x);
/* Concatenate n tensors along the last dim (all other dims equal):
 * tg_cat(t, xs, n, -1), named tg_concat (core/ops/cat.c). */
tg_tensor *tg_concat(tg_tape *t, tg_tensor *const *xs, int n);
/* a[..., start:start+len] along the last dim, start >= 0: tg_narrow of the
 * last dim, named tg_slice (core/ops/slice.c). */
tg_tensor *tg_slice(tg_tape *t, tg_tensor *a, int start, int len);

/* ---- softmax (core/ops/softmax.c) ---------------- */

/* Softmax over the last dim, stable (row max subtracted). */
tg_tensor *tg_softmax(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log_softmax(tg_tape *t, tg_tensor *a);
/* softmax(a * scale + mask) over the last dim of scores a [B, H, Lq, Lk]
 * (3-D [B, Lq, Lk] and 2-D [Lq, Lk] are read as B = 1 and/or H = 1).
 * Masked entries get exactly zero weight; a row with every key masked is all
 * zeros (PyTorch gives NaN there). mask may be NULL. */
tg_tensor *tg_softmax_masked(tg_tape *t, tg_tensor *a, const tg_mask *mask, double scale);

/* ---- normalisation (core/ops/norm.c) --------------------------------------
 * LayerNorm over the last dim C: x [..., C], weight and bias [C] (either may
 * be NULL), eps as torch.nn.LayerNorm (biased variance). */
tg_tensor *tg_layernorm(tg_tape *t, tg_tensor *x, tg_tensor *weight, tg_tensor *bias, double eps);
/* RMSNorm over the last dim C: y = x / sqrt(mean(x^2) + eps) * weight; x
 * [..., C], weight [C] or NULL, eps > 0 (nn.RMSNorm's, given explicitly). */
tg_tensor *tg_rmsnorm(tg_tape *t, tg_tensor *x, tg_tensor *weight, double eps);

/* ---- indexing (core/ops/index.c) -------------------------------------------
 * Rows of weight [V, D] picked by ids [B*T] (each checked in [0, V)): out is
 * [B, T, D]. Backward scatter-adds (repeated ids accumulate). */
tg_tensor *tg_embedding(tg_tape *t, tg_tensor *weight, const int32_t *ids, int B, int T);

/* ---- losses (core/ops/loss.c) ----------------------------------------------
 * Mean cross-entropy of logits [..., V] (rows N = all but the last dim) with
 * int32 targets [N]; targets equal to ignore_index are skipped; the mean is
 * over the others. When all are ignored the loss is 0 and logits get an
 * all-zero grad (PyTorch gives NaN). Fused log-softmax + NLL.
 * tg_cross_entropy_sum is the sum instead (PyTorch's reduction='sum'). */
#define TG_IGNORE (-100)
tg_tensor *tg_cross_entropy(tg_tape *t, tg_tensor *logits, const int32_t *targets, int ignore_index);
tg_tensor *tg_cross_entropy_sum(tg_tape *t, tg_tensor *logits, const int32_t *targets, int ignore_index);

/* ---- dropout (core/ops/dropout.c) -----------------------------------------
 * Zeroes each element with probability p and scales the rest by 1/(1-p);
 * identity (a itself, no node) when p == 0 or the tape is not training. */
tg_tensor *tg_dropout(tg_tape *t, tg_tensor *a, double p, tg_rng *rng);

/* ---- fused scaled-dot-product attention (core/ops/attention.c) -----------
 * out = softmax(Q K^T * scale + mask) V, for q [B, H, Lq, dk], k [B, Hkv, Lk, dk],
 * v [B, Hkv, Lk, dv]; out [B, H, Lq, dv]. scale <= 0 means 1/sqrt(dk).
 * Hkv dividing H is grouped-query attention (1: multi-query): query head h
 * reads key/value head h / (H / Hkv), PyTorch's enable_gqa=True.
 * Attention dropout (p, rng) applies to the weights when training.
 * When weights != NULL, *weights receives the attention weights
 * [B, H, Lq, Lk] (after masking, before dropout): a plain arena tensor to
 * read, valid until tg_tape_reset; no gradient flows back from it. Backward
 * does not need them: it recomputes them block by block (memory O(L)).
 * opts may be NULL (no mask, default scale, no dropout); an rng is required
 * when dropout > 0 and the tape is training. Dropout draws one number per weight in (b,h,i,j)
 * order, masked or not, so the stream does not depend on the mask.
 * The mask's additive [Lq, Lk], the bias and ALiBi add up (in that order). */
struct tg_sdpa_opts {
    const tg_mask *mask;     /* NULL: no mask */
    double scale;            /* <= 0: 1/sqrt(dk) */
    double dropout;          /* probability, 0 = off */
    tg_rng *rng;             /* required when dropout > 0 */
    tg_tensor *bias;         /* [B or 1, H, Lq, Lk] added to the scaled scores, with a gradient
                                (learned relative-position biases); NULL: none */
    const double *alibi;     /* [H] ALiBi slopes: head h adds alibi[h] * (j - i); NULL: none */
};
tg_tensor *tg_sdpa(tg_tape *t, tg_tensor *q, tg_tensor *k, tg_tensor *v,
                   const tg_sdpa_opts *opts, tg_tensor **weights);

/* The same attention with the heads read in place from packed projections,
 * as a [B, L, C] projection lays them out: no split/merge copies.
 * Head h of q is columns [q_col + h*dk, q_col + (h+1)*dk) of xq [B, Lq, Cq];
 * its k and v are columns [k_col + h*dk, ...+dk) and [v_col + h*dv, ...+dv) of
 * xkv [B, Lk, Ckv]. xq and xkv may be the same tensor (self-attention on a
 * packed qkv [B, L, 3E]: q_col 0, k_col E, v_col 2E); ranges may overlap.
 * out is [B, Lq, n_heads*dv], head h in columns [h*dv, (h+1)*dv): exactly
 * merge_heads(tg_sdpa(split_heads(q), split_heads(k), split_heads(v))) with
 * the same opts (masks, scale <= 0: 1/sqrt(dk), dropout stream in (b,h,i,j)
 * order) and the same *weights [B, H, Lq, Lk]. */
struct tg_sdpa_layout {
    int n_heads;             /* >= 1 */
    int dk, dv;              /* per-head widths of q/k and of v, >= 1 */
    int q_col;               /* first column of head 0's q in xq */
    int k_col, v_col;        /* first columns of head 0's k and v in xkv */
    int n_kv_heads;          /* key/value heads, dividing n_heads (0: n_heads); query head h
                                reads key/value head h / (n_heads / n_kv_heads) */
};
tg_tensor *tg_sdpa_heads(tg_tape *t, tg_tensor *xq, tg_tensor *xkv, const tg_sdpa_layout *lay,
                         const tg_sdpa_opts *opts, tg_tensor **weights);


/* ---- elementwise math and activations (core/ops/math.c, activation.c) -----
 * Out has a's shape; values are computed in double and rounded once. The
 * binary and ternary ones broadcast as tg_add. NaN in gives NaN out;
 * domain edges give PyTorch's values (log2(0) = -inf, rsqrt(0) = inf,
 * sign(NaN) = 0). Derivatives: core/ops/math.c, activation.c. */
tg_tensor *tg_sin(tg_tape *t, tg_tensor *a);
tg_tensor *tg_cos(tg_tape *t, tg_tensor *a);
tg_tensor *tg_exp2(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log2(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log10(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log1p(tg_tape *t, tg_tensor *a);
tg_tensor *tg_expm1(tg_tape *t, tg_tensor *a);
tg_tensor *tg_sign(tg_tape *t, tg_tensor *a);        /* grad 0 */
tg_tensor *tg_reciprocal(tg_tape *t, tg_tensor *a);
tg_tensor *tg_rsqrt(tg_tape *t, tg_tensor *a);
tg_tensor *tg_square(tg_tape *t, tg_tensor *a);
tg_tensor *tg_erf(tg_tape *t, tg_tensor *a);
/* log(e^a + e^b), stable */
tg_tensor *tg_logaddexp(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* a^b with b a tensor (torch.pow(a, b)); tg_pow takes a number */
tg_tensor *tg_pow_tensor(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* a + w (b - a); w a tensor (a 0-d one for a number) */
tg_tensor *tg_lerp(tg_tape *t, tg_tensor *a, tg_tensor *b, tg_tensor *w);
/* torch.nn.functional's; PyTorch's defaults: softplus beta 1 threshold 20,
 * leaky_relu 0.01, elu / celu alpha 1, hardtanh -1 and 1 */
tg_tensor *tg_silu(tg_tape *t, tg_tensor *a);
tg_tensor *tg_softplus(tg_tape *t, tg_tensor *a, double beta, double threshold);
tg_tensor *tg_leaky_relu(tg_tape *t, tg_tensor *a, double negative_slope);
tg_tensor *tg_elu(tg_tape *t, tg_tensor *a, double alpha);
tg_tensor *tg_selu(tg_tape *t, tg_tensor *a);
tg_tensor *tg_celu(tg_tape *t, tg_tensor *a, double alpha);
tg_tensor *tg_mish(tg_tape *t, tg_tensor *a);
tg_tensor *tg_hardswish(tg_tape *t, tg_tensor *a);
tg_tensor *tg_hardsigmoid(tg_tape *t, tg_tensor *a);
tg_tensor *tg_hardtanh(tg_tape *t, tg_tensor *a, double min_val, double max_val);
tg_tensor *tg_softsign(tg_tape *t, tg_tensor *a);
/* GELU, tanh form (PyTorch's approximate='tanh') */
tg_tensor *tg_gelu_tanh(tg_tape *t, tg_tensor *a);


/* ---- comparisons and selection (core/ops/compare.c) -------------------------
 * Broadcast as tg_add. eq ... ge give a 0/1 mask and never a grad. A cond or
 * mask is true where nonzero. where's grads go to a and b (cond gets none);
 * masked_fill broadcasts a and mask (PyTorch's out-of-place form). maximum / minimum propagate
 * NaN and split the grad half and half on ties (PyTorch). tg_max / tg_min
 * of every element are 0-d; their grad is shared evenly among the elements
 * equal to the result (PyTorch); an empty a is an error. */
tg_tensor *tg_eq(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_ne(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_lt(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_le(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_gt(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_ge(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_where(tg_tape *t, tg_tensor *cond, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_masked_fill(tg_tape *t, tg_tensor *a, tg_tensor *mask, double value);
tg_tensor *tg_maximum(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_minimum(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_max(tg_tape *t, tg_tensor *a);
tg_tensor *tg_min(tg_tape *t, tg_tensor *a);


/* ---- more reductions along a dim (core/ops/stats.c) ------------------------
 * dim and keepdim as tg_sum_dim. Empty dims as PyTorch: prod 1, var / std
 * NaN, norm 1 and 2 give 0; min, argmax, argmin and the inf norm are an
 * error. min is torch.min(a, dim).values (grad to the first minimum, NaN
 * wins); var / std divide by n - correction (1: Bessel's, 0: population);
 * std's grad is 0 where std is 0. norm is torch.linalg.vector_norm with ord
 * 1, 2 or INFINITY (its grad at ties of the inf norm is shared evenly, at a
 * zero 2-norm 0). argmax / argmin give the index of the first extreme (the
 * first NaN) as a value of a tensor (tapegrad has one dtype), never a grad.
 * For every element, reshape a to [-1] and reduce dim 0. */
tg_tensor *tg_min_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_prod_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_var_dim(tg_tape *t, tg_tensor *a, int dim, double correction, bool keepdim);
tg_tensor *tg_std_dim(tg_tape *t, tg_tensor *a, int dim, double correction, bool keepdim);
tg_tensor *tg_norm_dim(tg_tape *t, tg_tensor *a, double ord, int dim, bool keepdim);
tg_tensor *tg_argmax(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_argmin(tg_tape *t, tg_tensor *a, int dim, bool keepdim);


/* ---- scans, sort, topk along a dim (core/ops/scan.c) ------------------------
 * Out has a's shape (topk: k along dim). cumprod's grad is exact with zeros.
 * sort / topk: values with grads (each goes back to where it came from);
 * *indices, when not NULL, gets the source indices as a tensor of out's
 * shape without a grad. NaN sorts above every number (PyTorch); equal
 * values keep their order (PyTorch's stable=True; its topk leaves the order
 * of ties unspecified). topk's out is always sorted; k in [0, n]. */
tg_tensor *tg_cumsum(tg_tape *t, tg_tensor *a, int dim);
tg_tensor *tg_cumprod(tg_tape *t, tg_tensor *a, int dim);
tg_tensor *tg_sort(tg_tape *t, tg_tensor *a, int dim, bool descending, tg_tensor **indices);
tg_tensor *tg_topk(tg_tape *t, tg_tensor *a, int k, int dim, bool largest, tg_tensor **indices);


/* ---- losses with options (core/ops/cross_entropy.c, losses.c) ---------------
 * torch.nn.functional's, reduction TG_MEAN (0, the default), TG_SUM or
 * TG_NONE (one loss per element, or per row for cross-entropy). */
typedef enum tg_reduction { TG_MEAN, TG_SUM, TG_NONE } tg_reduction;
/* TG_CE_OPTS_DEFAULT is PyTorch's defaults (targets of -100 ignored); a
 * zeroed struct ignores no target, so a -100 there is an out-of-range error,
 * never a silently skipped class. */
typedef struct tg_ce_opts {
    tg_tensor *weight;        /* [C] class weights (no grad flows to them), or NULL */
    double label_smoothing;   /* in [0, 1] */
    tg_reduction reduction;
    int ignore_index;         /* with ignore: class targets equal to it count for nothing */
    bool ignore;
} tg_ce_opts;
#define TG_CE_OPTS_DEFAULT {NULL, 0, TG_MEAN, TG_IGNORE, true}
/* logits [..., C] (the class dim is the last; PyTorch's is dim 1), with class
 * targets [rows] (int32) or probabilities of logits' shape (with a grad):
 * exactly one of the two. opts NULL: the defaults. The mean divides by the
 * summed weights of the counted rows (class targets) or by the rows
 * (probabilities), as PyTorch; all rows ignored: 0 and zero grads (PyTorch:
 * NaN). TG_NONE gives [...] (logits' shape without C). */
tg_tensor *tg_cross_entropy_ex(tg_tape *t, tg_tensor *logits, const int32_t *targets, tg_tensor *probs,
                               const tg_ce_opts *opts);
/* nll_loss of log-probabilities [..., C] (weight, ignore_index, reduction; no smoothing) */
tg_tensor *tg_nll_loss(tg_tape *t, tg_tensor *logp, const int32_t *targets, const tg_ce_opts *opts);
/* target has input's shape; grads flow to both */
tg_tensor *tg_mse_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction);
tg_tensor *tg_l1_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction);
tg_tensor *tg_smooth_l1_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction, double beta);
tg_tensor *tg_huber_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction, double delta);
/* input: probabilities in [0, 1] (anything else is an error); weight
 * broadcasts to input's shape (no grad) or is NULL; logs clamped at -100 */
tg_tensor *tg_binary_cross_entropy(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                                   tg_reduction reduction);
/* input: logits; pos_weight (e.g. [C], broadcast) and weight may be NULL */
tg_tensor *tg_binary_cross_entropy_with_logits(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                                               tg_tensor *pos_weight, tg_reduction reduction);

/* ALiBi's slopes for n heads: 2^(-8(h+1)/n) for n a power of 2, else the
 * paper's interpolation (core/ops/attn_bias.c). */
void tg_alibi_slopes(int n_heads, double *slopes);

/* ---- rotary position embeddings (core/ops/rope.c) --------------------------
 * x [B, L, C] -> the same shape: n_heads heads of d_head columns from column
 * col have their first rot dims (even; 0: all d_head) rotated pairwise,
 * LLaMA's apply_rotary_emb: pair (x_2i, x_2i+1) of position p by the angle
 * p / base^(2i / rot). Row b's positions are pos0[b] + 0 .. L-1 (pos0 NULL:
 * 0 ..), so a decoding step passes its positions. Other columns are copied.
 * An odd rot, rot > d_head, columns outside x, a bad base or a negative
 * position are errors. */
typedef struct tg_rope_opts {
    int col, n_heads, d_head;
    int rot;                 /* rotated dims per head, even; 0: d_head */
    double base;             /* 0: 10000 */
    const int32_t *pos0;     /* [B] or NULL */
} tg_rope_opts;
tg_tensor *tg_rope(tg_tape *t, tg_tensor *x, const tg_rope_opts *opts);

/* ---- shape and indexing along any dim (core/ops/slice.c, cat.c, layout.c,
 * tri.c, gather.c; squeeze / unsqueeze in shape.c) --------------------------
 * A dim counts from the end when negative (-1 is the last); out-of-range
 * dims, sizes and indices are errors naming the op, the value and a's shape.
 * Every op writes a new tensor except squeeze / unsqueeze (views, as
 * reshape); each backward is hand-written beside its forward. */
/* a.narrow(dim, start, len); start < 0 counts from the end. */
tg_tensor *tg_narrow(tg_tape *t, tg_tensor *a, int dim, int start, int len);
/* a[.., start:end:step, ..] along dim (Python's slice: negative bounds count
 * from the end, out-of-range bounds clamp); step >= 1 (PyTorch has no
 * negative step: use tg_flip). */
tg_tensor *tg_slice_dim(tg_tape *t, tg_tensor *a, int dim, int start, int end, int step);
/* torch.split(a, size, dim): pieces of `size` along dim (the last smaller)
 * into outs[0..count), count = ceil(n / size) (1 when the dim is empty);
 * returns count, or -1 when it exceeds max_outs or on another error. */
int tg_split(tg_tape *t, tg_tensor *a, int size, int dim, tg_tensor **outs, int max_outs);
/* torch.split(a, sizes, dim): n pieces of sizes[i], which must sum to the
 * dim; 0 or -1. */
int tg_split_sizes(tg_tape *t, tg_tensor *a, const int *sizes, int n, int dim, tg_tensor **outs);
/* torch.chunk: pieces of ceil(n / chunks), so possibly fewer than chunks;
 * outs has room for chunks; returns the count or -1. */
int tg_chunk(tg_tape *t, tg_tensor *a, int chunks, int dim, tg_tensor **outs);
/* Join n tensors along dim: every other dim equal (PyTorch also skips 1-D
 * empty tensors of another shape; tapegrad does not). */
tg_tensor *tg_cat(tg_tape *t, tg_tensor *const *xs, int n, int dim);
/* Join n tensors of one shape along a new dim (0 .. ndim; -1 appends). */
tg_tensor *tg_stack(tg_tape *t, tg_tensor *const *xs, int n, int dim);
/* a's data (shared, as PyTorch) under a header that requires no grad: what
 * is computed from it sends no grad back to a. */
tg_tensor *tg_detach(tg_tape *t, tg_tensor *a);
/* a with a size-1 dim inserted at dim (0 .. ndim; negative counts from the
 * end of ndim + 1). A view. */
tg_tensor *tg_unsqueeze(tg_tape *t, tg_tensor *a, int dim);
/* a without dim `dim` when its size is 1, else unchanged (PyTorch's
 * squeeze(dim)); dim = TG_SQUEEZE_ALL drops every size-1 dim. A view. */
#define TG_SQUEEZE_ALL INT32_MIN
tg_tensor *tg_squeeze(tg_tape *t, tg_tensor *a, int dim);
/* Reverse the n given dims. */
tg_tensor *tg_flip(tg_tape *t, tg_tensor *a, const int *dims, int n);
/* out[.., (j + shift) mod n, ..] = a[.., j, ..] along one dim (torch.roll
 * with one shift and one dim: roll again for more); dim = TG_ROLL_FLAT rolls
 * the elements in row-major order (torch.roll without dims). A 0-d a takes
 * dim 0 or -1. */
#define TG_ROLL_FLAT INT32_MIN
tg_tensor *tg_roll(tg_tape *t, tg_tensor *a, int shift, int dim);
/* F.pad(a, pads, mode='constant', value): pads[2i], pads[2i+1] go before
 * and after dim ndim-1-i (the last dim first); negative pads crop. */
tg_tensor *tg_pad(tg_tape *t, tg_tensor *a, const int *pads, int n_pads, double value);
/* a.repeat(reps): n >= a->ndim repeats, a padded with leading 1-dims. */
tg_tensor *tg_repeat(tg_tape *t, tg_tensor *a, const int *reps, int n);
/* a.expand(shape) / torch.broadcast_to: size-1 dims of a stretch, new dims
 * go in front, -1 keeps a's size. A copy (PyTorch returns a view); the
 * backward sums over the stretched dims. */
tg_tensor *tg_expand(tg_tape *t, tg_tensor *a, int ndim, const int *shape);
/* The lower / upper triangle of the last two dims, diagonal k (0 the main,
 * > 0 above it); the rest is 0. */
tg_tensor *tg_tril(tg_tape *t, tg_tensor *a, int diagonal);
tg_tensor *tg_triu(tg_tape *t, tg_tensor *a, int diagonal);
/* torch.diag: a 1-D a [n] gives the [n+|k|, n+|k|] matrix with a on
 * diagonal k; a 2-D a gives its diagonal k (length 0 when k is off the matrix). */
tg_tensor *tg_diag(tg_tape *t, tg_tensor *a, int diagonal);

/* An integer index array: int32_t or int64_t values, row-major. */
typedef struct tg_index {
    const void *data;
    bool i64;                 /* data is int64_t (else int32_t) */
    int ndim;
    int shape[TG_MAX_DIMS];
} tg_index;
/* torch.gather: ix has a's number of dims, no larger than a but along dim;
 * out has ix's shape, out[i] = a[i with i_dim = ix[i]]. A 0-d a or ix is
 * read as [1] (scatter_add too), as PyTorch. */
tg_tensor *tg_gather(tg_tape *t, tg_tensor *a, int dim, const tg_index *ix);
/* a.scatter_add(dim, ix, src): out = a, then out[i with i_dim = ix[i]] +=
 * src[i] for every i of ix (no larger than src, nor than a but along dim). */
tg_tensor *tg_scatter_add(tg_tape *t, tg_tensor *a, int dim, const tg_index *ix, tg_tensor *src);
/* torch.index_select: ix 1-D [n]; out is a with dim of size n, its slice j
 * a's slice ix[j]. */
tg_tensor *tg_index_select(tg_tape *t, tg_tensor *a, int dim, const tg_index *ix);
/* a.index_add(dim, ix, src, alpha=alpha): out = a, then out's slice ix[j]
 * += alpha * src's slice j; src is a with dim of size n. */
tg_tensor *tg_index_add(tg_tape *t, tg_tensor *a, int dim, const tg_index *ix, tg_tensor *src, double alpha);

/* ---- creation (core/ops/create.c) --------------------------------------------
 * New arena tensors that require no grad and record no node (set
 * requires_grad to make one a leaf). Random ones draw from rng one element
 * after another in row-major order (randn: tg_rng_normal per element), so
 * one seed gives the same values on any number of threads; the values are
 * not PyTorch's (its generator differs), the distributions are. */
/* [ceil((end - start) / step)] values start + i * step; step != 0 and
 * pointing from start towards end (PyTorch's errors). */
tg_tensor *tg_arange(tg_tape *t, double start, double end, double step);
/* [steps] evenly spaced from start to end, both included (steps >= 0). */
tg_tensor *tg_linspace(tg_tape *t, double start, double end, int steps);
tg_tensor *tg_full(tg_tape *t, int ndim, const int *shape, double value);
tg_tensor *tg_zeros(tg_tape *t, int ndim, const int *shape);
tg_tensor *tg_ones(tg_tape *t, int ndim, const int *shape);
/* [n, m] with ones on the diagonal (torch.eye(n, m)). */
tg_tensor *tg_eye(tg_tape *t, int n, int m);
/* Uniform in [0, 1). */
tg_tensor *tg_rand(tg_tape *t, int ndim, const int *shape, tg_rng *rng);
/* Standard normal. */
tg_tensor *tg_randn(tg_tape *t, int ndim, const int *shape, tg_rng *rng);
/* Uniform integers in [low, high), as tg_real: the range must be exactly
 * representable (|values| <= 2^24 in float32, 2^53 in double). */
tg_tensor *tg_randint(tg_tape *t, int64_t low, int64_t high, int ndim, const int *shape, tg_rng *rng);

#ifdef __cplusplus
}
#endif

#endif
