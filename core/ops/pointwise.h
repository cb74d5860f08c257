/* tapegrad internal: elementwise functions of one to three broadcasting
 * operands, written one element at a time in double (core/ops/pointwise.c).
 * The ops of math.c, activation.c and compare.c are each a kind: a value
 * function and its partial derivatives side by side. Not for the hot paths
 * (relu, gelu, add, mul keep their vectorised loops in elementwise.c). */
#ifndef TAPEGRAD_OPS_POINTWISE_H
#define TAPEGRAD_OPS_POINTWISE_H

#include "../engine/op.h"

#define TG_PW_MAX_IN 3

typedef struct tg_pw_kind {
    tg_op op;          /* name and the shared backward (tg_pw_backward) */
    int n_in;          /* operands, 1..TG_PW_MAX_IN */
    unsigned grads;    /* bit k set: operand k is differentiable */
    /* y = f(v[0..n_in)), p the op's parameters */
    double (*f)(const double *v, const double *p);
    /* d y / d v[k] at v, with y = f(v) */
    double (*df)(int k, const double *v, double y, const double *p);
} tg_pw_kind;

#define TG_PW_PARAMS 3
typedef struct tg_pw_ctx {
    const tg_pw_kind *kind;
    double p[TG_PW_PARAMS];
} tg_pw_ctx;

void tg_pw_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx);
#define TG_PW_OP(name) {name, tg_pw_backward, sizeof(tg_pw_ctx)}

/* out = f(in...) broadcast as tg_add (shapes aligned from the last dim); p
 * has TG_PW_PARAMS entries or is NULL. The error names the op and every
 * operand's shape. */
tg_tensor *tg_pw_apply(tg_tape *t, const tg_pw_kind *k, tg_tensor *const *in, const double *p);

#endif
