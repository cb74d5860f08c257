/* tapegrad internal: pieces shared between op families (not installed API). */
#ifndef TAPEGRAD_OPS_INTERNAL_H
#define TAPEGRAD_OPS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nn/mask.h"
#include "../engine/op.h"
#include "../engine/tape.h"
#include "../kernels/threads.h"
#include "../kernels/vmath.h"

/* ---- dispatch: the first line of every public op (docs/DESIGN.md "Dtypes") ----
 * TG_DISPATCH(fn, x, args) looks at tensor x:
 *   the other float type:   returns that type's copy of fn called with args;
 *   bfloat16 or float16:    x computes in float32: it is widened (tg_to, its
 *                           grad flows back), fn runs on it, and a float32
 *                           result is rounded back to x's type (an index or a
 *                           mask result is left as it is).
 *   TG_DISPATCH(tg_exp, a, (t, a));          (t names the tape)
 * TG_DISPATCH_SAME(fn, args, x, y...) is the same for an op whose float
 * operands share x's type (matmul, linear, conv, norms): a half x widens
 * every listed operand of its type. TG_DISPATCH_PROMOTED(fn, args, x, y...)
 * first promotes the listed operands (PyTorch's rule, tg_dtype_promoted):
 * the copy of the promoted type, or float32 for a half one, computes.
 * TG_DISPATCH_OTHER(fn, x, args) only reaches the other copy: for a function
 * that returns no tensor (a split), whose input check then refuses a half x. */
#define TG_DISPATCH(fn, x, args) TG_DISPATCH_SAME_(fn, #fn, fn##_other_copy, args, x)
#define TG_DISPATCH_SAME(fn, args, ...) TG_DISPATCH_SAME_(fn, #fn, fn##_other_copy, args, __VA_ARGS__)
#define TG_DISPATCH_PROMOTED(fn, args, ...) TG_DISPATCH_PROMOTED_(fn, #fn, fn##_other_copy, args, __VA_ARGS__)
#define TG_DISPATCH_OTHER(fn, x, args) \
    TG_DISPATCH_(fn, #fn, fn##_other_copy, (x) && (x)->magic == TG_TENSOR_LIVE && (x)->dtype == TG_OTHER_DTYPE, args)
/* Each macro above turns fn into its name and local before passing it on:
 * passed as it is, the renaming header would expand it first. */
#define TG_DISPATCH_SAME_(fn, name, local, args, ...)                                              \
    do {                                                                                           \
        tg_tensor **const opnds_[] = {TG_ADDRS_(__VA_ARGS__)};                                     \
        const tg_tensor *first_ = *opnds_[0];                                                      \
        bool live_ = first_ && first_->magic == TG_TENSOR_LIVE;                                    \
        TG_DISPATCH_(fn, name, local, live_ && first_->dtype == TG_OTHER_DTYPE, args);             \
        if (live_ && tg_dtype_is_half(first_->dtype)) TG_HALF_(fn, name, args, first_->dtype, opnds_); \
    } while (0)
#define TG_DISPATCH_PROMOTED_(fn, name, local, args, ...)                                          \
    do {                                                                                           \
        tg_tensor **const opnds_[] = {TG_ADDRS_(__VA_ARGS__)};                                     \
        tg_dtype promoted_ = tg_dtype_promoted((tg_tensor *const[]){__VA_ARGS__},                  \
                                               (int)(sizeof opnds_ / sizeof *opnds_));             \
        TG_DISPATCH_(fn, name, local, promoted_ == TG_OTHER_DTYPE, args);                          \
        if (tg_dtype_is_half(promoted_)) TG_HALF_(fn, name, args, promoted_, opnds_);              \
    } while (0)
/* The operands of dtype half in opnds widened, fn called, its result rounded back. */
#define TG_HALF_(fn, name, args, half, opnds)                                                      \
    do {                                                                                           \
        tg_dtype half_ = (half);                                                                   \
        if (!tg_half_widen(t, name, opnds, (int)(sizeof opnds / sizeof *opnds), half_)) return NULL; \
        return tg_half_round(t, fn args, half_);                                                   \
    } while (0)
/* &a, &b, ... of up to four operands */
#define TG_ADDRS_(...) TG_ADDRS_PICK_(__VA_ARGS__, TG_ADDRS4_, TG_ADDRS3_, TG_ADDRS2_, TG_ADDRS1_, _)(__VA_ARGS__)
#define TG_ADDRS_PICK_(a, b, c, d, pick, ...) pick
#define TG_ADDRS1_(a) &(a)
#define TG_ADDRS2_(a, b) &(a), &(b)
#define TG_ADDRS3_(a, b, c) &(a), &(b), &(c)
#define TG_ADDRS4_(a, b, c, d) &(a), &(b), &(c), &(d)

/* core/ops/pointwise/to.c: each live *x[k] of dtype half replaced by its
 * float32 widening (op names the op in errors: a stale one is refused), and
 * a float32 r rounded to half (any other r returned as it is; NULL stays). */
bool tg_half_widen(tg_tape *t, const char *op, tg_tensor **const *x, int n, tg_dtype half);
tg_tensor *tg_half_round(tg_tape *t, tg_tensor *r, tg_dtype half);

/* A tg_mask read for scores [B, H, Lq, Lk] of this copy's type (core/ops/nn/mask.c):
 * raw arrays, each NULL when its part is not set. */
typedef struct tg_mask_rt {
    bool causal;
    int window;
    int Lq, Lk;
    const int32_t *lens;      /* [B] */
    const uint8_t *pad;       /* [B, Lk], 1 = ignore the key */
    const tg_real *pad_add;   /* [B, Lk], added */
    const uint8_t *deny;      /* attn plane (b, h) [Lq, Lk] at b*sb + h*sh: 1 = not allowed */
    const tg_real *add;       /* attn plane (b, h) [Lq, Lk] at b*sb + h*sh: added */
    size_t sb, sh;            /* in elements; 0: the same plane for every b / h */
} tg_mask_rt;
/* core/ops/nn/mask.c: checks m against scores [B, H, Lq, Lk] (a negative
 * window, key_lens outside [0, Lk], a tensor's liveness, dtype and shape,
 * NaN or +inf in a float mask) and reads it into *r: a float mask converted
 * to this copy's type, key_lens to int32, and everything copied into the
 * arena when copy (for backward). On a problem stores "<op>: mask ...:
 * <shapes>" and returns false. m NULL: an empty *r. */
bool tg_mask_read(tg_tape *t, const tg_mask *m, int B, int H, int Lq, int Lk, bool copy, const char *op,
                  const char *shapes, tg_mask_rt *r);
/* Whether r needs a visibility array (a rule besides key_lens and the
 * additive parts, whose -inf mask by themselves). */
bool tg_mask_rt_rules(const tg_mask_rt *r);
/* Whether the visibility of plane (b, h) may differ from that of (b', h'). */
static inline bool tg_mask_rt_per_b(const tg_mask_rt *r) { return r->lens || r->pad || r->pad_add || r->sb; }
static inline bool tg_mask_rt_per_h(const tg_mask_rt *r) { return r->sh != 0; }
/* The offset of plane (b, h) in r's attn arrays. */
static inline size_t tg_mask_rt_plane(const tg_mask_rt *r, int b, int h)
{
    return (size_t)b * r->sb + (size_t)h * r->sh;
}

/* core/ops/nn/softmax.c: softmax of `rows` rows of n entries,
 * y = softmax(x * scale + add) where vis allows (masked: exactly 0; a row
 * with nothing visible: all 0); x may equal y; vis is [rows, n] or NULL, add
 * has rows ld_add apart or is NULL. stats, when not NULL, receives per row
 * (max, 1 / sum of exps) [rows, 2], max -inf for a row with nothing visible. */
void tg_softmax_block(const tg_real *x, tg_real *y, size_t rows, int n, tg_real scale,
                      const uint8_t *vis, const tg_real *add, int ld_add, tg_real *stats);
/* The same rows from the same x and the stats tg_softmax_block wrote: the
 * same bits, without the row max and sum (attention's recomputing backward). */
void tg_softmax_block_redo(const tg_real *x, tg_real *y, size_t rows, int n, tg_real scale,
                           const uint8_t *vis, const tg_real *add, int ld_add, const tg_real *stats);

/* core/ops/nn/mask.c: rows [i0, i0 + rows) of plane (b, h)'s [Lq, Lk]
 * visibility, the first n keys of each (n <= Lk), into vis [rows, n]. */
void tg_mask_fill_rows(const tg_mask_rt *m, int b, int h, int i0, int rows, int n, uint8_t *vis);
/* core/ops/nn/mask.c: a bound past which no key is visible to queries 0..i of batch
 * element b (Lk when only the tensors hide keys). */
int tg_mask_keys_end(const tg_mask_rt *m, int b, int i);

/* core/ops/nn/attention.c, for tests and benchmarks: query rows per block
 * (0: the size rule) and materialise the weights for backward (1), recompute
 * them (0), or follow the size rule (-1). Process-wide. */
void tg_sdpa_tune(int rows, int materialise);
/* core/ops/nn/attention.c: whether a recorded attention op of these dims keeps
 * its weights [B, H, Lq, Lk] for backward (else it recomputes them). */
bool tg_sdpa_materialises(int B, int H, int Lq, int Lk);

/* core/ops/nn/attn_bias.c: what is added to the scaled scores of plane (b, h)
 * of attention: the mask's float attn plane and float key_padding row, a bias
 * [bias_b, H, Lq, Lk] (bias_b 1: every batch element's), ALiBi slopes [H]
 * (m_h * (j - i), i the query's position pos0[b] + row, pos0 NULL: row).
 * Each may be NULL. */
typedef struct tg_attn_bias {
    tg_mask_rt mask;
    const tg_real *bias;
    const double *alibi;
    const int32_t *pos0;
    int bias_b, H, Lq, Lk;
} tg_attn_bias;
/* The terms of rows [i0, i0 + nr), keys [0, n), *ld apart: NULL when none,
 * a pointer into a single term's array, or their sum written to scratch
 * [nr, n] (the same bits whoever asks: forward, backward, a decoding step). */
const tg_real *tg_attn_bias_rows(const tg_attn_bias *a, int b, int h, int i0, int nr, int n, tg_real *scratch,
                                 int *ld);

typedef struct tg_sdpa_layout tg_sdpa_layout;
/* core/ops/nn/decode.c: whether cache is [B >= rows, cap, Hkv*(dk + dv)] for
 * layout lay (a valid one); false with "<rec's name>: ..." set on the tape.
 * *n_kv receives Hkv. */
bool tg_kv_check(tg_tape *t, const tg_op *rec, const tg_tensor *cache, const tg_sdpa_layout *lay, int rows,
                 int *n_kv);

/* core/ops/shape/move.c: a map from a walk shape n[nd] to an input and an output
 * element each (strides in elements, 0 to stretch, negative to flip):
 *   out[out_off + i . out_st] <- in[in_off + i . in_st]. */
#define TG_MAP_DIMS (2 * TG_MAX_DIMS)
typedef struct tg_map {
    int nd;
    int n[TG_MAP_DIMS];
    ptrdiff_t in_st[TG_MAP_DIMS], out_st[TG_MAP_DIMS];
    ptrdiff_t in_off, out_off;
} tg_map;
/* out[...] = in[...] over the map, elements of es bytes (any dtype: bytes move) */
void tg_map_copy(const tg_map *m, void *out, const void *in, size_t es);
/* out[...] = in[...] over the map */
void tg_map_forward(const tg_map *m, tg_real *out, const tg_real *in);
/* din[...] += dout[...] over the map, in walk order */
void tg_map_backward(const tg_map *m, tg_real *din, const tg_real *dout);
/* Row-major element strides of a shape. */
void tg_strides(int ndim, const int *shape, ptrdiff_t *st);
/* The context of a one-input op that is up to two maps (roll needs two). */
typedef struct tg_map_ctx {
    int n_maps;
    tg_map maps[2];
} tg_map_ctx;
/* d a += each map read backwards; the backward of every tg_map_op. */
void tg_map_op_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx);
/* out [shape] of a's dtype <- a through c's maps (out filled with *fill
 * first unless fill is NULL: pad, diag); records op (whose backward is
 * tg_map_op_backward) with c as context. */
tg_tensor *tg_map_op(tg_tape *t, const tg_op *op, tg_tensor *a, int ndim, const int *shape,
                     const tg_map_ctx *c, const double *fill);
/* The dtype a shape op checks a against (docs/DESIGN.md "Dtypes"): an
 * integer or bool a's own (its bytes move, no grad), a half a's own (cat and
 * split widen it after the check; TG_DISPATCH has widened it for the rest),
 * else this copy's. */
static inline tg_dtype tg_move_dtype(const tg_tensor *a)
{
    return a && a->magic == TG_TENSOR_LIVE && a->dtype != TG_F32 && a->dtype != TG_F64 ? a->dtype : TG_REAL_DTYPE;
}
/* Each of xs[0..n) widened to float32 (tg_to: its grad flows back), in a new
 * arena array: the half rule for the ops that take arrays (cat, stack);
 * NULL with the error. */
tg_tensor **tg_half_widen_all(tg_tape *t, const char *op, tg_tensor *const *xs, int n);

/* dim resolved into *d, negative counting from the end of n dims (n is
 * a->ndim, or a->ndim + 1 where a new dim may go: stack, unsqueeze); false
 * with "<op>: dim D is out of range for a [..] (dims -n to n-1)". */
bool tg_dim_resolve(tg_tape *t, const char *op, const tg_tensor *a, int dim, int n, int *d);
/* m walks a [shape] in order: n = shape, in_st = out_st = its strides, offsets 0. */
void tg_map_of(tg_map *m, int ndim, const int *shape);

/* Element i of an index tensor that tg_index_check (core/engine/op.h) accepted. */
static inline int64_t tg_index_at(const tg_tensor *ix, size_t i)
{
    return ix->dtype == TG_I64 ? ((const int64_t *)(const void *)ix->data)[i]
                               : ((const int32_t *)(const void *)ix->data)[i];
}

/* core/ops/shape/gather.c: per element i of the index ix (row-major over
 * its shape; tg_index_check accepted it), xoff[i] = its element of x (i with
 * i_d = ix[i]) and, when soff is not NULL, soff[i] = its element of src,
 * ix's dims checked against x (and src) and every index against x's dim d
 * (gather, scatter_add, scatter_reduce). */
bool tg_index_offsets(tg_tape *t, const char *op, const tg_tensor *ix, int d, const tg_tensor *x,
                      const tg_tensor *src, size_t *xoff, size_t *soff);

/* The sum of x [n] in 8 independent lanes: no loop-carried dependence, so it
 * runs at throughput and vectorizes without -ffast-math. x[j] always goes to
 * lane j % 8, the tail too, so zeros appended to a row leave its sum's bits
 * alone (a masked softmax row over n keys equals the same row cut at its
 * last visible key: a decoding step reproduces a whole pass). */
static inline __attribute__((always_inline)) tg_real tg_row_sum(const tg_real *x, size_t n)
{
    tg_lanes8 v = {0};
    size_t j = 0;
    for (; j + 8 <= n; j += 8) v += TG_LANES8_AT(x + j);
    tg_real s[8];
    memcpy(s, &v, sizeof s);
    for (int k = 0; j < n; j++, k++) s[k] += x[j];
    for (int k = 1; k < 8; k++) s[0] += s[k];
    return s[0];
}

/* sum(a * b) in the 8 lanes of tg_row_sum (softmax's and attention's
 * backward: the dot of a row of grads with a row of probabilities) */
static inline __attribute__((always_inline)) tg_real tg_row_dot(const tg_real *a, const tg_real *b, size_t n)
{
    tg_lanes8 v = {0};
    size_t j = 0;
    for (; j + 8 <= n; j += 8) v += TG_LANES8_AT(a + j) * TG_LANES8_AT(b + j);
    tg_real s[8];
    memcpy(s, &v, sizeof s);
    for (; j < n; j++) s[0] += a[j] * b[j];
    for (int k = 1; k < 8; k++) s[0] += s[k];
    return s[0];
}

/* ---- the pointwise table's engine (core/ops/pointwise/pointwise.c) ---------------- */

/* Elementwise functions of one to three broadcasting operands. Each op of
 * math.c, activation.c, compare.c and the elementwise losses is a row, a
 * tg_pw_kind: its value and its partial derivatives side by side, either
 * written one element at a time in double (f, df: broadcasting, any number
 * of operands) or, for the hot one-operand kinds (exp, tanh, gelu, relu ...),
 * as vectorised loops over tg_real (vf, vdf, made by TG_PW_VEC). add / sub /
 * mul / div keep their own broadcasting loops (binary.c). */

#define TG_PW_MAX_IN 3

typedef struct tg_pw_kind {
    tg_op op;          /* name and the shared backward (tg_pw_backward) */
    int n_in;          /* operands, 1..TG_PW_MAX_IN */
    unsigned grads;    /* bit k set: operand k is differentiable */
    /* y = f(v[0..n_in)), p the op's parameters */
    double (*f)(const double *v, const double *p);
    /* d y / d v[k] at v, with y = f(v) */
    double (*df)(int k, const double *v, double y, const double *p);
    /* or, one operand: y [n] = f(x) and dx [n] += g f'(x) (= when store: dx
     * was just made, tg_grad_write), s and s2 the parameters p[0], p[1] */
    void (*vf)(tg_real *y, const tg_real *x, size_t n, tg_real s, tg_real s2);
    void (*vdf)(bool store, tg_real *dx, const tg_real *g, const tg_real *x, const tg_real *y, size_t n, tg_real s,
                tg_real s2);
    double ns;         /* vf's one-thread time per element (bench/bench_threads) */
    bool to_bool;      /* out is TG_BOOL: f(v) != 0 (a comparison; no operand differentiable) */
} tg_pw_kind;

#define TG_PW_PARAMS 3
typedef struct tg_pw_ctx {
    const tg_pw_kind *kind;
    double p[TG_PW_PARAMS];
} tg_pw_ctx;

void tg_pw_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx);
#define TG_PW_OP(name) {name, tg_pw_backward, sizeof(tg_pw_ctx)}
/* A row computed in double: n_in operands, grads its differentiable ones. */
#define TG_PW_KIND(name, n_in, grads, f, df) {TG_PW_OP(name), n_in, grads, f, df, NULL, NULL, 0, false}
/* A kind whose out is bool (f(v) != 0) and takes no grad: the comparisons. */
#define TG_PW_BOOL_KIND(name, n_in, f) {TG_PW_OP(name), n_in, 0, f, NULL, NULL, NULL, 0, true}

/* The vectorised loops name_vf and name_vdf of a one-operand kind from the
 * expressions of element i: y[i] = fwd, dx[i] += grad (x[i], y[i], g[i], s
 * and s2 in scope), each cloned per SIMD level (core/kernels/vmath.h, which
 * the using file includes). TG_PW_VEC_KIND is its row.
 *
 * Each loop walks four quarters of the range side by side: an element of
 * gelu or silu is a chain of ~200 cycles of dependent latency (division,
 * polynomial, exp) that the CPU cannot overlap with the next element's far
 * enough on its own. Four independent chains per iteration, which GCC's
 * pre-allocation scheduler interleaves (CMakeLists.txt: -fsched-pressure
 * for the files that use this), run gelu 1.5x faster; the arithmetic of
 * every element is unchanged, so are its bits. */
#define TG_PW_QUARTERS(n, stmt)                                                                                  \
    do {                                                                                                        \
        size_t q_ = (n) / 4, i;                                                                                 \
        for (size_t j_ = 0; j_ < q_; j_++) {                                                                    \
            i = j_, stmt;                                                                                       \
            i = j_ + q_, stmt;                                                                                  \
            i = j_ + 2 * q_, stmt;                                                                              \
            i = j_ + 3 * q_, stmt;                                                                              \
        }                                                                                                       \
        for (i = 4 * q_; i < (n); i++) stmt;                                                                    \
    } while (0)
#define TG_PW_VEC(name, fwd, grad)                                                                              \
    TG_SIMD_BODY void name##_vf_body(tg_real *restrict y, const tg_real *restrict x, size_t n, tg_real s,        \
                                     tg_real s2)                                                                \
    {                                                                                                           \
        (void)s, (void)s2;                                                                                      \
        TG_PW_QUARTERS(n, y[i] = (fwd));                                                                        \
    }                                                                                                           \
    TG_SIMD_CLONES(static, name##_vf, (tg_real *restrict y, const tg_real *restrict x, size_t n, tg_real s,     \
                                       tg_real s2), (y, x, n, s, s2))                                           \
    /* two loops, so that each vectorises; 0 + grad has the bits of 0 += grad */                                \
    TG_SIMD_BODY void name##_vdf_body(bool store, tg_real *restrict dx, const tg_real *restrict g,              \
                                      const tg_real *restrict x, const tg_real *restrict y, size_t n,           \
                                      tg_real s, tg_real s2)                                                    \
    {                                                                                                           \
        (void)x, (void)y, (void)s, (void)s2;                                                                    \
        if (store) TG_PW_QUARTERS(n, dx[i] = 0 + (grad));                                                       \
        else TG_PW_QUARTERS(n, dx[i] += (grad));                                                                \
    }                                                                                                           \
    TG_SIMD_CLONES(static, name##_vdf, (bool store, tg_real *restrict dx, const tg_real *restrict g,            \
                                        const tg_real *restrict x, const tg_real *restrict y, size_t n,         \
                                        tg_real s, tg_real s2), (store, dx, g, x, y, n, s, s2))
#define TG_PW_VEC_KIND(opname, name, ns) {TG_PW_OP(opname), 1, 1, NULL, NULL, name##_vf, name##_vdf, ns, false}

/* out = f(in...) broadcast as tg_add (shapes aligned from the last dim); p
 * has TG_PW_PARAMS entries or is NULL. The error names the op and every
 * operand's shape. */
tg_tensor *tg_pw_apply(tg_tape *t, const tg_pw_kind *k, tg_tensor *const *in, const double *p);

/* ---- the slice engine (core/ops/reduce/along.c) --------------------------------- */

/* Ops that work along one dim of a tensor, slice by slice: min, prod, var,
 * std, norm, argmax (stats.c), cumsum, cumprod, sort, topk (scan.c). a is
 * read as [outer, n, inner]; each of the outer * inner slices holds n
 * elements `inner` apart, and gives m output elements the same distance
 * apart in out [outer, m, inner]. */

#define TG_ALONG_PARAMS 2

typedef struct tg_along_kind {
    tg_op op;          /* name and tg_along_backward (or NULL: no grad, as argmax) */
    bool keeps_index;  /* fwd writes idx[j * s] (sort, topk): saved for backward */
    size_t scratch;    /* bytes of scratch fwd needs per slice element (sort's keys) */
    /* y[j * s], j < m, from x[i * s], i < n; idx may be NULL when !keeps_index;
     * w: scratch * n bytes of the slice's own */
    void (*fwd)(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                void *w);
    /* dx[i * s] += the grad of slice x from g[j * s] */
    void (*bwd)(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                const int64_t *idx, tg_real *dx, const double *p);
} tg_along_kind;

void tg_along_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx);
#define TG_ALONG_OP(name) {name, tg_along_backward, sizeof(tg_along_ctx)}

typedef struct tg_along_ctx {
    const tg_along_kind *kind;
    int dim;           /* resolved, >= 0 */
    size_t m;
    double p[TG_ALONG_PARAMS];
    const int64_t *idx;  /* [out->size] when keeps_index, arena */
} tg_along_ctx;

/* Resolves dim (negative counts from the end; a 0-d a takes 0 or -1) into
 * *d, or stores "<op>: dim ... out of range" and returns false. */
bool tg_along_dim(tg_tape *t, const char *op, const tg_tensor *a, int dim, int *d);

/* out = kind along dim d with m outputs per slice; keep: dim d stays (size
 * m), else it is dropped (m must be 1). *idx_out, when not NULL, receives
 * the indices kind wrote, as a tensor of out's shape (no grad). */
tg_tensor *tg_along_apply(tg_tape *t, const tg_along_kind *k, tg_tensor *a, int d, size_t m, bool keep,
                          const double *p, tg_tensor **idx_out);

/* PyTorch's type promotion, after TG_DISPATCH_PROMOTED: every live float
 * operand x[k] narrower than this copy's type becomes it (tg_to, so the grad
 * flows back converted); when one operand is float, every integer or bool one
 * becomes this copy's float type (tg_to; no grad flows to it). Operands that
 * are all integer or bool stay as they are, for tg_inputs_check to refuse. A
 * bad operand is left to tg_inputs_check, or refused under op's name. false
 * on an error. */
bool tg_promote(tg_tape *t, const tg_op *op, tg_tensor **x, int n);

/* int32, int64, uint8 or bool: the dtypes that join a float operand's type */
static inline bool tg_dtype_is_int_or_bool(tg_dtype dt)
{
    return dt == TG_I32 || dt == TG_I64 || dt == TG_U8 || dt == TG_BOOL;
}

/* true when m (or the tape) is NULL, m not live (left to the op's input checks) or bool;
 * else false and op's error naming what and its dtype: a condition or mask
 * is a bool tensor, as PyTorch's where and masked ops require. */
static inline bool tg_bool_mask(tg_tape *t, const tg_op *op, const char *what, const tg_tensor *m)
{
    if (!t || !m || m->magic != TG_TENSOR_LIVE || m->dtype == TG_BOOL) return true;  /* a NULL tape: the op says so */
    tg_op_fail(t, op, "the %s is %s, not bool (comparisons give bool tensors; tg_to converts to TG_BOOL)", what,
               tg_dtype_name(m->dtype));
    return false;
}

#endif
