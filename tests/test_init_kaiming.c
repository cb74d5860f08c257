/* kaiming_* and xavier_* inits (nn/init.c): torch.nn.init's fans and gains
 * (values printed by PyTorch), and the draws' spread. The sample variance s^2
 * of n draws with variance v has mean v and standard deviation v sqrt(2 / (n
 * - 1)) for a normal ((n-1) s^2 / v is chi-square with n - 1 degrees of
 * freedom) and v sqrt(0.8 / n) for a uniform (kurtosis 1.8): s^2 must lie
 * within 6 of those of v, the mean within 6 v / sqrt(n) of 0. */
#include <criterion/criterion.h>
#include <math.h>

#include <tapegrad/tapegrad.h>

static tg_tensor *weight(int ndim, const int *shape)
{
    tg_tensor *x = tg_tensor_alloc(ndim, shape);
    cr_assert_not_null(x);
    return x;
}

/* x's elements have mean ~ 0 and variance ~ std^2 (bounded by bound when > 0) */
static void check_spread(const tg_tensor *x, double std, double bound)
{
    double n = (double)x->size, sum = 0, sq = 0, top = 0;
    for (size_t i = 0; i < x->size; i++) {
        double v = (double)x->data[i];
        sum += v;
        top = fmax(top, fabs(v));
    }
    double mean = sum / n;
    for (size_t i = 0; i < x->size; i++) sq += ((double)x->data[i] - mean) * ((double)x->data[i] - mean);
    double var = sq / (n - 1), v = std * std;
    double sd = bound > 0 ? v * sqrt(0.8 / n) : v * sqrt(2 / (n - 1));
    cr_assert(fabs(var - v) <= 6 * sd, "variance %g, want %g +- %g", var, v, 6 * sd);
    cr_assert(fabs(mean) <= 6 * std / sqrt(n), "mean %g, std %g", mean, std);
    if (bound > 0) cr_assert(top <= bound && top > 0.99 * bound, "max |x| %g, bound %g", top, bound);
}

Test(init_kaiming, gains_and_fans)
{
    /* torch.nn.init.calculate_gain('leaky_relu', 0.2), ('leaky_relu') (slope 0.01), 'tanh', 'relu' */
    cr_assert_float_eq(tg_calculate_gain(TG_GAIN_LEAKY_RELU, 0.2), 1.3867504905630728, 1e-15);
    cr_assert_float_eq(tg_calculate_gain(TG_GAIN_LEAKY_RELU, 0.01), 1.4141428569978354, 1e-15);
    cr_assert_float_eq(tg_calculate_gain(TG_GAIN_TANH, 0), 1.6666666666666667, 1e-15);
    cr_assert_float_eq(tg_calculate_gain(TG_GAIN_RELU, 0), 1.4142135623730951, 1e-15);
    cr_assert_eq(tg_calculate_gain(TG_GAIN_SIGMOID, 0), 1);
    cr_assert_eq(tg_calculate_gain(TG_GAIN_LINEAR, 0), 1);
    /* _calculate_fan_in_and_fan_out: [20, 30] -> (30, 20), [8, 3, 5, 5] -> (75, 200) */
    long long fi, fo;
    tg_tensor *w2 = weight(2, (int[]){20, 30}), *w4 = weight(4, (int[]){8, 3, 5, 5}), *b = weight(1, (int[]){4});
    cr_assert_eq(tg_init_fans(w2, &fi, &fo), 0);
    cr_assert(fi == 30 && fo == 20);
    cr_assert_eq(tg_init_fans(w4, &fi, &fo), 0);
    cr_assert(fi == 75 && fo == 200);
    cr_assert_eq(tg_init_fans(b, &fi, &fo), -1);
    cr_assert(strstr(tg_error(), "tg_init_fans") && strstr(tg_error(), "1 dims"), "%s", tg_error());
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    cr_assert_eq(tg_init_kaiming_uniform(b, 0, TG_FAN_IN, TG_GAIN_RELU, &rng), -1);
    cr_assert(strstr(tg_error(), "tg_init_kaiming_uniform") && strstr(tg_error(), "at least 2"), "%s", tg_error());
    cr_assert_eq(tg_init_xavier_normal(b, 1, &rng), -1);
    cr_assert(strstr(tg_error(), "tg_init_xavier_normal"), "%s", tg_error());
    cr_assert_eq(tg_init_kaiming_normal(w2, 0, (tg_fan_mode)2, TG_GAIN_RELU, &rng), -1);
    cr_assert(strstr(tg_error(), "mode 2"), "%s", tg_error());
    cr_assert_eq(tg_init_kaiming_normal(w2, 0, TG_FAN_IN, (tg_nonlinearity)9, &rng), -1);
    cr_assert(strstr(tg_error(), "nonlinearity 9"), "%s", tg_error());
    /* no elements: left alone, as PyTorch */
    tg_tensor *e = weight(2, (int[]){0, 3});
    cr_assert_eq(tg_init_kaiming_uniform(e, 0, TG_FAN_IN, TG_GAIN_RELU, &rng), 0);
    tg_tensor_free(e);
    tg_tensor_free(w2);
    tg_tensor_free(w4);
    tg_tensor_free(b);
}

Test(init_kaiming, kaiming_spread)
{
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    /* a conv weight [64, 16, 5, 5]: fan_in 400, fan_out 1600 */
    tg_tensor *w = weight(4, (int[]){64, 16, 5, 5});
    double g = tg_calculate_gain(TG_GAIN_LEAKY_RELU, 0.2), std = g / sqrt(1600.0);
    cr_assert_eq(tg_init_kaiming_uniform(w, 0.2, TG_FAN_OUT, TG_GAIN_LEAKY_RELU, &rng), 0);
    /* PyTorch's bound for [8, 3, 5, 5] (fan_out 200) is 0.16984155512168936; ours has 8 x the fan_out */
    cr_assert_float_eq(sqrt(3.0) * std, 0.16984155512168936 / sqrt(8.0), 1e-12);
    check_spread(w, std, sqrt(3.0) * std);
    cr_assert_eq(tg_init_kaiming_normal(w, 0, TG_FAN_IN, TG_GAIN_RELU, &rng), 0);
    check_spread(w, sqrt(2.0) / sqrt(400.0), 0);
    tg_tensor_free(w);
}

Test(init_kaiming, xavier_spread)
{
    tg_rng rng;
    tg_rng_seed(&rng, 9);
    tg_tensor *w = weight(2, (int[]){300, 200});
    double std = 5.0 / 3 * sqrt(2.0 / 500);
    cr_assert_eq(tg_init_xavier_uniform(w, 5.0 / 3, &rng), 0);
    cr_assert_float_eq(sqrt(3.0) * std / (5.0 / 3), tg_xavier_bound(200, 300), 1e-12);
    check_spread(w, std, sqrt(3.0) * std);
    cr_assert_eq(tg_init_xavier_normal(w, 1, &rng), 0);
    check_spread(w, sqrt(2.0 / 500), 0);
    tg_tensor_free(w);
}
