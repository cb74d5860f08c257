/* permute, transpose, split / merge heads, concat, slice and reshape (core/ops/shape/shape.c):
 * hand-computed values and backward, gradchecks, and bad arguments. */
#include <string.h>

#include "ops_util.h"

static tg_tensor *gc_permute(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_permute(t, in[0], ctx, in[0]->ndim);
}

static tg_tensor *gc_transpose(tg_tape *t, tg_tensor **in, void *ctx)
{
    const int *d = ctx;
    return tg_transpose(t, in[0], d[0], d[1]);
}

static tg_tensor *gc_split(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_split_heads(t, in[0], *(const int *)ctx);
}

static tg_tensor *gc_merge(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_merge_heads(t, in[0]);
}

static tg_tensor *gc_concat(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_concat(t, in, *(const int *)ctx);
}

static tg_tensor *gc_slice(tg_tape *t, tg_tensor **in, void *ctx)
{
    const int *s = ctx;
    return tg_slice(t, in[0], s[0], s[1]);
}

/* reshape of an input and of a temporary, each followed by an op */
static tg_tensor *gc_reshape(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *v = tg_reshape(t, in[0], 3, (int[]){3, -1, 2});       /* [2,6] -> [3,2,2] */
    tg_tensor *p = tg_permute(t, v, (int[]){2, 0, 1}, 3);               /* [2,3,2] */
    tg_tensor *f = tg_reshape(t, p, 2, (int[]){-1, 4});              /* [3,4] */
    return tg_slice(t, f, 1, 2);
}

Test(shape, permute_and_transpose_values)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(3, (int[]){2, 3, 4});
    tg_tensor *p = tg_permute(t, x, (int[]){2, 0, 1}, 3);
    cr_assert_not_null(p);
    cr_assert(p->ndim == 3 && p->shape[0] == 4 && p->shape[1] == 2 && p->shape[2] == 3);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) cr_assert_eq(p->data[(k * 2 + i) * 3 + j], i * 12 + j * 4 + k);
    tg_tensor *tr = tg_transpose(t, x, -1, 0);  /* [4,3,2], tr[k,j,i] = x[i,j,k] */
    cr_assert_not_null(tr);
    cr_assert(tr->shape[0] == 4 && tr->shape[1] == 3 && tr->shape[2] == 2);
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 2; i++) cr_assert_eq(tr->data[(k * 3 + j) * 2 + i], i * 12 + j * 4 + k);
    /* backward of permute: d x[i,j,k] = d p[k,i,j] */
    tg_real seed[24];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) seed[(k * 2 + i) * 3 + j] = (tg_real)(100 * k + 10 * i + j);
    cr_assert_eq(tg_backward_seed(t, p, seed), 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) cr_assert_eq(x->grad[i * 12 + j * 4 + k], 100 * k + 10 * i + j);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(shape, split_merge_round_trip)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(3, (int[]){2, 3, 6});
    tg_tensor *s = tg_split_heads(t, x, 3);
    cr_assert_not_null(s);
    cr_assert(s->ndim == 4 && s->shape[0] == 2 && s->shape[1] == 3 && s->shape[2] == 3 && s->shape[3] == 2);
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 3; h++)
            for (int l = 0; l < 3; l++)
                for (int d = 0; d < 2; d++)
                    cr_assert_eq(s->data[((b * 3 + h) * 3 + l) * 2 + d], x->data[(b * 3 + l) * 6 + h * 2 + d]);
    tg_tensor *m = tg_merge_heads(t, s);
    cr_assert_not_null(m);
    cr_assert(tg_shape_equal(m, x));
    for (size_t i = 0; i < x->size; i++) cr_assert_eq(m->data[i], x->data[i]);
    /* backward through split then merge is the identity map */
    cr_assert_eq(tg_backward_seed(t, m, x->data), 0);
    for (size_t i = 0; i < x->size; i++) cr_assert_eq(x->grad[i], x->data[i]);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(shape, concat_slice_values_and_backward)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = iota(2, (int[]){2, 2}), *b = iota(2, (int[]){2, 1}), *c = iota(2, (int[]){2, 3});
    const tg_real av[] = {1, 2, 3, 4}, bv[] = {5, 6}, cv[] = {7, 8, 9, 10, 11, 12};
    memcpy(a->data, av, sizeof av);
    memcpy(b->data, bv, sizeof bv);
    memcpy(c->data, cv, sizeof cv);
    b->requires_grad = false;
    tg_tensor *out = tg_concat(t, (tg_tensor *[]){a, b, c}, 3);
    cr_assert_not_null(out);
    cr_assert(out->ndim == 2 && out->shape[0] == 2 && out->shape[1] == 6);
    const tg_real want[] = {1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12};
    for (int i = 0; i < 12; i++) cr_assert_eq(out->data[i], want[i]);
    tg_tensor *s = tg_slice(t, out, 2, 3);
    cr_assert_not_null(s);
    cr_assert(s->shape[0] == 2 && s->shape[1] == 3);
    const tg_real ws[] = {5, 7, 8, 6, 10, 11};
    for (int i = 0; i < 6; i++) cr_assert_eq(s->data[i], ws[i]);
    /* d out = slice's grad scattered into columns 2..4; then split per input */
    const tg_real seed[] = {1, 2, 3, 4, 5, 6};
    cr_assert_eq(tg_backward_seed(t, s, seed), 0);
    const tg_real da[] = {0, 0, 0, 0}, dc[] = {2, 3, 0, 5, 6, 0};
    for (int i = 0; i < 4; i++) cr_assert_eq(a->grad[i], da[i]);
    for (int i = 0; i < 6; i++) cr_assert_eq(c->grad[i], dc[i]);
    cr_assert_null(b->grad, "an input without requires_grad gets no grad");
    tg_tensor *e = tg_slice(t, out, 6, 0);  /* empty slice at the end is valid */
    cr_assert(e && e->size == 0);
    tu_free_all((tg_tensor *[]){a, b, c}, 3);
    tg_tape_free(t);
}

Test(shape, reshape_is_a_view_and_grads_flow)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(2, (int[]){2, 3});
    tg_tensor *v = tg_reshape(t, x, 2, (int[]){3, -1});
    cr_assert_not_null(v);
    cr_assert(v->ndim == 2 && v->shape[0] == 3 && v->shape[1] == 2 && v->size == 6);
    cr_assert(v->data == x->data, "reshape shares data");
    cr_assert(v->grad == NULL && x->grad == NULL, "a view allocates no grad in the forward");
    cr_assert(tg_grad(t, v) != NULL && v->grad == x->grad, "the view's grad is its base's");
    cr_assert(v->requires_grad);
    cr_assert_eq(tg_tape_node_count(t), 0, "reshape records no node");
    x->data[3] = 42;
    cr_assert_eq(v->data[3], 42);
    tg_tensor *y = tg_slice(t, v, 0, 1);  /* v[:, 0] = x flat 0, 2, 4 */
    cr_assert_not_null(y);
    cr_assert_eq(tg_backward_seed(t, y, (tg_real[]){1, 2, 3}), 0);
    const tg_real want[] = {1, 0, 2, 0, 3, 0};
    for (int i = 0; i < 6; i++) cr_assert_eq(x->grad[i], want[i]);

    /* a view of a temporary: grads reach the temporary, then its input */
    tg_tape_reset(t);
    memset(x->grad, 0, 6 * sizeof(tg_real));
    tg_tensor *p = tg_transpose(t, x, 0, 1);                  /* [3,2] */
    tg_tensor *f = tg_reshape(t, p, 1, (int[]){-1});          /* [6] = x^T flat */
    cr_assert(f && f->data == p->data && !f->grad && !p->grad);
    tg_tensor *r = tg_rows_view(t, f, 2, 3);                  /* a view of a view: p flat 2..4 */
    cr_assert(r && tg_grad(t, r) == tg_grad(t, p) + 2, "a view of a view slices the base's grad");
    cr_assert_eq(f->grad, NULL, "the middle view's grad is made only on its own first need");
    tg_tensor *z = tg_slice(t, f, 1, 2);                      /* p flat 1, 2 = x[1,0], x[0,1] */
    cr_assert_eq(tg_backward_seed(t, z, (tg_real[]){5, 7}), 0);
    const tg_real want2[] = {0, 7, 0, 5, 0, 0};
    for (int i = 0; i < 6; i++) cr_assert_eq(x->grad[i], want2[i]);

    /* not recording: still a view, the grad of a temporary is not allocated */
    tg_tape_reset(t);
    tg_no_grad_begin(t);
    tg_tensor *q = tg_slice(t, x, 0, 3);
    tg_tensor *w = tg_reshape(t, q, 0, NULL);
    cr_assert_null(w, "6 elements do not fit a 0-d tensor");
    tg_tape_clear_error(t);
    w = tg_reshape(t, q, 4, (int[]){1, 2, 3, 1});
    cr_assert(w && w->data == q->data && w->grad == NULL);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(shape, gradcheck_permute_and_transpose)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 4});
    tu_gradcheck(gc_permute, ((int[]){2, 0, 1}), &x, 1);
    tu_gradcheck(gc_permute, ((int[]){1, 2, 0}), &x, 1);
    tu_gradcheck(gc_transpose, ((int[]){0, -1}), &x, 1);
    tg_tensor *y = tu_rand(&rng, -1, 1, 4, (int[]){2, 3, 2, 3});
    tu_gradcheck(gc_permute, ((int[]){3, 1, 0, 2}), &y, 1);
    tu_gradcheck(gc_transpose, ((int[]){1, 2}), &y, 1);
    tu_free_all((tg_tensor *[]){x, y}, 2);
}

Test(shape, gradcheck_split_and_merge_heads)
{
    tg_rng rng;
    tg_rng_seed(&rng, 2);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 6});
    tu_gradcheck(gc_split, ((int[]){3}), &x, 1);
    tu_gradcheck(gc_split, ((int[]){2}), &x, 1);
    tg_tensor *y = tu_rand(&rng, -1, 1, 4, (int[]){2, 3, 4, 2});
    tu_gradcheck(gc_merge, NULL, &y, 1);
    tu_free_all((tg_tensor *[]){x, y}, 2);
}

Test(shape, gradcheck_concat_and_slice)
{
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_tensor *xs[5];
    for (int i = 0; i < 5; i++) xs[i] = tu_rand(&rng, -1, 1, 3, (int[]){2, 2, 1 + i % 3});
    xs[2]->requires_grad = false;  /* an input without grad among them */
    tu_gradcheck(gc_concat, ((int[]){3}), xs, 3);
    tu_gradcheck(gc_concat, ((int[]){5}), xs, 5);  /* more inputs than a node holds */
    tg_tensor *z = tu_rand(&rng, -1, 1, 2, (int[]){3, 7});
    tu_gradcheck(gc_slice, ((int[]){2, 3}), &z, 1);
    tu_gradcheck(gc_slice, ((int[]){0, 7}), &z, 1);
    tu_gradcheck(gc_slice, ((int[]){6, 1}), &z, 1);
    tg_tensor_free(z);
    tu_free_all(xs, 5);
}

Test(shape, gradcheck_reshape_view)
{
    tg_rng rng;
    tg_rng_seed(&rng, 4);
    tg_tensor *x = tu_rand(&rng, -1, 1, 2, (int[]){2, 6});
    tu_gradcheck(gc_reshape, NULL, &x, 1);
    tg_tensor_free(x);
}

Test(shape, rejects_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 3, (int[]){2, 3, 4});
    tg_tensor *s0 = tg_tensor_zeros(t, 0, NULL);
    assert_fails(t, tg_reshape(t, x, 2, (int[]){5, 5}), "tg_reshape", "[2,3,4]", "{5,5}");
    assert_fails(t, tg_reshape(t, x, 2, (int[]){-1, -1}), "tg_reshape", "[2,3,4]", "{-1,-1}");
    assert_fails(t, tg_reshape(t, x, 2, (int[]){5, -1}), "tg_reshape", "[2,3,4]", "{5,-1}");
    assert_fails(t, tg_reshape(t, x, 2, (int[]){-2, 12}), "tg_reshape", "[2,3,4]", "{-2,12}");
    assert_fails(t, tg_reshape(t, x, 9, (int[]){1, 2, 3, 4, 1, 1, 1, 1, 1}), "tg_reshape", "[2,3,4]", "9 dims");
    assert_fails(t, tg_reshape(t, x, 2, NULL), "tg_reshape", "[2,3,4]");
    tg_tensor *e = tg_tensor_zeros(t, 2, (int[]){0, 3});
    assert_fails(t, tg_reshape(t, e, 2, (int[]){0, -1}), "tg_reshape", "[0,3]", "{0,-1}");
    assert_fails(t, tg_permute(t, x, (int[]){0, 0, 1}, 3), "tg_permute", "[2,3,4]", "{0,0,1}");
    assert_fails(t, tg_permute(t, x, (int[]){0, 1, 3}, 3), "tg_permute", "[2,3,4]", "{0,1,3}");
    assert_fails(t, tg_permute(t, x, NULL, 3), "tg_permute", "[2,3,4]");
    assert_fails(t, tg_permute(t, x, (int[]){1, 0}, 2), "tg_permute", "2 entries", "3 dims", "[2,3,4]");
    assert_fails(t, tg_transpose(t, x, 0, 3), "tg_transpose", "[2,3,4]", "(0, 3)");
    assert_fails(t, tg_transpose(t, x, -4, 1), "tg_transpose", "[2,3,4]");
    assert_fails(t, tg_split_heads(t, s0, 2), "tg_split_heads", "[]");
    assert_fails(t, tg_split_heads(t, x, 3), "tg_split_heads", "[2,3,4]", "3 heads");
    assert_fails(t, tg_split_heads(t, x, 0), "tg_split_heads", "[2,3,4]", "0 heads");
    assert_fails(t, tg_merge_heads(t, x), "tg_merge_heads", "[2,3,4]");
    tg_tensor *y = tg_tensor_zeros(t, 3, (int[]){2, 2, 4});
    tg_tensor *z = tg_tensor_zeros(t, 2, (int[]){2, 3});
    assert_fails(t, tg_concat(t, (tg_tensor *[]){x, y}, 2), "tg_concat", "xs[1] [2,2,4]", "xs[0] [2,3,4]");
    assert_fails(t, tg_concat(t, (tg_tensor *[]){x, z}, 2), "tg_concat", "xs[1] [2,3]", "xs[0] [2,3,4]");
    assert_fails(t, tg_concat(t, (tg_tensor *[]){s0, s0}, 2), "tg_concat", "xs[0] []");
    assert_fails(t, tg_concat(t, (tg_tensor *[]){x}, 0), "tg_concat", "n = 0");
    assert_fails(t, tg_slice(t, x, 2, 3), "tg_slice", "[2,3,4]", "start 2, len 3");
    assert_fails(t, tg_slice(t, x, -1, 2), "tg_slice", "[2,3,4]", "start -1");
    assert_fails(t, tg_slice(t, x, 1, -1), "tg_slice", "[2,3,4]", "len -1");
    assert_fails(t, tg_slice(t, x, 5, 0), "tg_slice", "[2,3,4]", "start 5");
    assert_fails(t, tg_slice(t, s0, 0, 1), "tg_slice", "[]");
    tg_tape_free(t);
}

/* Shapes whose products overflow an int are refused before any data is
 * read, so a one-element heap tensor with a forged shape is enough. */
Test(shape, shape_overflows)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *h = tg_tensor_alloc(0, NULL);
    *h = (tg_tensor){.ndim = 4, .shape = {1, 1 << 16, 1, 1 << 16}, .size = (size_t)1 << 32,
                     .data = h->data, .owns_data = true, .magic = TG_TENSOR_LIVE};
    cr_assert_null(tg_merge_heads(t, h));
    tu_assert_has(tg_tape_error(t), "tg_merge_heads: H*dk overflows an int for x [1,65536,1,65536]");
    tg_tape_reset(t);
    *h = (tg_tensor){.ndim = 2, .shape = {1, 1 << 30, 1, 1}, .size = (size_t)1 << 30, .data = h->data,
                     .owns_data = true, .magic = TG_TENSOR_LIVE};
    cr_assert_null(tg_concat(t, (tg_tensor *[]){h, h}, 2));
    tu_assert_has(tg_tape_error(t), "tg_concat: the joined dim (2147483648) overflows an int");
    tg_tensor_free(h);
    tg_tape_free(t);
}
