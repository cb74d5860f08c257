/* tril, triu and diag (core/ops/linalg/tri.c): tinygrad's and OpInfo's shapes and
 * diagonals element by element, forward and backward (map_util.h), and the
 * misuse messages. Their gradchecks are in test_move.c with the other maps. */
#include "map_util.h"

/* ---- tril / triu / diag ---------------------------------------------------------------- */

typedef struct tri_ref {
    int k;
    bool upper;
} tri_ref;

static long tri_src(const int *o, const tg_tensor *x, const void *ctx)
{
    const tri_ref *r = ctx;
    int i = o[x->ndim - 2], j = o[x->ndim - 1];
    bool keep = r->upper ? j - i >= r->k : j - i <= r->k;
    return keep ? (long)flat(x->shape, o, x->ndim) : -1;
}

Test(tri, tril_triu)
{
    tg_tape *t = tg_tape_new();
    /* tinygrad's shapes, then OpInfo's (M = 10, S = 5): (M,M), (M,S), (S,M,S), (3,3,S,S) */
    tg_tensor *xs[] = {iota(2, (int[]){3, 3}),   iota(3, (int[]){5, 3, 3}),     iota(3, (int[]){5, 0, 3}),
                       iota(2, (int[]){3, 5}),   iota(4, (int[]){2, 1, 4, 2}),  iota(2, (int[]){10, 10}),
                       iota(2, (int[]){10, 5}),  iota(3, (int[]){5, 10, 5}),    iota(4, (int[]){3, 3, 5, 5})};
    const int ks[] = {0, -1, 1, 5, -5, 2};
    for (int x = 0; x < 9; x++)
        for (int k = 0; k < 6; k++) {
            check_map(t, xs[x], tg_tril(t, xs[x], ks[k]), tri_src, &(tri_ref){ks[k], false}, 0);
            check_map(t, xs[x], tg_triu(t, xs[x], ks[k]), tri_src, &(tri_ref){ks[k], true}, 0);
        }
    assert_fails(t, tg_tril(t, tg_tensor_zeros(t, 1, (int[]){3}), 0), "tg_tril", "[3]", "at least 2 dims");
    tu_free_all(xs, 9);
    tg_tape_free(t);
}

static long diag_embed_src(const int *o, const tg_tensor *x, const void *ctx)
{
    (void)x;
    int k = *(const int *)ctx, i = o[0], j = o[1];
    if (j - i != k) return -1;
    return k >= 0 ? i : j;
}

static long diagonal_src(const int *o, const tg_tensor *x, const void *ctx)
{
    int k = *(const int *)ctx;
    return k >= 0 ? (long)o[0] * x->shape[1] + o[0] + k : (long)(o[0] - k) * x->shape[1] + o[0];
}

Test(tri, diag)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *v = iota(1, (int[]){10});
    tg_tensor *mats[3] = {iota(2, (int[]){10, 10}), iota(2, (int[]){3, 5}), iota(2, (int[]){5, 3})};
    /* OpInfo's diagonals 0, 2, -2, 1 on (M, M), (3, 5), (5, 3) and an (M,) vector; and ours */
    const int ks[] = {0, 2, -2, 1, -1, 7, -12};
    for (int c = 0; c < 7; c++) {
        tg_tensor *m = tg_diag(t, v, ks[c]);
        int n = 10 + abs(ks[c]);
        assert_shape(m, 2, (int[]){n, n});
        check_map(t, v, m, diag_embed_src, &ks[c], 0);
        for (int k = 0; k < 3; k++) {
            int R = mats[k]->shape[0], C = mats[k]->shape[1];
            int len = ks[c] >= 0 ? (R < C - ks[c] ? R : C - ks[c]) : (R + ks[c] < C ? R + ks[c] : C);
            tg_tensor *d = tg_diag(t, mats[k], ks[c]);
            assert_shape(d, 1, (int[]){len > 0 ? len : 0});
            check_map(t, mats[k], d, diagonal_src, &ks[c], 0);
        }
    }
    tg_tensor *e = iota(1, (int[]){0});
    assert_shape(tg_diag(t, e, 0), 2, (int[]){0, 0});
    assert_fails(t, tg_diag(t, tg_tensor_zeros(t, 3, (int[]){2, 2, 2}), 0), "tg_diag", "[2,2,2]", "1-D or 2-D");
    tg_tensor *xs[] = {v, mats[0], mats[1], mats[2], e};
    tu_free_all(xs, 5);
    tg_tape_free(t);
}
