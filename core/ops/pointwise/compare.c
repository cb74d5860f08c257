/* tapegrad: comparisons and selection (torch.eq ... torch.where,
 * masked_fill, maximum / minimum).
 *
 * Comparisons give a bool tensor of the broadcast shape and no grad (IEEE:
 * any comparison with NaN is false, except ne). An integer or bool operand
 * beside a float one is converted to the float type (PyTorch's promotion);
 * two of them are compared in float64, exact up to 2^53. where's condition
 * and masked_fill's mask are bool tensors (a float one is refused, as
 * PyTorch). isnan / isinf / isfinite and the logical ops are bool kinds of
 * the same table (logical ops read nonzero, NaN included, as true). With
 * g = dout:
 *   where(c, a, b)         da = g where c, db = g where not c; c gets none
 *   masked_fill(a, m, v)   da = g where not m
 *   maximum(a, b)          da = g where a > b, g/2 where a == b (PyTorch's
 *                          tie rule), 0 where a < b; db mirrored. NaN in
 *                          either gives NaN out and the full g to both.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

#define A v[0]
#define B v[1]

static double eq_f(const double *v, const double *p) { (void)p; return A == B; }
static double ne_f(const double *v, const double *p) { (void)p; return A != B; }
static double lt_f(const double *v, const double *p) { (void)p; return A < B; }
static double le_f(const double *v, const double *p) { (void)p; return A <= B; }
static double gt_f(const double *v, const double *p) { (void)p; return A > B; }
static double ge_f(const double *v, const double *p) { (void)p; return A >= B; }

static double isnan_f(const double *v, const double *p) { (void)p; return isnan(A); }
static double isinf_f(const double *v, const double *p) { (void)p; return isinf(A); }
static double isfinite_f(const double *v, const double *p) { (void)p; return isfinite(A); }
static double not_f(const double *v, const double *p) { (void)p; return !(A != 0); }
static double and_f(const double *v, const double *p) { (void)p; return A != 0 && B != 0; }
static double or_f(const double *v, const double *p) { (void)p; return A != 0 || B != 0; }
static double xor_f(const double *v, const double *p) { (void)p; return (A != 0) != (B != 0); }

/* v = {cond, a, b} */
static double where_f(const double *v, const double *p) { (void)p; return v[0] != 0 ? v[1] : v[2]; }
static double where_d(int k, const double *v, double y, const double *p)
{
    (void)y, (void)p;
    return k == 1 ? v[0] != 0 : k == 2 ? v[0] == 0 : 0;
}

/* v = {a, mask}, p = {value} */
static double fill_f(const double *v, const double *p) { return v[1] != 0 ? p[0] : v[0]; }
static double fill_d(int k, const double *v, double y, const double *p) { (void)y, (void)p; return k == 0 && v[1] == 0; }

/* NaN wins: a + b is NaN when either is */
static double maximum_f(const double *v, const double *p)
{
    (void)p;
    return isnan(A) || isnan(B) ? A + B : A > B ? A : B;
}
static double minimum_f(const double *v, const double *p)
{
    (void)p;
    return isnan(A) || isnan(B) ? A + B : A < B ? A : B;
}
/* PyTorch's rule: the tied half, else masked where the other wins (so NaN passes both) */
static double maxmin_d(double mine, double other, bool max)
{
    if (mine == other) return 0.5;
    return (max ? mine < other : mine > other) ? 0 : 1;
}
static double maximum_d(int k, const double *v, double y, const double *p)
{
    (void)y, (void)p;
    return k == 0 ? maxmin_d(A, B, true) : maxmin_d(B, A, true);
}
static double minimum_d(int k, const double *v, double y, const double *p)
{
    (void)y, (void)p;
    return k == 0 ? maxmin_d(A, B, false) : maxmin_d(B, A, false);
}

enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_COUNT };
#define CMP(kind, nm, f) [kind] = TG_PW_BOOL_KIND(nm, 2, f)
static const tg_pw_kind cmp_k[] = {CMP(CMP_EQ, "tg_eq", eq_f), CMP(CMP_NE, "tg_ne", ne_f), CMP(CMP_LT, "tg_lt", lt_f),
                                   CMP(CMP_LE, "tg_le", le_f), CMP(CMP_GT, "tg_gt", gt_f), CMP(CMP_GE, "tg_ge", ge_f)};
_Static_assert(sizeof cmp_k / sizeof *cmp_k == CMP_COUNT, "a comparison without its kind");
enum { LOG_AND, LOG_OR, LOG_XOR, LOG_COUNT };
static const tg_pw_kind logical_k[] = {[LOG_AND] = TG_PW_BOOL_KIND("tg_logical_and", 2, and_f),
                                       [LOG_OR] = TG_PW_BOOL_KIND("tg_logical_or", 2, or_f),
                                       [LOG_XOR] = TG_PW_BOOL_KIND("tg_logical_xor", 2, xor_f)};
_Static_assert(sizeof logical_k / sizeof *logical_k == LOG_COUNT, "a logical op without its kind");
static const tg_pw_kind not_k = TG_PW_BOOL_KIND("tg_logical_not", 1, not_f);
static const tg_pw_kind isnan_k = TG_PW_BOOL_KIND("tg_isnan", 1, isnan_f);
static const tg_pw_kind isinf_k = TG_PW_BOOL_KIND("tg_isinf", 1, isinf_f);
static const tg_pw_kind isfinite_k = TG_PW_BOOL_KIND("tg_isfinite", 1, isfinite_f);
static const tg_pw_kind where_k = TG_PW_KIND("tg_where", 3, 6, where_f, where_d);
static const tg_pw_kind fill_k = TG_PW_KIND("tg_masked_fill", 2, 1, fill_f, fill_d);
static const tg_pw_kind maximum_k = TG_PW_KIND("tg_maximum", 2, 3, maximum_f, maximum_d);
static const tg_pw_kind minimum_k = TG_PW_KIND("tg_minimum", 2, 3, minimum_f, minimum_d);

static tg_tensor *pw2(tg_tape *t, const tg_pw_kind *k, tg_tensor *a, tg_tensor *b, const double *p)
{
    return tg_pw_apply(t, k, (tg_tensor *[]){a, b}, p);
}

static bool int_or_bool(const tg_tensor *x)
{
    return x && x->magic == TG_TENSOR_LIVE && tg_dtype_is_int_or_bool(x->dtype);
}

/* a k b; with no float operand both go to float64 (the float64 copy of fn) */
static tg_tensor *compare_k(tg_tape *t, const tg_pw_kind *k, tg_tensor *a, tg_tensor *b,
                            tg_tensor *(*fn)(tg_tape *, tg_tensor *, tg_tensor *))
{
    const tg_op *op = &k->op;
    if (!int_or_bool(a) || !int_or_bool(b)) return pw2(t, k, a, b, NULL);
    if (!tg_inputs_check_dtype(t, op, a->dtype, &a, 1, 1) ||
        !tg_inputs_check_dtype(t, op, b->dtype, (tg_tensor *[]){NULL, b}, 2, 0))
        return NULL;
    tg_tensor *a64 = tg_to(t, a, TG_F64), *b64 = a64 ? tg_to(t, b, TG_F64) : NULL;
    return b64 ? fn(t, a64, b64) : NULL;
}

static tg_tensor *compare(tg_tape *t, int kind, tg_tensor *a, tg_tensor *b,
                          tg_tensor *(*fn)(tg_tape *, tg_tensor *, tg_tensor *))
{
    return compare_k(t, &cmp_k[kind], a, b, fn);
}

/* k of a: an integer or bool a goes to float64 (the float64 copy of fn), as compare's operands */
static tg_tensor *unary_k(tg_tape *t, const tg_pw_kind *k, tg_tensor *a, tg_tensor *(*fn)(tg_tape *, tg_tensor *))
{
    if (!int_or_bool(a)) return tg_pw_apply(t, k, &a, NULL);
    if (!tg_inputs_check_dtype(t, &k->op, a->dtype, &a, 1, 1)) return NULL;
    tg_tensor *a64 = tg_to(t, a, TG_F64);
    return a64 ? fn(t, a64) : NULL;
}

tg_tensor *tg_eq(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_eq, (t, a, b), a, b);
    return compare(t, CMP_EQ, a, b, tg_eq);
}
tg_tensor *tg_ne(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_ne, (t, a, b), a, b);
    return compare(t, CMP_NE, a, b, tg_ne);
}
tg_tensor *tg_lt(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_lt, (t, a, b), a, b);
    return compare(t, CMP_LT, a, b, tg_lt);
}
tg_tensor *tg_le(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_le, (t, a, b), a, b);
    return compare(t, CMP_LE, a, b, tg_le);
}
tg_tensor *tg_gt(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_gt, (t, a, b), a, b);
    return compare(t, CMP_GT, a, b, tg_gt);
}
tg_tensor *tg_ge(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_ge, (t, a, b), a, b);
    return compare(t, CMP_GE, a, b, tg_ge);
}
tg_tensor *tg_maximum(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_maximum, (t, a, b), a, b);
    return pw2(t, &maximum_k, a, b, NULL);
}
tg_tensor *tg_minimum(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_minimum, (t, a, b), a, b);
    return pw2(t, &minimum_k, a, b, NULL);
}

/* PyTorch's type of two integer or bool operands: the wider (bool < uint8 < int32 < int64) */
static tg_dtype int_promoted(tg_dtype a, tg_dtype b)
{
    static const tg_dtype order[] = {TG_BOOL, TG_U8, TG_I32, TG_I64};
    int ia = 0, ib = 0;
    for (int k = 0; k < 4; k++) ia = order[k] == a ? k : ia, ib = order[k] == b ? k : ib;
    return order[ia > ib ? ia : ib];
}

tg_tensor *tg_where(tg_tape *t, tg_tensor *cond, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_where, (t, cond, a, b), a, b);
    if (!tg_bool_mask(t, &where_k.op, "condition", cond)) return NULL;
    if (int_or_bool(a) && int_or_bool(b)) {
        /* integer branches: chosen in float64 (exact to 2^53), the result in their type */
        if (!tg_inputs_check_dtype(t, &where_k.op, a->dtype, &a, 1, 1) ||
            !tg_inputs_check_dtype(t, &where_k.op, b->dtype, (tg_tensor *[]){NULL, b}, 2, 0))
            return NULL;
        tg_tensor *a64 = tg_to(t, a, TG_F64), *b64 = a64 ? tg_to(t, b, TG_F64) : NULL;
        tg_tensor *r = b64 ? tg_where(t, cond, a64, b64) : NULL;
        return r ? tg_to(t, r, int_promoted(a->dtype, b->dtype)) : NULL;
    }
    return tg_pw_apply(t, &where_k, (tg_tensor *[]){cond, a, b}, NULL);
}

/* out has the broadcast shape of a and mask, as PyTorch's out-of-place masked_fill */
tg_tensor *tg_masked_fill(tg_tape *t, tg_tensor *a, tg_tensor *mask, double value)
{
    TG_DISPATCH_PROMOTED(tg_masked_fill, (t, a, mask, value), a);
    if (!tg_bool_mask(t, &fill_k.op, "mask", mask)) return NULL;
    return pw2(t, &fill_k, a, mask, (double[TG_PW_PARAMS]){value});
}

tg_tensor *tg_isnan(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_isnan, a, (t, a));
    return unary_k(t, &isnan_k, a, tg_isnan);
}
tg_tensor *tg_isinf(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_isinf, a, (t, a));
    return unary_k(t, &isinf_k, a, tg_isinf);
}
tg_tensor *tg_isfinite(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_isfinite, a, (t, a));
    return unary_k(t, &isfinite_k, a, tg_isfinite);
}
tg_tensor *tg_logical_not(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_logical_not, a, (t, a));
    return unary_k(t, &not_k, a, tg_logical_not);
}
tg_tensor *tg_logical_and(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_logical_and, (t, a, b), a, b);
    return compare_k(t, &logical_k[LOG_AND], a, b, tg_logical_and);
}
tg_tensor *tg_logical_or(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_logical_or, (t, a, b), a, b);
    return compare_k(t, &logical_k[LOG_OR], a, b, tg_logical_or);
}
tg_tensor *tg_logical_xor(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_logical_xor, (t, a, b), a, b);
    return compare_k(t, &logical_k[LOG_XOR], a, b, tg_logical_xor);
}
