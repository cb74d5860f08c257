/* cnn: the network, its batches and its evaluation. */
#include <string.h>

#include "cnn.h"

/* Fashion-MNIST's training pixels (/ 255): mean and standard deviation. */
#define PIXEL_MEAN 0.2860
#define PIXEL_STD 0.3530
#define C1 16
#define C2 32
#define K 5

int cnn_model_init(cnn_model *m, tg_params *p, tg_rng *rng)
{
    tg_conv2d_config c1 = TG_CONV2D_CONFIG(1, C1, K, K), c2 = TG_CONV2D_CONFIG(C1, C2, K, K);
    c1.opts.padding[0] = c1.opts.padding[1] = c2.opts.padding[0] = c2.opts.padding[1] = K / 2;  /* keeps 28 x 28 */
    tg_linear_config fc = {.in = C2 * 7 * 7, .out = CNN_CLASSES, .bias = true};
    return tg_conv2d_init(&m->conv1, p, "conv1", &c1, rng) || tg_conv2d_init(&m->conv2, p, "conv2", &c2, rng) ||
                   tg_linear_init(&m->fc, p, "fc", &fc, rng)
               ? -1
               : 0;
}

/* x [B, 1, 28, 28] -> logits [B, 10] */
tg_tensor *cnn_forward(tg_tape *t, const cnn_model *m, tg_tensor *x)
{
    const tg_pool_opts pool = TG_POOL_OPTS_DEFAULT(2, 2);  /* stride: the kernel */
    int B = x ? x->shape[0] : 0;
    tg_tensor *h = tg_max_pool2d(t, tg_relu(t, tg_conv2d_forward(t, &m->conv1, x)), &pool);  /* [B, 16, 14, 14] */
    h = tg_max_pool2d(t, tg_relu(t, tg_conv2d_forward(t, &m->conv2, h)), &pool);             /* [B, 32, 7, 7] */
    return tg_linear_forward(t, &m->fc, tg_reshape(t, h, 2, (int[]){B, C2 * 7 * 7}));      /* [B, 10] */
}

void cnn_batch(const cnn_set *s, const int *idx, int B, tg_real *x, int32_t *y)
{
    const int P = CNN_SIDE * CNN_SIDE;
    for (int b = 0; b < B; b++) {
        const uint8_t *px = s->pixels + (size_t)idx[b] * P;
        for (int i = 0; i < P; i++) x[(size_t)b * P + i] = (tg_real)((px[i] / 255.0 - PIXEL_MEAN) / PIXEL_STD);
        y[b] = s->labels[idx[b]];
    }
}

int cnn_evaluate(tg_tape *t, const cnn_model *m, const cnn_set *s, double *acc, double *loss,
                 long confusion[CNN_CLASSES][CNN_CLASSES])
{
    enum { B = 500 };
    int idx[B];
    int32_t y[B];
    long right = 0;
    double sum = 0;
    if (confusion) memset(confusion, 0, sizeof(long[CNN_CLASSES][CNN_CLASSES]));
    for (int start = 0; start < s->n; start += B) {
        int n = s->n - start < B ? s->n - start : B;
        for (int b = 0; b < n; b++) idx[b] = start + b;
        tg_tape_reset(t);
        bool prev = tg_no_grad_begin(t);
        tg_tensor *x = tg_tensor_new(t, 4, (int[]){n, 1, CNN_SIDE, CNN_SIDE});
        if (x) cnn_batch(s, idx, n, x->data, y);
        tg_tensor *logits = x ? cnn_forward(t, m, x) : NULL;
        tg_tensor *targets = tg_tensor_from_dtype(t, TG_I32, y, 1, (int[]){n});
        tg_tensor *l = logits && targets ? tg_cross_entropy_sum(t, logits, targets, TG_IGNORE) : NULL;
        tg_tensor *pred = logits ? tg_argmax(t, logits, -1, false) : NULL;
        tg_no_grad_end(t, prev);
        if (!l || !pred) return tg_error_set("evaluating images %d..%d: %s", start, start + n - 1, tg_tape_error(t));
        sum += (double)l->data[0];
        const int64_t *pv = tg_data(pred, TG_I64);
        for (int b = 0; b < n; b++) {
            int p = (int)pv[b];
            right += p == y[b];
            if (confusion) confusion[y[b]][p]++;
        }
    }
    tg_tape_reset(t);
    *acc = (double)right / s->n;
    *loss = sum / s->n;
    return 0;
}
