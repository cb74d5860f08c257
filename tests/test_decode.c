/* The key/value cache and decode-step attention (core/ops/nn/decode.h): writing
 * a sequence's keys and values position by position (or in one prefill) and
 * stepping gives the rows of one causal tg_sdpa_heads pass (the same bits
 * with tapegrad's GEMMs), for multi-head, grouped-query and multi-query
 * layouts; rows move with tg_kv_copy; misuse gives errors naming it. */
#include <stdlib.h>
#include <string.h>

#include "ops_util.h"

TU_SUITE(decode, 24);

enum { DB = 3, DL = 7, DCAP = 9 };

/* | q (H heads) | k (Hkv heads) | v (Hkv heads) | of DB x DL positions. */
static tg_tensor *packed(int H, int Hkv, int dk, int dv, tg_sdpa_layout *lay)
{
    *lay = (tg_sdpa_layout){.n_heads = H, .n_kv_heads = Hkv, .dk = dk, .dv = dv, .q_col = 0, .k_col = H * dk,
                            .v_col = H * dk + Hkv * dk};
    return tu_rand(&R, -1, 1, 3, (int[]){DB, DL, H * dk + Hkv * (dk + dv)});
}

/* The steps against one causal pass, in either way of filling the cache. */
static void steps_match_pass(int H, int Hkv, int dk, int dv, bool prefill)
{
    tg_sdpa_layout lay;
    tg_tensor *x = packed(H, Hkv, dk, dv, &lay), *cache = tg_tensor_alloc(3, (int[]){DB, DCAP, Hkv * (dk + dv)});
    tg_no_grad_begin(T);
    tg_tensor *want = tg_sdpa_heads(T, x, x, &lay, &(tg_sdpa_opts){.mask = &(tg_mask){.causal = true}}, NULL);
    cr_assert_not_null(want, "%s", tg_tape_error(T));
    int E = H * dv, C = x->shape[2];
    if (prefill) cr_assert_eq(tg_kv_write(T, cache, x, &lay, NULL), 0, "%s", tg_tape_error(T));
    for (int i = 0; i < DL; i++) {
        tg_tensor *xi = tg_tensor_new(T, 3, (int[]){DB, 1, C});
        int32_t pos[DB];
        for (int b = 0; b < DB; b++) {
            memcpy(xi->data + b * C, x->data + ((size_t)b * DL + i) * C, C * sizeof(tg_real));
            pos[b] = i;
        }
        tg_tensor *at = tu_index(T, i % 2 ? TG_I64 : TG_I32, NULL, 1, (int[]){DB});  /* both index dtypes */
        for (int b = 0; b < DB; b++) tg_dtype_store(at->dtype, at->data, (size_t)b, pos[b]);
        if (!prefill) cr_assert_eq(tg_kv_write(T, cache, xi, &lay, at), 0, "%s", tg_tape_error(T));
        tg_tensor *o = tg_sdpa_decode(T, xi, cache, &lay, at, NULL);
        cr_assert_not_null(o, "%s", tg_tape_error(T));
        cr_assert(o->ndim == 3 && o->shape[0] == DB && o->shape[1] == 1 && o->shape[2] == E);
        for (int b = 0; b < DB; b++) {
            const tg_real *w = want->data + ((size_t)b * DL + i) * E;
            if (tu_same_bits()) cr_assert_eq(memcmp(o->data + b * E, w, E * sizeof *w), 0, "row %d at %d", b, i);
            for (int e = 0; e < E; e++) tu_close(o->data[b * E + e], w[e], TU_TOL);
        }
    }
    tg_tensor_free(x);
    tg_tensor_free(cache);
}

Test(decode, steps_equal_a_causal_pass_mha_gqa_mqa)
{
    int cases[][4] = {{2, 2, 4, 4}, {4, 2, 3, 5}, {4, 1, 4, 4}, {6, 3, 2, 2}};
    for (int c = 0; c < 4; c++)
        for (int prefill = 0; prefill < 2; prefill++) {
            steps_match_pass(cases[c][0], cases[c][1], cases[c][2], cases[c][3], prefill);
            tg_tape_reset(T);
        }
}

Test(decode, copy_moves_a_rows_prefix)
{
    tg_sdpa_layout lay;
    tg_tensor *x = packed(4, 2, 3, 3, &lay), *cache = tg_tensor_alloc(3, (int[]){DB, DCAP, 12});
    cr_assert_eq(tg_kv_write(T, cache, x, &lay, NULL), 0, "%s", tg_tape_error(T));
    tg_tensor *before = tg_tensor_alloc(3, (int[]){DB, DCAP, 12});
    memcpy(before->data, cache->data, cache->size * sizeof(tg_real));
    cr_assert_eq(tg_kv_copy(cache, &lay, 0, 2, 4), 0, "%s", tg_error());
    /* row 0's positions < 4 are row 2's, the rest row 0's; rows 1, 2 unchanged */
    size_t row = (size_t)DCAP * 12;
    for (int c = 0; c < 6; c++)
        for (int j = 0; j < DCAP; j++)
            cr_assert_eq(cache->data[c * DCAP + j], before->data[(j < 4 ? 2 * row : 0) + c * DCAP + j]);
    for (int j = 0; j < DCAP; j++)
        for (int c = 0; c < 6; c++)
            cr_assert_eq(cache->data[6 * DCAP + j * 6 + c], before->data[(j < 4 ? 2 * row : 0) + 6 * DCAP + j * 6 + c]);
    cr_assert_eq(memcmp(cache->data + row, before->data + row, 2 * row * sizeof(tg_real)), 0);
    tg_tensor_free(x);
    tg_tensor_free(cache);
    tg_tensor_free(before);
}

Test(decode, misuse_is_an_error_naming_it)
{
    tg_sdpa_layout lay;
    tg_tensor *x = packed(4, 2, 2, 2, &lay), *cache = tg_tensor_alloc(3, (int[]){DB, DCAP, 8});
    tg_tensor *small = tg_tensor_alloc(3, (int[]){DB, 4, 8}), *wide = tg_tensor_alloc(3, (int[]){DB, DCAP, 16});
    int32_t pos[DB] = {0, 3, DCAP};
    tg_sdpa_layout bad = lay;
    bad.n_kv_heads = 3;
    cr_assert_eq(tg_kv_write(T, cache, x, &bad, NULL), -1);
    assert_fails(T, NULL, "tg_kv_write", "n_kv_heads dividing n_heads", "n_kv_heads 3");
    cr_assert_eq(tg_kv_write(T, small, x, &lay, NULL), -1);
    assert_fails(T, NULL, "tg_kv_write", "positions [0, 7)", "[0, 4)");
    cr_assert_eq(tg_kv_write(T, wide, x, &lay, NULL), -1);
    assert_fails(T, NULL, "tg_kv_write", "[B >= 3, cap, 8]", "2 key/value heads");
    tg_sdpa_layout off = lay;
    off.v_col = x->shape[2] - 1;
    cr_assert_eq(tg_kv_write(T, cache, x, &off, NULL), -1);
    assert_fails(T, NULL, "tg_kv_write", "value columns", "outside x");
    tg_no_grad_begin(T);
    tg_tensor *q = tg_tensor_new(T, 3, (int[]){DB, 1, x->shape[2]});
#define POS(p) tu_index(T, TG_I32, p, 1, (int[]){DB})
    assert_fails(T, tg_sdpa_decode(T, q, cache, &lay, POS(pos), NULL), "tg_sdpa_decode", "pos[2] = 9", "[0, 9)");
    pos[2] = 0;
    assert_fails(T, tg_sdpa_decode(T, q, cache, &bad, POS(pos), NULL), "tg_sdpa_decode", "n_kv_heads dividing");
    assert_fails(T, tg_sdpa_decode(T, q, cache, &lay, NULL, NULL), "tg_sdpa_decode", "pos is NULL");
    assert_fails(T, tg_sdpa_decode(T, q, cache, &lay, POS(pos), &(tg_sdpa_opts){.dropout = 0.1}), "tg_sdpa_decode",
                 "no mask, bias or dropout");
    /* positions are an int64 or int32 tensor [B] */
    assert_fails(T, tg_sdpa_decode(T, q, cache, &lay, tg_tensor_zeros(T, 1, (int[]){DB}), NULL), "tg_sdpa_decode",
                 "pos is float", "int64 or int32");
    assert_fails(T, tg_sdpa_decode(T, q, cache, &lay, tu_index(T, TG_I32, pos, 2, (int[]){DB, 1}), NULL),
                 "tg_sdpa_decode", "pos is [3,1], but it is [B] = [3]");
    cr_assert_eq(tg_kv_write(T, cache, x, &lay, tu_index(T, TG_I64, NULL, 1, (int[]){2})), -1);
    assert_fails(T, NULL, "tg_kv_write", "at is [2], but it is [B] = [3]");
    cr_assert_eq(tg_kv_write(T, cache, x, &lay, tg_tensor_zeros(T, 1, (int[]){DB})), -1);
    assert_fails(T, NULL, "tg_kv_write", "at is float", "int64 or int32");
    assert_fails(T, tg_sdpa_decode(T, x, cache, &lay, POS(pos), NULL), "tg_sdpa_decode", "xq must be [B, 1, C]");
    tg_no_grad_end(T, true);
    tg_tensor *qr = tu_rand(&R, -1, 1, 3, (int[]){DB, 1, x->shape[2]});
    assert_fails(T, tg_sdpa_decode(T, qr, cache, &lay, POS(pos), NULL), "tg_sdpa_decode", "must not record");
#undef POS
    cr_assert_eq(tg_kv_copy(cache, &lay, 0, DB, 1), -1);
    cr_assert(strstr(tg_error(), "tg_kv_copy") && strstr(tg_error(), "rows 3 -> 0"), "%s", tg_error());
    cr_assert_eq(tg_kv_copy(wide, &lay, 0, 1, 1), -1);
    cr_assert(strstr(tg_error(), "does not match its layout"), "%s", tg_error());
    tu_free_all((tg_tensor *[]){x, cache, small, wide, qr}, 5);
}
