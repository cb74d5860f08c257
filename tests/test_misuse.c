/* Misuse of the API is an error naming what was wrong, never a crash and
 * never a silent wrong number. One section per area; every case asserts the
 * message. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static void assert_error(const tg_tape *t, const char *want)
{
    const char *e = tg_tape_error(t);
    cr_assert(e && strstr(e, want), "want \"%s\", got \"%s\"", want, e ? e : "(none)");
}

/* ---- engine: the tape's backward ------------------------------------------------------------ */

Test(misuse_backward, twice_on_one_tape_is_refused_and_changes_nothing)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = tg_tensor_alloc(0, NULL);
    a->requires_grad = true;
    tg_tensor *loss = tg_sum(t, tg_scale(t, a, 2));
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    cr_assert_eq(a->grad[0], 2);
    cr_assert_eq(tg_backward(t, loss), -1);
    assert_error(t, "tg_backward called twice on one tape: reset it first");
    cr_assert_eq(a->grad[0], 2, "the refused call accumulated nothing");
    /* a loss that is itself a leaf, and tg_backward_seed, count as well */
    tg_tape_reset(t);
    loss = tg_sum(t, a);
    cr_assert_eq(tg_backward(t, loss), 0);
    cr_assert_eq(tg_backward_seed(t, loss, (tg_real[]){1}), -1);
    assert_error(t, "tg_backward called twice on one tape: reset it first");
    cr_assert_eq(a->grad[0], 3);
    /* reset makes the tape usable again */
    tg_tape_reset(t);
    cr_assert_eq(tg_backward(t, tg_sum(t, a)), 0, "%s", tg_tape_error(t));
    cr_assert_eq(a->grad[0], 4);
    tg_tensor_free(a);
    tg_tape_free(t);
}

Test(misuse_backward, loss_that_needs_no_grad)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){3});
    x->requires_grad = true;
    /* recording left off after an evaluation pass */
    tg_no_grad_begin(t);
    tg_tape_reset(t);
    tg_tensor *loss = tg_sum(t, tg_tanh(t, x));
    cr_assert_not_null(loss);
    cr_assert_eq(tg_backward(t, loss), -1);
    assert_error(t, "tg_backward: loss does not depend on any tensor that requires grad (is recording off?)");
    cr_assert_null(x->grad);
    /* recording on, but nothing requires a grad */
    tg_tape_reset(t);
    tg_no_grad_end(t, true);
    x->requires_grad = false;
    cr_assert_eq(tg_backward(t, tg_sum(t, x)), -1);
    assert_error(t, "loss does not depend on any tensor that requires grad");
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(misuse_backward, bad_loss)
{
    tg_tape *t = tg_tape_new(), *u = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(0, NULL);
    x->requires_grad = true;
    cr_assert_eq(tg_backward(t, NULL), -1);
    assert_error(t, "tg_backward: output is NULL");
    /* a loss from before tg_tape_reset */
    tg_tape_reset(t);
    tg_tensor *loss = tg_scale(t, x, 3);
    tg_tape_reset(t);
    cr_assert_eq(tg_backward(t, loss), -1);
    assert_error(t, "tg_backward: the loss is a tensor from before tg_tape_reset");
    cr_assert_null(x->grad);
    /* a loss recorded on another tape */
    tg_tape_reset(t);
    loss = tg_scale(u, x, 3);
    cr_assert_eq(tg_backward(t, loss), -1);
    assert_error(t, "tg_backward: the loss belongs to another tape");
    cr_assert_null(x->grad);
    /* a freed heap tensor */
    tg_tape_reset(t);
    tg_tensor *h = tg_tensor_alloc(0, NULL);
    tg_tensor_free(h);
    cr_assert_eq(tg_backward(t, h), -1);
    assert_error(t, "tg_backward: the loss is not a live tensor");
    /* a forward error stays the message */
    tg_tape_reset(t);
    tg_fail(t, "an earlier error");
    cr_assert_eq(tg_backward(t, tg_scale(u, x, 1)), -1);
    cr_assert_str_eq(tg_tape_error(t), "an earlier error");
    tg_tensor_free(x);
    tg_tape_free(u);
    tg_tape_free(t);
}

Test(misuse_backward, graph_spanning_two_tapes)
{
    tg_tape *a = tg_tape_new(), *b = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    x->requires_grad = true;
    tg_tensor *tmp = tg_scale(a, x, 2);   /* recorded on a */
    tg_tensor *loss = tg_sum(b, tmp);      /* consumed on b */
    cr_assert_null(loss);
    assert_error(b, "tg_sum: input 0 belongs to another tape (a graph lives on one tape)");
    cr_assert_eq(tg_backward(b, loss), -1);
    cr_assert_null(x->grad);
    tg_tensor_free(x);
    tg_tape_free(a);
    tg_tape_free(b);
}

/* ---- engine: op inputs: NULL, from before tg_tape_reset, of another tape, freed ------------- */

/* Every op with tensor inputs, called on inputs in[] of the shapes below. */
typedef struct op_case {
    const char *name;
    int n_in, n_required;  /* inputs past n_required may be NULL */
    int ndim[4], shape[4][4];
    tg_tensor *(*call)(tg_tape *t, tg_tensor **in, tg_rng *rng);
} op_case;

#define SQ {3, 3}
#define V3 {3}

static tg_tensor *c_add(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_add(t, in[0], in[1]); }
static tg_tensor *c_sub(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_sub(t, in[0], in[1]); }
static tg_tensor *c_mul(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_mul(t, in[0], in[1]); }
static tg_tensor *c_scale(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_scale(t, in[0], 2); }
static tg_tensor *c_relu(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_relu(t, in[0]); }
static tg_tensor *c_gelu(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_gelu(t, in[0]); }
static tg_tensor *c_tanh(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_tanh(t, in[0]); }
static tg_tensor *c_sum(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_sum(t, in[0]); }
static tg_tensor *c_mean(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_mean(t, in[0]); }
static tg_tensor *c_matmul(tg_tape *t, tg_tensor **in, tg_rng *r)
{
    (void)r;
    return tg_matmul(t, in[0], in[1], in[2], TG_TRANS_B);
}
static tg_tensor *c_reshape(tg_tape *t, tg_tensor **in, tg_rng *r)
{
    (void)r;
    return tg_reshape(t, in[0], 1, (int[]){9});
}
static tg_tensor *c_rows_view(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_rows_view(t, in[0], 1, 2); }
static tg_tensor *c_permute(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_permute(t, in[0], (int[]){1, 0}, 2); }
static tg_tensor *c_transpose(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_transpose(t, in[0], 0, 1); }
static tg_tensor *c_split(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_split_heads(t, in[0], 3); }
static tg_tensor *c_merge(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_merge_heads(t, in[0]); }
static tg_tensor *c_concat(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_concat(t, in, 3); }
static tg_tensor *c_slice(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_slice(t, in[0], 1, 2); }
static tg_tensor *c_softmax(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_softmax(t, in[0]); }
static tg_tensor *c_log_softmax(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_log_softmax(t, in[0]); }
static tg_tensor *c_softmax_masked(tg_tape *t, tg_tensor **in, tg_rng *r)
{
    (void)r;
    return tg_softmax_masked(t, in[0], &(tg_mask){.causal = true}, 0.5);
}
static tg_tensor *c_layernorm(tg_tape *t, tg_tensor **in, tg_rng *r)
{
    (void)r;
    return tg_layernorm(t, in[0], in[1], in[2], 1e-5);
}
static tg_tensor *c_embedding(tg_tape *t, tg_tensor **in, tg_rng *r)
{
    (void)r;
    return tg_embedding(t, in[0], &(tg_index){.data = (int32_t[]){0, 2}, .ndim = 2, .shape = {1, 2}});
}
static tg_tensor *c_cross_entropy(tg_tape *t, tg_tensor **in, tg_rng *r)
{
    (void)r;
    return tg_cross_entropy(t, in[0], (int32_t[]){0, 1, 2}, 3, TG_IGNORE);
}
static tg_tensor *c_dropout(tg_tape *t, tg_tensor **in, tg_rng *r) { return tg_dropout(t, in[0], 0.5, r); }
/* p = 0 returns the input itself: it is checked all the same */
static tg_tensor *c_dropout_off(tg_tape *t, tg_tensor **in, tg_rng *r) { return tg_dropout(t, in[0], 0, r); }

static tg_tensor *c_div(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_div(t, in[0], in[1]); }
static tg_tensor *c_exp(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_exp(t, in[0]); }
static tg_tensor *c_log(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_log(t, in[0]); }
static tg_tensor *c_sqrt(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_sqrt(t, in[0]); }
static tg_tensor *c_sigmoid(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_sigmoid(t, in[0]); }
static tg_tensor *c_pow(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_pow(t, in[0], 1.5); }
static tg_tensor *c_neg(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_neg(t, in[0]); }
static tg_tensor *c_abs(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_abs(t, in[0]); }
static tg_tensor *c_clamp(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_clamp(t, in[0], 0.7, 1.2); }
static tg_tensor *c_sum_dim(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_sum_dim(t, in[0], 1, false); }
static tg_tensor *c_mean_dim(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_mean_dim(t, in[0], 0, true); }
static tg_tensor *c_max_dim(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_max_dim(t, in[0], -1, false); }
static tg_tensor *c_lse_dim(tg_tape *t, tg_tensor **in, tg_rng *r) { (void)r; return tg_logsumexp_dim(t, in[0], 1, false); }
static tg_tensor *c_sdpa(tg_tape *t, tg_tensor **in, tg_rng *r)
{
    tg_sdpa_opts o = {.mask = &(tg_mask){.causal = true}, .dropout = 0.25, .rng = r};
    return tg_sdpa(t, in[0], in[1], in[2], &o, NULL);
}
static tg_tensor *c_sdpa_heads(tg_tape *t, tg_tensor **in, tg_rng *r)
{
    tg_sdpa_opts o = {.dropout = 0.25, .rng = r};
    tg_sdpa_layout lay = {.n_heads = 1, .dk = 1, .dv = 1, .q_col = 0, .k_col = 1, .v_col = 2};
    return tg_sdpa_heads(t, in[0], in[1], &lay, &o, NULL);
}

static const op_case op_cases[] = {
    {"tg_div", 2, 2, {2, 1}, {SQ, V3}, c_div},
    {"tg_exp", 1, 1, {2}, {SQ}, c_exp},
    {"tg_log", 1, 1, {2}, {SQ}, c_log},
    {"tg_sqrt", 1, 1, {2}, {SQ}, c_sqrt},
    {"tg_sigmoid", 1, 1, {2}, {SQ}, c_sigmoid},
    {"tg_pow", 1, 1, {2}, {SQ}, c_pow},
    {"tg_neg", 1, 1, {2}, {SQ}, c_neg},
    {"tg_abs", 1, 1, {2}, {SQ}, c_abs},
    {"tg_clamp", 1, 1, {2}, {SQ}, c_clamp},
    {"tg_sum_dim", 1, 1, {2}, {SQ}, c_sum_dim},
    {"tg_mean_dim", 1, 1, {2}, {SQ}, c_mean_dim},
    {"tg_max_dim", 1, 1, {2}, {SQ}, c_max_dim},
    {"tg_logsumexp_dim", 1, 1, {2}, {SQ}, c_lse_dim},
    {"tg_add", 2, 2, {2, 2}, {SQ, SQ}, c_add},
    {"tg_sub", 2, 2, {2, 2}, {SQ, SQ}, c_sub},
    {"tg_mul", 2, 2, {2, 2}, {SQ, SQ}, c_mul},
    {"tg_scale", 1, 1, {2}, {SQ}, c_scale},
    {"tg_relu", 1, 1, {2}, {SQ}, c_relu},
    {"tg_gelu", 1, 1, {2}, {SQ}, c_gelu},
    {"tg_tanh", 1, 1, {2}, {SQ}, c_tanh},
    {"tg_sum", 1, 1, {2}, {SQ}, c_sum},
    {"tg_mean", 1, 1, {2}, {SQ}, c_mean},
    {"tg_matmul", 3, 2, {2, 2, 1}, {SQ, SQ, V3}, c_matmul},
    {"tg_reshape", 1, 1, {2}, {SQ}, c_reshape},
    {"tg_rows_view", 1, 1, {2}, {SQ}, c_rows_view},
    {"tg_permute", 1, 1, {2}, {SQ}, c_permute},
    {"tg_transpose", 1, 1, {2}, {SQ}, c_transpose},
    {"tg_split_heads", 1, 1, {3}, {{1, 3, 3}}, c_split},
    {"tg_merge_heads", 1, 1, {4}, {{1, 1, 3, 3}}, c_merge},
    {"tg_concat", 3, 3, {2, 2, 2}, {SQ, SQ, SQ}, c_concat},
    {"tg_slice", 1, 1, {2}, {SQ}, c_slice},
    {"tg_softmax", 1, 1, {2}, {SQ}, c_softmax},
    {"tg_log_softmax", 1, 1, {2}, {SQ}, c_log_softmax},
    {"tg_softmax_masked", 1, 1, {2}, {SQ}, c_softmax_masked},
    {"tg_layernorm", 3, 1, {2, 1, 1}, {SQ, V3, V3}, c_layernorm},
    {"tg_embedding", 1, 1, {2}, {SQ}, c_embedding},
    {"tg_cross_entropy", 1, 1, {2}, {SQ}, c_cross_entropy},
    {"tg_dropout", 1, 1, {2}, {SQ}, c_dropout},
    {"tg_dropout", 1, 1, {2}, {SQ}, c_dropout_off},
    {"tg_sdpa", 3, 3, {4, 4, 4}, {{1, 1, 3, 3}, {1, 1, 3, 3}, {1, 1, 3, 3}}, c_sdpa},
    {"tg_sdpa_heads", 2, 2, {3, 3}, {{1, 3, 3}, {1, 3, 3}}, c_sdpa_heads},
};
#define N_OP_CASES ((int)(sizeof op_cases / sizeof op_cases[0]))

enum bad { BAD_NULL, BAD_STALE, BAD_OTHER_TAPE, BAD_FREED };

/* Runs case c with input k made bad in way `bad`, the others good heap
 * tensors, and asserts the op's message. */
static void run_bad_input(const op_case *c, int k, enum bad bad)
{
    tg_tape *t = tg_tape_new(), *u = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    tg_tensor *in[4] = {NULL}, *heap[4] = {NULL};
    for (int i = 0; i < c->n_in; i++) {
        heap[i] = tu_rand(&rng, 0.5, 1.5, c->ndim[i], c->shape[i]);
        in[i] = heap[i];
    }
    char want[160];
    switch (bad) {
    case BAD_NULL:
        in[k] = NULL;
        snprintf(want, sizeof want, "%s: input is NULL", c->name);
        break;
    case BAD_STALE:
        in[k] = tg_tensor_from(t, heap[k]->data, c->ndim[k], c->shape[k]);
        tg_tape_reset(t);
        snprintf(want, sizeof want, "%s: input %d is a tensor from before tg_tape_reset", c->name, k);
        break;
    case BAD_OTHER_TAPE:
        in[k] = tg_tensor_from(u, heap[k]->data, c->ndim[k], c->shape[k]);
        snprintf(want, sizeof want, "%s: input %d belongs to another tape", c->name, k);
        break;
    case BAD_FREED:
        tg_tensor_free(heap[k]);
        heap[k] = NULL;
        snprintf(want, sizeof want, "%s: input %d is not a live tensor", c->name, k);
        break;
    }
    cr_assert_null(c->call(t, in, &rng), "%s with a bad input %d returned a tensor", c->name, k);
    const char *e = tg_tape_error(t);
    cr_assert(e && strstr(e, want), "%s input %d: want \"%s\", got \"%s\"", c->name, k, want, e ? e : "(none)");
    cr_assert_eq(tg_tape_node_count(t), 0);
    for (int i = 0; i < c->n_in; i++) tg_tensor_free(heap[i]);
    tg_tape_free(u);
    tg_tape_free(t);
}

/* The good inputs work: a bad input is the only reason for each failure. */
Test(misuse_inputs, every_op_accepts_good_inputs)
{
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    for (int i = 0; i < N_OP_CASES; i++) {
        const op_case *c = &op_cases[i];
        tg_tape *t = tg_tape_new();
        tg_tensor *in[4] = {NULL};
        for (int k = 0; k < c->n_in; k++) in[k] = tu_rand(&rng, 0.5, 1.5, c->ndim[k], c->shape[k]);
        cr_assert_not_null(c->call(t, in, &rng), "%s: %s", c->name, tg_tape_error(t));
        tu_free_all(in, c->n_in);
        tg_tape_free(t);
    }
}

Test(misuse_inputs, null_input)
{
    for (int i = 0; i < N_OP_CASES; i++)
        for (int k = 0; k < op_cases[i].n_required; k++) run_bad_input(&op_cases[i], k, BAD_NULL);
}

Test(misuse_inputs, tensor_from_before_reset)
{
    for (int i = 0; i < N_OP_CASES; i++)
        for (int k = 0; k < op_cases[i].n_in; k++) run_bad_input(&op_cases[i], k, BAD_STALE);
}

Test(misuse_inputs, tensor_of_another_tape)
{
    for (int i = 0; i < N_OP_CASES; i++)
        for (int k = 0; k < op_cases[i].n_in; k++) run_bad_input(&op_cases[i], k, BAD_OTHER_TAPE);
}

Test(misuse_inputs, freed_heap_tensor)
{
    for (int i = 0; i < N_OP_CASES; i++)
        for (int k = 0; k < op_cases[i].n_in; k++) run_bad_input(&op_cases[i], k, BAD_FREED);
}

/* Optional inputs (matmul's bias, layernorm's weight and bias) may be NULL. */
Test(misuse_inputs, optional_inputs_may_be_null)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){2, 3});
    cr_assert_not_null(tg_matmul(t, x, x, NULL, TG_TRANS_B), "%s", tg_tape_error(t));
    cr_assert_not_null(tg_layernorm(t, x, NULL, NULL, 1e-5), "%s", tg_tape_error(t));
    tg_tensor *b = tg_tensor_zeros(t, 1, (int[]){3});
    cr_assert_not_null(tg_layernorm(t, x, NULL, b, 1e-5), "%s", tg_tape_error(t));
    cr_assert_null(tg_tape_error(t));
    tg_tape_free(t);
}

/* The loop every training program has, with the input wrongly made once
 * outside it: the next step makes a tensor of the same shape first, where the
 * kept one lived, and the kept one is still found dead (its header's address
 * is never reused: core/engine/headers.h; tests/test_stale.c loops further). */
Test(misuse_inputs, kept_across_a_reset_in_a_loop)
{
    tg_tape *t = tg_tape_new();
    tg_real xs[4] = {1, 2, 3, 4};
    tg_tensor *w = tg_tensor_alloc(1, (int[]){4});
    w->requires_grad = true;
    tg_tensor *x = tg_tensor_from(t, xs, 1, (int[]){4});  /* dies at the first reset */
    for (int step = 0; step < 2; step++) {
        tg_tensor *y = tg_tensor_from(t, xs, 1, (int[]){4});
        tg_tensor *loss = tg_sum(t, tg_mul(t, tg_sub(t, x, y), w));
        if (step == 0) {
            cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
        } else {
            cr_assert_null(loss);
            assert_error(t, "tg_sub: input 0 ");
            assert_error(t, "from before tg_tape_reset");
            cr_assert_eq(tg_backward(t, loss), -1);
        }
        tg_tape_reset(t);
    }
    tg_tensor_free(w);
    tg_tape_free(t);
}

/* A view of a dead tensor is refused, and a view made before a reset is dead too. */
Test(misuse_inputs, views)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){2, 3});
    tg_tensor *v = tg_reshape(t, x, 1, (int[]){6});
    cr_assert_not_null(v);
    tg_tape_reset(t);
    cr_assert_null(tg_relu(t, v));
    assert_error(t, "tg_relu: input 0 is a tensor from before tg_tape_reset");
    tg_tape_free(t);
}

/* A tensor not made by tapegrad (a struct on the stack) is refused. */
Test(misuse_inputs, tensor_not_made_by_tapegrad)
{
    tg_tape *t = tg_tape_new();
    tg_real d[2] = {1, 2};
    tg_tensor fake = {.data = d, .ndim = 1, .shape = {2, 1, 1, 1}, .size = 2};
    cr_assert_null(tg_tanh(t, &fake));
    assert_error(t, "tg_tanh: input 0 is not a live tensor");
    tg_tape_free(t);
}

/* Freeing twice, or freeing what is not a heap tensor, does nothing. */
Test(misuse_inputs, tensor_free_of_what_it_does_not_own)
{
    tg_tape *t = tg_tape_new();
    tg_params *p = tg_params_new();
    tg_tensor *w = tg_params_add(p, "w", 1, (int[]){2});
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    tg_tensor_free(x);
    tg_tensor_free(x);
    tg_tensor_free(tg_tensor_zeros(t, 1, (int[]){2}));
    tg_tensor_free(w);
    cr_assert_not_null(tg_relu(t, w), "%s", tg_tape_error(t));
    tg_params_free(p);
    tg_tape_free(t);
}

/* ---- engine: no-grad scopes ------------------------------------------------------------------- */

Test(misuse_no_grad, scopes_nest_and_restore)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    x->requires_grad = true;
    bool outer = tg_no_grad_begin(t);
    bool inner = tg_no_grad_begin(t);
    cr_assert(outer && !inner);
    cr_assert(!tg_tanh(t, x)->requires_grad);
    tg_no_grad_end(t, inner);
    cr_assert(!tg_tape_recording(t), "the inner end restores the outer scope");
    tg_no_grad_end(t, outer);
    cr_assert(tg_tape_recording(t));
    tg_tensor *loss = tg_sum(t, tg_tanh(t, x));
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    cr_assert_not_null(x->grad);
    tg_tensor_free(x);
    tg_tape_free(t);
}

/* Asserts that a call returned NULL (or -1) with tg_error() equal to want,
 * after clearing it, so a stale message cannot pass. */
#define expect_null(call, want)                                                             \
    do {                                                                                    \
        tg_error_clear();                                                                   \
        cr_assert_null((call), "%s", #call);                                                \
        cr_assert_str_eq(tg_error() ? tg_error() : "(none)", (want), "%s", #call);          \
    } while (0)
#define expect_fail(call, want)                                                             \
    do {                                                                                    \
        tg_error_clear();                                                                   \
        cr_assert_eq((call), -1, "%s", #call);                                              \
        cr_assert_str_eq(tg_error() ? tg_error() : "(none)", (want), "%s", #call);          \
    } while (0)

/* ---- nn: NULL layers, stores, configurations and tapes ------------------------------------- */

static const tg_mha_config MHA = {.n_heads = 2, .d_model = 4, .bias = true, .mode = TG_MHA_FUSED};
static const tg_block_config BLOCK = {.attn = {.n_heads = 2, .d_model = 4, .bias = true}, .d_ff = 8};
static const tg_model_config MODEL = {.vocab = 5, .d_model = 4, .n_layers = 1, .n_heads = 2, .max_len = 4};

/* One of each layer. */
typedef struct layers {
    tg_linear l;
    tg_embedding_layer e;
    tg_layernorm_layer ln;
    tg_ffn f;
    tg_mha m;
    tg_block b;
    tg_model mo;
} layers;

Test(misuse_nn, init_with_null_layer_store_or_config)
{
    tg_params *p = tg_params_new();
    layers L;
    expect_fail(tg_linear_init(NULL, p, "fc", &(tg_linear_config){.in = 2, .out = 3, .bias = true}, NULL),
                "tg_linear_init: the layer is NULL");
    expect_fail(tg_linear_init(&L.l, NULL, "fc", &(tg_linear_config){.in = 2, .out = 3, .bias = true}, NULL),
                "tg_linear_init: the parameter store is NULL");
    expect_fail(tg_embedding_init(NULL, p, "emb", 5, 4, NULL), "tg_embedding_init: the layer is NULL");
    expect_fail(tg_embedding_init(&L.e, NULL, "emb", 5, 4, NULL), "tg_embedding_init: the parameter store is NULL");
    expect_fail(tg_layernorm_init(NULL, p, "ln", 4, 1e-5), "tg_layernorm_init: the layer is NULL");
    expect_fail(tg_layernorm_init(&L.ln, NULL, "ln", 4, 1e-5), "tg_layernorm_init: the parameter store is NULL");
    expect_fail(tg_ffn_init(NULL, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8}, NULL),
                "tg_ffn_init: the layer is NULL");
    expect_fail(tg_ffn_init(&L.f, NULL, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8}, NULL),
                "tg_ffn_init: the parameter store is NULL");
    expect_fail(tg_mha_init(NULL, p, "attn", &MHA, NULL), "tg_mha_init: the layer is NULL");
    expect_fail(tg_mha_init(&L.m, NULL, "attn", &MHA, NULL), "tg_mha_init: the parameter store is NULL");
    expect_fail(tg_mha_init(&L.m, p, "attn", NULL, NULL), "tg_mha_init: the configuration is NULL");
    expect_fail(tg_block_init(NULL, p, "blk", &BLOCK, NULL), "tg_block_init: the layer is NULL");
    expect_fail(tg_block_init(&L.b, NULL, "blk", &BLOCK, NULL), "tg_block_init: the parameter store is NULL");
    expect_fail(tg_block_init(&L.b, p, "blk", NULL, NULL), "tg_block_init: the configuration is NULL");
    expect_fail(tg_model_init(NULL, p, &MODEL, NULL), "tg_model_init: the layer is NULL");
    expect_fail(tg_model_init(&L.mo, NULL, &MODEL, NULL), "tg_model_init: the parameter store is NULL");
    expect_fail(tg_model_init(&L.mo, p, NULL, NULL), "tg_model_init: the configuration is NULL");
    cr_assert_eq(tg_params_count(p), 0, "a refused init added parameters");
    tg_model_free(NULL);  /* a no-op, as free(NULL) */
    tg_params_free(p);
}

/* An op or layer on tape t returned NULL with want in the tape and in
 * tg_error(); the tape's error is cleared first and after. */
#define expect_op_null(t, call, want)                                                       \
    do {                                                                                    \
        tg_tape_clear_error(t);                                                             \
        tg_error_clear();                                                                   \
        cr_assert_null((call), "%s", #call);                                                \
        cr_assert_str_eq(tg_tape_error(t) ? tg_tape_error(t) : "(none)", (want), "%s", #call); \
        cr_assert_str_eq(tg_error() ? tg_error() : "(none)", (want), "%s", #call);          \
        tg_tape_clear_error(t);                                                             \
    } while (0)

Test(misuse_nn, forward_with_null_layer_or_tape)
{
    tg_params *p = tg_params_new();
    layers L;
    cr_assert_eq(tg_linear_init(&L.l, p, "fc", &(tg_linear_config){.in = 4, .out = 4, .bias = true}, NULL), 0,
                 "%s", tg_error());
    cr_assert_eq(tg_embedding_init(&L.e, p, "emb", 5, 4, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_layernorm_init(&L.ln, p, "ln", 4, 1e-5), 0, "%s", tg_error());
    cr_assert_eq(tg_ffn_init(&L.f, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8}, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_mha_init(&L.m, p, "attn", &MHA, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_block_init(&L.b, p, "blk", &BLOCK, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_model_init(&L.mo, p, &MODEL, NULL), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(3, (int[]){1, 2, 4}), *w = x;
    const int32_t ids[2] = {1, 2};
    expect_op_null(t, tg_linear_forward(t, NULL, x), "tg_linear_forward: the layer is NULL");
    expect_op_null(t, tg_embedding_forward(t, NULL, ids, 1, 2), "tg_embedding_forward: the layer is NULL");
    expect_op_null(t, tg_layernorm_forward(t, NULL, x), "tg_layernorm_forward: the layer is NULL");
    expect_op_null(t, tg_ffn_forward(t, NULL, x, NULL), "tg_ffn_forward: the layer is NULL");
    expect_op_null(t, tg_mha_forward(t, NULL, x, x, NULL, &w), "tg_mha_forward: the layer is NULL");
    cr_assert_null(w, "tg_mha_forward clears *weights when it fails");
    expect_op_null(t, tg_block_forward(t, NULL, x, NULL, NULL), "tg_block_forward: the layer is NULL");
    expect_op_null(t, tg_model_forward(t, NULL, ids, 1, 2, NULL, NULL),
                   "tg_model_forward: the layer is NULL");
    /* a NULL tape: nowhere to keep the error but tg_error() */
    expect_null(tg_linear_forward(NULL, &L.l, x), "tg_linear_forward: the tape is NULL");
    expect_null(tg_embedding_forward(NULL, &L.e, ids, 1, 2), "tg_embedding_forward: the tape is NULL");
    expect_null(tg_layernorm_forward(NULL, &L.ln, x), "tg_layernorm_forward: the tape is NULL");
    expect_null(tg_ffn_forward(NULL, &L.f, x, NULL), "tg_ffn_forward: the tape is NULL");
    expect_null(tg_mha_forward(NULL, &L.m, x, x, NULL, NULL), "tg_mha_forward: the tape is NULL");
    expect_null(tg_block_forward(NULL, &L.b, x, NULL, NULL), "tg_block_forward: the tape is NULL");
    expect_null(tg_model_forward(NULL, &L.mo, ids, 1, 2, NULL, NULL), "tg_model_forward: the tape is NULL");
    /* the decoding path: one position per row against a key/value cache */
    tg_kv_cache c;
    const int32_t pos[1] = {0};
    expect_fail(tg_kv_cache_init(NULL, &L.mo, 1), "tg_kv_cache_init: the cache is NULL");
    expect_fail(tg_kv_cache_init(&c, NULL, 1), "tg_kv_cache_init: the model is NULL");
    expect_fail(tg_kv_cache_init(&c, &L.mo, 0), "tg_kv_cache_init: B = 0 must be >= 1");
    cr_assert_eq(tg_kv_cache_init(&c, &L.mo, 1), 0, "%s", tg_error());
    expect_fail(tg_kv_cache_move(NULL, 0, 0, 1), "tg_kv_cache_move: the cache is NULL");
    expect_fail(tg_kv_cache_move(&(tg_kv_cache){0}, 0, 0, 1), "tg_kv_cache_move: the cache is not initialised");
    expect_fail(tg_kv_cache_move(&c, 1, 0, 1),
                "tg_kv_cache_move: rows 0 -> 1, 1 positions: need rows in [0, 1), positions in [0, 4]");
    expect_fail(tg_kv_cache_move(&c, 0, 0, 5),
                "tg_kv_cache_move: rows 0 -> 0, 5 positions: need rows in [0, 1), positions in [0, 4]");
    bool prev = tg_no_grad_begin(t);
    tg_tensor *x1 = tg_tensor_zeros(t, 3, (int[]){1, 1, 4});
    expect_op_null(t, tg_mha_decode(t, NULL, x1, c.kv[0], pos, NULL), "tg_mha_decode: the layer is NULL");
    expect_op_null(t, tg_block_decode(t, NULL, x1, c.kv[0], pos, NULL), "tg_block_decode: the layer is NULL");
    expect_op_null(t, tg_model_decode(t, NULL, &c, ids, pos, 1, NULL), "tg_model_decode: the layer is NULL");
    expect_null(tg_model_decode(NULL, &L.mo, &c, ids, pos, 1, NULL), "tg_model_decode: the tape is NULL");
    cr_assert_not_null(tg_model_decode(t, &L.mo, &c, ids, pos, 1, NULL), "%s", tg_error());
    expect_op_null(t, tg_model_decode(t, &L.mo, NULL, ids, pos, 1, NULL), "tg_model_decode: the cache is NULL");
    expect_op_null(t, tg_model_decode(t, &L.mo, &c, NULL, pos, 1, NULL), "tg_model_decode: ids is NULL");
    expect_op_null(t, tg_model_decode(t, &L.mo, &c, ids, NULL, 1, NULL), "tg_model_decode: pos is NULL");
    /* the prefill: a forward that also fills the cache */
    expect_op_null(t, tg_model_prefill(t, NULL, &c, ids, 1, 2, NULL), "tg_model_prefill: the layer is NULL");
    expect_null(tg_model_prefill(NULL, &L.mo, &c, ids, 1, 2, NULL), "tg_model_prefill: the tape is NULL");
    expect_op_null(t, tg_model_prefill(t, &L.mo, NULL, ids, 1, 2, NULL), "tg_model_prefill: the cache is NULL");
    expect_op_null(t, tg_model_prefill(t, &L.mo, &(tg_kv_cache){0}, ids, 1, 2, NULL),
                   "tg_model_prefill: the cache is not initialised (tg_kv_cache_init)");
    expect_op_null(t, tg_model_prefill(t, &L.mo, &c, ids, 2, 1, NULL), "tg_model_prefill: 2 rows for a cache of 1");
    expect_op_null(t, tg_model_prefill(t, &L.mo, &c, ids, 1, 5, NULL),
                   "tg_model: batch 1 x length 5: need B > 0 and 0 < T <= max_len 4");
    cr_assert_not_null(tg_model_prefill(t, &L.mo, &c, ids, 1, 2, NULL), "%s", tg_error());
    tg_params *p2 = tg_params_new();
    tg_model other;
    tg_model_config longer = MODEL;
    longer.max_len = 6;
    cr_assert_eq(tg_model_init(&other, p2, &longer, NULL), 0, "%s", tg_error());
    expect_op_null(t, tg_model_prefill(t, &other, &c, ids, 1, 2, NULL),
                   "tg_model_prefill: the cache holds 1 layers x 4 positions, the model 1 x 6 (another model's?)");
    tg_model_free(&other);
    tg_params_free(p2);
    tg_tensor *x2 = tg_tensor_zeros(t, 3, (int[]){1, 2, 4});
    expect_op_null(t, tg_mha_forward(t, &L.m, x2, x1, &(tg_mha_opts){.cache = c.kv[0]}, NULL),
                   "tg_mha 'attn': a key/value cache is filled by self-attention only (xq == xkv)");
    expect_op_null(t, tg_mha_forward(t, &L.m, x2, x2, &(tg_mha_opts){.cache = x2}, NULL),
                   "tg_mha 'attn': the cache must be [B' >= B, cap >= L, 8] for x [1,2,4], got [1,2,4]");
    tg_no_grad_end(t, prev);
    tg_kv_cache_free(&c);
    /* the layers themselves still work */
    cr_assert_not_null(tg_model_forward(t, &L.mo, ids, 1, 2, NULL, NULL), "%s", tg_error());
    tg_tensor_free(x);
    tg_tape_free(t);
    tg_model_free(&L.mo);
    tg_params_free(p);
}

/* A layer whose init failed (or that was never initialised: zeroed) is
 * refused by its forward with a message, not run on NULL weights. */
Test(misuse_nn, forward_of_a_layer_whose_init_failed)
{
    tg_params *p = tg_params_new();
    tg_linear l;
    tg_embedding_layer e;
    tg_layernorm_layer ln;
    tg_ffn f;
    tg_mha m, good;
    tg_block b = {0};  /* never initialised */
    tg_model mo;
    tg_mha_config bad = MHA;
    bad.n_heads = 3;  /* does not divide d_model */
    tg_model_config badm = MODEL;
    badm.n_layers = 0;
    cr_assert_eq(tg_linear_init(&l, p, "fc", &(tg_linear_config){.in = 0, .out = 4, .bias = true}, NULL), -1);
    cr_assert_eq(tg_embedding_init(&e, p, "emb", 0, 4, NULL), -1);
    cr_assert_eq(tg_layernorm_init(&ln, p, "ln", 0, 1e-5), -1);
    cr_assert_eq(tg_ffn_init(&f, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8, .dropout = 2.0}, NULL), -1);
    cr_assert_eq(tg_mha_init(&m, p, "attn", &bad, NULL), -1);
    cr_assert_eq(tg_model_init(&mo, p, &badm, NULL), -1);
    cr_assert_eq(tg_mha_init(&good, p, "good", &MHA, NULL), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(3, (int[]){1, 2, 4});
    const int32_t ids[2] = {1, 2};
#define NOT_INIT ": the layer is not initialised (its init failed or was not called)"
    expect_op_null(t, tg_linear_forward(t, &l, x), "tg_linear_forward" NOT_INIT);
    expect_op_null(t, tg_embedding_forward(t, &e, ids, 1, 2), "tg_embedding_forward" NOT_INIT);
    expect_op_null(t, tg_layernorm_forward(t, &ln, x), "tg_layernorm_forward" NOT_INIT);
    expect_op_null(t, tg_ffn_forward(t, &f, x, NULL), "tg_ffn_forward" NOT_INIT);
    expect_op_null(t, tg_mha_forward(t, &m, x, x, NULL, NULL), "tg_mha_forward" NOT_INIT);
    expect_op_null(t, tg_block_forward(t, &b, x, NULL, NULL), "tg_block_forward" NOT_INIT);
    expect_op_null(t, tg_model_forward(t, &mo, ids, 1, 2, NULL, NULL), "tg_model_forward" NOT_INIT);
    expect_op_null(t, tg_model_prefill(t, &mo, &(tg_kv_cache){0}, ids, 1, 2, NULL), "tg_model_prefill" NOT_INIT);
    expect_fail(tg_mha_copy_weights(&m, &good),
                "tg_mha_copy_weights: dst is not initialised (its init failed or was not called)");
    expect_fail(tg_mha_copy_weights(&good, &m),
                "tg_mha_copy_weights: src is not initialised (its init failed or was not called)");
#undef NOT_INIT
    tg_tensor_free(x);
    tg_tape_free(t);
    tg_params_free(p);
}

Test(misuse_nn, mha_copy_and_convert_with_null)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    cr_assert_eq(tg_mha_init(&m, p, "attn", &MHA, NULL), 0, "%s", tg_error());
    expect_fail(tg_mha_copy_weights(NULL, &m), "tg_mha_copy_weights: dst is NULL");
    expect_fail(tg_mha_copy_weights(&m, NULL), "tg_mha_copy_weights: src is NULL");
    expect_null(tg_mha_convert(NULL, TG_MHA_PER_HEAD, 2, 0), "tg_mha_convert: the safetensors set is NULL");
    tg_params_free(p);
}
