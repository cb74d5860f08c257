/* tapegrad: the tape.
 *
 * Each op computes its output eagerly and, while recording and when one of
 * its inputs requires a grad, appends a node: the backward function, the
 * output, up to four inputs and what it saved. The tape *is* the topological
 * order: tg_backward visits nodes last to first, and every backward
 * accumulates (+=) into its inputs' grads.
 *
 * The tape owns an arena: temporaries, their grads and saved state. The arena
 * grows in chunks and tg_tape_reset rewinds it without freeing, so a
 * fixed-shape training loop makes no heap allocation after its first step.
 *
 * Errors are sticky: the first message stays until tg_tape_reset (or
 * tg_tape_clear_error); ops given a NULL input return NULL without touching
 * it, so a whole forward pass is checked once, at the loss.
 */
#ifndef TAPEGRAD_TAPE_H
#define TAPEGRAD_TAPE_H

#include <stdbool.h>
#include <stdio.h>

#include "tensor.h"

typedef struct tg_tape tg_tape;
typedef struct tg_node tg_node;

/* Accumulates the grad of n->out into the grads of n->in[]. */
typedef void (*tg_backward_fn)(tg_tape *t, tg_node *n);

struct tg_node {
    const char *op;          /* "tg_matmul" ... for dumps and anomaly reports */
    tg_backward_fn backward;
    tg_tensor *out;
    tg_tensor *in[4];        /* NULL where unused */
    tg_tensor *saved[2];     /* op-specific saved tensors (arena) */
    const void *aux;         /* op-specific saved data (arena copy) */
    double f[2];             /* op-specific scalars */
    int i[4];                /* op-specific integers */
};

/* NULL only when out of memory. */
tg_tape *tg_tape_new(void);
void tg_tape_free(tg_tape *t);
/* Forgets every node and temporary, rewinds the arena (keeps its memory) and
 * clears the error. */
void tg_tape_reset(tg_tape *t);

void tg_tape_set_recording(tg_tape *t, bool on);
bool tg_tape_recording(const tg_tape *t);
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
 * memory. A second call on the same tape replays every node again and
 * accumulates into the leaves again: reset (or use another tape) between
 * passes. 0 on success; -1 when loss is NULL, not a scalar, or anomaly mode
 * found a NaN/Inf (tg_tape_error says which). */
int tg_backward(tg_tape *t, tg_tensor *loss);
/* Same with a given seed gradient, shaped like out. */
int tg_backward_seed(tg_tape *t, tg_tensor *out, const tg_real *seed);

/* One line per node: index, op, output shape, input shapes. */
void tg_tape_dump(const tg_tape *t, FILE *f);
int tg_tape_node_count(const tg_tape *t);
/* Bytes the arena holds (all chunks) and bytes in use now. */
size_t tg_tape_arena_capacity(const tg_tape *t);
size_t tg_tape_arena_used(const tg_tape *t);

/* ---- temporaries -------------------------------------------------------- */

/* An arena tensor, uninitialised data, grad NULL. NULL with an error on a bad
 * shape or out of memory. */
tg_tensor *tg_tensor_new(tg_tape *t, int ndim, const int *shape);
tg_tensor *tg_tensor_zeros(tg_tape *t, int ndim, const int *shape);
/* An arena copy of external data. */
tg_tensor *tg_tensor_from(tg_tape *t, const tg_real *data, int ndim, const int *shape);

/* ---- for op authors (core/ops_*.c and users' own ops) ------------------- */

/* Stores "fmt..." as the error if none is stored yet; returns NULL. */
tg_tensor *tg_fail(tg_tape *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* For an op given a NULL input: keeps an earlier message, else stores
 * "<op>: input is NULL"; returns NULL. */
tg_tensor *tg_fail_null(tg_tape *t, const char *op);
/* An arena tensor for op `op` ("out of memory: 4.0 MiB for tg_softmax output"). */
tg_tensor *tg_new(tg_tape *t, const char *op, int ndim, const int *shape);
tg_tensor *tg_new_like(tg_tape *t, const char *op, const tg_tensor *x);
/* Raw, 64-byte aligned arena memory; NULL with an error on OOM. */
void *tg_arena_alloc(tg_tape *t, size_t bytes, const char *op);
/* x->grad, allocated zeroed from the arena if still NULL. NULL on OOM. */
tg_real *tg_grad(tg_tape *t, tg_tensor *x);

/* True when recording and one of the (non-NULL) inputs requires a grad. */
bool tg_grad_needed(const tg_tape *t, const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *c, const tg_tensor *d);
/* Appends a node for out (sets out->requires_grad). NULL with an error on OOM. */
tg_node *tg_node_push(tg_tape *t, const char *op, tg_backward_fn backward, tg_tensor *out,
                      tg_tensor *a, tg_tensor *b, tg_tensor *c, tg_tensor *d);
/* The last step of every op: in anomaly mode checks out for NaN/Inf. Returns
 * out, or NULL with an error naming op. */
tg_tensor *tg_op_done(tg_tape *t, const char *op, tg_tensor *out);

#endif
