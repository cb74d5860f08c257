/* cnn: the command line. One table lists every flag with its range,
 * default and help line; errors name the flag, the value and what is
 * allowed. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"

typedef enum { F_INT, F_REAL, F_STR, F_BOOL } ftype;

typedef struct flag {
    const char *name;
    ftype type;
    size_t off;
    double lo, hi;
    const char *def, *metavar, *help;
} flag;

#define OFF(f) offsetof(cnn_config, f)
static const flag flags[] = {
    {"data", F_STR, OFF(data), 0, 0, CNN_DATA_DIR, "DIR", "the four idx .gz files of Fashion-MNIST"},
    {"epochs", F_INT, OFF(epochs), 1, 1000, "5", "N", "passes over the training images"},
    {"steps", F_INT, OFF(steps), 0, 1e9, "0", "N", "optimizer steps instead (0: --epochs)"},
    {"batch", F_INT, OFF(batch), 1, 4096, "64", "N", "images per step"},
    {"lr", F_REAL, OFF(lr), 0, 1, "0.001", "X", "Adam's peak learning rate (a cosine to 0 over the run)"},
    {"seed", F_INT, OFF(seed), 0, 4e18, "1", "N", "seed of the initialisation and the shuffling"},
    {"threads", F_INT, OFF(threads), 0, 256, "0", "N", "threads (0: one per core)"},
    {"limit", F_INT, OFF(limit), 0, 1e9, "0", "N", "use the first N images of each set (0: all)"},
    {"log-every", F_INT, OFF(log_every), 1, 1e9, "100", "N", "progress line every N steps off a terminal"},
    {"out", F_STR, OFF(out), 0, 0, "out/cnn", "DIR", "log.csv, loss.png, confusion.png, filters.png, model.safetensors"},
    {"overwrite", F_BOOL, OFF(overwrite), 0, 0, "false", NULL, "replace the files of an earlier run in --out"},
};
#define N_FLAGS ((int)(sizeof flags / sizeof flags[0]))

static void help(FILE *out)
{
    fprintf(out, "usage: cnn [flags]\n\n"
                 "Trains a small CNN (two 5x5 convolutions with ReLU and max-pooling, one linear layer) on\n"
                 "Fashion-MNIST with Adam, prints the test accuracy after every epoch, the confusion matrix,\n"
                 "and writes its pictures into --out.\n\nflags:\n");
    for (int i = 0; i < N_FLAGS; i++) {
        const flag *f = &flags[i];
        char name[40];
        snprintf(name, sizeof name, "--%s%s%s", f->name, f->metavar ? " " : "", f->metavar ? f->metavar : "");
        fprintf(out, "  %-18s %s", name, f->help);
        if (f->type != F_BOOL) fprintf(out, " [%s]", f->def);
        fputc('\n', out);
    }
    fprintf(out, "  %-18s %s\n\nexample: cnn --epochs 1 --out out/cnn1\n", "--help", "this text");
}

static int set_value(cnn_config *c, const flag *f, const char *v)
{
    char *p = (char *)c + f->off, *end;
    errno = 0;
    double d = f->type == F_INT || f->type == F_REAL ? strtod(v, &end) : 0;
    switch (f->type) {
    case F_INT:
        if (!*v || *end || errno || d != floor(d) || d < f->lo || d > f->hi)
            return tg_error_set("--%s '%s' is not allowed: expected a whole number in [%.0f, %.0f]", f->name, v,
                                f->lo, f->hi);
        *(long *)(void *)p = (long)d;
        return 0;
    case F_REAL:
        if (!*v || *end || errno || !(d > f->lo && d <= f->hi))
            return tg_error_set("--%s '%s' is not allowed: expected a number in (%g, %g]", f->name, v, f->lo, f->hi);
        *(double *)(void *)p = d;
        return 0;
    case F_STR:
        if (!*v) return tg_error_set("--%s: expected a path, not an empty string", f->name);
        if (strlen(v) >= CNN_PATH_MAX) return tg_error_set("--%s: longer than %d bytes", f->name, CNN_PATH_MAX - 1);
        memcpy(p, v, strlen(v) + 1);
        return 0;
    case F_BOOL:
        *(bool *)(void *)p = strcmp(v, "true") == 0;
        return 0;
    }
    return -1;
}

int cnn_cli_parse(int argc, char **argv, cnn_config *c, FILE *out)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < N_FLAGS; i++) set_value(c, &flags[i], flags[i].def);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help(out);
            return 1;
        }
        const flag *f = NULL;
        for (int k = 0; k < N_FLAGS && strncmp(a, "--", 2) == 0; k++)
            if (strcmp(flags[k].name, a + 2) == 0) f = &flags[k];
        if (!f) return tg_error_set("unknown flag %s (cnn --help lists the flags)", a);
        if (f->type != F_BOOL && i + 1 >= argc) return tg_error_set("--%s needs a value", f->name);
        if (set_value(c, f, f->type == F_BOOL ? "true" : argv[++i])) return -1;
    }
    return 0;
}
