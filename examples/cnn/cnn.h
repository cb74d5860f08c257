/* cnn: a small convolutional network on Fashion-MNIST.
 *
 *   conv 1->16 5x5 pad 2, ReLU, max-pool 2    [B, 1, 28, 28] -> [B, 16, 14, 14]
 *   conv 16->32 5x5 pad 2, ReLU, max-pool 2   -> [B, 32, 7, 7]
 *   linear 32*7*7 -> 10                        -> logits [B, 10]
 *
 * trained with Adam on the 60k training images and measured on the 10k test
 * images. The data are the original idx files, gzip-compressed, of Debian's
 * dataset-fashion-mnist (data.c reads them through zlib); the run writes
 * log.csv, loss.png, confusion.png, filters.png and model.safetensors into
 * --out (run.c, pictures.c). It links seqtask_core for progress, log.csv
 * and loss.png, and threads.
 */
#ifndef CNN_H
#define CNN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tapegrad/tapegrad.h>

#define CNN_SIDE 28              /* images are CNN_SIDE x CNN_SIDE */
#define CNN_CLASSES 10
#define CNN_PATH_MAX 1024
#define CNN_DATA_DIR "/usr/share/datasets/fashion-mnist"

/* The class names of the labels 0..9. */
extern const char *const cnn_class_names[CNN_CLASSES];

/* ---- data.c ---- */
typedef struct cnn_set {
    uint8_t *pixels;             /* [n, CNN_SIDE, CNN_SIDE], 0 white .. 255 black */
    uint8_t *labels;             /* [n], each < CNN_CLASSES */
    int n;
} cnn_set;

/* One idx3 images file and its idx1 labels file (gzip or plain), at most
 * limit images (0: all). 0, or -1 with a message naming the file and what
 * is wrong with it (missing, truncated, corrupt, another shape, a label out
 * of range, counts that differ); s is then empty. */
int cnn_set_load(cnn_set *s, const char *images, const char *labels, long limit);
/* dir/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz. */
int cnn_data_load(const char *dir, long limit, cnn_set *train, cnn_set *test);
void cnn_set_free(cnn_set *s);

/* ---- model.c ---- */
typedef struct cnn_model {
    tg_conv2d_layer conv1, conv2;
    tg_linear fc;
} cnn_model;

/* The layers in p ("conv1.weight", ... as PyTorch's state_dict), PyTorch's
 * default init from rng. 0, or -1 with a message. */
int cnn_model_init(cnn_model *m, tg_params *p, tg_rng *rng);
/* x [B, 1, 28, 28] -> logits [B, 10] */
tg_tensor *cnn_forward(tg_tape *t, const cnn_model *m, tg_tensor *x);
/* Images idx[0..B) of s as x [B, 1, 28, 28] (normalised with the training
 * set's mean and deviation) and their labels y [B]. */
void cnn_batch(const cnn_set *s, const int *idx, int B, tg_real *x, int32_t *y);
/* Accuracy, mean cross-entropy and the confusion matrix [true][predicted]
 * (may be NULL) of m over s, in batches of 500. 0, or -1 with a message. */
int cnn_evaluate(tg_tape *t, const cnn_model *m, const cnn_set *s, double *acc, double *loss,
                 long confusion[CNN_CLASSES][CNN_CLASSES]);

/* ---- pictures.c ---- */
/* The confusion matrix as a heatmap: each row (true class) as fractions of
 * its images, with the counts written in the cells. */
int cnn_confusion_png(const char *path, const long confusion[CNN_CLASSES][CNN_CLASSES], const char *title);
/* The first layer's filters w [O, 1, kh, kw], one tile each, every tile
 * scaled to its own range (blue negative, white 0, red positive). */
int cnn_filters_png(const char *path, const tg_tensor *w);

/* ---- cli.c ---- */
#define CNN_MAX_FLAGS 16
typedef struct cnn_config {
    char data[CNN_PATH_MAX], out[CNN_PATH_MAX];
    long epochs, steps, batch, seed, threads, limit, log_every;
    double lr;
    int precision;               /* sq_precision: 0 float32, 1 bfloat16, 2 float16 (autocast's operand type) */
    bool overwrite;
    bool set[CNN_MAX_FLAGS];     /* which flags the command line gave */
} cnn_config;

/* argv[0] is the program. 0; 1 when --help was printed to out; -1 with a
 * message in tg_error() that starts with "cnn: ". */
int cnn_cli_parse(int argc, char **argv, cnn_config *c, FILE *out);
/* put(ctx, key, value) for each flag that shapes the weights (--limit,
 * --epochs, --steps, --batch, --lr, --seed, --precision), as its text. */
int cnn_config_to_meta(const cnn_config *c, int (*put)(void *ctx, const char *key, const char *value), void *ctx);

/* ---- run.c ---- */
typedef struct cnn_result {
    long steps;
    double first_loss, last_loss;  /* the first step's; the mean of the last up to 50 */
    double accuracy, test_loss;    /* on the test set at the end */
    long confusion[CNN_CLASSES][CNN_CLASSES];
    double loss_scale;             /* f16: the loss scale at the end; else 0 */
    long skipped;                  /* f16: steps skipped for an Inf or NaN gradient */
} cnn_result;

/* Trains on train, evaluates on test after every epoch and at the end,
 * writes the files into c->out (refused when it holds an earlier run's,
 * unless c->overwrite). 0, or an exit status with a message in tg_error(). */
int cnn_run(const cnn_config *c, const cnn_set *train, const cnn_set *test, cnn_result *r);

#endif
