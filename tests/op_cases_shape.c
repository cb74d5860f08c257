/* Rows of the shape ops (tests/op_cases.h): a [2, 3] unless said; element 1
 * ([0, 1]) is the NaN, which moves with its element. */
#include "op_cases.h"

#define ROW(fn, n_ptr, nan_) {"tg_" #fn, b_##fn, 1, 1, n_ptr, {OC_IN(-1, 1, 2, 3)}, OC_GROWS, nan_, NULL}

static const int32_t ix_gather[4] = {1, 0, 2, 2};
static const int32_t ix_select[2] = {2, 1};
static const int64_t ix_add[2] = {2, 0};

OC_BUILD(b_reshape, tg_reshape(t, x[0], 2, OC_PTR(c, 0, ((const int[]){3, -1}))))
OC_BUILD(b_rows_view, tg_rows_view(t, x[0], 1, 1))
OC_BUILD(b_permute, tg_permute(t, x[0], OC_PTR(c, 0, ((const int[]){1, 0}))))
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
OC_BUILD(b_pad, tg_pad(t, x[0], OC_PTR(c, 0, ((const int[]){1, 0})), 2, 0.5))
OC_BUILD(b_repeat, tg_repeat(t, x[0], OC_PTR(c, 0, ((const int[]){1, 2})), 2))
OC_BUILD(b_expand, tg_expand(t, x[0], 2, OC_PTR(c, 0, ((const int[]){2, -1}))))
OC_BUILD(b_gather, tg_gather(t, x[0], 1, OC_PTR(c, 0, (&(tg_index){ix_gather, false, 2, {2, 2}}))))
OC_BUILD(b_scatter_add, tg_scatter_add(t, x[0], 1, OC_PTR(c, 0, (&(tg_index){ix_gather, false, 2, {2, 2}})), x[1]))
OC_BUILD(b_index_select, tg_index_select(t, x[0], 1, OC_PTR(c, 0, (&(tg_index){ix_select, false, 1, {2}}))))
OC_BUILD(b_index_add, tg_index_add(t, x[0], 1, OC_PTR(c, 0, (&(tg_index){ix_add, true, 1, {2}})), x[1], 0.5))

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

static const op_case rows[] = {
    ROW(reshape, 1, OC_NAN_SAME),
    ROW(rows_view, 0, "..."),
    ROW(permute, 1, "..n..."),
    ROW(transpose, 0, "..n..."),
    {"tg_split_heads", b_split_heads, 1, 1, 0, {OC_IN(-1, 1, 1, 2, 4)}, 0, OC_NAN_SAME, NULL},
    {"tg_merge_heads", b_merge_heads, 1, 1, 0, {OC_IN(-1, 1, 1, 2, 2, 2)}, 0, OC_NAN_SAME, NULL},
    {"tg_concat", b_concat, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 2)}, OC_GROWS, OC_NAN_SAME, NULL},
    ROW(slice, 0, "n..."),
    ROW(narrow, 0, "n..."),
    ROW(slice_dim, 0, "...."),
    ROW(split, 1, "..n..."),
    ROW(split_sizes, 2, "n....."),
    ROW(chunk, 1, "..n..."),
    {"tg_cat", b_cat, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 1, 3)}, OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_stack", b_stack, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 3)}, OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_detach", b_detach, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_NO_GRAD, OC_NAN_SAME, NULL},
    ROW(unsqueeze, 0, OC_NAN_SAME),
    {"tg_squeeze", b_squeeze, 1, 1, 0, {OC_IN(-1, 1, 2, 1, 3)}, OC_GROWS, OC_NAN_SAME, NULL},
    ROW(flip, 1, "....n."),
    ROW(roll, 0, "..n..."),
    ROW(pad, 1, "..n....."),
    ROW(repeat, 1, ".n..n......."),
    {"tg_expand", b_expand, 1, 1, 1, {OC_IN(-1, 1, 1, 3)}, 0, ".n..n.", NULL},
    {"tg_gather", b_gather, 1, 1, 1, {OC_IN(-1, 1, 2, 3)}, 0, "n...", NULL},
    {"tg_scatter_add", b_scatter_add, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 2)}, 0, OC_NAN_SAME, NULL},
    {"tg_index_select", b_index_select, 1, 1, 1, {OC_IN(-1, 1, 2, 3)}, 0, ".n..", NULL},
    {"tg_index_add", b_index_add, 2, 2, 1, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2, 2)}, 0, OC_NAN_SAME, NULL},
};

const oc_family oc_shape = {"shape", rows, sizeof rows / sizeof rows[0]};
