/* tapegrad: the tape.
 *
 * Each op computes its output eagerly and, while recording and when one of
 * its inputs requires a grad, appends a node: the op, its output, its inputs
 * and its context (core/engine/op.h). The tape *is* the topological order:
 * tg_backward visits nodes last to first, and every backward accumulates (+=)
 * into its inputs' grads.
 *
 * The tape owns an arena: temporaries, their grads and saved state. The arena
 * grows in chunks and tg_tape_reset rewinds it without freeing, so a
 * fixed-shape training loop makes no heap allocation after its first step.
 *
 * Errors are sticky: a failing op returns NULL, and its message stays in the
 * tape until tg_tape_reset (or tg_tape_clear_error) and is also left in
 * tg_error() (core/engine/error.h). Ops given a NULL input return NULL without
 * replacing it, so a whole forward pass is checked once, at the loss.
 *
 * Misuse is an error, never a silent wrong number: every op and tg_backward
 * refuse a tensor from before tg_tape_reset, a tensor of another tape (a
 * graph lives on one tape) and a freed heap tensor, naming the op and the
 * input; a second tg_backward on one tape and a loss that depends on nothing
 * that requires a grad are refused too.
 */
#ifndef TAPEGRAD_TAPE_H
#define TAPEGRAD_TAPE_H

#include <stdbool.h>
#include <stdio.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_tape tg_tape;

/* NULL only when out of memory. */
tg_tape *tg_tape_new(void);
void tg_tape_free(tg_tape *t);
/* Forgets every node and temporary, rewinds the arena (keeps its memory) and
 * clears the error. Every tensor made on t so far is dead from now on: ops
 * and tg_backward refuse it after any number of resets (its header's address
 * is never reused: core/engine/headers.h). Reading a dead tensor's fields or
 * data is not checked: it may give anything or crash. Recording and training
 * stay as they are. */
void tg_tape_reset(tg_tape *t);

/* A no-grad scope (torch.no_grad()): ops record nothing until the matching
 * end, which restores what was before, so scopes nest:
 *     bool prev = tg_no_grad_begin(t);  ... eval ...  tg_no_grad_end(t, prev);
 * Returns whether t was recording. */
bool tg_no_grad_begin(tg_tape *t);
void tg_no_grad_end(tg_tape *t, bool prev);
bool tg_tape_recording(const tg_tape *t);
/* An autocast scope (torch.autocast("cpu", dtype=...)): until the matching
 * end, the float32 products (tg_matmul, so tg_linear and the attention
 * projections; tg_sdpa's two products; the convolutions) take their operands rounded to dt
 * (TG_BF16 or TG_F16), multiply them exactly and sum in float32; their
 * outputs and every other op stay float32 (softmax, norms, losses,
 * reductions, the optimizer), and float64 ops are not touched. Backward runs
 * each product's GEMMs the way its forward ran, whatever the scope is then.
 * TG_F32 turns it off; scopes nest as no-grad's:
 *     tg_dtype prev = tg_autocast_begin(t, TG_BF16);  ... forward ...  tg_autocast_end(t, prev);
 * Returns the previous dtype (TG_F32 when off); another dtype is the tape's
 * error and changes nothing. docs/DESIGN.md "Mixed precision". */
tg_dtype tg_autocast_begin(tg_tape *t, tg_dtype dt);
void tg_autocast_end(tg_tape *t, tg_dtype prev);
tg_dtype tg_tape_autocast(const tg_tape *t);
/* Training flag: dropout is active only when true (default true). */
void tg_tape_set_training(tg_tape *t, bool on);
bool tg_tape_training(const tg_tape *t);
/* Anomaly mode: every op output and every grad of backward is checked for
 * NaN/Inf; the first offender becomes the tape's error, naming the op. */
void tg_tape_set_anomaly(tg_tape *t, bool on);

/* The first error message since the last reset, or NULL. */
const char *tg_tape_error(const tg_tape *t);
void tg_tape_clear_error(tg_tape *t);

/* Seeds d loss = 1 (loss must have one element) and runs every node's
 * backward, last to first. Grads end up in the leaves: parameters, heap
 * tensors and arena tensors that no op produced. An op output's grad is
 * handed back to the arena once its node's backward has run (as PyTorch keeps
 * no grad for non-leaf tensors), so the grads of a step's temporaries share
 * memory with each other and with the ops' scratch. Once per tape: a second call before tg_tape_reset is an error (as
 * PyTorch refuses a second backward through a freed graph).
 * 0 on success; -1 with tg_tape_error set when the tape already holds an
 * error, loss is NULL, not a scalar, dead or of another tape, depends on no
 * tensor that requires a grad, or anomaly mode found a NaN/Inf. */
int tg_backward(tg_tape *t, tg_tensor *loss);
/* Same with a given seed gradient, shaped like out and of its dtype. */
int tg_backward_seed(tg_tape *t, tg_tensor *out, const void *seed);
/* Keeps x's grad after backward although an op made it (PyTorch's
 * retain_grad): it stays in the arena until tg_tape_reset. For a view
 * (tg_reshape, ...) the base's grad is kept, which the view's slices. A no-op
 * for leaves, whose grads are kept anyway. -1 when x needs no grad, is
 * dead or belongs to another tape. */
int tg_retain_grad(tg_tape *t, tg_tensor *x);

/* One line per node: index, op, output shape, every input's shape. */
void tg_tape_dump(const tg_tape *t, FILE *f);
int tg_tape_node_count(const tg_tape *t);
/* Bytes the arena holds (all chunks) and bytes in use now. */
size_t tg_tape_arena_capacity(const tg_tape *t);
size_t tg_tape_arena_used(const tg_tape *t);

/* ---- temporaries -------------------------------------------------------- */

/* An arena tensor of dtype dt, uninitialised data, grad NULL; NULL with an
 * error on a bad shape or dtype or out of memory. _zeros: zero-filled;
 * _from: a copy of data (size elements of dt). Without _dtype: the program's
 * default dtype (its tg_real). */
tg_tensor *tg_tensor_new_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape);
tg_tensor *tg_tensor_zeros_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape);
tg_tensor *tg_tensor_from_dtype(tg_tape *t, tg_dtype dt, const void *data, int ndim, const int *shape);
static inline tg_tensor *tg_tensor_new(tg_tape *t, int ndim, const int *shape)
{
    return tg_tensor_new_dtype(t, TG_REAL_DTYPE, ndim, shape);
}
static inline tg_tensor *tg_tensor_zeros(tg_tape *t, int ndim, const int *shape)
{
    return tg_tensor_zeros_dtype(t, TG_REAL_DTYPE, ndim, shape);
}
static inline tg_tensor *tg_tensor_from(tg_tape *t, const tg_real *data, int ndim, const int *shape)
{
    return tg_tensor_from_dtype(t, TG_REAL_DTYPE, data, ndim, shape);
}

/* ---- errors, for op and layer authors ------------------------------------ */

/* Stores "fmt..." as the tape's error if none is stored yet, and always as
 * tg_error(); returns NULL. t may be NULL (then only tg_error()). */
tg_tensor *tg_fail(tg_tape *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* For an op given a NULL input: keeps the tape's earlier message (and puts
 * it back in tg_error()), else stores "<op>: input is NULL"; returns NULL. */
tg_tensor *tg_fail_null(tg_tape *t, const char *op);

#ifdef __cplusplus
}
#endif

#endif
