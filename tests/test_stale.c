/* A tensor kept across tg_tape_reset is refused by every op and by
 * tg_backward after any number of resets, whatever the steps in between made
 * (core/engine/headers.h says why). */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static void assert_error(const tg_tape *t, const char *want)
{
    const char *e = tg_tape_error(t);
    cr_assert(e && strstr(e, want), "want \"%s\", got \"%s\"", want, e ? e : "(none)");
}

/* One step's forward: a loss over w (n elements) through tensors of w's shape. */
static tg_tensor *step(tg_tape *t, tg_tensor *w, tg_tensor **mid)
{
    *mid = tg_scale(t, w, 2);
    return tg_sum(t, tg_mul(t, *mid, w));
}

/* keep and its loss made in step 0, then `resets` steps of shape shape_at(i):
 * using keep as an op input, and the old loss in tg_backward, is refused. */
static void stale_after(int resets, bool changing)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *w = tg_tensor_alloc(1, (int[]){4});
    w->requires_grad = true;
    tg_tensor_fill(w, 1);
    tg_tensor *keep, *old_loss = step(t, w, &keep), *cur = NULL, *loss = NULL;
    cr_assert_not_null(old_loss);
    for (int i = 1; i <= resets; i++) {
        tg_tape_reset(t);
        tg_tensor *v = w;
        if (changing) {  /* a step whose tensors have other sizes, and a different count of them */
            int n = 1 + (i * 7) % 13;
            for (int k = 0; k < i % 3; k++) cr_assert_not_null(tg_tensor_zeros(t, 2, (int[]){n, i}));
            v = tg_tensor_zeros(t, 1, (int[]){4});
        }
        loss = step(t, w, &cur);
        cr_assert_not_null(loss, "%s", tg_tape_error(t));
        cr_assert_not_null(tg_add(t, cur, v));
    }
    cr_assert_null(tg_add(t, keep, cur), "after %d resets (%s shapes) the old input passed", resets,
                   changing ? "changing" : "fixed");
    assert_error(t, "tg_add: input 0 is a tensor from before tg_tape_reset");
    tg_tape_clear_error(t);
    cr_assert_eq(tg_backward(t, old_loss), -1, "after %d resets the old loss ran", resets);
    assert_error(t, "tg_backward: the loss is a tensor from before tg_tape_reset");
    cr_assert_null(w->grad, "the refused backward touched nothing");
    /* the tape still works */
    tg_tape_clear_error(t);
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    tg_tensor_free(w);
    tg_tape_free(t);
}

Test(stale, fixed_shapes_after_1_to_16_resets)
{
    for (int n = 1; n <= 16; n++) stale_after(n, false);
}

Test(stale, changing_shapes_after_1_to_16_resets)
{
    for (int n = 1; n <= 16; n++) stale_after(n, true);
}

/* Enough steps that the header store moves to new blocks and gives pages
 * back: a tensor of every earlier step stays refused, checked after each
 * reset, on two tapes taking turns. */
Test(stale, every_earlier_step_after_many_resets)
{
    enum { STEPS = 60, PER_STEP = 1500 };
    tg_tape *t[2] = {tg_tape_new(), tg_tape_new()};
    tg_tensor *kept[2][STEPS];
    for (int s = 0; s < STEPS; s++) {
        for (int k = 0; k < 2; k++) {
            if (s) tg_tape_reset(t[k]);
            for (int j = 0; j < PER_STEP; j++) cr_assert_not_null(tg_tensor_zeros(t[k], 1, (int[]){1 + j % 5}));
            kept[k][s] = tg_tensor_zeros(t[k], 1, (int[]){3});
            for (int old = 0; old < s; old++) {
                cr_assert_null(tg_neg(t[k], kept[k][old]), "step %d's tensor passed at step %d", old, s);
                assert_error(t[k], "is a tensor from before tg_tape_reset");
                tg_tape_clear_error(t[k]);
            }
            cr_assert_not_null(tg_neg(t[k], kept[k][s]));
        }
    }
    cr_assert_null(tg_add(t[0], kept[0][STEPS - 1], kept[1][STEPS - 1]));
    assert_error(t[0], "belongs to another tape");
    tg_tape_free(t[0]);
    tg_tape_free(t[1]);
}

/* Headers are made from fresh pages, and old ones go back at reset: a
 * fixed-shape loop's memory stays flat while its resets add up. */
Test(stale, a_long_loop_allocates_only_in_its_first_step)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *w = tg_tensor_alloc(1, (int[]){4});
    w->requires_grad = true;
    tg_tensor *mid;
    cr_assert_eq(tg_backward(t, step(t, w, &mid)), 0);
    size_t cap = tg_tape_arena_capacity(t);
    uint64_t before = tg_alloc_count();
    for (int i = 0; i < 1000; i++) {
        tg_tape_reset(t);
        cr_assert_eq(tg_backward(t, step(t, w, &mid)), 0, "%s", tg_tape_error(t));
    }
    cr_assert_eq(tg_alloc_count(), before);
    cr_assert_eq(tg_tape_arena_capacity(t), cap);
    tg_tensor_free(w);
    tg_tape_free(t);
}
