/* gather, scatter_add, index_select and index_add (core/ops/shape/gather.c) with
 * int32 and int64 indices: tinygrad's test_gather / test_scatter cases and
 * PyTorch OpInfo-style ones element by element, forward and backward, then
 * gradchecks and the misuse tests (every bad index is named). */
#include "map_util.h"

/* int64 and int32 copies of n random indices in [0, hi) */
static void rand_ix(tg_rng *rng, int hi, size_t n, int64_t *i64, int32_t *i32)
{
    for (size_t i = 0; i < n; i++) i32[i] = (int32_t)(i64[i] = tg_rng_below(rng, (uint32_t)hi));
}

/* an int64 (i64) or int32 index tensor of t from data */
static tg_tensor *index_of(tg_tape *t, const void *data, bool i64, int nd, const int *shape)
{
    tg_tensor *ix = tu_index(t, i64 ? TG_I64 : TG_I32, data, nd, shape);
    cr_assert_not_null(ix, "%s", tg_error());
    return ix;
}

/* a's flat element at multi-index o with o_d replaced by v */
static long a_at(const tg_tensor *a, const int *o, int d, int64_t v)
{
    size_t f = 0;
    for (int k = 0; k < a->ndim; k++) f = f * (size_t)a->shape[k] + (size_t)(k == d ? v : o[k]);
    return (long)f;
}

typedef struct gather_ref {
    int d;
    const int64_t *ix;
    const int *ishape;
} gather_ref;

/* out[o] = a[o with o_d = ix[o]] */
static long gather_src(const int *o, const tg_tensor *a, const void *ctx)
{
    const gather_ref *r = ctx;
    return a_at(a, o, r->d, r->ix[flat(r->ishape, o, a->ndim)]);
}

Test(gather, gather_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 4);
    const int ishape[3] = {3, 4, 5};
    int64_t b64[60];
    int32_t b32[60];
    rand_ix(&rng, 3, 60, b64, b32);  /* torch.randint(3, size=[3,4,5]) */
    tg_tensor *x = tu_rand(&rng, -2, 2, 3, (int[]){4, 5, 6}), *y = tu_rand(&rng, -2, 2, 3, (int[]){3, 4, 5});
    const int dims[] = {0, 1, 2, -1, -2, -3};
    for (int c = 0; c < 6; c++)
        for (int w = 0; w < 2; w++) {
            tg_tensor *ix = index_of(t, w ? (const void *)b64 : (const void *)b32, w, 3, ishape);
            tg_tensor *o = tg_gather(t, x, dims[c], ix);
            cr_assert(o && o->ndim == 3 && o->shape[0] == 3 && o->shape[1] == 4 && o->shape[2] == 5, "%s",
                      tg_tape_error(t) ? tg_tape_error(t) : "");
            check_map(t, x, o, gather_src, &(gather_ref){dims[c] < 0 ? dims[c] + 3 : dims[c], b64, ishape}, 0);
        }
    tg_tensor *ix = index_of(t, b64, true, 3, ishape);
    check_map(t, y, tg_gather(t, y, 0, ix), gather_src, &(gather_ref){0, b64, ishape}, 0);
    /* 1-D with repeats, and -inf values */
    tg_tensor *v = tg_tensor_alloc(1, (int[]){3});
    v->data[0] = -INFINITY, v->data[1] = 2, v->data[2] = 3;
    v->requires_grad = true;
    const int64_t rep[5] = {2, 1, 0, 1, 2};
    tg_tensor *r = index_of(t, rep, true, 1, (int[]){5});
    check_map(t, v, tg_gather(t, v, 0, r), gather_src, &(gather_ref){0, rep, (int[]){5}}, 0);
    /* an empty index gives an empty output */
    tg_tensor *e = index_of(t, NULL, false, 3, (int[]){0, 4, 5});
    tg_tensor *o = tg_gather(t, x, 1, e);
    cr_assert(o && o->size == 0 && o->shape[1] == 4);
    /* misuse: a 1-D index for a 3-D a; an index larger than a off the dim; out-of-range and negative values */
    const int64_t one[1] = {1};
    tg_tensor *bad = index_of(t, one, true, 1, (int[]){1});
    assert_fails(t, tg_gather(t, x, 0, bad), "tg_gather", "index [1] does not fit a [4,5,6]");
    tg_tensor *small = tu_rand(&rng, -1, 1, 3, (int[]){2, 1, 1});
    ix = index_of(t, b64, true, 3, ishape);  /* check_map reset the tape */
    assert_fails(t, tg_gather(t, small, 0, ix), "tg_gather", "index [3,4,5] does not fit a [2,1,1]");
    b32[17] = 6;
    tg_tensor *i32 = index_of(t, b32, false, 3, ishape);
    assert_fails(t, tg_gather(t, x, 2, i32), "tg_gather", "index 6 at position 17", "dim 2 (size 6)", "[4,5,6]");
    b64[59] = -1;
    ix = index_of(t, b64, true, 3, ishape);
    assert_fails(t, tg_gather(t, x, 0, ix), "tg_gather", "index -1 at position 59", "dim 0 (size 4)");
    assert_fails(t, tg_gather(t, x, 3, ix), "tg_gather", "dim 3 is out of range", "dims -3 to 2");
    assert_fails(t, tg_gather(t, x, 0, NULL), "tg_gather", "the index is NULL");
    tg_tensor *xs[] = {x, y, v, small};
    tu_free_all(xs, 4);
    tg_tape_free(t);
}

/* OpInfo's gather samples: (M, S) = (10, 5) along 0 with a (S, S) index
 * below M and along 1 with an (M, S/2) one below S; a 0-d a with a [1] and a
 * 0-d index; a (S,) a with a 0-d index and with an empty one */
Test(gather, gather_opinfo_cases)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    int64_t i64[25];
    int32_t i32[25];
    tg_tensor *a = tu_rand(&rng, -1, 1, 2, (int[]){10, 5});
    rand_ix(&rng, 10, 25, i64, i32);
    tg_tensor *ix = index_of(t, i32, false, 2, (int[]){5, 5});
    check_map(t, a, tg_gather(t, a, 0, ix), gather_src, &(gather_ref){0, i64, (int[]){5, 5}}, 0);
    rand_ix(&rng, 5, 20, i64, i32);
    ix = index_of(t, i64, true, 2, (int[]){10, 2});
    check_map(t, a, tg_gather(t, a, 1, ix), gather_src, &(gather_ref){1, i64, (int[]){10, 2}}, 0);
    tg_tensor *s = tu_rand(&rng, -1, 1, 0, NULL), *v = tu_rand(&rng, -1, 1, 1, (int[]){5});
    const int64_t zero[1] = {0}, three[1] = {3};
    tg_tensor *one = index_of(t, zero, true, 1, (int[]){1}), *scalar = index_of(t, zero, true, 0, NULL);
    tg_tensor *o = tg_gather(t, s, 0, one);
    cr_assert(o && o->ndim == 1 && o->shape[0] == 1 && o->data[0] == s->data[0], "%s", tg_tape_error(t));
    o = tg_gather(t, s, 0, scalar);
    cr_assert(o && o->ndim == 0 && o->data[0] == s->data[0]);
    cr_assert_eq(tg_backward(t, o), 0);
    cr_assert_eq(s->grad[0], 1);
    tg_tape_reset(t);
    scalar = index_of(t, zero, true, 0, NULL);
    tg_tensor *at3 = index_of(t, three, true, 0, NULL), *none = index_of(t, NULL, false, 1, (int[]){0});
    o = tg_gather(t, v, 0, at3);
    cr_assert(o && o->ndim == 0 && o->data[0] == v->data[3]);
    o = tg_gather(t, v, -1, none);
    cr_assert(o && o->ndim == 1 && o->size == 0);
    assert_fails(t, tg_gather(t, s, 1, scalar), "tg_gather", "dim 1 is out of range", "[]");
    assert_fails(t, tg_gather(t, s, 0, at3), "tg_gather", "index 3 at position 0", "dim 0 (size 1) of a []");
    tg_tensor *xs[] = {a, s, v};
    tu_free_all(xs, 3);
    tg_tape_free(t);
}

/* out = a + src scattered; d a = g; d src[i] = g[i with i_d = ix[i]] */
static void check_scatter_add(tg_tape *t, tg_tensor *a, tg_tensor *src, int dim, const int64_t *ix64,
                              const int32_t *ix32, int ind, const int *ishape)
{
    int d = dim < 0 ? dim + a->ndim : dim;
    for (int w = 0; w < 2; w++) {
        tg_tensor *ix = index_of(t, w ? (const void *)ix64 : (const void *)ix32, w, ind, ishape);
        tg_free(a->grad), tg_free(src->grad);
        a->grad = src->grad = NULL;
        tg_tensor *o = tg_scatter_add(t, a, dim, ix, src);
        cr_assert(o && tg_shape_equal(o, a), "%s", tg_tape_error(t) ? tg_tape_error(t) : "");
        double *want = calloc(a->size, sizeof *want);
        for (size_t i = 0; i < a->size; i++) want[i] = a->data[i];
        size_t n;
        tg_shape_size(ind, ishape, &n);
        int i_k[TG_MAX_DIMS];
        size_t *pos = malloc((n ? n : 1) * sizeof *pos), *spos = malloc((n ? n : 1) * sizeof *spos);
        for (size_t e = 0; e < n; e++) {
            unflat(ishape, ind, e, i_k);
            size_t s = 0, p = 0;
            for (int k = 0; k < ind; k++) {
                s = s * (size_t)src->shape[k] + (size_t)i_k[k];
                p = p * (size_t)a->shape[k] + (size_t)(k == d ? ix64[e] : i_k[k]);
            }
            want[p] += src->data[s];
            pos[e] = p, spos[e] = s;
        }
        for (size_t i = 0; i < a->size; i++) tu_close(o->data[i], want[i], TU_TOL);
        tg_real *seed = malloc(o->size * sizeof *seed);
        for (size_t i = 0; i < o->size; i++) seed[i] = (tg_real)((double)(i % 11) - 5);
        cr_assert_eq(tg_backward_seed(t, o, seed), 0);
        for (size_t i = 0; i < a->size; i++) cr_assert_eq(a->grad[i], seed[i]);
        double *ws = calloc(src->size, sizeof *ws);
        for (size_t e = 0; e < n; e++) ws[spos[e]] += seed[pos[e]];
        for (size_t i = 0; i < src->size; i++) cr_assert_eq(src->grad[i], (tg_real)ws[i], "src grad %zu", i);
        free(want), free(pos), free(spos), free(seed), free(ws);
        tg_tape_reset(t);
    }
}

Test(gather, scatter_add_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 6);
    const int ishape[3] = {3, 4, 5};
    int64_t b64[60];
    int32_t b32[60];
    rand_ix(&rng, 3, 60, b64, b32);
    tg_tensor *x = tu_rand(&rng, -2, 2, 3, (int[]){4, 5, 6}), *s = tu_rand(&rng, -2, 2, 3, (int[]){4, 5, 6});
    const int dims[] = {0, 1, 2, -1, -2, -3};
    for (int c = 0; c < 6; c++) check_scatter_add(t, x, s, dims[c], b64, b32, 3, ishape);
    tg_tensor *y = tu_rand(&rng, -2, 2, 3, (int[]){3, 4, 5}), *ys = tu_rand(&rng, -2, 2, 3, (int[]){3, 4, 5});
    check_scatter_add(t, y, ys, 1, b64, b32, 3, ishape);
    tg_tensor *z = tu_rand(&rng, -2, 2, 3, (int[]){10, 3, 10}), *zs = tu_rand(&rng, -2, 2, 3, (int[]){10, 10, 10});
    check_scatter_add(t, z, zs, 1, b64, b32, 3, ishape);
    /* overlapping indices accumulate: [1,2,3,4] + [1,0] at 0, 0 */
    tg_tensor *v = iota(1, (int[]){4}), *vs = iota(1, (int[]){2});
    vs->data[0] = 1, vs->data[1] = 0;
    check_scatter_add(t, v, vs, 0, (const int64_t[]){0, 0}, (const int32_t[]){0, 0}, 1, (int[]){2});
    tg_tensor *ix = index_of(t, b64, true, 3, ishape);
    tg_tensor *w = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 10}), *ws = tu_rand(&rng, -1, 1, 3, (int[]){10, 3, 10});
    assert_fails(t, tg_scatter_add(t, w, 1, ix, zs), "tg_scatter_add", "index [3,4,5] does not fit a [2,3,10]",
                 "src [10,10,10]");
    assert_fails(t, tg_scatter_add(t, z, 1, ix, ws), "tg_scatter_add", "src [10,3,10]", "no larger than src");
    b64[30] = 5;
    ix = index_of(t, b64, true, 3, ishape);
    assert_fails(t, tg_scatter_add(t, x, 1, ix, s), "tg_scatter_add", "index 5 at position 30", "dim 1 (size 5)");
    b64[30] = 4;
    ix = index_of(t, b64, true, 3, ishape);
    assert_fails(t, tg_scatter_add(t, x, 0, ix, s), "tg_scatter_add", "index 4 at position 30", "dim 0 (size 4)");
    tg_tensor *xs[] = {x, s, y, ys, z, zs, v, vs, w, ws};
    tu_free_all(xs, 10);
    tg_tape_free(t);
}

typedef struct select_ref {
    int d;
    const int64_t *ix;
} select_ref;

static long select_src(const int *o, const tg_tensor *a, const void *ctx)
{
    const select_ref *r = ctx;
    return a_at(a, o, r->d, r->ix[o[r->d]]);
}

/* OpInfo index_select: (S, S, S) with (S,) indices along each dim, repeats, an empty index, a 1-D a */
Test(gather, index_select)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = iota(3, (int[]){5, 5, 5}), *v = iota(1, (int[]){7});
    const int64_t i64[5] = {4, 0, 2, 2, 1};
    const int32_t i32[5] = {4, 0, 2, 2, 1};
    for (int d = -3; d < 3; d++)
        for (int w = 0; w < 2; w++) {
            tg_tensor *ix = index_of(t, w ? (const void *)i64 : (const void *)i32, w, 1, (int[]){5});
            check_map(t, x, tg_index_select(t, x, d, ix), select_src, &(select_ref){d < 0 ? d + 3 : d, i64}, 0);
        }
    tg_tensor *three = index_of(t, i64, true, 1, (int[]){3});
    check_map(t, v, tg_index_select(t, v, 0, three), select_src, &(select_ref){0, i64}, 0);
    tg_tensor *none = index_of(t, NULL, true, 1, (int[]){0});
    tg_tensor *e = tg_index_select(t, x, 1, none);
    cr_assert(e && e->shape[1] == 0 && e->size == 0);
    tg_tensor *scalar = index_of(t, i64 + 2, true, 0, NULL);  /* a 0-d index selects one slice, dim kept */
    check_map(t, x, tg_index_select(t, x, 2, scalar), select_src, &(select_ref){2, i64 + 2}, 0);
    const int64_t out[2] = {1, 5};
    tg_tensor *bad = index_of(t, out, true, 1, (int[]){2});
    assert_fails(t, tg_index_select(t, x, 0, bad), "tg_index_select", "index 5 at position 1", "dim 0 (size 5)");
    tg_tensor *two_d = index_of(t, i64, true, 2, (int[]){2, 2});
    assert_fails(t, tg_index_select(t, x, 0, two_d), "tg_index_select", "index [2,2] must be 1-D", "[5,5,5]");
    tg_tensor_free(x);
    tg_tensor_free(v);
    tg_tape_free(t);
}

Test(gather, index_add)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 8);
    tg_tensor *a = tu_rand(&rng, -1, 1, 3, (int[]){5, 5, 5}), *s = tu_rand(&rng, -1, 1, 3, (int[]){5, 3, 5});
    const int64_t i64[3] = {0, 4, 0};
    const int32_t i32[3] = {0, 4, 0};
    for (int w = 0; w < 2; w++) {
        tg_tensor *ix = index_of(t, w ? (const void *)i64 : (const void *)i32, w, 1, (int[]){3});
        tg_free(a->grad), tg_free(s->grad);
        a->grad = s->grad = NULL;
        tg_tensor *o = tg_index_add(t, a, 1, ix, s, 2.0);
        cr_assert_not_null(o, "%s", tg_tape_error(t));
        tg_real seed[125];
        for (int i = 0; i < 125; i++) seed[i] = (tg_real)(i % 9) - 4;
        for (int p = 0; p < 5; p++)
            for (int q = 0; q < 5; q++)
                for (int r = 0; r < 5; r++) {
                    double want = a->data[(p * 5 + q) * 5 + r];
                    for (int j = 0; j < 3; j++)
                        if (i64[j] == q) want += 2.0 * s->data[(p * 3 + j) * 5 + r];
                    tu_close(o->data[(p * 5 + q) * 5 + r], want, TU_TOL);
                }
        cr_assert_eq(tg_backward_seed(t, o, seed), 0);
        for (int i = 0; i < 125; i++) cr_assert_eq(a->grad[i], seed[i]);
        for (int p = 0; p < 5; p++)
            for (int j = 0; j < 3; j++)
                for (int r = 0; r < 5; r++)
                    cr_assert_eq(s->grad[(p * 3 + j) * 5 + r], 2 * seed[(p * 5 + i64[j]) * 5 + r]);
        tg_tape_reset(t);
    }
    tg_tensor *ix = index_of(t, i64, true, 1, (int[]){3});
    tg_tensor *wrong = tu_rand(&rng, -1, 1, 3, (int[]){5, 2, 5});
    assert_fails(t, tg_index_add(t, a, 1, ix, wrong, 1), "tg_index_add", "src [5,2,5] must be a [5,5,5]",
                 "dim 1 of size 3");
    const int32_t neg[3] = {0, -1, 0};
    tg_tensor *n = index_of(t, neg, false, 1, (int[]){3});
    assert_fails(t, tg_index_add(t, a, 1, n, s, 1), "tg_index_add", "index -1 at position 1");
    tg_tensor *xs[] = {a, s, wrong};
    tu_free_all(xs, 3);
    tg_tape_free(t);
}

/* ---- gradchecks ------------------------------------------------------------------------ */

static const int64_t GIX[24] = {0, 2, 1, 1, 0, 2, 2, 2, 0, 1, 0, 0, 1, 2, 2, 0, 1, 1, 2, 0, 0, 1, 2, 1};

static tg_tensor *gc_gather(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *ix = index_of(t, GIX, true, 3, (int[]){2, 3, 4});
    tg_tensor *y = tg_gather(t, in[0], 1, ix);
    return tg_mul(t, y, y);
}

static tg_tensor *gc_scatter_add(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *ix = index_of(t, GIX, true, 3, (int[]){2, 3, 4});
    tg_tensor *y = tg_scatter_add(t, in[0], 1, ix, in[1]);
    return tg_mul(t, y, y);
}

static tg_tensor *gc_index_select(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *ix = index_of(t, GIX, true, 1, (int[]){4});
    tg_tensor *y = tg_index_select(t, in[0], -1, ix);
    return tg_mul(t, y, y);
}

static tg_tensor *gc_index_add(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *ix = index_of(t, GIX + 1, true, 1, (int[]){2});  /* {2, 1} */
    tg_tensor *y = tg_index_add(t, in[0], 1, ix, in[1], -1.5);
    return tg_mul(t, y, y);
}

Test(gather, gradchecks)
{
    tg_rng rng;
    tg_rng_seed(&rng, 10);
    tg_tensor *a = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 5}), *s = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 4});
    tg_tensor *in[2] = {a, s};
    tu_gradcheck(gc_gather, NULL, in, 1);
    tu_gradcheck(gc_scatter_add, NULL, in, 2);
    tu_gradcheck(gc_index_select, NULL, in, 1);
    tg_tensor *s2 = tu_rand(&rng, -1, 1, 3, (int[]){2, 2, 5});
    tg_tensor *in2[2] = {a, s2};
    tu_gradcheck(gc_index_add, NULL, in2, 2);
    tg_tensor *xs[] = {a, s, s2};
    tu_free_all(xs, 3);
}

/* ---- index dtypes ---------------------------------------------------------------------- */

/* Every index op given one index as int32 and as int64: the same output and
 * grads, bit for bit (PyTorch takes int64; int32 is accepted too). */
static tg_tensor *index_op(tg_tape *t, int op, tg_tensor **in, tg_tensor *ix, tg_tensor *flat)
{
    switch (op) {
    case 0: return tg_gather(t, in[0], 1, ix);
    case 1: return tg_scatter_add(t, in[0], 1, ix, in[1]);
    case 2: return tg_scatter_reduce(t, in[0], 1, ix, in[1], TG_SCATTER_AMAX, true);
    case 3: return tg_index_select(t, in[0], 1, flat);
    case 4: return tg_index_add(t, in[0], 1, flat, in[2], 0.5);
    default: return tg_embedding(t, in[0], ix);
    }
}
static const char *const INDEX_OPS[6] = {"tg_gather",       "tg_scatter_add", "tg_scatter_reduce",
                                         "tg_index_select", "tg_index_add",   "tg_embedding"};

Test(gather, int32_and_int64_indices_agree)
{
    tg_rng rng;
    tg_rng_seed(&rng, 11);
    tg_tensor *in[3] = {tu_rand(&rng, -1, 1, 2, (int[]){3, 4}), tu_rand(&rng, -1, 1, 2, (int[]){3, 2}),
                        tu_rand(&rng, -1, 1, 2, (int[]){3, 6})};
    const int64_t v64[6] = {2, 0, 2, 1, 2, 0};  /* repeats; below 3 for embedding's [3, 4] weight */
    const int32_t v32[6] = {2, 0, 2, 1, 2, 0};
    tg_tape *t = tg_tape_new();
    for (int op = 0; op < 6; op++) {
        tg_real *got[2][4];
        size_t n[4];
        for (int w = 0; w < 2; w++) {
            const void *v = w ? (const void *)v64 : (const void *)v32;
            tg_tensor *ix = index_of(t, v, w, 2, (int[]){3, 2}), *flat = index_of(t, v, w, 1, (int[]){6});
            cr_assert(ix->dtype == (w ? TG_I64 : TG_I32));
            tg_tensor *y = index_op(t, op, in, ix, flat);
            cr_assert_not_null(y, "%s: %s", INDEX_OPS[op], tg_tape_error(t));
            cr_assert(!ix->requires_grad && !ix->grad, "%s: an index takes no grad", INDEX_OPS[op]);
            tg_real *seed = malloc(y->size * sizeof *seed);
            for (size_t i = 0; i < y->size; i++) seed[i] = (tg_real)((double)(i % 5) - 2);
            cr_assert_eq(tg_backward_seed(t, y, seed), 0, "%s", tg_tape_error(t));
            free(seed);
            n[0] = y->size;
            got[w][0] = malloc(y->size * sizeof(tg_real));
            memcpy(got[w][0], y->data, y->size * sizeof(tg_real));
            for (int k = 0; k < 3; k++) {
                n[k + 1] = in[k]->grad ? in[k]->size : 0;
                got[w][k + 1] = in[k]->grad;  /* taken: the next run allocates anew */
                in[k]->grad = NULL;
            }
            tg_tape_reset(t);
        }
        for (int k = 0; k < 4; k++) {
            cr_assert((got[0][k] == NULL) == (got[1][k] == NULL), "%s: part %d", INDEX_OPS[op], k);
            if (got[0][k]) cr_assert_eq(memcmp(got[0][k], got[1][k], n[k] * sizeof(tg_real)), 0, "%s: part %d differs", INDEX_OPS[op], k);
            if (k) tg_free(got[0][k]), tg_free(got[1][k]);
            else free(got[0][k]), free(got[1][k]);
        }
    }
    tu_free_all(in, 3);
    tg_tape_free(t);
}

/* A float, bool or uint8 index is refused by the op, naming it and the dtype;
 * a dead index is refused as an input is. */
Test(gather, a_float_index_is_refused_by_name)
{
    tg_rng rng;
    tg_rng_seed(&rng, 12);
    tg_tensor *in[3] = {tu_rand(&rng, -1, 1, 2, (int[]){3, 4}), tu_rand(&rng, -1, 1, 2, (int[]){3, 2}),
                        tu_rand(&rng, -1, 1, 2, (int[]){3, 6})};
    tg_tape *t = tg_tape_new();
    const tg_dtype bad[4] = {TG_F32, TG_F64, TG_BOOL, TG_U8};
    for (int op = 0; op < 6; op++)
        for (int b = 0; b < 4; b++) {
            tg_tensor *ix = tg_tensor_zeros_dtype(t, bad[b], 2, (int[]){3, 2});
            tg_tensor *flat = tg_tensor_zeros_dtype(t, bad[b], 1, (int[]){6});
            char want[128];
            snprintf(want, sizeof want, "%s: %s is %s, but indices are int64 or int32", INDEX_OPS[op],
                     op == 5 ? "ids" : "the index", tg_dtype_name(bad[b]));
            assert_fails(t, index_op(t, op, in, ix, flat), want);
        }
    tg_tensor *old = index_of(t, (const int64_t[]){0, 1, 2, 0, 1, 2}, true, 2, (int[]){3, 2});
    tg_tape_reset(t);
    assert_fails(t, tg_gather(t, in[0], 1, old), "tg_gather: the index is a tensor from before tg_tape_reset");
    tu_free_all(in, 3);
    tg_tape_free(t);
}

/* An index op dispatches on its float operand, never on the index: a of the
 * other float type runs that type's copy with the same integer index. */
Test(gather, the_other_float_copy_takes_the_same_index)
{
    tg_rng rng;
    tg_rng_seed(&rng, 13);
    tg_tensor *a = tu_rand(&rng, -1, 1, 2, (int[]){3, 4});
    tg_tape *t = tg_tape_new();
    tg_tensor *ix = index_of(t, (const int64_t[]){2, 0, 2, 2, 1, 0}, true, 2, (int[]){3, 2});
    tg_tensor *other = tg_to(t, a, TG_OTHER_DTYPE);
    tg_tensor *y = tg_gather(t, a, 1, ix), *yo = tg_gather(t, other, 1, ix);
    tg_tensor *e = tg_embedding(t, other, ix);
    cr_assert(y && yo && e, "%s", tg_tape_error(t));
    cr_assert(yo->dtype == TG_OTHER_DTYPE && e->dtype == TG_OTHER_DTYPE && y->dtype == TG_REAL_DTYPE);
    tg_tensor *yc = tg_to(t, y, TG_OTHER_DTYPE);  /* gathering commutes with the conversion */
    for (size_t i = 0; i < y->size; i++)
        cr_assert_eq(tg_dtype_load(yo->dtype, yo->data, i), tg_dtype_load(yc->dtype, yc->data, i));
    tg_tensor_free(a);
    tg_tape_free(t);
}
