/* examples/cnn, in process: the idx loader on missing, truncated and
 * corrupt files made here (and a small read of Debian's Fashion-MNIST when
 * the package is installed), its flags, and a short run on synthetic
 * images whose loss falls and whose files are not overwritten by a second
 * run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../examples/cnn/cnn.h"
#include "test_util.h"

static char dir[256];

static void setup(void)
{
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    tu_tmpdir(dir, sizeof dir, "cnn");
}

static void teardown(void) { tu_tmpdir_remove(dir); }

TestSuite(cnn, .init = setup, .fini = teardown);

static const char *at(const char *name) { return tu_path(dir, name); }

/* An idx header: magic 00 00 08 ndim and the sizes, big-endian, into h. */
static size_t header(uint8_t *h, int ndim, const long *dims)
{
    h[0] = h[1] = 0, h[2] = 8, h[3] = (uint8_t)ndim;
    for (int d = 0; d < ndim; d++)
        for (int b = 0; b < 4; b++) h[4 + 4 * d + b] = (uint8_t)(dims[d] >> (24 - 8 * b));
    return 4 + 4 * (size_t)ndim;
}

/* name: header then n body bytes (byte i = i * 7 % 256, or body when not
 * NULL), gzip-compressed. */
static const char *write_idx(const char *name, int ndim, const long *dims, size_t n, const uint8_t *body)
{
    uint8_t h[16];
    size_t hn = header(h, ndim, dims);
    gzFile f = gzopen(at(name), "wb");
    cr_assert_not_null(f);
    cr_assert_eq(gzwrite(f, h, (unsigned)hn), (int)hn);
    for (size_t i = 0; i < n; i++) {
        uint8_t b = body ? body[i] : (uint8_t)(i * 7 % 256);
        cr_assert_eq(gzwrite(f, &b, 1), 1);
    }
    cr_assert_eq(gzclose(f), Z_OK);
    return at(name);
}

static void write_raw(const char *name, const void *data, size_t n)
{
    FILE *f = fopen(at(name), "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

#define PX (CNN_SIDE * CNN_SIDE)

/* 3 images and 3 labels (0, 4, 9): a good pair. */
static void good_pair(void)
{
    write_idx("img.gz", 3, (long[]){3, CNN_SIDE, CNN_SIDE}, 3 * PX, NULL);
    write_idx("lab.gz", 1, (long[]){3}, 3, (const uint8_t[]){0, 4, 9});
}

/* cnn_set_load must fail with a message holding both parts. */
static void expect_fail(const char *images, const char *labels, const char *p1, const char *p2)
{
    cnn_set s;
    cr_assert_eq(cnn_set_load(&s, images, labels, 0), -1, "loaded %s, %s", images, labels);
    tu_assert_has(tg_error(), p1);
    tu_assert_has(tg_error(), p2);
    cr_assert_null(s.pixels);
}

Test(cnn, loads_a_good_pair_and_a_limit)
{
    good_pair();
    cnn_set s;
    cr_assert_eq(cnn_set_load(&s, at("img.gz"), at("lab.gz"), 0), 0, "%s", tg_error());
    cr_assert_eq(s.n, 3);
    cr_assert_eq(s.labels[1], 4);
    cr_assert_eq(s.labels[2], 9);
    for (int i = 0; i < 3 * PX; i++) cr_assert_eq(s.pixels[i], (uint8_t)(i * 7 % 256), "pixel %d", i);
    cnn_set_free(&s);
    cr_assert_eq(cnn_set_load(&s, at("img.gz"), at("lab.gz"), 2), 0, "%s", tg_error());
    cr_assert_eq(s.n, 2);
    cnn_set_free(&s);
}

Test(cnn, missing_files_are_named)
{
    good_pair();
    expect_fail(at("none.gz"), at("lab.gz"), at("none.gz"), "No such file");
    expect_fail(at("img.gz"), at("none.gz"), at("none.gz"), "cannot open");
    expect_fail(dir, at("lab.gz"), dir, "cannot read the magic number: Is a directory");
    cnn_set train, test;
    cr_assert_eq(cnn_data_load(at("nodir"), 0, &train, &test), -1);
    tu_assert_has(tg_error(), "nodir/train-images-idx3-ubyte.gz");
}

Test(cnn, wrong_magic_shape_and_counts)
{
    good_pair();
    expect_fail(at("lab.gz"), at("lab.gz"), "lab.gz: not an idx3-ubyte file", "expected 00 00 08 03");
    expect_fail(at("img.gz"), at("img.gz"), "img.gz: not an idx1-ubyte file", "00 00 08 03");
    write_idx("big.gz", 3, (long[]){3, 32, 32}, 3 * 32 * 32, NULL);
    expect_fail(at("big.gz"), at("lab.gz"), "big.gz: images are 32 x 32", "expected 28 x 28");
    write_idx("lab2.gz", 1, (long[]){2}, 2, (const uint8_t[]){1, 2});
    expect_fail(at("img.gz"), at("lab2.gz"), "img.gz holds 3 images but", "lab2.gz holds 2 labels");
    write_idx("huge.gz", 3, (long[]){4000000000L, CNN_SIDE, CNN_SIDE}, 0, NULL);
    expect_fail(at("huge.gz"), at("lab.gz"), "huge.gz: corrupt: the header says 4000000000 items", "");
    write_idx("zero.gz", 1, (long[]){0}, 0, NULL);
    expect_fail(at("img.gz"), at("zero.gz"), "zero.gz: corrupt: the header says 0 items", "");
}

Test(cnn, label_out_of_range)
{
    write_idx("img.gz", 3, (long[]){3, CNN_SIDE, CNN_SIDE}, 3 * PX, NULL);
    write_idx("lab.gz", 1, (long[]){3}, 3, (const uint8_t[]){0, 10, 9});
    expect_fail(at("img.gz"), at("lab.gz"), "lab.gz: label 10 of item 1 is out of range [0, 9]", "");
}

Test(cnn, truncated_and_trailing_bytes)
{
    good_pair();
    write_idx("short.gz", 3, (long[]){3, CNN_SIDE, CNN_SIDE}, 2 * PX + 5, NULL);
    expect_fail(at("short.gz"), at("lab.gz"), "short.gz: truncated: 1573 of the 2352 bytes of the pixels", "");
    write_idx("long.gz", 1, (long[]){3}, 4, (const uint8_t[]){0, 1, 2, 3});
    expect_fail(at("img.gz"), at("long.gz"), "long.gz: corrupt: bytes past the 3 items", "");
    write_raw("tiny", "\0\0\x08", 3);
    expect_fail(at("tiny"), at("lab.gz"), "tiny: truncated: 3 of the 4 bytes of the magic number", "");
    write_raw("empty", "", 0);
    expect_fail(at("img.gz"), at("empty"), "empty: truncated: 0 of the 4 bytes of the magic number", "");
    write_raw("nosizes", "\0\0\x08\x03\0\0", 6);
    expect_fail(at("nosizes"), at("lab.gz"), "nosizes: truncated: 2 of the 12 bytes of the sizes", "");
}

/* A gzip stream cut in half, and one whose deflate data is garbage. */
Test(cnn, corrupt_gzip)
{
    good_pair();
    FILE *f = fopen(at("img.gz"), "rb");
    cr_assert_not_null(f);
    static uint8_t gz[1 << 16];
    size_t n = fread(gz, 1, sizeof gz, f);
    fclose(f);
    cr_assert_gt(n, 40);
    write_raw("cut.gz", gz, n / 2);
    expect_fail(at("cut.gz"), at("lab.gz"), "cut.gz: ", "");
    const char *e = tg_error();
    cr_assert(strstr(e, "truncated") || strstr(e, "corrupt"), "%s", e);
    for (size_t i = 12; i < n - 8; i++) gz[i] ^= 0x5a;  /* past the gzip header */
    write_raw("bad.gz", gz, n);
    expect_fail(at("bad.gz"), at("lab.gz"), "bad.gz: corrupt: ", "while reading");
}

/* Debian's dataset-fashion-mnist, when installed: the first 100 of each set. */
Test(cnn, reads_fashion_mnist)
{
    if (access(CNN_DATA_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("cnn.reads_fashion_mnist: skipped: %s is not installed (apt-get install dataset-fashion-mnist)\n",
               CNN_DATA_DIR);
        teardown(); /* a skipped test's .fini does not run */
        cr_skip_test("dataset-fashion-mnist is not installed");
    }
    cnn_set train, test;
    cr_assert_eq(cnn_data_load(CNN_DATA_DIR, 100, &train, &test), 0, "%s", tg_error());
    cr_assert_eq(train.n, 100);
    cr_assert_eq(test.n, 100);
    cr_assert_eq(train.labels[0], 9, "the first training image is an ankle boot");
    cr_assert_eq(test.labels[0], 9, "the first test image is an ankle boot");
    long ink = 0;
    for (int i = 0; i < PX; i++) ink += train.pixels[i] > 0;
    cr_assert(ink > 100 && ink < PX, "%ld pixels of the first image are not 0", ink);
    cnn_set_free(&train);
    cnn_set_free(&test);
}

/* argv from a space-separated line; argv[0] is "cnn". */
static int parse(cnn_config *c, const char *line)
{
    static char buf[1024];
    char *argv[32] = {"cnn"};
    int argc = 1;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *s = strtok(buf, " "); s && argc < 31; s = strtok(NULL, " ")) argv[argc++] = s;
    FILE *null = fopen("/dev/null", "w");
    int rc = cnn_cli_parse(argc, argv, c, null);
    fclose(null);
    return rc;
}

Test(cnn, flags)
{
    cnn_config c;
    cr_assert_eq(parse(&c, ""), 0);
    cr_assert_eq(c.epochs, 3);
    cr_assert_eq(c.lr, 2e-3);
    cr_assert_eq(c.batch, 64);
    cr_assert_str_eq(c.data, CNN_DATA_DIR);
    cr_assert_eq(parse(&c, "--epochs 2 --batch 32 --lr 3e-3 --out x --overwrite"), 0, "%s", tg_error());
    cr_assert(c.epochs == 2 && c.batch == 32 && c.lr == 3e-3 && c.overwrite && !strcmp(c.out, "x"));
    cr_assert_eq(parse(&c, "--help"), 1);
    cr_assert_eq(c.precision, 0, "f32 by default");
    cr_assert_eq(parse(&c, "--precision f16"), 0, "%s", tg_error());
    cr_assert_eq(c.precision, 2);
    static const char *const bad[][2] = {
        {"--bogus", "cnn: unknown flag --bogus (cnn --help lists the flags)"},
        {"--batch 0", "cnn: --batch '0' is not allowed: expected an integer in [1, 4096]"},
        {"--lr 0", "--lr '0' is not allowed: expected a number in (0, 1]"},
        {"--epochs 1.5", "--epochs '1.5' is not allowed"},
        {"--seed x", "--seed 'x' is not allowed"},
        {"--steps", "cnn: --steps needs a value"},
        {"overwrite", "cnn: unexpected argument 'overwrite'"},
        {"--precision f8", "cnn: --precision 'f8' is not allowed: expected one of f32, bf16, f16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(parse(&c, bad[i][0]), -1, "%s", bad[i][0]);
        tu_assert_has(tg_error(), bad[i][1]);
    }
}

/* n images of 10 classes: class k is a bright 7x7 square in cell k of a
 * 4x4 grid of cells, on noise. */
static void synthetic(cnn_set *s, int n, uint64_t seed)
{
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    s->n = n;
    s->pixels = malloc((size_t)n * PX);
    s->labels = malloc((size_t)n);
    cr_assert(s->pixels && s->labels);
    for (int i = 0; i < n; i++) {
        int k = (int)tg_rng_below(&rng, CNN_CLASSES);
        s->labels[i] = (uint8_t)k;
        for (int y = 0; y < CNN_SIDE; y++)
            for (int x = 0; x < CNN_SIDE; x++) {
                bool on = y / 7 == k / 4 && x / 7 == k % 4;
                s->pixels[(size_t)i * PX + y * CNN_SIDE + x] = (uint8_t)((on ? 160 : 0) + tg_rng_below(&rng, 96));
            }
    }
}

Test(cnn, short_run_learns_and_keeps_earlier_files, .timeout = 300)
{
    cnn_set train, test;
    synthetic(&train, 256, 1);
    synthetic(&test, 100, 2);
    cnn_config c;
    char line[600];
    snprintf(line, sizeof line, "--steps 24 --batch 16 --lr 0.003 --out %s/run", dir);
    cr_assert_eq(parse(&c, line), 0, "%s", tg_error());
    cnn_result r;
    cr_assert_eq(cnn_run(&c, &train, &test, &r), 0, "%s", tg_error());
    cr_assert_eq(r.steps, 24);
    cr_assert_lt(r.last_loss, 0.5 * r.first_loss, "loss %g -> %g", r.first_loss, r.last_loss);
    cr_assert_geq(r.accuracy, 0.9, "test accuracy %g", r.accuracy);
    long sum = 0;
    for (int i = 0; i < CNN_CLASSES; i++)
        for (int j = 0; j < CNN_CLASSES; j++) sum += r.confusion[i][j];
    cr_assert_eq(sum, test.n);
    static const char *const files[] = {"log.csv", "loss.png", "confusion.png", "filters.png", "model.safetensors"};
    char path[600];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/run/%s", dir, files[i]);
        cr_assert_eq(access(path, F_OK), 0, "%s is missing", path);
    }
    /* a second run into the same directory is refused, the files kept */
    cnn_result again;
    c.steps = 1;
    cr_assert_eq(cnn_run(&c, &train, &test, &again), 2);
    tu_assert_has(tg_error(), "holds an earlier run (log.csv): give --overwrite");
    tg_safetensors *st;
    snprintf(path, sizeof path, "%s/run/model.safetensors", dir);
    cr_assert_eq(tg_st_load(path, &st), 0, "%s", tg_error());
    cr_assert_str_eq(tg_st_meta(st, "format"), "cnn-1");
    cr_assert_str_eq(tg_st_meta(st, "step"), "24");
    cr_assert_str_eq(tg_st_meta(st, "lr"), "0.003");
    cr_assert_str_eq(tg_st_meta(st, "batch"), "16");
    cr_assert_str_eq(tg_st_meta(st, "precision"), "f32");
    cr_assert_float_eq(strtod(tg_st_meta(st, "test_acc"), NULL), r.accuracy, 1e-6);
    tg_st_free(st);
    c.overwrite = true;
    cr_assert_eq(cnn_run(&c, &train, &test, &again), 0, "%s", tg_error());
    cr_assert_eq(again.steps, 1);
    cnn_set_free(&train);
    cnn_set_free(&test);
}

/* The grad_norm column of dir/rel/log.csv into g[n]; the row count. */
static int read_gnorms(const char *rel, double *g, int n)
{
    char line[512];
    FILE *f = fopen(at(rel), "r");
    cr_assert_not_null(f, "%s", at(rel));
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_assert(strncmp(line, "step,loss,lr,grad_norm,", 23) == 0, "%s", line);
    int k = 0;
    for (; k < n && fgets(line, sizeof line, f); k++) {
        const char *col = line;
        for (int i = 0; i < 3; i++) col = strchr(col, ',') + 1;
        g[k] = strtod(col, NULL);
    }
    fclose(f);
    return k;
}

/* --precision bf16 and f16 (the convolutions' and the linear layer's
 * operands rounded to 8 and 11 significant bits) against float32 from the
 * same weights on the same batches, 8 steps: the first loss differs (the
 * products were rounded), and it, the mean of the last ones and every
 * gradient norm stay near float32's, within about ten times the largest
 * differences measured (bf16: 4.9e-5 nats of the first loss, 5.1e-3 of
 * the last, 3.2% of a norm; f16: 1.7e-5, 2.8e-3, 0.3%), so another BLAS's
 * rounding passes, while a norm 65536 times float32's (f16's grads not
 * unscaled) does not. f16's scale is torch's initial 2^16 at the end (no
 * step overflows: none skipped); the others have no scaler. Few small
 * steps: the suite runs under the sanitizers too. */
Test(cnn, bf16_and_f16_train_near_float32, .timeout = 300)
{
    enum { N = 8 };
    cnn_set train, test;
    synthetic(&train, 64, 1);
    synthetic(&test, 20, 2);
    const char *const precisions[3] = {"f32", "bf16", "f16"};
    const double first_tol[3] = {0, 5e-4, 2e-4}, last_tol[3] = {0, 5e-2, 3e-2}, gnorm_tol[3] = {0, 0.3, 3e-2};
    cnn_result r[3];
    double g[3][N];
    char line[600], rel[32];
    for (int k = 0; k < 3; k++) {
        snprintf(line, sizeof line, "--steps %d --batch 8 --lr 0.003 --precision %s --out %s/%s", N, precisions[k],
                 dir, precisions[k]);
        cnn_config c;
        cr_assert_eq(parse(&c, line), 0, "%s", tg_error());
        cr_assert_eq(cnn_run(&c, &train, &test, &r[k]), 0, "%s", tg_error());
        snprintf(rel, sizeof rel, "%s/log.csv", precisions[k]);
        cr_assert_eq(read_gnorms(rel, g[k], N), N);
    }
    cr_assert_eq(r[0].loss_scale, 0, "no scaler in f32");
    cr_assert_eq(r[1].loss_scale, 0, "no scaler in bf16");
    cr_assert_eq(r[2].loss_scale, 65536);
    cr_assert_eq(r[2].skipped, 0);
    for (int k = 1; k < 3; k++) {
        double d1 = fabs(r[k].first_loss - r[0].first_loss), d2 = fabs(r[k].last_loss - r[0].last_loss), worst = 0;
        cr_assert(d1 > 0 && d1 <= first_tol[k], "%s: first loss %.6g, float32 %.6g", precisions[k], r[k].first_loss,
                      r[0].first_loss);
        cr_assert_leq(d2, last_tol[k], "%s: last loss %.6g, float32 %.6g", precisions[k], r[k].last_loss,
                      r[0].last_loss);
        cr_assert_lt(r[k].last_loss, r[k].first_loss, "%s: the loss falls", precisions[k]);
        for (int i = 0; i < N; i++) {
            double d = fabs(g[k][i] / g[0][i] - 1);
            worst = d > worst ? d : worst;
            cr_assert_leq(d, gnorm_tol[k], "%s step %d: gradient norm %.6g, float32 %.6g", precisions[k], i + 1,
                          g[k][i], g[0][i]);
        }
        cr_log_info("%s: |first loss - float32's| %.3g, |last| %.3g, |gnorm / float32's - 1| %.3g", precisions[k],
                    d1, d2, worst);
    }
    cnn_set_free(&train);
    cnn_set_free(&test);
}
