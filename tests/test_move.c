/* The ops that move elements along any dim (core/ops/shape/slice.c, cat.c,
 * layout.c, squeeze / unsqueeze; tril / triu / diag are in test_tri.c): every case of tinygrad's
 * test_ops.py for them (its shapes, size-0 and size-1 dims included) checked
 * element by element against an index reference, forward and backward
 * (map_util.h), then gradchecks and the misuse tests. */
#include "map_util.h"

/* ---- narrow and slicing with a step ---------------------------------------- */

typedef struct slice_ref {
    int d, start, step;
} slice_ref;

static long slice_src(const int *o, const tg_tensor *x, const void *ctx)
{
    const slice_ref *r = ctx;
    int i[TG_MAX_DIMS];
    memcpy(i, o, sizeof i);
    i[r->d] = r->start + o[r->d] * r->step;
    return (long)flat(x->shape, i, x->ndim);
}

/* tinygrad's test_slice_* cases on one dim, with Python's start and length */
static const struct {
    int nd, shape[3], dim, start, end, step, want_start, want_len;
} SLICES[] = {
    {1, {3}, 0, 1, 3, 1, 1, 2},          {1, {3}, 0, 0, 2, 1, 0, 2},        {1, {3}, 0, -2, 2, 1, 1, 1},
    {3, {3, 3, 3}, 0, 1, 2, 1, 1, 1},    {3, {3, 3, 3}, 2, 0, -1, 1, 0, 2}, {3, {3, 3, 3}, 0, 0, 4, 1, 0, 3},
    {3, {3, 3, 3}, 0, -6, 4, 1, 0, 3},   {3, {3, 3, 3}, 0, 1, 50, 1, 1, 2}, {3, {7, 5, 10}, 0, 0, INT32_MAX, 2, 0, 4},
    {3, {7, 5, 10}, 1, 0, INT32_MAX, 3, 0, 2}, {3, {7, 5, 10}, 2, 0, INT32_MAX, 4, 0, 3},
    {3, {7, 5, 10}, 0, 1, 5, 2, 1, 2},   {3, {3, 3, 3}, 0, 5, 10, 1, 3, 0}, {3, {3, 3, 3}, 0, -15, -7, 1, 0, 0},
    {3, {3, 3, 3}, 0, -2, -5, 1, 1, 0},  {2, {10, 10}, 0, 1, 1, 1, 1, 0},    {2, {10, 10}, -1, -1, INT32_MAX, 1, 9, 1},
};

Test(move, slice_dim_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    for (size_t c = 0; c < sizeof SLICES / sizeof *SLICES; c++) {
        tg_tensor *x = iota(SLICES[c].nd, SLICES[c].shape);
        tg_tensor *y = tg_slice_dim(t, x, SLICES[c].dim, SLICES[c].start, SLICES[c].end, SLICES[c].step);
        cr_assert_not_null(y, "case %zu: %s", c, tg_tape_error(t));
        int d = SLICES[c].dim < 0 ? SLICES[c].dim + x->ndim : SLICES[c].dim;
        cr_assert_eq(y->shape[d], SLICES[c].want_len, "case %zu: length %d", c, y->shape[d]);
        check_map(t, x, y, slice_src, &(slice_ref){d, SLICES[c].want_start, SLICES[c].step}, 0);
        tg_tensor_free(x);
    }
    tg_tape_free(t);
}

/* OpInfo's narrow samples on (S, S, S), S = 5, two more (start from the end,
 * the whole dim), and tinygrad's narrow of a narrow */
Test(move, narrow)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(3, (int[]){5, 5, 5});
    const int cases[][3] = {{1, 2, 2}, {-1, 2, 2}, {1, 0, 0}, {-1, 0, 0}, {2, 1, 2}, {-1, -3, 2}, {0, 0, 5}};
    for (int c = 0; c < 7; c++) {
        int d = cases[c][0] < 0 ? cases[c][0] + 3 : cases[c][0], s = cases[c][1] < 0 ? cases[c][1] + 5 : cases[c][1];
        tg_tensor *y = tg_narrow(t, x, cases[c][0], cases[c][1], cases[c][2]);
        check_map(t, x, y, slice_src, &(slice_ref){d, s, 1}, 0);
    }
    /* tinygrad's test_double_slice: x[:, 1:2][1:2] of a (4,4) */
    tg_tensor *y = tg_narrow(t, tg_narrow(t, x, 1, 1, 1), 0, 1, 1);
    cr_assert(y && y->shape[0] == 1 && y->shape[1] == 1 && y->data[0] == 30 && y->data[4] == 34);
    assert_fails(t, tg_narrow(t, x, 3, 0, 1), "tg_narrow", "dim 3 is out of range", "[5,5,5]", "dims -3 to 2");
    assert_fails(t, tg_narrow(t, x, 1, 3, 3), "tg_narrow", "start 3, length 3", "dim 1 (size 5)", "[5,5,5]");
    assert_fails(t, tg_narrow(t, x, 1, -6, 1), "tg_narrow", "start -6");
    assert_fails(t, tg_slice_dim(t, x, 0, 0, 2, 0), "tg_slice_dim", "step 0 must be positive", "[5,5,5]");
    assert_fails(t, tg_slice_dim(t, x, 0, 0, 2, -1), "tg_slice_dim", "step -1");
    tg_tensor *s = tg_tensor_zeros(t, 0, NULL);
    assert_fails(t, tg_narrow(t, s, 0, 0, 1), "tg_narrow", "[]", "no dim");
    tg_tensor_free(x);
    tg_tape_free(t);
}

/* ---- split and chunk --------------------------------------------------------- */

/* the pieces are narrows at consecutive offsets whose lengths are want[] */
static void check_pieces(tg_tape *t, tg_tensor *x, tg_tensor **p, int count, int dim, const int *want, int n_want)
{
    cr_assert_eq(count, n_want, "%d pieces, want %d (%s)", count, n_want, tg_tape_error(t) ? tg_tape_error(t) : "");
    int d = dim < 0 ? dim + x->ndim : dim;
    for (int i = 0, off = 0; i < count; off += want[i++]) {
        cr_assert_eq(p[i]->shape[d], want[i], "piece %d has %d, want %d", i, p[i]->shape[d], want[i]);
        int o[TG_MAX_DIMS];
        for (size_t e = 0; e < p[i]->size; e++) {
            unflat(p[i]->shape, p[i]->ndim, e, o);
            o[d] += off;
            cr_assert_eq(p[i]->data[e], x->data[flat(x->shape, o, x->ndim)]);
        }
    }
    /* backward of every piece: each element of x gets its seed once */
    tg_tensor *all = tg_cat(t, p, count, dim);
    cr_assert_not_null(all);
    tg_real *seed = malloc((all->size ? all->size : 1) * sizeof *seed);
    for (size_t e = 0; e < all->size; e++) seed[e] = (tg_real)e;
    tg_free(x->grad);
    x->grad = NULL;
    cr_assert_eq(tg_backward_seed(t, all, seed), 0);
    for (size_t e = 0; e < x->size; e++) cr_assert_eq(x->grad[e], x->data[e]);  /* x is iota: split + cat is identity */
    free(seed);
    tg_tape_reset(t);
}

Test(move, split_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *p[64];
    tg_tensor *a = iota(1, (int[]){10}), *b = iota(2, (int[]){3, 4}), *c = iota(2, (int[]){4, 4});
    check_pieces(t, a, p, tg_split(t, a, 5, 0, p, 64), 0, (int[]){5, 5}, 2);
    cr_assert_eq(tg_split_sizes(t, a, (int[]){1, 4, 5}, 3, 0, p), 0);
    check_pieces(t, a, p, 3, 0, (int[]){1, 4, 5}, 3);
    check_pieces(t, a, p, tg_split(t, a, 3, 0, p, 64), 0, (int[]){3, 3, 3, 1}, 4);
    check_pieces(t, b, p, tg_split(t, b, 1, 0, p, 64), 0, (int[]){1, 1, 1}, 3);
    check_pieces(t, b, p, tg_split(t, b, 1, 1, p, 64), 1, (int[]){1, 1, 1, 1}, 4);
    cr_assert_eq(tg_split_sizes(t, c, (int[]){2, 2}, 2, 0, p), 0);
    check_pieces(t, c, p, 2, 0, (int[]){2, 2}, 2);
    cr_assert_eq(tg_split_sizes(t, c, (int[]){2, 2}, 2, 1, p), 0);
    check_pieces(t, c, p, 2, 1, (int[]){2, 2}, 2);
    tg_tensor *big = iota(1, (int[]){10000});
    check_pieces(t, big, p, tg_split(t, big, 2500, 0, p, 64), 0, (int[]){2500, 2500, 2500, 2500}, 4);
    /* an empty dim splits into one empty piece (PyTorch) */
    tg_tensor *e = iota(2, (int[]){0, 3});
    check_pieces(t, e, p, tg_split(t, e, 2, 0, p, 64), 0, (int[]){0}, 1);
    cr_assert_eq(tg_split(t, a, 3, 0, p, 3), -1);
    assert_fails(t, NULL, "tg_split", "4 pieces", "size 10", "outs[3]");
    cr_assert_eq(tg_split(t, a, 0, 0, p, 64), -1);
    assert_fails(t, NULL, "tg_split", "split size 0 must be positive");
    cr_assert_eq(tg_split_sizes(t, a, (int[]){1, 4, 4}, 3, 0, p), -1);
    assert_fails(t, NULL, "tg_split_sizes", "3 sizes summing to 9", "dim 0 (size 10)", "[10]");
    cr_assert_eq(tg_split_sizes(t, a, (int[]){11, -1}, 2, 0, p), -1);
    assert_fails(t, NULL, "tg_split_sizes", "sizes[1] is -1");
    cr_assert_eq(tg_split(t, a, 2, 1, p, 64), -1);
    assert_fails(t, NULL, "tg_split", "dim 1 is out of range", "[10]");
    tg_tensor *xs[] = {a, b, c, big, e};
    tu_free_all(xs, 5);
    tg_tape_free(t);
}

Test(move, chunk_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *p[8];
    tg_tensor *a = iota(2, (int[]){8, 13}), *b = iota(3, (int[]){8, 3, 39});
    /* torch.arange(13).repeat(8, 1).chunk(6, 1): pieces of 3, so 5 of them */
    check_pieces(t, a, p, tg_chunk(t, a, 6, 1, p), 1, (int[]){3, 3, 3, 3, 1}, 5);
    check_pieces(t, a, p, tg_chunk(t, a, 6, 0, p), 0, (int[]){2, 2, 2, 2}, 4);
    check_pieces(t, a, p, tg_chunk(t, a, 3, -1, p), -1, (int[]){5, 5, 3}, 3);
    check_pieces(t, b, p, tg_chunk(t, b, 3, -2, p), -2, (int[]){1, 1, 1}, 3);
    /* an empty dim gives `chunks` empty pieces (PyTorch) */
    tg_tensor *e = iota(2, (int[]){3, 0});
    check_pieces(t, e, p, tg_chunk(t, e, 3, 1, p), 1, (int[]){0, 0, 0}, 3);
    cr_assert_eq(tg_chunk(t, a, 0, 0, p), -1);
    assert_fails(t, NULL, "tg_chunk", "chunks 0 must be positive", "[8,13]");
    cr_assert_eq(tg_chunk(t, a, 2, 0, NULL), -1);
    assert_fails(t, NULL, "tg_chunk", "outs is NULL");
    tg_tensor *xs[] = {a, b, e};
    tu_free_all(xs, 3);
    tg_tape_free(t);
}

/* ---- cat and stack ----------------------------------------------------------------- */

/* out = cat(xs, d): every element is its input's, and the backward hands
 * each input the seed of its own elements */
static void check_cat(tg_tape *t, tg_tensor **xs, int n, int dim, bool stack)
{
    for (int k = 0; k < n; k++) {  /* before the op: stack's views point into a grad that exists */
        tg_free(xs[k]->grad);
        xs[k]->grad = NULL;
    }
    tg_tensor *y = stack ? tg_stack(t, xs, n, dim) : tg_cat(t, xs, n, dim);
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    int d = dim < 0 ? dim + xs[0]->ndim + stack : dim;
    int o[TG_MAX_DIMS + 1], i[TG_MAX_DIMS];
    tg_real *seed = malloc((y->size ? y->size : 1) * sizeof *seed);
    for (size_t e = 0; e < y->size; e++) {
        unflat(y->shape, y->ndim, e, o);
        int k = 0, at = o[d];
        if (stack) {
            k = at;
            for (int j = 0, m = 0; j < y->ndim; j++)
                if (j != d) i[m++] = o[j];
        } else {
            while (at >= xs[k]->shape[d]) at -= xs[k++]->shape[d];
            memcpy(i, o, sizeof i);
            i[d] = at;
        }
        size_t f = flat(xs[k]->shape, i, xs[k]->ndim);
        cr_assert_eq(y->data[e], xs[k]->data[f]);
        seed[e] = (tg_real)(k + 1) * xs[k]->data[f];
    }
    cr_assert_eq(tg_backward_seed(t, y, seed), 0, "%s", tg_tape_error(t));
    for (int k = 0; k < n; k++)
        for (size_t e = 0; e < xs[k]->size; e++) cr_assert_eq(xs[k]->grad[e], (tg_real)(k + 1) * xs[k]->data[e]);
    free(seed);
    tg_tape_reset(t);
}

static tg_tensor *rand3(tg_rng *rng, const int *shape) { return tu_rand(rng, -2, 2, 3, shape); }

Test(move, cat_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x[3];
    for (int k = 0; k < 3; k++) x[k] = rand3(&rng, (int[]){45, 65, 9});
    for (int dim = -2; dim < 3; dim++) check_cat(t, x, 3, dim, false);
    tu_free_all(x, 3);
    for (int k = 0; k < 3; k++) x[k] = rand3(&rng, (int[]){45, 0, 9});  /* zero in a dim not joined */
    check_cat(t, x, 3, 0, false);
    check_cat(t, x, 3, 1, false);
    tu_free_all(x, 3);
    for (int k = 0; k < 3; k++) x[k] = rand3(&rng, (int[]){45, k, 9});  /* zero in the joined dim */
    check_cat(t, x, 3, 1, false);
    /* different sizes along the joined dim (PyTorch's test_cat: 13, 17, 19 along each dim) */
    tu_free_all(x, 3);
    for (int k = 0; k < 3; k++) x[k] = rand3(&rng, (int[]){13 + 4 * k, 10, 10});
    check_cat(t, x, 3, 0, false);
    tg_tensor *y = tg_cat(t, x, 3, 1);
    assert_fails(t, y, "tg_cat", "xs[1] [17,10,10] does not match xs[0] [13,10,10]", "but dim 1");
    tg_tensor *s = tg_tensor_zeros(t, 0, NULL);
    assert_fails(t, tg_cat(t, &s, 1, 0), "tg_cat", "xs[0] []", "no dim");
    assert_fails(t, tg_cat(t, x, 3, 3), "tg_cat", "dim 3 is out of range", "dims -3 to 2");
    assert_fails(t, tg_cat(t, x, 0, 0), "tg_cat", "at least one tensor");
    tu_free_all(x, 3);
    tg_tape_free(t);
}

/* OpInfo's cat samples (S = 5, M = 10) but the legacy skip of a 1-D empty input */
Test(move, cat_opinfo_cases)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    const struct {
        int nd, a[3], b[3], dim;
    } cases[] = {{2, {5, 5}, {5, 5}, -1}, {2, {5, 5}, {5, 5}, 1}, {2, {10, 5}, {5, 5}, 0}, {3, {1, 2, 3}, {1, 2, 3}, -2},
                 {1, {0}, {0}, 0},        {2, {0, 5}, {5, 5}, 0}, {1, {1}, {1}, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tg_tensor *x[2] = {tu_rand(&rng, -1, 1, cases[c].nd, cases[c].a), tu_rand(&rng, -1, 1, cases[c].nd, cases[c].b)};
        check_cat(t, x, 2, cases[c].dim, false);
        tu_free_all(x, 2);
    }
    tg_tensor *x[2] = {tu_rand(&rng, -1, 1, 1, (int[]){0}), tu_rand(&rng, -1, 1, 2, (int[]){5, 5})};
    assert_fails(t, tg_cat(t, x, 2, 1), "tg_cat", "dim 1 is out of range for a [0]");
    assert_fails(t, tg_cat(t, x, 2, 0), "tg_cat", "xs[1] [5,5] does not match xs[0] [0]");
    tu_free_all(x, 2);
    tg_tape_free(t);
}

/* OpInfo's stack samples: one (3, 4), three (1, 2, 1, 4), two (0, 1, 0), at every dim -1 .. ndim-2 */
Test(move, stack_opinfo_cases)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 4);
    const struct {
        int nd, shape[4], n;
    } cases[] = {{2, {3, 4}, 1}, {4, {1, 2, 1, 4}, 3}, {3, {0, 1, 0}, 2}};
    for (int c = 0; c < 3; c++) {
        tg_tensor *x[3];
        for (int k = 0; k < cases[c].n; k++) x[k] = tu_rand(&rng, -1, 1, cases[c].nd, cases[c].shape);
        for (int dim = -1; dim < cases[c].nd - 1; dim++) check_cat(t, x, cases[c].n, dim, true);
        tu_free_all(x, cases[c].n);
    }
    tg_tape_free(t);
}

Test(move, stack_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 2);
    tg_tensor *x[3];
    for (int k = 0; k < 3; k++) x[k] = rand3(&rng, (int[]){5, 6, 3});
    for (int dim = -1; dim < 4; dim++) check_cat(t, x, 3, dim, true);
    assert_fails(t, tg_stack(t, x, 3, 77), "tg_stack", "dim 77 is out of range", "dims -4 to 3");
    tg_tensor *odd[2] = {x[0], tg_tensor_zeros(t, 3, (int[]){5, 6, 2})};
    assert_fails(t, tg_stack(t, odd, 2, 0), "tg_stack", "xs[1] [5,6,2] does not match xs[0] [5,6,3]");
    /* two 0-d tensors stack into [2] */
    tg_tensor *a = tg_tensor_alloc(0, NULL);
    a->data[0] = (tg_real)3.14;
    tg_tensor *aa[2] = {a, a};
    tg_tensor *y = tg_stack(t, aa, 2, 0);
    cr_assert(y && y->ndim == 1 && y->shape[0] == 2 && y->data[0] == a->data[0] && y->data[1] == a->data[0]);
    tg_tensor_free(a);
    tu_free_all(x, 3);
    tg_tape_free(t);
}

/* ---- flip, roll, pad, repeat, expand ------------------------------------------------- */

typedef struct flip_ref {
    bool flip[TG_MAX_DIMS];
} flip_ref;

static long flip_src(const int *o, const tg_tensor *x, const void *ctx)
{
    const flip_ref *r = ctx;
    int i[TG_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) i[k] = r->flip[k] ? x->shape[k] - 1 - o[k] : o[k];
    return (long)flat(x->shape, i, x->ndim);
}

Test(move, flip_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(4, (int[]){4, 3, 6, 6});
    const int dims[][3] = {{0}, {0, 1}, {0, 1, 3}, {3}, {-1}, {0}};
    const int n[] = {1, 2, 3, 1, 1, 0};
    for (int c = 0; c < 6; c++) {
        flip_ref r = {{false}};
        for (int k = 0; k < n[c]; k++) r.flip[dims[c][k] < 0 ? dims[c][k] + 4 : dims[c][k]] = true;
        check_map(t, x, tg_flip(t, x, dims[c], n[c]), flip_src, &r, 0);
    }
    /* flip((0,1,3)).flip(0) flips dims 1 and 3 */
    tg_tensor *y = tg_flip(t, tg_flip(t, x, (int[]){0, 1, 3}, 3), (int[]){0}, 1);
    check_map(t, x, y, flip_src, &(flip_ref){{false, true, false, true}}, 0);
    tg_tensor *s = iota(0, NULL), *one = iota(1, (int[]){1});
    check_map(t, s, tg_flip(t, s, NULL, 0), flip_src, &(flip_ref){{false}}, 0);
    check_map(t, one, tg_flip(t, one, (int[]){0}, 1), flip_src, &(flip_ref){{true}}, 0);
    tg_tensor *e = iota(2, (int[]){0, 3});
    check_map(t, e, tg_flip(t, e, (int[]){0, 1}, 2), flip_src, &(flip_ref){{true, true}}, 0);
    assert_fails(t, tg_flip(t, x, (int[]){0, 0}, 2), "tg_flip", "dim 0 appears twice", "[4,3,6,6]");
    assert_fails(t, tg_flip(t, x, (int[]){3, -1}, 2), "tg_flip", "dim -1 appears twice");
    assert_fails(t, tg_flip(t, x, (int[]){4}, 1), "tg_flip", "dim 4 is out of range");
    tg_tensor *xs[] = {x, s, one, e};
    tu_free_all(xs, 4);
    tg_tape_free(t);
}

typedef struct roll_ref {
    int d, shift;
} roll_ref;

static long roll_src(const int *o, const tg_tensor *x, const void *ctx)
{
    const roll_ref *r = ctx;
    int i[TG_MAX_DIMS], n = x->shape[r->d];
    memcpy(i, o, sizeof i);
    i[r->d] = (int)((((long)o[r->d] - r->shift) % n + n) % n);
    return (long)flat(x->shape, i, x->ndim);
}

Test(move, roll_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(2, (int[]){2, 4}), *z = iota(3, (int[]){2, 4, 6});
    const int cases[][2] = {{1, 0}, {-1, 0}, {1, -1}, {-1, -1}, {5, 0}, {-5, 0}, {0, 0}, {7, 1}, {-9, 1}};
    for (int c = 0; c < 9; c++) {
        roll_ref r = {cases[c][1] < 0 ? cases[c][1] + 2 : cases[c][1], cases[c][0]};
        check_map(t, x, tg_roll(t, x, cases[c][0], cases[c][1]), roll_src, &r, 0);
    }
    check_map(t, z, tg_roll(t, z, 1, 0), roll_src, &(roll_ref){0, 1}, 0);
    /* roll(shifts=(2, -3), dims=(0, 2)) is one roll after the other */
    tg_tensor *y = tg_roll(t, tg_roll(t, z, 2, 0), -3, 2);
    cr_assert_not_null(y);
    int o[3];
    for (size_t e = 0; e < y->size; e++) {
        unflat(y->shape, 3, e, o);
        int i[3] = {o[0], o[1], ((o[2] + 3) % 6)};
        i[0] = (o[0] + 2) % 2;
        cr_assert_eq(y->data[e], z->data[flat(z->shape, i, 3)]);
    }
    tg_tape_reset(t);
    tg_tensor *e = iota(2, (int[]){0, 3});
    check_map(t, e, tg_roll(t, e, 2, 0), roll_src, &(roll_ref){0, 0}, 0);
    assert_fails(t, tg_roll(t, x, 1, 2), "tg_roll", "dim 2 is out of range", "[2,4]");
    tg_tensor *xs[] = {x, z, e};
    tu_free_all(xs, 3);
    tg_tape_free(t);
}

/* OpInfo's roll samples: (S, S, S) and (0, 0, 0) with (shift, dim) pairs, a
 * flattened roll, several dims (one roll each), and a 0-d tensor */
static long roll_flat_src(const int *o, const tg_tensor *x, const void *ctx)
{
    long n = (long)x->size, f = (long)flat(x->shape, o, x->ndim);
    return (((f - *(const int *)ctx) % n) + n) % n;
}

Test(move, roll_opinfo_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(3, (int[]){5, 5, 5}), *z = iota(3, (int[]){0, 0, 0}), *s = iota(0, NULL);
    const int args[][2] = {{0, 0}, {1, 2}, {0, 2}, {2, 0}, {-1, 0}, {10000, 1}};
    for (int c = 0; c < 6; c++) {
        check_map(t, x, tg_roll(t, x, args[c][0], args[c][1]), roll_src, &(roll_ref){args[c][1], args[c][0]}, 0);
        tg_tensor *e = tg_roll(t, z, args[c][0], args[c][1]);
        cr_assert(e && e->size == 0 && e->ndim == 3);
        tg_tape_reset(t);
    }
    int two = 2;
    check_map(t, x, tg_roll(t, x, 2, TG_ROLL_FLAT), roll_flat_src, &two, 0);
    tg_tensor *y = tg_roll(t, tg_roll(t, tg_roll(t, x, 1, 0), 2, 1), -1, 2);  /* shifts (1, 2, -1), dims (0, 1, 2) */
    int o[3];
    for (size_t e = 0; e < y->size; e++) {
        unflat(y->shape, 3, e, o);
        int i[3] = {(o[0] + 4) % 5, (o[1] + 3) % 5, (o[2] + 1) % 5};
        cr_assert_eq(y->data[e], x->data[flat(x->shape, i, 3)]);
    }
    tg_tape_reset(t);
    tg_tensor *r = tg_roll(t, s, 10, 0);
    cr_assert(r && r->ndim == 0 && r->data[0] == s->data[0]);
    tg_tensor *xs[] = {x, z, s};
    tu_free_all(xs, 3);
    tg_tape_free(t);
}

typedef struct pad_ref {
    int lo[TG_MAX_DIMS];
} pad_ref;

static long pad_src(const int *o, const tg_tensor *x, const void *ctx)
{
    const pad_ref *r = ctx;
    int i[TG_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) {
        i[k] = o[k] - r->lo[k];
        if (i[k] < 0 || i[k] >= x->shape[k]) return -1;
    }
    return (long)flat(x->shape, i, x->ndim);
}

/* F.pad(x, pads, value) with the output shape it must have */
static void check_pad(tg_tape *t, tg_tensor *x, const int *pads, int n, double value)
{
    pad_ref r = {{0}};
    int want[TG_MAX_DIMS];
    memcpy(want, x->shape, sizeof want);
    for (int i = 0; i < n / 2; i++) {
        int d = x->ndim - 1 - i;
        r.lo[d] = pads[2 * i];
        want[d] += pads[2 * i] + pads[2 * i + 1];
    }
    tg_tensor *y = tg_pad(t, x, pads, n, value);
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    for (int k = 0; k < x->ndim; k++) cr_assert_eq(y->shape[k], want[k]);
    check_map(t, x, y, pad_src, &r, value);
}

Test(move, pad_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(4, (int[]){3, 3, 3, 3}), *m = iota(2, (int[]){3, 3});
    const double values[] = {0, 5, INFINITY, -INFINITY};
    for (int v = 0; v < 4; v++) {
        check_pad(t, x, (int[]){1, 2, 3, 4}, 4, values[v]);
        check_pad(t, x, (int[]){-1, 2, -3, 4}, 4, values[v]);
    }
    check_pad(t, m, (int[]){1, 2, 3, 4}, 4, 0);
    check_pad(t, m, (int[]){-1, 2, -3, 4}, 4, 0);
    check_pad(t, m, (int[]){1, 2, 3, 4}, 4, 5);
    check_pad(t, m, (int[]){0, 0, 3, 4}, 4, 1);
    check_pad(t, m, (int[]){0, 0, 0, 0}, 4, 1);
    check_pad(t, m, (int[]){-3, 1}, 2, 2);  /* cropped away entirely, then padded */
    /* tinygrad's test_pad_reshape and zero-size pads */
    tg_tensor *r = iota(2, (int[]){1, 2}), *z = iota(3, (int[]){3, 2, 0});
    check_pad(t, r, (int[]){0, 1, 1, 0}, 4, 0);
    check_pad(t, z, (int[]){1, 1}, 2, 1);
    check_pad(t, z, (int[]){0, 0, 1, 1}, 4, 1);
    assert_fails(t, tg_pad(t, m, (int[]){2, 0, 2}, 3, 0), "tg_pad", "3 pad sizes", "[3,3]");
    assert_fails(t, tg_pad(t, m, (int[]){0, 0, 0, 0, 1, 0}, 6, 0), "tg_pad", "6 pad sizes", "at most 2 per dim");
    assert_fails(t, tg_pad(t, m, (int[]){-2, -2}, 2, 0), "tg_pad", "pads (-2, -2)", "size -1");
    tg_tensor *xs[] = {x, m, r, z};
    tu_free_all(xs, 4);
    tg_tape_free(t);
}

typedef struct rep_ref {
    int lead;  /* dims the output has in front of x's */
} rep_ref;

/* repeat and expand alike: output dim lead + k reads x's dim k modulo its size */
static long tile_src(const int *o, const tg_tensor *x, const void *ctx)
{
    const rep_ref *r = ctx;
    int i[TG_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) i[k] = o[r->lead + k] % x->shape[k];
    return (long)flat(x->shape, i, x->ndim);
}

Test(move, repeat_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(3, (int[]){4, 6, 3}), *s = iota(0, NULL), *m = iota(2, (int[]){3, 3});
    const int extra[][3] = {{0}, {4}, {2, 1}, {3, 2, 2}};
    const int n_extra[] = {0, 1, 2, 3};
    for (int c = 0; c < 4; c++) {
        int reps[6] = {2, 4, 3};
        memcpy(reps + 3, extra[c], sizeof extra[c]);
        int n = 3 + n_extra[c];
        tg_tensor *y = tg_repeat(t, x, reps, n);
        cr_assert(y && y->ndim == n, "%s", tg_tape_error(t));
        for (int k = 0; k < n; k++) cr_assert_eq(y->shape[k], reps[k] * (k < n - 3 ? 1 : x->shape[k - (n - 3)]));
        check_map(t, x, y, tile_src, &(rep_ref){n - 3}, 0);
        check_map(t, s, tg_repeat(t, s, reps, n), tile_src, &(rep_ref){n}, 0);
    }
    check_map(t, m, tg_repeat(t, m, (int[]){3, 3, 4}, 3), tile_src, &(rep_ref){1}, 0);
    tg_tensor *y = tg_repeat(t, x, (int[]){2, 0, 4}, 3);
    cr_assert(y && y->shape[0] == 8 && y->shape[1] == 0 && y->shape[2] == 12 && y->size == 0);
    assert_fails(t, tg_repeat(t, x, (int[]){2, 4}, 2), "tg_repeat", "2 repeats", "[4,6,3]", "one per dim");
    assert_fails(t, tg_repeat(t, x, (int[]){2, -1, 1}, 3), "tg_repeat", "repeat -1 of dim 1");
    tg_tensor *xs[] = {x, s, m};
    tu_free_all(xs, 3);
    tg_tape_free(t);
}

Test(move, expand_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(4, (int[]){4, 3, 1, 6}), *o = iota(4, (int[]){1, 1, 1, 1}), *s = iota(0, NULL);
    check_map(t, x, tg_expand(t, x, 4, (int[]){4, 3, 2, 6}), tile_src, &(rep_ref){0}, 0);
    check_map(t, o, tg_expand(t, o, 4, (int[]){4, 3, 2, 6}), tile_src, &(rep_ref){0}, 0);
    check_map(t, x, tg_expand(t, x, 6, (int[]){6, 1, 4, 3, 2, 6}), tile_src, &(rep_ref){2}, 0);
    check_map(t, x, tg_expand(t, x, 6, (int[]){0, 1, 4, 3, 2, 6}), tile_src, &(rep_ref){2}, 0);
    check_map(t, x, tg_expand(t, x, 4, (int[]){4, 3, 0, 6}), tile_src, &(rep_ref){0}, 0);
    check_map(t, x, tg_expand(t, x, 4, (int[]){-1, -1, 5, -1}), tile_src, &(rep_ref){0}, 0);
    check_map(t, s, tg_expand(t, s, 4, (int[]){4, 3, 2, 6}), tile_src, &(rep_ref){4}, 0);
    check_map(t, s, tg_expand(t, s, 0, NULL), tile_src, &(rep_ref){0}, 0);
    assert_fails(t, tg_expand(t, x, 4, (int[]){4, 1, 1, 6}), "tg_expand", "[4,3,1,6]", "size 1 at dim 1");
    assert_fails(t, tg_expand(t, x, 4, (int[]){4, 6, 1, 6}), "tg_expand", "size 6 at dim 1");
    assert_fails(t, tg_expand(t, x, 3, (int[]){3, 1, 6}), "tg_expand", "cannot expand to 3 dims");
    tg_tensor *w = iota(4, (int[]){4, 3, 2, 6});
    assert_fails(t, tg_expand(t, w, 4, (int[]){4, 3, 0, 6}), "tg_expand", "size 0 at dim 2");
    assert_fails(t, tg_expand(t, x, 5, (int[]){-1, 4, 3, 1, 6}), "tg_expand", "size -1 at dim 0");
    tg_tensor *xs[] = {x, o, s, w};
    tu_free_all(xs, 4);
    tg_tape_free(t);
}

/* ---- squeeze / unsqueeze (views) --------------------------------------------------------- */

Test(move, squeeze_unsqueeze_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = iota(4, (int[]){1, 3, 6, 6}), *b = iota(4, (int[]){4, 3, 1, 6}), *c = iota(4, (int[]){4, 3, 6, 6});
    tg_tensor *d = iota(4, (int[]){4, 3, 6, 1}), *e = iota(3, (int[]){2, 3, 1}), *s = iota(0, NULL);
    assert_shape(tg_squeeze(t, a, 0), 3, (int[]){3, 6, 6});
    assert_shape(tg_squeeze(t, b, 1), 4, (int[]){4, 3, 1, 6});
    assert_shape(tg_squeeze(t, b, 2), 3, (int[]){4, 3, 6});
    assert_shape(tg_squeeze(t, c, 3), 4, (int[]){4, 3, 6, 6});
    assert_shape(tg_squeeze(t, d, -1), 3, (int[]){4, 3, 6});
    assert_shape(tg_squeeze(t, c, TG_SQUEEZE_ALL), 4, (int[]){4, 3, 6, 6});
    assert_shape(tg_squeeze(t, a, TG_SQUEEZE_ALL), 3, (int[]){3, 6, 6});
    assert_shape(tg_squeeze(t, e, TG_SQUEEZE_ALL), 2, (int[]){2, 3});
    assert_shape(tg_squeeze(t, s, -1), 0, NULL);
    assert_shape(tg_squeeze(t, s, 0), 0, NULL);
    assert_shape(tg_squeeze(t, s, TG_SQUEEZE_ALL), 0, NULL);
    assert_shape(tg_unsqueeze(t, c, 0), 5, (int[]){1, 4, 3, 6, 6});
    assert_shape(tg_unsqueeze(t, c, 4), 5, (int[]){4, 3, 6, 6, 1});
    assert_shape(tg_unsqueeze(t, c, -1), 5, (int[]){4, 3, 6, 6, 1});
    assert_shape(tg_unsqueeze(t, c, -3), 5, (int[]){4, 3, 1, 6, 6});
    assert_shape(tg_unsqueeze(t, s, 0), 1, (int[]){1});
    /* views: the same data, and a grad through them reaches the base */
    tg_tensor *v = tg_unsqueeze(t, tg_squeeze(t, b, 2), 1);
    cr_assert(v && v->data == b->data);
    tg_tensor *y = tg_sum(t, tg_mul(t, v, v));
    cr_assert_eq(tg_backward(t, y), 0);
    for (size_t i = 0; i < b->size; i++) cr_assert_eq(b->grad[i], 2 * b->data[i]);
    tg_tape_reset(t);
    assert_fails(t, tg_squeeze(t, c, 50), "tg_squeeze", "dim 50 is out of range", "[4,3,6,6]");
    assert_fails(t, tg_squeeze(t, s, 10), "tg_squeeze", "dim 10");
    assert_fails(t, tg_squeeze(t, s, 1), "tg_squeeze", "dim 1");
    assert_fails(t, tg_squeeze(t, s, -2), "tg_squeeze", "dim -2");
    assert_fails(t, tg_unsqueeze(t, c, 5), "tg_unsqueeze", "dim 5 is out of range", "dims -5 to 4");
    tg_tensor *full = tg_tensor_zeros(t, 8, (int[]){1, 1, 1, 1, 1, 1, 1, 2});
    assert_fails(t, tg_unsqueeze(t, full, 0), "tg_unsqueeze", "already has 8 dims");
    tg_tensor *xs[] = {a, b, c, d, e, s};
    tu_free_all(xs, 6);
    tg_tape_free(t);
}

/* ---- gradchecks, float and double, at the precision's default tolerances ---------------- */

enum { G_NARROW, G_SLICE, G_SPLIT, G_CAT, G_STACK, G_FLIP, G_ROLL, G_PAD, G_REPEAT, G_EXPAND, G_SQUEEZE, G_TRIL,
       G_TRIU, G_DIAG1, G_DIAG2, G_COUNT };

/* each op on in[0] (and in[1] for cat / stack), multiplied by itself so the
 * check sees a non-constant grad */
static tg_tensor *gc_move(tg_tape *t, tg_tensor **in, void *ctx)
{
    tg_tensor *x = in[0], *y = NULL, *p[4];
    switch (*(const int *)ctx) {
    case G_NARROW: y = tg_narrow(t, x, -2, 1, 2); break;
    case G_SLICE: y = tg_slice_dim(t, x, 2, 3, -1, 2); break;
    case G_SPLIT: y = tg_split(t, x, 2, 1, p, 4) == 2 ? tg_mul(t, p[0], p[1]) : NULL; break;
    case G_CAT: y = tg_cat(t, in, 2, 1); break;
    case G_STACK: y = tg_stack(t, (tg_tensor *[]){in[0], in[0]}, 2, -1); break;
    case G_FLIP: y = tg_flip(t, x, (int[]){0, 2}, 2); break;
    case G_ROLL: y = tg_roll(t, x, -2, 2); break;
    case G_PAD: y = tg_pad(t, x, (int[]){1, -2, 0, 1}, 4, 0.5); break;
    case G_REPEAT: y = tg_repeat(t, x, (int[]){2, 1, 2, 1}, 4); break;
    case G_EXPAND: y = tg_expand(t, tg_narrow(t, x, 1, 0, 1), 4, (int[]){2, 2, 3, 6}); break;
    case G_SQUEEZE: y = tg_unsqueeze(t, tg_squeeze(t, tg_narrow(t, x, 1, 2, 1), 1), 0); break;
    case G_TRIL: y = tg_tril(t, x, 1); break;
    case G_TRIU: y = tg_triu(t, x, -1); break;
    case G_DIAG1: y = tg_diag(t, tg_reshape(t, x, 1, (int[]){-1}), -3); break;
    default: y = tg_diag(t, tg_reshape(t, x, 2, (int[]){6, 6}), 2); break;
    }
    return tg_mul(t, y, y);
}

Test(move, gradchecks)
{
    tg_rng rng;
    tg_rng_seed(&rng, 9);
    for (int op = 0; op < G_COUNT; op++) {
        tg_tensor *in[2] = {tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 6}), tu_rand(&rng, -1, 1, 3, (int[]){2, 1, 6})};
        tu_gradcheck(gc_move, &op, in, op == G_CAT ? 2 : 1);
        tu_free_all(in, 2);
    }
}

/* ---- out of memory ------------------------------------------------------------------------ */

static tg_tensor *oom_chain(tg_tape *t, void *ctx)
{
    tg_tensor **in = ctx;
    tg_tensor *s = tg_stack(t, in, 2, 0);                          /* [2,2,3] */
    tg_tensor *c = tg_cat(t, (tg_tensor *[]){s, s}, 2, -1);        /* [2,2,6] */
    tg_tensor *p = tg_pad(t, tg_flip(t, c, (int[]){1}, 1), (int[]){1, -1}, 2, 2.0);
    tg_tensor *r = tg_roll(t, tg_repeat(t, tg_narrow(t, p, 2, 0, 3), (int[]){1, 2, 1}, 3), 1, 1);
    const int64_t ix[3] = {2, 0, 1};
    tg_tensor *i = tg_tensor_from_dtype(t, TG_I64, ix, 1, (int[]){3});
    return tg_index_select(t, tg_tril(t, tg_expand(t, r, 3, (int[]){2, 4, 3}), 0), 2, i);
}

Test(move, out_of_memory)
{
    tg_rng rng;
    tg_rng_seed(&rng, 12);
    tg_tensor *in[2] = {tu_rand(&rng, -1, 1, 2, (int[]){2, 3}), tu_rand(&rng, -1, 1, 2, (int[]){2, 3})};
    walk_out_of_memory(oom_chain, in, in, 2);
    tu_free_all(in, 2);
}

/* ---- integer and bool tensors: their bytes move, their dtype stays ---------------------------- */

/* int64 values past 2^53 (which a double would round) come out of cat, flip,
 * permute, pad, gather and a view exactly: the bytes move, not the values. */
Test(move, int64_bytes_move_exactly)
{
    tg_tape *t = tg_tape_new();
    const int64_t big = (INT64_C(1) << 53) + 1, v[4] = {big, -big, INT64_MAX, INT64_MIN};
    tg_tensor *a = tg_tensor_from_dtype(t, TG_I64, v, 2, (int[]){2, 2});
    tg_tensor *c = tg_cat(t, (tg_tensor *[]){a, a}, 2, 0), *f = tg_flip(t, a, (int[]){0, 1}, 2);
    tg_tensor *p = tg_permute(t, a, (int[]){1, 0}, 2), *pad = tg_pad(t, a, (int[]){1, 0}, 2, 2.7);
    tg_tensor *ix = tg_tensor_from_dtype(t, TG_I32, (int32_t[]){1, 0}, 1, (int[]){2});
    tg_tensor *g = tg_index_select(t, a, 0, ix), *r = tg_reshape(t, a, 1, (int[]){4});
    cr_assert(c && f && p && pad && g && r, "%s", tg_tape_error(t));
    const int64_t *cc = tg_data(c, TG_I64), *ff = tg_data(f, TG_I64), *pp = tg_data(p, TG_I64),
                  *pd = tg_data(pad, TG_I64), *gg = tg_data(g, TG_I64), *rr = tg_data(r, TG_I64);
    cr_assert(cc && ff && pp && pd && gg && rr, "every result is int64");
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(cc[i], v[i]);
        cr_expect_eq(cc[4 + i], v[i]);
        cr_expect_eq(rr[i], v[i]);
    }
    cr_expect(ff[0] == v[3] && ff[1] == v[2] && ff[2] == v[1] && ff[3] == v[0]);
    cr_expect(pp[0] == v[0] && pp[1] == v[2] && pp[2] == v[1] && pp[3] == v[3]);
    /* pad's value as int64 stores it: truncated, as PyTorch's F.pad of an integer tensor */
    cr_expect(pd[0] == 2 && pd[1] == v[0] && pd[2] == v[1] && pd[3] == 2 && pd[4] == v[2] && pd[5] == v[3]);
    cr_expect(gg[0] == v[2] && gg[1] == v[3] && gg[2] == v[0] && gg[3] == v[1]);
    cr_expect(!c->requires_grad && !f->requires_grad);
    tg_tape_free(t);
}

/* Bool tensors through split, stack and tril; tensors of two dtypes are not
 * joined (PyTorch would promote them) and the refusal names both. */
Test(move, bool_pieces_and_mixed_dtypes)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *m = tg_tensor_from_dtype(t, TG_BOOL, (bool[]){1, 0, 1, 1, 1, 0}, 2, (int[]){2, 3}), *p[2];
    cr_assert_eq(tg_split_sizes(t, m, (int[]){1, 2}, 2, 1, p), 0, "%s", tg_tape_error(t));
    cr_assert(p[0]->dtype == TG_BOOL && p[1]->dtype == TG_BOOL);
    const bool *b1 = tg_data(p[1], TG_BOOL);
    cr_expect(!b1[0] && b1[1] && b1[2] && !b1[3]);
    tg_tensor *s = tg_stack(t, (tg_tensor *[]){m, m}, 2, 0), *l = tg_tril(t, m, 0);
    cr_assert(s && l && s->dtype == TG_BOOL && l->dtype == TG_BOOL, "%s", tg_tape_error(t));
    const bool *lt = tg_data(l, TG_BOOL);
    cr_expect(lt[0] && !lt[1] && !lt[2] && lt[3] && lt[4] && !lt[5]);
    tg_tensor *i32 = tg_tensor_zeros_dtype(t, TG_I32, 2, (int[]){2, 3});
    cr_expect_null(tg_cat(t, (tg_tensor *[]){m, i32}, 2, 0));
    cr_expect(strstr(tg_tape_error(t), "tg_cat: input 1 is int32") && strstr(tg_tape_error(t), "bool"), "%s",
              tg_tape_error(t));
    tg_tape_free(t);
}
