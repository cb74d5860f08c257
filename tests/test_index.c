/* embedding lookup (core/ops/nn/embedding.c): values, repeated ids
 * accumulate, bad arguments (its gradcheck: its op-case row,
 * tests/op_cases_nn.c). */
#include <string.h>

#include "ops_util.h"

Test(index, embedding_values_and_repeated_ids_accumulate)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *w = iota(2, (int[]){4, 2});
    const int32_t ids[6] = {1, 3, 1, 1, 0, 3};
    tg_tensor *ix = tu_index(t, TG_I32, ids, 2, (int[]){2, 3});
    tg_tensor *out = tg_embedding(t, w, ix);
    cr_assert_not_null(out);
    cr_assert(out->ndim == 3 && out->shape[0] == 2 && out->shape[1] == 3 && out->shape[2] == 2);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 2; j++) cr_assert_eq(out->data[i * 2 + j], ids[i] * 2 + j);
    int32_t *iv = tg_data(ix, TG_I32);
    for (int i = 0; i < 6; i++) iv[i] = 2;  /* the caller changes its ids before backward */
    tg_real seed[12];
    for (int i = 0; i < 6; i++) seed[2 * i] = (tg_real)(i + 1), seed[2 * i + 1] = (tg_real)(10 * (i + 1));
    cr_assert_eq(tg_backward_seed(t, out, seed), 0);
    /* id 0 at position 4; id 1 at 0, 2, 3; id 2 nowhere; id 3 at 1, 5 */
    const tg_real want[8] = {5, 50, 1 + 3 + 4, 10 + 30 + 40, 0, 0, 2 + 6, 20 + 60};
    for (int i = 0; i < 8; i++) cr_assert_eq(w->grad[i], want[i], "dW[%d] = %g", i, (double)w->grad[i]);
    tg_tensor_free(w);
    tg_tape_free(t);
}

/* ids of any shape, int32 or int64 (F.embedding): out is ids' shape + [D] */
Test(index, embedding_takes_an_index_of_any_shape)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *w = iota(2, (int[]){4, 2});
    const int64_t ids[6] = {3, 0, 2, 2, 1, 3};
    tg_tensor *out = tg_embedding(t, w, tu_index(t, TG_I64, ids, 3, (int[]){1, 2, 3}));
    cr_assert_not_null(out, "%s", tg_tape_error(t));
    cr_assert(out->ndim == 4 && out->shape[0] == 1 && out->shape[1] == 2 && out->shape[2] == 3 && out->shape[3] == 2);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 2; j++) cr_assert_eq(out->data[i * 2 + j], ids[i] * 2 + j);
    tg_tensor *one = tg_embedding(t, w, tu_index(t, TG_I32, (int32_t[]){2}, 0, NULL));
    cr_assert(one && one->ndim == 1 && one->shape[0] == 2 && one->data[0] == 4 && one->data[1] == 5);
    tg_tensor_free(w);
    tg_tape_free(t);
}

Test(index, rejects_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *w4 = tg_tensor_zeros(t, 1, (int[]){4});
    tg_tensor *emb = tg_tensor_zeros(t, 2, (int[]){10, 3});
    int32_t ids[6] = {0, 9, 3, 10, 11, 2};
    tg_tensor *ix = tu_index(t, TG_I32, ids, 2, (int[]){2, 3});
    assert_fails(t, tg_embedding(t, emb, ix), "tg_embedding", "id 10", "position 3", "[0, 10)", "[10,3]", "ids [2,3]");
    ids[3] = 4;
    ids[4] = 5;
    ids[5] = -1;
    ix = tu_index(t, TG_I32, ids, 2, (int[]){2, 3});
    assert_fails(t, tg_embedding(t, emb, ix), "tg_embedding", "id -1", "position 5", "[0, 10)");
    assert_fails(t, tg_embedding(t, w4, ix), "tg_embedding", "[4]");
    const int64_t big[1] = {(int64_t)1 << 33};
    assert_fails(t, tg_embedding(t, emb, tu_index(t, TG_I64, big, 1, (int[]){1})), "tg_embedding", "id 8589934592",
                 "[0, 10)");
    const int ones[TG_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
    assert_fails(t, tg_embedding(t, emb, tu_index(t, TG_I64, NULL, TG_MAX_DIMS, ones)), "tg_embedding",
                 "ids [1,1,1,1,1,1,1,1]", "at most 7 dims");
    assert_fails(t, tg_embedding(t, emb, NULL), "tg_embedding", "ids is NULL");
    assert_fails(t, tg_embedding(t, emb, tg_tensor_zeros_dtype(t, TG_F32, 1, (int[]){2})), "tg_embedding",
                 "ids is float32, but indices are int64 or int32");
    tg_tape_free(t);
}
