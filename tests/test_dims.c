/* Tensors of up to 8 dims (TG_MAX_DIMS): broadcasting, permute, reductions,
 * safetensors and shape strings at 8-D, each against an index-by-index
 * reference, with gradchecks; 9 dims are refused. */
#include "map_util.h"

#define ND 8

static tg_tensor *gc_mul(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_mul(t, in[0], in[1]);
}

static tg_tensor *gc_permute(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_permute(t, in[0], ctx, in[0]->ndim);
}

static tg_tensor *gc_sum_dim(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_sum_dim(t, in[0], *(const int *)ctx, false);
}

static tg_tensor *gc_max_dim(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_max_dim(t, in[0], *(const int *)ctx, true);
}

/* stretched dims on both sides, separated by kept ones */
Test(dims, broadcast_8d)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 8);
    const int sa[ND] = {2, 1, 3, 1, 2, 1, 2, 1}, sb[ND] = {1, 2, 3, 2, 1, 2, 2, 3};
    tg_tensor *in[2] = {tu_rand(&rng, -1, 1, ND, sa), tu_rand(&rng, -1, 1, ND, sb)};
    tg_tensor *y = tg_mul(t, in[0], in[1]);
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    const int so[ND] = {2, 2, 3, 2, 2, 2, 2, 3};
    cr_assert_eq(y->ndim, ND);
    for (int k = 0; k < ND; k++) cr_assert_eq(y->shape[k], so[k]);
    int idx[ND];
    for (size_t i = 0; i < y->size; i++) {
        unflat(so, ND, i, idx);
        cr_assert_eq(y->data[i], in[0]->data[flat(sa, idx, ND)] * in[1]->data[flat(sb, idx, ND)]);
    }
    /* a 3-D operand against the 8-D one aligns from the last dim */
    tg_tensor *c = tu_rand(&rng, -1, 1, 3, (int[]){2, 2, 3});
    tg_tensor *z = tg_add(t, in[1], c);
    cr_assert_not_null(z);
    for (size_t i = 0; i < z->size; i++) {
        unflat(sb, ND, i, idx);
        cr_assert_eq(z->data[i], in[1]->data[i] + c->data[flat((int[]){2, 2, 3}, idx + 5, 3)]);
    }
    tu_gradcheck(gc_mul, NULL, in, 2);
    tu_free_all(in, 2);
    tg_tensor_free(c);
    tg_tape_free(t);
}

Test(dims, permute_8d_and_negative_dims)
{
    tg_tape *t = tg_tape_new();
    const int s[ND] = {2, 1, 3, 2, 1, 2, 3, 2};
    tg_tensor *x = iota(ND, s);
    const int perm[ND] = {7, 0, 6, 1, 5, 2, 4, 3}, neg[ND] = {-1, 0, -2, 1, -3, 2, -4, 3};
    tg_tensor *p = tg_permute(t, x, perm, ND), *q = tg_permute(t, x, neg, ND);
    cr_assert(p && q, "%s", tg_tape_error(t));
    int ps[ND], idx[ND], src[ND];
    for (int k = 0; k < ND; k++) {
        ps[k] = s[perm[k]];
        cr_assert_eq(p->shape[k], ps[k]);
    }
    for (size_t i = 0; i < p->size; i++) {
        unflat(ps, ND, i, idx);
        for (int k = 0; k < ND; k++) src[perm[k]] = idx[k];
        cr_assert_eq(p->data[i], x->data[flat(s, src, ND)]);
        cr_assert_eq(q->data[i], p->data[i], "negative dims count from the end");
    }
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_tensor *g = tu_rand(&rng, -1, 1, ND, (int[]){2, 1, 2, 1, 3, 1, 2, 2});
    tu_gradcheck(gc_permute, (void *)neg, &g, 1);
    assert_fails(t, tg_permute(t, x, (int[]){0, 1, 2, 3, 4, 5, 6, -9}, ND), "tg_permute", "{0,1,2,3,4,5,6,-9}",
                 "[2,1,3,2,1,2,3,2]", "dims -8 to 7");
    assert_fails(t, tg_permute(t, x, (int[]){0, 1, 2, 3, 4, 5, 6, -8}, ND), "tg_permute", "not a permutation");
    tg_tensor_free(x);
    tg_tensor_free(g);
    tg_tape_free(t);
}

Test(dims, reductions_8d)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    const int s[ND] = {2, 1, 2, 3, 1, 2, 2, 2};
    tg_tensor *x = tu_rand(&rng, -2, 2, ND, s);
    for (int d = 0; d < ND; d++) {
        tg_tensor *y = tg_sum_dim(t, x, d - ND * (d & 1), false);  /* odd dims given negative */
        cr_assert_not_null(y, "%s", tg_tape_error(t));
        cr_assert_eq(y->ndim, ND - 1);
        int idx[ND];
        for (size_t i = 0; i < y->size; i++) {
            int os[ND - 1], oi[ND - 1];
            for (int k = 0, j = 0; k < ND; k++)
                if (k != d) os[j++] = s[k];
            unflat(os, ND - 1, i, oi);
            for (int k = 0, j = 0; k < ND; k++) idx[k] = k == d ? 0 : oi[j++];
            double ref = 0;
            for (int r = 0; r < s[d]; r++) {
                idx[d] = r;
                ref += x->data[flat(s, idx, ND)];
            }
            tu_close(y->data[i], ref, TU_TOL);
        }
        tg_tape_reset(t);
    }
    int d = 5;
    tu_gradcheck(gc_sum_dim, &d, &x, 1);
    d = -1;
    tu_gradcheck(gc_max_dim, &d, &x, 1);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(dims, safetensors_and_shape_strings_8d)
{
    const int s[ND] = {1, 2, 1, 3, 1, 2, 1, 2};
    tg_tensor *x = iota(ND, s);
    tg_safetensors *st = tg_st_new();
    cr_assert_eq(tg_st_add(st, "x", x), 0, "%s", tg_error());
    uint8_t *buf;
    size_t len;
    cr_assert_eq(tg_st_to_bytes(st, TG_F64, &buf, &len), 0, "%s", tg_error());
    tg_safetensors *back;
    cr_assert_eq(tg_st_parse(buf, len, NULL, &back), 0, "%s", tg_error());
    tg_tensor *y = tg_st_get(back, "x");
    cr_assert(y && tg_shape_equal(x, y));
    cr_assert_eq(memcmp(x->data, y->data, x->size * sizeof *x->data), 0);
    char str[TG_SHAPE_STR];
    cr_assert_str_eq(tg_shape_str(y, str), "[1,2,1,3,1,2,1,2]");
    tg_tensor *big = tg_tensor_alloc(ND, (int[]){1000000000, 1000000000, 0, 1000000000, 1000000000, 1000000000,
                                                 1000000000, 1000000000});
    cr_assert_not_null(big, "an empty 8-D tensor of large dims");
    cr_assert_str_eq(tg_shape_str(big, str),
                     "[1000000000,1000000000,0,1000000000,1000000000,1000000000,1000000000,1000000000]");
    cr_assert_null(tg_tensor_alloc(9, (int[]){1, 1, 1, 1, 1, 1, 1, 1, 1}));
    cr_assert(strstr(tg_error(), "0..8"), "%s", tg_error());
    tg_tensor_free(big);
    tg_free(buf);
    tg_st_free(back);
    tg_st_free(st);
    tg_tensor_free(x);
}

/* the ops written for 4-D layouts refuse more dims instead of misreading them */
Test(dims, four_d_ops_refuse_more)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 5, (int[]){1, 2, 2, 3, 3});
    assert_fails(t, tg_softmax_masked(t, x, NULL, 1.0), "tg_softmax_masked", "2-D to 4-D", "[1,2,2,3,3]");
    tg_tape_free(t);
}
