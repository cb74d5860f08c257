/* masked_select, nonzero (core/ops/shape/select.c) and scatter_reduce
 * (core/ops/shape/scatter_reduce.c) beyond their op-case rows and PyTorch
 * fixtures: nonzero's indices against torch.nonzero's, and every misuse
 * named. */
#include "ops_util.h"

Test(select, nonzero_indices)
{
    tg_tape *t = tg_tape_new();
    /* torch.nonzero(torch.tensor([[0, 1.5, 0], [nan, 0, -2]])) = [[0, 1], [1, 0], [1, 2]] */
    tg_tensor *a = mk(t, 2, (int[]){2, 3}, (tg_real[]){0, 1.5, 0, NAN, 0, -2});
    a->requires_grad = true;
    tg_tensor *o = tg_nonzero(t, a);
    cr_assert_not_null(o, "%s", tg_tape_error(t));
    cr_assert(o->ndim == 2 && o->shape[0] == 3 && o->shape[1] == 2 && !o->requires_grad && o->dtype == TG_I64);
    const int64_t want[6] = {0, 1, 1, 0, 1, 2};
    for (int i = 0; i < 6; i++) cr_assert_eq(((int64_t *)tg_data(o, TG_I64))[i], want[i], "element %d", i);
    /* a 0-d a gives [1, 0] or [0, 0] (PyTorch); an empty a [0, 1] */
    o = tg_nonzero(t, mk(t, 0, NULL, (tg_real[]){3}));
    cr_assert(o && o->ndim == 2 && o->shape[0] == 1 && o->shape[1] == 0);
    o = tg_nonzero(t, mk(t, 0, NULL, (tg_real[]){0}));
    cr_assert(o && o->shape[0] == 0 && o->shape[1] == 0);
    o = tg_nonzero(t, mk(t, 1, (int[]){0}, (tg_real[]){0}));
    cr_assert(o && o->shape[0] == 0 && o->shape[1] == 1);
    tg_tape_free(t);
}

Test(select, masked_select_errors)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = mk(t, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    tg_tensor *m2 = tg_tensor_from_dtype(t, TG_BOOL, (uint8_t[]){1, 0}, 1, (int[]){2});
    assert_fails(t, tg_masked_select(t, a, m2), "tg_masked_select", "mask [2] does not broadcast with a [2,3]");
    /* the mask is a bool tensor: a float one is refused naming its dtype, as PyTorch */
    assert_fails(t, tg_masked_select(t, a, mk(t, 2, (int[]){2, 3}, (tg_real[]){1, 0, 1, 0, 1, 0})), "tg_masked_select",
                 "the mask is", "not bool");
    assert_fails(t, tg_masked_select(t, a, NULL), "tg_masked_select");
    /* a stretched by the mask: each element of a [3] is selected twice, its grad summed */
    a = mk(t, 1, (int[]){3}, (tg_real[]){1, 2, 3});
    a->requires_grad = true;
    tg_tensor *o = tg_masked_select(t, a, tg_tensor_from_dtype(t, TG_BOOL, (uint8_t[]){1, 1, 0, 1, 0, 1}, 2, (int[]){2, 3}));
    cr_assert(o && o->ndim == 1 && o->shape[0] == 4, "%s", tg_tape_error(t));
    const tg_real want[4] = {1, 2, 1, 3};
    for (int i = 0; i < 4; i++) cr_assert_eq(o->data[i], want[i]);
    cr_assert_eq(tg_backward(t, tg_sum(t, o)), 0);
    cr_assert(a->grad[0] == 2 && a->grad[1] == 1 && a->grad[2] == 1);
    tg_tape_free(t);
}

Test(select, scatter_reduce_errors)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = mk(t, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    tg_tensor *src = mk(t, 2, (int[]){2, 2}, (tg_real[]){1, 2, 3, 4});
    const int32_t ok[6] = {0, 1, 2, 2, 0, 0}, bad[4] = {0, 1, 3, 2};
    tg_tensor *ix = tu_index(t, TG_I32, ok, 2, (int[]){2, 2}), *ixb = tu_index(t, TG_I32, bad, 2, (int[]){2, 2});
    tg_tensor *ix3 = tu_index(t, TG_I32, ok, 2, (int[]){2, 3});
    assert_fails(t, tg_scatter_reduce(t, a, 1, ixb, src, TG_SCATTER_SUM, true), "tg_scatter_reduce",
                 "index 3 at position 2", "dim 1 (size 3)");
    assert_fails(t, tg_scatter_reduce(t, a, 1, ix3, src, TG_SCATTER_SUM, true), "tg_scatter_reduce",
                 "index [2,3] does not fit a [2,3] and src [2,2]");
    assert_fails(t, tg_scatter_reduce(t, a, 2, ix, src, TG_SCATTER_SUM, true), "tg_scatter_reduce",
                 "dim 2 is out of range");
    assert_fails(t, tg_scatter_reduce(t, a, 1, ix, src, (tg_scatter_reduce_mode)7, true), "tg_scatter_reduce",
                 "reduce 7");
    assert_fails(t, tg_scatter_reduce(t, a, 1, NULL, src, TG_SCATTER_SUM, true), "tg_scatter_reduce",
                 "index is NULL");
    tg_tape_free(t);
}

Test(select, diagonal_and_roll_dims_errors)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = mk(t, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    assert_fails(t, tg_diagonal(t, a, 0, 1, -1), "tg_diagonal", "dim1 1 and dim2 -1 are the same dim of a [2,3]");
    assert_fails(t, tg_diagonal(t, a, 0, 0, 2), "tg_diagonal", "dim 2 is out of range");
    assert_fails(t, tg_diagonal(t, mk(t, 1, (int[]){3}, (tg_real[]){1, 2, 3}), 0, 0, 1), "tg_diagonal",
                 "a [3] has fewer than 2 dims");
    assert_fails(t, tg_diag_embed(t, a, 0, 0, 3), "tg_diag_embed", "dim 3 is out of range");
    assert_fails(t, tg_diag_embed(t, mk(t, 0, NULL, (tg_real[]){1}), 0, -2, -1), "tg_diag_embed", "1 to 7 dims");
    assert_fails(t, tg_roll_dims(t, a, (int[]){1}, (int[]){2}, 1), "tg_roll_dims", "dim 2 is out of range");
    assert_fails(t, tg_roll_dims(t, a, (int[]){1}, (int[]){0}, 0), "tg_roll_dims", "0 dims for a [2,3]");
    assert_fails(t, tg_roll_dims(t, a, NULL, (int[]){0}, 1), "tg_roll_dims", "shifts is NULL");
    /* an offset past the plane gives an empty diagonal, as PyTorch */
    tg_tensor *o = tg_diagonal(t, a, 5, 0, 1);
    cr_assert(o && o->ndim == 1 && o->shape[0] == 0, "%s", tg_tape_error(t));
    tg_tape_free(t);
}
