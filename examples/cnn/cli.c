/* cnn: the command line, one table of examples/seqtask/flags.h (parsing,
 * --help and the messages are seqtask's and charlm's). */
#include <stddef.h>
#include <string.h>

#include "../seqtask/flags.h"
#include "cnn.h"

/* The flags that shape the weights, written into model.safetensors. */
#define META 1u
#define INT(n, f, lo, hi, def, grp, mv, help) FL_INT_(cnn_config, n, f, lo, hi, def, 1u, 0, grp, mv, help)
#define INT_M(n, f, lo, hi, def, grp, mv, help) FL_INT_(cnn_config, n, f, lo, hi, def, 1u, META, grp, mv, help)
#define STR(n, f, def, grp, mv, help) FL_STR_(cnn_config, n, f, def, 1u, 0, grp, mv, help)

static const char *const precision_choices[] = {"f32", "bf16", "f16", NULL};  /* sq_precision's order */

static const fl_flag flags[] = {
    STR("data", data, CNN_DATA_DIR, "data", "DIR", "the four idx .gz files of Fashion-MNIST"),
    INT_M("limit", limit, 0, 1e9, "0", "data", "N", "use the first N images of each set (0: all)"),
    INT_M("epochs", epochs, 1, 1000, "3", "training", "N", "passes over the training images"),
    INT_M("steps", steps, 0, 1e9, "0", "training", "N", "optimizer steps instead (0: --epochs)"),
    INT_M("batch", batch, 1, 4096, "64", "training", "N", "images per step"),
    FL_REAL_(cnn_config, "lr", lr, 0, true, 1, false, "0.002", 1u, META, "training", "X",
             "Adam's peak learning rate (a cosine to 0 over the run)"),
    INT_M("seed", seed, 0, 4e18, "1", "training", "N", "seed of the initialisation and the shuffling"),
    FL_CHOICE_(cnn_config, "precision", precision, precision_choices, "f32", 1u, META, "training",
               "the convolutions' and the linear layer's operands: float32, or rounded to bfloat16 or float16 "
               "(autocast; f16 adds dynamic loss scaling)"),
    INT("threads", threads, 0, 256, "0", "training", "N", "threads (0: one per core)"),
    INT("log-every", log_every, 1, 1e9, "100", "output", "N", "progress line every N steps off a terminal"),
    STR("out", out, "out/cnn", "output", "DIR", "log.csv, loss.png, confusion.png, filters.png, model.safetensors"),
    FL_BOOL_(cnn_config, "overwrite", overwrite, 1u, 0, "output", "replace the files of an earlier run in --out"),
};
#define N_FLAGS ((int)(sizeof flags / sizeof flags[0]))
_Static_assert(sizeof flags / sizeof flags[0] <= CNN_MAX_FLAGS, "raise CNN_MAX_FLAGS");

static const fl_table table = {"cnn", flags, N_FLAGS};

int cnn_cli_parse(int argc, char **argv, cnn_config *c, FILE *out)
{
    memset(c, 0, sizeof *c);
    int rc = fl_parse(&table, 0, "", argc, argv, c, c->set);
    if (rc == 1) {
        fprintf(out, "usage: cnn [flags]\n\n"
                     "Trains a small CNN (two 5x5 convolutions with ReLU and max-pooling, one linear layer) on\n"
                     "Fashion-MNIST with Adam, prints the test accuracy after every epoch, the confusion matrix,\n"
                     "and writes its pictures into --out.\n");
        fl_print_help(out, &table, 0, 0, NULL);
        fprintf(out, "\nexample: cnn --epochs 1 --out out/cnn1\n");
    }
    return rc;
}

int cnn_config_to_meta(const cnn_config *c, fl_meta_put put, void *ctx)
{
    return fl_to_meta(&table, c, META, put, ctx);
}
