/* tapegrad: writing an op. Every core op is written with this API, and so is
 * a user's own op (examples/custom_op.c; docs/DESIGN.md "Ops and their contexts").
 *
 * An op is a forward and a backward function side by side, one context
 * struct (filled by the forward, read by the backward) and one tg_op record
 * holding its name, which every step below reports errors under:
 *   TG_BACKWARD(my_backward, my_ctx) { ... ctx->field ... }
 *   TG_OP(my_op, "my_op", my_backward, my_ctx);
 * The forward:
 *   1. tg_inputs_check   refuses NULL, freed, dead and foreign inputs;
 *   2. tg_new            makes its output in the tape's arena, then computes it;
 *   3. tg_op_record      when a grad is needed, appends a node: the op, the
 *                        output, the inputs (any number) and a copy of the context;
 *   4. tg_op_done        anomaly mode's NaN/Inf check of the output.
 * The backward gets the output (out->grad is d out), the inputs in the order
 * given to tg_op_record and the recorded context, and accumulates (+=) into
 * tg_grad(t, in[k]) of each input that requires a grad (or, writing every
 * element, stores into tg_grad_write's fresh buffer when beta is 0). It runs
 * at most once.
 * An op without a grad (a view, a decoding op) has a record with a
 * NULL backward: TG_OP_NO_GRAD(my_op, "my_op").
 */
#ifndef TAPEGRAD_OP_H
#define TAPEGRAD_OP_H

#include <stdbool.h>
#include <stddef.h>

#include "tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ctx is the node's copy of the context (NULL when the op has none). */
typedef void (*tg_backward_fn)(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx);

/* One per op, usually a static const next to its functions. */
typedef struct tg_op {
    const char *name;        /* "tg_matmul": errors, dumps and anomaly reports */
    tg_backward_fn backward; /* NULL for an op that records no node */
    size_t ctx_size;         /* sizeof the op's context struct, 0 if none */
} tg_op;

/* A backward whose context is a `const ctx_type *ctx`, not a cast from
 * const void *: defines name (a tg_backward_fn) and opens the typed body.
 *   TG_BACKWARD(matmul_backward, mm_dims) { ... ctx->M ... }
 * TG_BACKWARD_SHARED is the same for a backward that several files' records
 * name (declared in a header as a tg_backward_fn: tg_pw_backward). */
#define TG_BACKWARD_AS(storage, name, ctx_type)                                           \
    static void name##_typed(tg_tape *t, tg_tensor *out, tg_tensor *const *in,            \
                             const ctx_type *ctx);                                        \
    storage void name(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx)  \
    {                                                                                     \
        name##_typed(t, out, in, (const ctx_type *)ctx);                                  \
    }                                                                                     \
    static void name##_typed(tg_tape *t, tg_tensor *out, tg_tensor *const *in,            \
                             const ctx_type *ctx)
#define TG_BACKWARD(name, ctx_type) TG_BACKWARD_AS(static, name, ctx_type)
#define TG_BACKWARD_SHARED(name, ctx_type) TG_BACKWARD_AS(, name, ctx_type)

/* The op's record: its name (the one place it is written), its backward and
 * the size of the context type that backward reads. */
#define TG_OP(var, name, backward, ctx_type) \
    static const tg_op var = {name, backward, sizeof(ctx_type)}
/* The same for a backward without a context (ctx is NULL). */
#define TG_OP_NO_CTX(var, name, backward) static const tg_op var = {name, backward, 0}
/* An op that records no node (no grad flows): its name for errors. */
#define TG_OP_NO_GRAD(var, name) static const tg_op var = {name, NULL, 0}

/* Checks in[0..n) before an op reads them; in[n_required..n) are optional and
 * may be NULL. A NULL required input keeps an earlier error, else stores
 * "<op->name>: input is NULL"; a freed tensor, one from before tg_tape_reset
 * or one of another tape stores "<op->name>: input <k> ...". false on any of
 * these and when t or op is NULL. */
bool tg_inputs_check_dtype(tg_tape *t, const tg_op *op, tg_dtype dt, tg_tensor *const *in, int n, int n_required);
/* ... and every input must have the including file's dtype (its tg_real). */
static inline bool tg_inputs_check(tg_tape *t, const tg_op *op, tg_tensor *const *in, int n, int n_required)
{
    return tg_inputs_check_dtype(t, op, TG_REAL_DTYPE, in, n, n_required);
}


/* An index tensor of op (gather's index, embedding's ids): int64 or int32,
 * PyTorch's index dtypes (it takes int64; int32 is accepted too). NULL keeps
 * an earlier error, else stores "<op->name>: <what> is NULL"; a dead or
 * foreign one is refused as tg_inputs_check does, another dtype with
 * "<op->name>: <what> is float32, but indices are int64 or int32" (what
 * NULL: "the index"). Read it with tg_data(ix, ix->dtype). */
bool tg_index_check(tg_tape *t, const tg_op *op, const tg_tensor *ix, const char *what);
/* A per-row index of op, one entry per batch row (a decode's positions, a
 * batch's lengths): tg_index_check's refusals, then a shape other than [n]
 * with "<op->name>: <what> is [2,3], but it is [B] = [2] (one per row)". */
bool tg_index_rows_check(tg_tape *t, const tg_op *op, const tg_tensor *ix, const char *what, int n);

/* tg_fail with the op's name in front: stores "<op->name>: <fmt...>" and
 * returns NULL. The name is written once, in the op's record. */
tg_tensor *tg_op_fail(tg_tape *t, const tg_op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* True when t records and a non-NULL in[k] requires a grad: the forward then
 * saves what its backward needs. */
bool tg_needs_grad(const tg_tape *t, tg_tensor *const *in, int n);

/* When tg_needs_grad(t, in, n): appends a node of op for out with inputs
 * in[0..n) (NULL where an optional input is absent) and a copy of
 * op->ctx_size bytes of ctx, and sets out->requires_grad. Pointers inside the
 * context must stay valid until tg_tape_reset (tg_arena_alloc). Otherwise
 * records nothing. false with an error on out of memory. */
bool tg_op_record(tg_tape *t, const tg_op *op, tg_tensor *out, tg_tensor *const *in, int n,
                  const void *ctx);

/* The last step of every op: in anomaly mode checks out for NaN/Inf. Returns
 * out, or NULL with an error naming op->name. */
tg_tensor *tg_op_done(tg_tape *t, const tg_op *op, tg_tensor *out);

/* An arena tensor of dtype dt named by what it holds ("out of memory: 4.0
 * MiB for tg_softmax output"): creation ops, an op's saved buffers ("tg_sdpa
 * weights"). NULL with an error when t, what, dt or the shape is bad. */
tg_tensor *tg_new_dtype(tg_tape *t, const char *what, tg_dtype dt, int ndim, const int *shape);
/* The same of the including file's tg_real (an op compiled for float32 makes
 * float32 outputs), for op's output; tg_new_like: x's shape and dtype. */
tg_tensor *tg_new_op(tg_tape *t, const tg_op *op, tg_dtype dt, int ndim, const int *shape);
static inline tg_tensor *tg_new(tg_tape *t, const tg_op *op, int ndim, const int *shape)
{
    return tg_new_op(t, op, TG_REAL_DTYPE, ndim, shape);
}
static inline tg_tensor *tg_new_named(tg_tape *t, const char *what, int ndim, const int *shape)
{
    return tg_new_dtype(t, what, TG_REAL_DTYPE, ndim, shape);
}
tg_tensor *tg_new_like(tg_tape *t, const tg_op *op, const tg_tensor *x);
/* A zeroed arena tensor header without data, for views (tg_reshape). */
tg_tensor *tg_new_header(tg_tape *t, const char *op);
/* Raw, 64-byte aligned arena memory, valid until tg_tape_reset; NULL with an
 * error on OOM. */
void *tg_arena_alloc(tg_tape *t, size_t bytes, const char *op);
/* Arena memory for use within one call (an op's scratch): a dead piece of
 * the arena when one fits, else fresh arena memory. Hand it back with
 * tg_arena_release when done, so that later scratch and grads reuse it. NULL
 * with an error on OOM. */
void *tg_arena_scratch(tg_tape *t, size_t bytes, const char *op);
/* p (bytes long, from tg_arena_scratch or tg_arena_alloc) is dead until
 * tg_tape_reset: the arena may hand it out again. NULL does nothing. */
void tg_arena_release(tg_tape *t, void *p, size_t bytes);
/* x->grad, allocated zeroed from the arena if still NULL (a view's is a
 * slice of its base's). NULL on OOM, and when x is not of dtype dt (tg_grad:
 * the including file's tg_real). */
void *tg_grad_as(tg_tape *t, tg_tensor *x, tg_dtype dt);
static inline tg_real *tg_grad(tg_tape *t, tg_tensor *x) { return (tg_real *)tg_grad_as(t, x, TG_REAL_DTYPE); }
/* x->grad for a backward that writes every element of it: when it is still
 * NULL (and x is neither a view nor owns its data) it comes from the arena
 * unzeroed and *beta is 0, the backward stores; else *beta is 1, it adds
 * (tg_grad). Saves zeroing a grad that a GEMM then overwrites. NULL on OOM. */
void *tg_grad_fresh(tg_tape *t, tg_tensor *x, tg_dtype dt, bool *fresh);
static inline tg_real *tg_grad_write(tg_tape *t, tg_tensor *x, tg_real *beta)
{
    bool fresh;
    tg_real *g = (tg_real *)tg_grad_fresh(t, x, TG_REAL_DTYPE, &fresh);
    *beta = fresh ? 0 : 1;
    return g;
}

#ifdef __cplusplus
}
#endif

#endif
