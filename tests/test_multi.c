/* Reductions over several dims (core/ops/reduce/multi.c) beyond their
 * op-case rows and PyTorch fixtures: every misuse named, and the empty
 * reductions as PyTorch gives them. */
#include "ops_util.h"

Test(multi, errors)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = mk(t, 3, (int[]){2, 3, 2}, (tg_real[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    assert_fails(t, tg_mean_dims(t, a, (int[]){0, -3}, 2, false), "tg_mean_dims", "dim -3 appears twice",
                 "[2,3,2]");
    assert_fails(t, tg_var_dims(t, a, (int[]){3}, 1, 1, false), "tg_var_dims", "dim 3 is out of range");
    assert_fails(t, tg_std_dims(t, a, (int[]){0}, 1, -1, false), "tg_std_dims", "correction -1 must be >= 0");
    assert_fails(t, tg_norm_dims(t, a, 2, NULL, 1, false), "tg_norm_dims", "dims NULL");
    assert_fails(t, tg_norm_dims(t, a, NAN, (int[]){0}, 1, false), "tg_norm_dims", "ord is NaN");
    tg_tensor *e = mk(t, 2, (int[]){2, 0}, (tg_real[]){0});
    assert_fails(t, tg_norm_dims(t, e, INFINITY, (int[]){1}, 1, false), "tg_norm_dims", "inf norm of an empty");
    /* as PyTorch: an empty mean is NaN, an empty 2-norm 0 */
    tg_tensor *m = tg_mean_dims(t, e, (int[]){1}, 1, false), *n = tg_norm_dims(t, e, 2, (int[]){1}, 1, true);
    cr_assert(m && m->ndim == 1 && m->shape[0] == 2 && isnan(m->data[0]), "%s", tg_tape_error(t));
    cr_assert(n && n->ndim == 2 && n->shape[1] == 1 && n->data[0] == 0 && n->data[1] == 0);
    /* n = 0 reduces every dim: the mean of 1..12 */
    m = tg_mean_dims(t, a, NULL, 0, false);
    cr_assert(m && m->ndim == 0 && m->data[0] == (tg_real)6.5);
    tg_tape_free(t);
}
