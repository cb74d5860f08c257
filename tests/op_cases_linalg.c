/* Rows of matmul and the triangles (tests/op_cases.h). */
#include "op_cases.h"

OC_BUILD(b_matmul, tg_matmul(t, x[0], x[1], x[2], 0))
OC_BUILD(b_matmul_t, tg_matmul(t, x[0], x[1], x[2], TG_TRANS_A | TG_TRANS_B))
OC_BUILD(b_tril, tg_tril(t, x[0], 0))
OC_BUILD(b_triu, tg_triu(t, x[0], 0))
OC_BUILD(b_diag, tg_diag(t, x[0], 0))
OC_BUILD(b_diag2, tg_diag(t, x[0], 1))
OC_BUILD(b_diagonal, tg_diagonal(t, x[0], 1, -2, -1))
OC_BUILD(b_diag_embed, tg_diag_embed(t, x[0], 0, -2, -1))

/* NaN: a NaN of a spoils its row of out (0 * NaN is NaN, as a BLAS GEMM);
 * tril zeroes it, as PyTorch (the triangle is selected, not multiplied). */
static const op_case rows[] = {
    {"tg_matmul", b_matmul, 3, 2, 0, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 3, 2), OC_IN(-1, 1, 2)}, OC_GROWS, "nn..", NULL},
    /* a [3, 2] read as a^T: its element 1 is a^T's [1, 0], row 1 of out */
    {"tg_matmul", b_matmul_t, 3, 2, 0, {OC_IN(-1, 1, 3, 2), OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 2)}, 0, "..nn", NULL},
    {"tg_tril", b_tril, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_GROWS | OC_MOVES, "......", NULL},
    {"tg_triu", b_triu, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_GROWS | OC_MOVES, OC_NAN_SAME, NULL},
    {"tg_diag", b_diag, 1, 1, 0, {OC_IN(-1, 1, 3)}, OC_MOVES, "....n....", NULL},
    {"tg_diag", b_diag2, 1, 1, 0, {OC_IN(-1, 1, 3, 3)}, OC_MOVES, "n.", NULL},
    /* out[b, j] = a[b, j, j + 1]: a[0, 0, 1] is out[0, 0] */
    {"tg_diagonal", b_diagonal, 1, 1, 0, {OC_IN(-1, 1, 2, 2, 3)}, OC_GROWS | OC_MOVES, "n...", NULL},
    /* a[0, 1] goes to out[0, 1, 1] */
    {"tg_diag_embed", b_diag_embed, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_GROWS | OC_MOVES, "....n.............", NULL},
};

const oc_family oc_linalg = {"linalg", rows, sizeof rows / sizeof rows[0]};
