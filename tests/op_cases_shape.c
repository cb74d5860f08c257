/* Rows of the shape ops (tests/op_cases.h): a [2, 3] unless said; element 1
 * ([0, 1]) is the NaN, which moves with its element. */
#include "op_cases.h"

#define ROW(fn, n_ptr, nan_) {"tg_" #fn, b_##fn, 1, 1, n_ptr, {OC_IN(-1, 1, 2, 3)}, OC_GROWS | OC_MOVES, nan_, NULL}

static const int32_t ix_gather[4] = {1, 0, 2, 2};
static const int32_t ix_select[2] = {2, 1};
static const int64_t ix_add[2] = {2, 0};

OC_BUILD(b_reshape, tg_reshape(t, x[0], 2, OC_PTR(c, 0, ((const int[]){3, -1}))))
OC_BUILD(b_rows_view, tg_rows_view(t, x[0], 1, 1))
OC_BUILD(b_permute, tg_permute(t, x[0], OC_PTR(c, 0, ((const int[]){1, 0})), 2))
OC_BUILD(b_transpose, tg_transpose(t, x[0], 0, 1))
OC_BUILD(b_split_heads, tg_split_heads(t, x[0], 2))
OC_BUILD(b_merge_heads, tg_merge_heads(t, x[0]))
OC_BUILD(b_concat, tg_concat(t, OC_PTR(c, 0, x), 2))
OC_BUILD(b_slice, tg_slice(t, x[0], 1, 2))
OC_BUILD(b_narrow, tg_narrow(t, x[0], 1, 1, 2))
OC_BUILD(b_slice_dim, tg_slice_dim(t, x[0], 1, 0, 3, 2))
OC_BUILD(b_cat, tg_cat(t, OC_PTR(c, 0, x), 2, 0))
OC_BUILD(b_stack, tg_stack(t, OC_PTR(c, 0, x), 2, 0))
OC_BUILD(b_detach, tg_detach(t, x[0]))
OC_BUILD(b_unsqueeze, tg_unsqueeze(t, x[0], 1))
OC_BUILD(b_squeeze, tg_squeeze(t, x[0], 1))
OC_BUILD(b_flip, tg_flip(t, x[0], OC_PTR(c, 0, ((const int[]){0, 1})), 2))
OC_BUILD(b_roll, tg_roll(t, x[0], 1, 1))
OC_BUILD(b_roll_dims, tg_roll_dims(t, x[0], OC_PTR(c, 0, ((const int[]){1, 1})), OC_PTR(c, 1, ((const int[]){0, -1})), 2))
OC_BUILD(b_pad, tg_pad(t, x[0], OC_PTR(c, 0, ((const int[]){1, 0})), 2, 0.5))
OC_BUILD(b_repeat, tg_repeat(t, x[0], OC_PTR(c, 0, ((const int[]){1, 2})), 2))
OC_BUILD(b_expand, tg_expand(t, x[0], 2, OC_PTR(c, 0, ((const int[]){2, -1}))))
OC_BUILD(b_gather, tg_gather(t, x[0], 1, OC_PTR(c, 0, OC_INDEX(TG_I32, ix_gather, 2, 2))))
OC_BUILD(b_scatter_add, tg_scatter_add(t, x[0], 1, OC_PTR(c, 0, OC_INDEX(TG_I32, ix_gather, 2, 2)), x[1]))
OC_BUILD(b_index_select, tg_index_select(t, x[0], 1, OC_PTR(c, 0, OC_INDEX(TG_I32, ix_select, 2))))
#define SCATTER_REDUCE(r, self) \
    tg_scatter_reduce(t, x[0], 1, OC_PTR(c, 0, OC_INDEX(TG_I32, ix_gather, 2, 2)), x[1], r, self)
OC_BUILD(b_scatter_reduce_sum, SCATTER_REDUCE(TG_SCATTER_SUM, true))
OC_BUILD(b_scatter_reduce_prod, SCATTER_REDUCE(TG_SCATTER_PROD, true))
OC_BUILD(b_scatter_reduce_mean, SCATTER_REDUCE(TG_SCATTER_MEAN, false))
OC_BUILD(b_scatter_reduce_amax, SCATTER_REDUCE(TG_SCATTER_AMAX, true))
OC_BUILD(b_scatter_reduce_amin, SCATTER_REDUCE(TG_SCATTER_AMIN, false))
OC_BUILD(b_masked_select, tg_masked_select(t, x[0], x[1]))
OC_BUILD(b_nonzero, tg_nonzero(t, x[0]))
OC_BUILD(b_index_add, tg_index_add(t, x[0], 1, OC_PTR(c, 0, OC_INDEX(TG_I64, ix_add, 2)), x[1], 0.5))

/* The splits give their pieces joined again in another order, so that each
 * piece's grad is checked. */
static tg_tensor *b_split(const oc_call *c)
{
    tg_tensor *p[4];
    int n = tg_split(c->t, c->in[0], 2, 1, OC_PTR(c, 0, p), 4);
    return n == 2 ? tg_cat(c->t, (tg_tensor *[]){p[1], p[0]}, 2, 1) : NULL;
}
static tg_tensor *b_split_sizes(const oc_call *c)
{
    tg_tensor *p[2];
    int rc = tg_split_sizes(c->t, c->in[0], OC_PTR(c, 0, ((const int[]){1, 2})), 2, 1, OC_PTR(c, 1, p));
    return rc == 0 ? tg_cat(c->t, (tg_tensor *[]){p[1], p[0]}, 2, 1) : NULL;
}
static tg_tensor *b_chunk(const oc_call *c)
{
    tg_tensor *p[2];
    int n = tg_chunk(c->t, c->in[0], 2, 1, OC_PTR(c, 0, p));
    return n == 2 ? tg_cat(c->t, (tg_tensor *[]){p[1], p[0]}, 2, 1) : NULL;
}

#define SCATTER_ROW(r, nan_) \
    {"tg_scatter_reduce", b_scatter_reduce_##r, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 2)}, 0, nan_, NULL}

static const op_case rows[] = {
    ROW(reshape, 1, OC_NAN_SAME),
    ROW(rows_view, 0, "..."),
    ROW(permute, 1, "..n..."),
    ROW(transpose, 0, "..n..."),
    {"tg_split_heads", b_split_heads, 1, 1, 0, {OC_IN(-1, 1, 1, 2, 4)}, 0, OC_NAN_SAME, NULL},
    {"tg_merge_heads", b_merge_heads, 1, 1, 0, {OC_IN(-1, 1, 1, 2, 2, 2)}, 0, OC_NAN_SAME, NULL},
    {"tg_concat", b_concat, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 2)}, OC_GROWS | OC_MOVES, OC_NAN_SAME, NULL},
    ROW(slice, 0, "n..."),
    ROW(narrow, 0, "n..."),
    ROW(slice_dim, 0, "...."),
    ROW(split, 1, "..n..."),
    ROW(split_sizes, 2, "n....."),
    ROW(chunk, 1, "..n..."),
    {"tg_cat", b_cat, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 1, 3)}, OC_GROWS | OC_MOVES, OC_NAN_SAME, NULL},
    {"tg_stack", b_stack, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 3)}, OC_GROWS | OC_MOVES, OC_NAN_SAME, NULL},
    {"tg_detach", b_detach, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_NO_GRAD | OC_MOVES, OC_NAN_SAME, NULL},
    ROW(unsqueeze, 0, OC_NAN_SAME),
    {"tg_squeeze", b_squeeze, 1, 1, 0, {OC_IN(-1, 1, 2, 1, 3)}, OC_GROWS | OC_MOVES, OC_NAN_SAME, NULL},
    ROW(flip, 1, "....n."),
    ROW(roll, 0, "..n..."),
    ROW(roll_dims, 2, ".....n"),
    ROW(pad, 1, "..n....."),
    ROW(repeat, 1, ".n..n......."),
    {"tg_expand", b_expand, 1, 1, 1, {OC_IN(-1, 1, 1, 3)}, OC_MOVES, ".n..n.", NULL},
    {"tg_gather", b_gather, 1, 1, 1, {OC_IN(-1, 1, 2, 3)}, OC_MOVES, "n...", NULL},
    {"tg_scatter_add", b_scatter_add, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 2)}, 0, OC_NAN_SAME, NULL},
    {"tg_index_select", b_index_select, 1, 1, 1, {OC_IN(-1, 1, 2, 3)}, OC_MOVES, ".n..", NULL},
    {"tg_index_add", b_index_add, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 2)}, 0, OC_NAN_SAME, NULL},
    /* ix_gather names a[0, 1], a[0, 0] and a[1, 2] twice; with include_self a[0, 1]'s NaN stays, without it
     * a[0, 1] is replaced */
    SCATTER_ROW(sum, OC_NAN_SAME),
    SCATTER_ROW(prod, OC_NAN_SAME),
    SCATTER_ROW(mean, "......"),
    SCATTER_ROW(amax, OC_NAN_SAME),
    SCATTER_ROW(amin, "......"),
    /* mask [3] (0, 1, 0) broadcasts over a's rows: a[0, 1] (the NaN) and a[1, 1] */
    {"tg_masked_select", b_masked_select, 2, 2, 0, {OC_IN(-1, 1, 2, 3), OC_INK(OC_MASK, 0, 1, 3)}, OC_GROWS, "n.", NULL},
    /* NaN is nonzero: every index of the [2, 3] comes out */
    {"tg_nonzero", b_nonzero, 1, 1, 0, {OC_IN(0.5, 1, 2, 3)}, OC_NO_GRAD | OC_GROWS, "............", NULL},
    /* a bool a (false, true, false, ...): the indices of its trues */
    {"tg_nonzero", b_nonzero, 1, 1, 0, {OC_INK(OC_MASK, 0, 1, 2, 3)}, OC_NO_GRAD | OC_GROWS, NULL, "NaN: a bool a"},
};

const oc_family oc_shape = {"shape", rows, sizeof rows / sizeof rows[0]};
