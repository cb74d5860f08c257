/* cnn: a small CNN on Fashion-MNIST. This file reads the flags and the
 * data, runs the training and prints the result:
 *   cli.c       flags and --help
 *   data.c      the idx files through zlib
 *   model.c     the network, batches, evaluation
 *   run.c       the training run and its files
 *   pictures.c  confusion.png, filters.png */
#include <stdio.h>

#include "../seqtask/amp.h"
#include "../seqtask/progress.h"
#include "../seqtask/run.h"
#include "../seqtask/stop.h"
#include "cnn.h"

static void print_confusion(const cnn_result *r)
{
    printf("confusion matrix (rows: true class, columns: predicted, in order 0..9):\n");
    for (int i = 0; i < CNN_CLASSES; i++) {
        long right = r->confusion[i][i], all = 0;
        printf("%12s", cnn_class_names[i]);
        for (int j = 0; j < CNN_CLASSES; j++) printf(" %5ld", r->confusion[i][j]), all += r->confusion[i][j];
        printf("  %6.2f%%\n", all ? 100.0 * (double)right / (double)all : 0);
    }
}

int main(int argc, char **argv)
{
    sq_stop_install();  /* Ctrl-C: finish the step, evaluate, write the files */
    static cnn_config c;
    int rc = cnn_cli_parse(argc, argv, &c, stdout);
    if (rc) {
        if (rc < 0) fprintf(stderr, "%s\n", tg_error());
        return rc < 0 ? 2 : 0;
    }
    int threads = sq_set_threads(c.threads);
    cnn_set train, test;
    double t0 = sq_now();
    if (cnn_data_load(c.data, c.limit, &train, &test)) {
        fprintf(stderr, "cnn: %s\n", tg_error());
        return 2;
    }
    fprintf(stderr, "data     %s: %d training and %d test images (%.1f s to read), %d threads\n", c.data, train.n,
            test.n, sq_now() - t0, threads);
    static cnn_result r;
    t0 = sq_now();
    rc = cnn_run(&c, &train, &test, &r);
    cnn_set_free(&train);
    cnn_set_free(&test);
    if (rc) {
        fprintf(stderr, "cnn: %s\n", tg_error());
        return rc;
    }
    print_confusion(&r);
    printf("%s step %ld, %.1f s: test accuracy %.2f%%, test loss %.4f (training loss %.4f, first %.4f)\n",
           sq_stop_requested() ? "interrupted at" : "done,", r.steps, sq_now() - t0, 100 * r.accuracy, r.test_loss,
           r.last_loss, r.first_loss);
    sq_amp_report(stdout, r.loss_scale, r.skipped);
    printf("files in %s: log.csv loss.png confusion.png filters.png model.safetensors\n", c.out);
    return sq_stop_requested() ? 130 : 0;
}
