// examples/quickstart.c as a C++ program: the installed headers compile as
// C++ and their functions link (extern "C"). Also checks that the library it
// runs with is the version its headers say.
#include <cstdio>
#include <cstring>
#include <vector>

#include <tapegrad/tapegrad.h>

static tg_linear fc;
static tg_tensor *f(tg_tape *t, tg_tensor **in, void *) { return tg_linear_forward(t, &fc, in[0]); }

int main()
{
    char want[32];
    std::snprintf(want, sizeof want, "%d.%d.%d", TAPEGRAD_VERSION_MAJOR, TAPEGRAD_VERSION_MINOR,
                  TAPEGRAD_VERSION_PATCH);
    if (std::strcmp(tg_version(), want) != 0) return std::printf("tg_version() %s, headers %s\n", tg_version(), want), 1;
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    tg_params *params = tg_params_new();
    const tg_linear_config one = {1, 1, true};  // in, out, bias
    if (tg_linear_init(&fc, params, "fc", &one, &rng)) return std::puts(tg_error()), 1;
    tg_optim_opts o = tg_optim_defaults(TG_ADAM);
    o.lr = 0.05;
    tg_optim *opt = tg_optim_new(params, &o);
    std::vector<tg_real> xs(64), ys(64);
    for (int i = 0; i < 64; i++) xs[i] = (tg_real)(i / 32.0 - 1), ys[i] = 3 * xs[i] - 2;
    const int shape[] = {64, 1};
    tg_tape *t = tg_tape_new();
    for (int step = 0; step < 300; step++) {
        tg_tensor *x = tg_tensor_from(t, xs.data(), 2, shape), *y = tg_tensor_from(t, ys.data(), 2, shape);
        tg_tensor *d = tg_sub(t, tg_linear_forward(t, &fc, x), y);
        tg_tensor *loss = tg_mean(t, tg_mul(t, d, d));
        tg_optim_zero_grad(opt);
        if (tg_backward(t, loss) != 0) return std::puts(tg_error()), 1;
        tg_optim_step(opt);
        tg_tape_reset(t);
    }
    std::printf("tapegrad %s from C++: w = %.4f (want 3), b = %.4f (want -2)\n", tg_version(),
                (double)fc.weight->data[0], (double)fc.bias->data[0]);
    const int xshape[] = {4, 1};
    tg_tensor *x = tg_tensor_alloc(2, xshape);
    for (int i = 0; i < 4; i++) x->data[i] = (tg_real)(0.3 * i - 0.5);
    x->requires_grad = true;
    tg_tensor *inputs[] = {x, fc.weight, fc.bias};
    tg_gradcheck_result r = tg_gradcheck(f, nullptr, inputs, 3, nullptr);
    std::puts(r.ok ? "gradcheck ok" : tg_error());
    tg_tensor_free(x), tg_tape_free(t), tg_optim_free(opt), tg_params_free(params);
    return r.ok ? 0 : 1;
}
