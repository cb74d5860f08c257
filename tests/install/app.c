/* A program outside the tree, built against an installed tapegrad. */
#include <stdio.h>

#include <tapegrad/tapegrad.h>

int main(void)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){3});
    x->requires_grad = true;
    for (int i = 0; i < 3; i++) x->data[i] = (tg_real)(i + 1);
    tg_tensor *y = tg_sum(t, tg_mul(t, x, x));
    if (tg_backward(t, y) != 0) return 1;
    printf("y = %g, dy/dx = %g %g %g\n", (double)y->data[0], (double)x->grad[0], (double)x->grad[1],
           (double)x->grad[2]);
    int ok = y->data[0] == 14 && x->grad[2] == 6;
    tg_tensor_free(x);
    tg_tape_free(t);
    return ok ? 0 : 1;
}
