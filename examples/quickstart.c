/* Fit y = 3x - 2 with a Linear layer and Adam, then gradcheck the layer. */
#include <stdio.h>

#include <tapegrad/tapegrad.h>

static tg_linear fc;  /* y = x W^T + b, W [1,1] */
static tg_tensor *f(tg_tape *t, tg_tensor **in, void *ctx) { (void)ctx; return tg_linear_forward(t, &fc, in[0]); }

int main(void)
{
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    tg_params *params = tg_params_new();
    tg_linear_config one = {.in = 1, .out = 1, .bias = true};
    if (tg_linear_init(&fc, params, "fc", &one, &rng)) return puts(tg_error()), 1;
    tg_optim_opts o = tg_optim_defaults(TG_ADAM);
    o.lr = 0.05;
    tg_optim *opt = tg_optim_new(params, &o);
    tg_real xs[64], ys[64];
    for (int i = 0; i < 64; i++) xs[i] = (tg_real)(i / 32.0 - 1), ys[i] = 3 * xs[i] - 2;

    tg_tape *t = tg_tape_new();
    for (int step = 0; step < 300; step++) {
        tg_tensor *x = tg_tensor_from(t, xs, 2, (int[]){64, 1}), *y = tg_tensor_from(t, ys, 2, (int[]){64, 1});
        tg_tensor *d = tg_sub(t, tg_linear_forward(t, &fc, x), y);
        tg_tensor *loss = tg_mean(t, tg_mul(t, d, d));           /* recorded on the tape */
        tg_optim_zero_grad(opt);
        if (tg_backward(t, loss) != 0) return puts(tg_error()), 1;  /* op errors reach the loss */
        tg_optim_step(opt);
        if (step % 100 == 0) printf("step %3d  loss %.3g\n", step, (double)loss->data[0]);
        tg_tape_reset(t);                                        /* rewinds the arena */
    }
    printf("w = %.4f (want 3), b = %.4f (want -2)\n", (double)fc.weight->data[0], (double)fc.bias->data[0]);

    tg_tensor *x = tg_tensor_alloc(2, (int[]){4, 1});
    for (int i = 0; i < 4; i++) x->data[i] = (tg_real)(0.3 * i - 0.5);
    x->requires_grad = true;
    tg_gradcheck_result r = tg_gradcheck(f, NULL, (tg_tensor *[]){x, fc.weight, fc.bias}, 3, NULL);
    puts(r.ok ? "gradcheck ok" : tg_error());
    tg_tensor_free(x), tg_tape_free(t), tg_optim_free(opt), tg_params_free(params);
    return r.ok ? 0 : 1;
}
