/* One row per public op (every tg_tensor *tg_xxx( of the headers ops.h
 * includes, and the int-returning splits): the row builds the op's inputs
 * and calls it, and tests/test_op_cases.c drives every check from the rows:
 * gradcheck (PyTorch's tolerances in the double build), NaN propagation,
 * NULL refusal of each tensor and pointer argument, misuse (a stale tensor,
 * one of another tape), the same bits on 1 and 2 threads, and that no public
 * op lacks a row. Adding an op is adding a row (docs/DESIGN.md). The rows
 * live by family in tests/op_cases_<family>.c. */
#ifndef TAPEGRAD_TESTS_OP_CASES_H
#define TAPEGRAD_TESTS_OP_CASES_H

#include <tapegrad/tapegrad.h>

#define OC_MAXIN 4

/* How an input's values are made. */
enum oc_kind {
    OC_X,      /* uniform in [lo, hi), gradchecked */
    OC_FIXED,  /* uniform in [lo, hi), no grad (class weights, a where's cond) */
    OC_MASK,   /* bool: false, true, false, ... (a where's condition, a mask) */
    OC_CLASS,  /* int64 class targets lo, lo + 1, ... below hi, again from lo */
};

typedef struct oc_in {
    int ndim;
    int shape[4];
    double lo, hi;
    enum oc_kind kind;
} oc_in;

/* One call of a row's op. null_ptr >= 0 asks build to pass NULL for its
 * null_ptr-th required pointer argument that is not a tensor (a shape, ids,
 * options): OC_PTR(c, k, p) is that argument. */
typedef struct oc_call {
    tg_tape *t;
    tg_tensor **in;     /* [n_in], an optional one may be NULL */
    tg_rng *rng;        /* reseeded before every call */
    int null_ptr;
} oc_call;
#define OC_PTR(c, k, p) ((c)->null_ptr == (k) ? NULL : (p))

/* An index tensor of dtype dt (TG_I64 or TG_I32) on the row's tape t, from
 * data of shape {dims}. */
#define OC_INDEX(dt, data, ...) \
    tg_tensor_from_dtype(t, dt, data, sizeof((int[]){__VA_ARGS__}) / sizeof(int), (const int[]){__VA_ARGS__})

/* A build function id returning expr, with t the tape and x the inputs. */
#define OC_BUILD(id, expr)                                  \
    static tg_tensor *id(const oc_call *c)                  \
    {                                                       \
        tg_tape *t = c->t;                                  \
        tg_tensor **x = c->in;                              \
        (void)x;                                            \
        return (expr);                                      \
    }

/* A row's flags. */
enum {
    OC_NO_GRAD = 1,    /* its output never requires a grad (comparisons, creation, argmax,
                          detach, inference-only decode): checked instead of gradcheck */
    OC_GROWS = 2,      /* dim 0 of the inputs of in[0]'s rank and dim 0 can grow (the build
                          reads no fixed ids or sizes along it): the thread-bits check grows
                          it to sizes the pool splits */
    OC_MOVES = 4,      /* it moves elements without arithmetic (a shape op): it takes int32,
                          int64 and bool inputs too and gives their values, in their dtype */
};

typedef struct op_case {
    const char *name;   /* the public function it calls */
    tg_tensor *(*build)(const oc_call *c);
    int n_in;           /* tensor inputs */
    int n_required;     /* in[0 .. n_required) must not be NULL; the rest are optional */
    int n_ptr;          /* required pointer arguments besides the tape and tensors */
    oc_in in[OC_MAXIN];
    unsigned flags;
    /* The output's NaN pattern ('.' a number, 'n' NaN, as PyTorch gives it)
     * when element 1 of in[0] is NaN; OC_NAN_SAME: exactly element 1 (a
     * pointwise op of in[0]'s shape); OC_NAN_ALL: every element. NULL: no
     * NaN check, why says why. */
    const char *nan;
    const char *why;    /* why a check does not apply */
} op_case;

#define OC_NAN_SAME "same"
#define OC_NAN_ALL "all"

/* Row helpers: an input of shape {dims} with values in [lo, hi). */
#define OC_IN(lo_, hi_, ...) {.ndim = sizeof((int[]){__VA_ARGS__}) / sizeof(int), .shape = {__VA_ARGS__}, .lo = (lo_), .hi = (hi_)}
#define OC_INK(kind_, lo_, hi_, ...)                                                                      \
    {.ndim = sizeof((int[]){__VA_ARGS__}) / sizeof(int), .shape = {__VA_ARGS__}, .lo = (lo_), .hi = (hi_), \
     .kind = (kind_)}
#define OC_IN0(lo_, hi_) {.ndim = 0, .lo = (lo_), .hi = (hi_)}  /* a 0-d input */

typedef struct oc_family {
    const char *name;
    const op_case *rows;
    int n;
} oc_family;

extern const oc_family oc_pointwise, oc_reduce, oc_shape, oc_linalg, oc_create, oc_nn, oc_conv, oc_loss;

#endif
