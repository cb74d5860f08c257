/* Reductions, scans, sort and topk along a dim (core/ops/reduce/stats.c, scan.c; min: reduce.c):
 * gradchecks of each along every dim, PyTorch's edge rules (ties, NaN,
 * zeros in prod / cumprod, zero std / norm, empty and size-1 dims), the
 * indices of argmax / argmin / sort / topk, and misuse. Shapes after
 * tinygrad's test_ops.py ((45, 3) reductions, (3, 4, 5, 6) along each dim,
 * test_sort / test_topk on (45, 65)). PyTorch's numbers: tests/test_fixtures.c
 * ("along" family). */
#include "ops_util.h"

TU_SUITE(stats, 31);

enum { MIN, AMAX, AMIN, PROD, VAR, STD, NORM1, NORM2, NORMINF, CUMSUM, CUMPROD, SORT, SORTD, TOPK, TOPKS, N_OPS };
static const char *const names[N_OPS] = {"min", "amax", "amin", "prod", "var", "std", "norm1", "norm2", "norminf", "cumsum",
                                         "cumprod", "sort", "sort descending", "topk", "topk smallest"};

typedef struct op_ctx {
    int op, dim;
    bool keep;
} op_ctx;

static tg_tensor *apply(tg_tape *t, tg_tensor *x, const op_ctx *c)
{
    switch (c->op) {
    case MIN: return tg_min_dim(t, x, c->dim, c->keep);
    case AMAX: return tg_amax(t, x, c->dim, c->keep);
    case AMIN: return tg_amin(t, x, c->dim, c->keep);
    case PROD: return tg_prod_dim(t, x, c->dim, c->keep);
    case VAR: return tg_var_dim(t, x, c->dim, 1, c->keep);
    case STD: return tg_std_dim(t, x, c->dim, 0, c->keep);
    case NORM1: return tg_norm_dim(t, x, 1, c->dim, c->keep);
    case NORM2: return tg_norm_dim(t, x, 2, c->dim, c->keep);
    case NORMINF: return tg_norm_dim(t, x, INFINITY, c->dim, c->keep);
    case CUMSUM: return tg_cumsum(t, x, c->dim);
    case CUMPROD: return tg_cumprod(t, x, c->dim);
    case SORT: return tg_sort(t, x, c->dim, false, NULL);
    case SORTD: return tg_sort(t, x, c->dim, true, NULL);
    case TOPK: return tg_topk(t, x, 2, c->dim, true, NULL);
    default: return tg_topk(t, x, 2, c->dim, false, NULL);
    }
}

static tg_tensor *f_op(tg_tape *t, tg_tensor **in, void *ctx) { return apply(t, in[0], ctx); }

/* every op along every dim of a [3, 4, 5]; values spread so that no two
 * (nor two absolute values) are within eps, and none is near 0 */
Test(stats, gradcheck_each_op_along_each_dim)
{
    for (int op = 0; op < N_OPS; op++)
        for (int dim = -3; dim < 3; dim++) {
            tg_tensor *x = tg_tensor_alloc(3, (int[]){3, 4, 5});
            for (size_t e = 0; e < 60; e++) {
                double v = 0.3 + 0.025 * (double)((e * 37) % 60);  /* a permutation of 0.3 .. 1.775 */
                x->data[e] = (tg_real)(e % 3 == 1 ? -v : v);
            }
            x->requires_grad = true;
            op_ctx c = {op, dim, dim % 2 == 0};
            tg_gradcheck_result r = tg_gradcheck(f_op, &c, &x, 1, NULL);
            cr_assert(r.ok, "%s dim %d: %s", names[op], dim, tg_error());
            tg_tensor_free(x);
        }
}

/* tinygrad: test_sort / test_topk sizes, and sum of sort = sum of a */
Test(stats, sort_and_topk_45x65)
{
    tg_tensor *x = tu_rand(&R, -2, 2, 2, (int[]){45, 65}), *ix;
    for (int dim = 0; dim < 2; dim++) {
        tg_tensor *y = tg_sort(T, x, dim, dim == 1, &ix);
        cr_assert(y && tg_shape_equal(x, y) && tg_shape_equal(x, ix) && ix->dtype == TG_I64);
        const int64_t *iv = tg_data(ix, TG_I64);
        int n = x->shape[dim], inner = dim ? 1 : 65, outer = dim ? 45 : 1;
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++)
                for (int j = 0; j < n; j++) {
                    size_t at = (size_t)(o * n * inner + j * inner + i);
                    tg_real v = y->data[at];
                    cr_assert_eq(v, x->data[(size_t)(o * n * inner + (int)iv[at] * inner + i)]);
                    if (j) cr_assert(dim ? v <= y->data[at - inner] : v >= y->data[at - inner]);
                }
        tg_tensor *fix, *k = tg_topk(T, x, 5, dim, true, &ix), *full = tg_sort(T, x, dim, true, &fix);
        cr_assert(k->shape[dim] == 5 && ix->dtype == TG_I64 && tg_shape_equal(k, ix));
        for (int r = 0; r < k->shape[1 - dim]; r++)
            for (int j = 0; j < 5; j++) {
                size_t a = dim ? (size_t)(r * 5 + j) : (size_t)(j * 65 + r), b = dim ? (size_t)(r * 65 + j) : a;
                cr_assert_eq(k->data[a], full->data[b]);
                cr_assert_eq(((int64_t *)tg_data(ix, TG_I64))[a], ((int64_t *)tg_data(fix, TG_I64))[b]);
            }
    }
    tg_tensor_free(x);
}

/* PyTorch: NaN sorts above every number; equal values keep their order */
Test(stats, sort_nan_and_ties_as_pytorch)
{
    tg_tensor *x = mk(T, 1, (int[]){5}, (tg_real[]){1, 2, 2, 1, NAN}), *ix;
    x->requires_grad = true;
    tg_tensor *y = tg_sort(T, x, 0, false, &ix);
    const int64_t up[] = {0, 3, 1, 2, 4};
    for (int j = 0; j < 5; j++) cr_assert_eq(((int64_t *)tg_data(ix, TG_I64))[j], up[j]);
    cr_assert(isnan(y->data[4]) && y->data[0] == 1);
    tg_tensor *d = tg_sort(T, x, 0, true, &ix);
    const int64_t down[] = {4, 1, 2, 0, 3};
    for (int j = 0; j < 5; j++) cr_assert_eq(((int64_t *)tg_data(ix, TG_I64))[j], down[j]);
    tg_tensor *k = tg_topk(T, x, 2, -1, true, &ix);
    const int64_t *kv = tg_data(ix, TG_I64);
    cr_assert(isnan(k->data[0]) && k->data[1] == 2 && kv && kv[0] == 4 && kv[1] == 1);
    /* the indices are a copy: changing them leaves backward alone */
    ((int64_t *)tg_data(ix, TG_I64))[0] = 0;
    cr_assert_eq(tg_backward_seed(T, k, (tg_real[]){10, 1}), 0, "%s", tg_tape_error(T));
    cr_assert(x->grad[4] == 10 && x->grad[1] == 1 && x->grad[0] == 0 && x->grad[2] == 0);
    (void)d;
}

Test(stats, argmax_argmin_first_index_and_nan)
{
    tg_tensor *x = mk(T, 2, (int[]){3, 3}, (tg_real[]){1, 5, 5, 2, 2, 0, 7, NAN, -1});
    x->requires_grad = true;
    tg_tensor *mx = tg_argmax(T, x, 1, false), *mn = tg_argmin(T, x, -1, true), *c = tg_argmax(T, x, 0, false);
    cr_assert(mx->ndim == 1 && mn->ndim == 2 && mn->shape[1] == 1);
    cr_assert(mx->dtype == TG_I64 && mn->dtype == TG_I64 && c->dtype == TG_I64);
    const int64_t *vx = tg_data(mx, TG_I64), *vn = tg_data(mn, TG_I64), *vc = tg_data(c, TG_I64);
    cr_assert(vx[0] == 1 && vx[1] == 0 && vx[2] == 1);
    cr_assert(vn[0] == 0 && vn[1] == 2 && vn[2] == 1);
    cr_assert(vc[0] == 2 && vc[1] == 2 && vc[2] == 0);
    cr_assert(!mx->requires_grad && !mn->requires_grad, "indices carry no grad");
    tg_tensor *m = tg_min_dim(T, x, 1, false);
    cr_assert(m->data[0] == 1 && m->data[1] == 0 && isnan(m->data[2]));
    cr_assert_eq(tg_backward_seed(T, m, (tg_real[]){1, 2, 3}), 0);
    cr_assert(x->grad[0] == 1 && x->grad[5] == 2 && x->grad[7] == 3 && x->grad[8] == 0);
    tg_tape_reset(T);
    /* ties: the grad of min goes to the first */
    tg_tensor *tie = mk(T, 1, (int[]){3}, (tg_real[]){4, -1, -1});
    tie->requires_grad = true;
    cr_assert_eq(tg_backward(T, tg_sum(T, tg_min_dim(T, tie, 0, false))), 0);
    cr_assert(tie->grad[1] == 1 && tie->grad[2] == 0);
    tg_tape_reset(T);
    /* amax / amin share the grad among ties (torch.amax); NaN wins */
    tie = mk(T, 2, (int[]){2, 4}, (tg_real[]){4, -1, 4, -1, 2, NAN, 3, NAN});
    tie->requires_grad = true;
    tg_tensor *ax = tg_amax(T, tie, 1, false), *an = tg_amin(T, tie, -1, true);
    cr_assert(ax->data[0] == 4 && isnan(ax->data[1]) && an->data[0] == -1 && isnan(an->data[1]));
    cr_assert(an->ndim == 2 && an->shape[1] == 1);
    cr_assert_eq(tg_backward(T, tg_sum(T, tg_add(T, tg_scale(T, ax, 2), tg_reshape(T, an, 1, (int[]){2})))), 0);
    cr_assert(tie->grad[0] == 1 && tie->grad[2] == 1 && tie->grad[1] == 0.5 && tie->grad[3] == 0.5);
    cr_assert(tie->grad[4] == 0 && tie->grad[5] == 1.5 && tie->grad[6] == 0 && tie->grad[7] == 1.5);
}

Test(stats, zeros_in_prod_and_cumprod_zero_std_and_norm)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 4}, (tg_real[]){2, 0, 3, 0, 2, 0, 3, 5});
    x->requires_grad = true;
    tg_tensor *p = tg_prod_dim(T, x, 1, false);
    cr_assert(p->data[0] == 0 && p->data[1] == 0);
    cr_assert_eq(tg_backward_seed(T, p, (tg_real[]){1, 1}), 0);
    const tg_real gp[] = {0, 0, 0, 0, 0, 30, 0, 0};  /* two zeros: none; one: the others' product */
    for (int e = 0; e < 8; e++) cr_assert_eq(x->grad[e], gp[e], "prod grad %d", e);
    tg_tape_reset(T);
    x = mk(T, 1, (int[]){3}, (tg_real[]){2, 0, 3});
    x->requires_grad = true;
    tg_tensor *cp = tg_cumprod(T, x, 0);
    cr_assert(cp->data[0] == 2 && cp->data[1] == 0 && cp->data[2] == 0);
    cr_assert_eq(tg_backward_seed(T, cp, (tg_real[]){1, 1, 1}), 0);
    cr_assert(x->grad[0] == 1 && x->grad[1] == 8 && x->grad[2] == 0);  /* PyTorch: [1, 8, 0] */
    tg_tape_reset(T);
    tg_tensor *c = mk(T, 1, (int[]){3}, (tg_real[]){2, 2, 2}), *z = mk(T, 1, (int[]){2}, (tg_real[]){0, 0});
    c->requires_grad = z->requires_grad = true;
    tg_tensor *sd = tg_std_dim(T, c, 0, 1, false), *n2 = tg_norm_dim(T, z, 2, 0, false);
    cr_assert(sd->data[0] == 0 && n2->data[0] == 0);
    cr_assert_eq(tg_backward(T, tg_add(T, sd, n2)), 0);
    for (int e = 0; e < 3; e++) cr_assert_eq(c->grad[e], 0);
    cr_assert(z->grad[0] == 0 && z->grad[1] == 0);
    tg_tape_reset(T);
    /* the inf norm shares its grad among ties, with the sign */
    tg_tensor *v = mk(T, 1, (int[]){3}, (tg_real[]){1, -3, 3});
    v->requires_grad = true;
    cr_assert_eq(tg_backward(T, tg_norm_dim(T, v, INFINITY, 0, false)), 0);
    cr_assert(v->grad[0] == 0 && v->grad[1] == -0.5 && v->grad[2] == 0.5);
}

Test(stats, var_std_values_and_correction)
{
    tg_tensor *x = mk(T, 1, (int[]){4}, (tg_real[]){1, 2, 3, 4});
    tu_close(tg_var_dim(T, x, 0, 1, false)->data[0], 5.0 / 3, TU_TOL);
    tu_close(tg_var_dim(T, x, 0, 0, false)->data[0], 1.25, TU_TOL);
    tu_close(tg_std_dim(T, x, 0, 2, false)->data[0], sqrt(2.5), TU_TOL);
    tu_close(tg_norm_dim(T, x, 2, 0, false)->data[0], sqrt(30.0), TU_TOL);
    tu_close(tg_norm_dim(T, x, 1, -1, false)->data[0], 10, TU_TOL);
    tu_close(tg_prod_dim(T, x, 0, false)->data[0], 24, TU_TOL);
    tg_tensor *cs = tg_cumsum(T, x, 0);
    cr_assert(cs->data[0] == 1 && cs->data[1] == 3 && cs->data[2] == 6 && cs->data[3] == 10);
    tg_tensor *one = mk(T, 1, (int[]){1}, (tg_real[]){2});
    cr_assert(isnan(tg_var_dim(T, one, 0, 1, false)->data[0]));  /* 0 / 0, as PyTorch */
    tg_tensor *big = mk(T, 1, (int[]){3}, (tg_real[]){1e6 + 1, 1e6 + 2, 1e6 + 3});
    tu_close(tg_var_dim(T, big, 0, 1, false)->data[0], 1, 1e-3);  /* two passes, in double */
}

/* OpInfo's empty samples: PyTorch's identities, or an error */
Test(stats, empty_dims)
{
    tg_tensor *e = tg_tensor_zeros(T, 2, (int[]){3, 0});
    tg_tensor *p = tg_prod_dim(T, e, 1, false), *v = tg_var_dim(T, e, 1, 1, false), *n = tg_norm_dim(T, e, 2, 1, false);
    cr_assert(p && p->size == 3 && p->data[0] == 1);
    cr_assert(v && isnan(v->data[0]) && n && n->data[0] == 0);
    cr_assert(tg_cumsum(T, e, 1)->size == 0 && tg_sort(T, e, 1, false, NULL)->size == 0);
    cr_assert(tg_topk(T, e, 0, 1, true, NULL)->size == 0);
    cr_assert(tg_prod_dim(T, e, 0, false)->size == 0);
    assert_fails(T, tg_min_dim(T, e, 1, false), "tg_min_dim", "dim 1 of a [3,0] has size 0");
    assert_fails(T, tg_argmax(T, e, -1, false), "tg_argmax", "size 0");
    assert_fails(T, tg_amax(T, e, 1, false), "tg_amax", "dim 1 of a [3,0] has size 0: no maximum");
    assert_fails(T, tg_amin(T, e, 1, false), "tg_amin", "no minimum");
    assert_fails(T, tg_norm_dim(T, e, INFINITY, 1, false), "tg_norm_dim", "no identity");
}

Test(stats, misuse)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    assert_fails(T, tg_prod_dim(T, x, 2, false), "tg_prod_dim", "dim 2 is out of range for a [2,3] (dims -2 to 1)");
    assert_fails(T, tg_cumsum(T, x, -3), "tg_cumsum", "dim -3");
    assert_fails(T, tg_norm_dim(T, x, 3, 0, false), "tg_norm_dim", "ord 3");
    assert_fails(T, tg_var_dim(T, x, 0, -1, false), "tg_var_dim", "correction -1");
    assert_fails(T, tg_std_dim(T, x, 0, NAN, false), "tg_std_dim", "correction nan must be >= 0");
    assert_fails(T, tg_topk(T, x, 4, 1, true, NULL), "tg_topk", "k 4 is out of range [0, 3]");
    assert_fails(T, tg_topk(T, x, -1, 1, true, NULL), "tg_topk", "k -1");
    assert_fails(T, tg_sort(T, NULL, 0, false, NULL), "tg_sort", "NULL");
}

/* a 0-d tensor takes dim 0 or -1 */
Test(stats, zero_d)
{
    tg_tensor *s = mk(T, 0, NULL, (tg_real[]){-3});
    cr_assert_eq(tg_norm_dim(T, s, 2, 0, false)->data[0], 3);
    cr_assert_eq(tg_cumprod(T, s, -1)->data[0], -3);
    cr_assert_eq(*(int64_t *)tg_data(tg_argmin(T, s, 0, false), TG_I64), 0);
}

/* the slice and pointwise engines cut work across the pool, but each output
 * element and each grad element is computed by one call: the same bits on 1
 * and 3 threads, forward and backward, stretched operands included */
static void run_all(tg_tensor *x, tg_tensor *b, tg_real *out, tg_real *gx, tg_real *gb)
{
    tg_tape_reset(T);
    memset(x->grad, 0, x->size * sizeof *x->grad);
    memset(b->grad, 0, b->size * sizeof *b->grad);
    tg_tensor *h = tg_silu(T, tg_where(T, tg_gt(T, x, b), x, b));             /* [64, 300] */
    h = tg_add(T, tg_cumprod(T, tg_scale(T, h, 0.9), 1), tg_sort(T, h, 0, true, NULL));
    tg_tensor *y = tg_add(T, tg_std_dim(T, h, 1, 1, false), tg_norm_dim(T, h, 2, 1, false));
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    cr_assert_eq(tg_backward(T, tg_sum(T, y)), 0, "%s", tg_tape_error(T));
    memcpy(out, y->data, 64 * sizeof *out);
    memcpy(gx, x->grad, x->size * sizeof *gx);
    memcpy(gb, b->grad, b->size * sizeof *gb);
}

Test(stats, same_bits_on_any_thread_count)
{
    tg_tensor *x = tu_rand(&R, -1, 1, 2, (int[]){64, 300}), *b = tu_rand(&R, -1, 1, 1, (int[]){300});
    x->grad = tg_malloc(x->size * sizeof *x->grad);
    b->grad = tg_malloc(b->size * sizeof *b->grad);
    static tg_real o[2][64], gx[2][64 * 300], gb[2][300];
    int before = tg_threads_get();
    for (int k = 0; k < 2; k++) {
        tg_threads_set(k ? 3 : 1);
        run_all(x, b, o[k], gx[k], gb[k]);
    }
    tg_threads_set(before);
    cr_assert(!memcmp(o[0], o[1], sizeof o[0]) && !memcmp(gx[0], gx[1], sizeof gx[0]) &&
              !memcmp(gb[0], gb[1], sizeof gb[0]));
    tg_tensor_free(x);
    tg_tensor_free(b);
}

/* NaN in a slice gives NaN (min, prod, var, norm 2, cumsum from it on) */
Test(stats, nan_propagates)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, NAN, 3, 4, 5, 6});
    for (int op = MIN; op <= NORMINF; op++) {
        tg_tensor *y = apply(T, x, &(op_ctx){op, 1, false});
        cr_assert(y && isnan(y->data[0]) && isfinite(y->data[1]), "%s", names[op]);
    }
    tg_tensor *c = tg_cumsum(T, x, 1);
    cr_assert(c->data[0] == 1 && isnan(c->data[1]) && isnan(c->data[2]) && c->data[5] == 15);
}
