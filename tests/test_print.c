/* tg_tensor_str / tg_tensor_print: PyTorch's repr layout for 0-d to 3-D,
 * integral / fixed / scientific values, summarized large tensors, empty ones,
 * and truncation into a short buffer. */
#include "ops_util.h"

static void assert_str(const tg_tensor *x, const char *want)
{
    char buf[2048];
    size_t n = tg_tensor_str(x, buf, sizeof buf);
    cr_assert_str_eq(buf, want);
    cr_assert_eq(n, strlen(want));
}

static tg_tensor *of(int nd, const int *shape, const double *v)
{
    tg_tensor *x = tg_tensor_alloc(nd, shape);
    cr_assert_not_null(x);
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)v[i];
    return x;
}

Test(print, layouts)
{
    tg_tensor *s = of(0, NULL, (double[]){2.5});
    assert_str(s, "tensor(2.5000, shape=[])");
    tg_tensor *v = of(1, (int[]){3}, (double[]){1, 2, 3});
    assert_str(v, "tensor([1., 2., 3.], shape=[3])");
    tg_tensor *m = of(2, (int[]){2, 2}, (double[]){0.5, -1.25, 3, 4});
    m->requires_grad = true;
    assert_str(m, "tensor([[ 0.5000, -1.2500],\n        [ 3.0000,  4.0000]], shape=[2,2], requires_grad=True)");
    tg_tensor *c = of(3, (int[]){2, 1, 2}, (double[]){1, -2, 30, 4});
    assert_str(c, "tensor([[[ 1., -2.]],\n\n        [[30.,  4.]]], shape=[2,1,2])");
    tg_tensor *e = of(2, (int[]){0, 3}, NULL);
    assert_str(e, "tensor([], shape=[0,3])");
    tg_tensor *sci = of(1, (int[]){3}, (double[]){1e-5, 1, NAN});
    assert_str(sci, "tensor([1.0000e-05, 1.0000e+00,        nan], shape=[3])");
    tg_tensor *big = of(1, (int[]){2}, (double[]){1e9, -INFINITY});
    assert_str(big, "tensor([1.0000e+09,       -inf], shape=[2])");
    tg_tensor *xs[] = {s, v, m, c, e, sci, big};
    tu_free_all(xs, 7);
}

Test(print, summarized_and_truncated)
{
    tg_tensor *x = iota(2, (int[]){40, 30});
    char buf[4096];
    tg_tensor_str(x, buf, sizeof buf);
    cr_assert_str_eq(buf,
                     "tensor([[   0.,    1.,    2., ...,   27.,   28.,   29.],\n"
                     "        [  30.,   31.,   32., ...,   57.,   58.,   59.],\n"
                     "        [  60.,   61.,   62., ...,   87.,   88.,   89.],\n"
                     "        ...,\n"
                     "        [1110., 1111., 1112., ..., 1137., 1138., 1139.],\n"
                     "        [1140., 1141., 1142., ..., 1167., 1168., 1169.],\n"
                     "        [1170., 1171., 1172., ..., 1197., 1198., 1199.]], shape=[40,30], requires_grad=True)");
    char small[12];
    size_t n = tg_tensor_str(x, small, sizeof small);
    cr_assert_str_eq(small, "tensor([[  ");
    cr_assert_eq(n, strlen(buf), "the full length, as snprintf");
    cr_assert_eq(tg_tensor_str(x, NULL, 0), n);
    FILE *f = tmpfile();
    cr_assert_eq(tg_tensor_print(f, x), 0);
    cr_assert_eq(ftell(f), (long)n + 1);
    fclose(f);
    assert_str(NULL, "tensor(NULL)");
    tg_tensor_free(x);
}
