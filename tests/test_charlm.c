/* examples/charlm, in process: its command line and data errors, a short
 * run that learns, resuming bit for bit, sampling over the cache equal to
 * whole passes, and the first steps of the default command equal to its
 * PyTorch twin (bench/torch/charlm_twin.py). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad/nn/nn.h>
#include "../examples/charlm/charlm.h"
#include "fixture_util.h"
#include "test_util.h"

static char dir[256];

static void setup(void)
{
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    tu_tmpdir(dir, sizeof dir, "charlm");
}

static void teardown(void) { tu_tmpdir_remove(dir); }

TestSuite(charlm, .init = setup, .fini = teardown);

/* argv from a space-separated line ("train --steps 3"); "@" becomes dir. */
static int parse(cl_config *c, const char *line)
{
    static char buf[4096];
    char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *s = strtok(buf, " "); s && argc < 63; s = strtok(NULL, " ")) {
        static char expanded[64][512];
        snprintf(expanded[argc], sizeof expanded[argc], "%s%s", s[0] == '@' ? dir : "", s + (s[0] == '@'));
        argv[argc] = expanded[argc];
        argc++;
    }
    int cmd = cl_command_parse(argv[0]);
    cr_assert_geq(cmd, 0, "%s", argv[0]);
    return cl_cli_parse((cl_command)cmd, argc, argv, c, stdout);
}

static void write_file(const char *rel, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A text with structure to learn: numbered lines of a few words. */
static void write_text(const char *rel, int lines)
{
    static const char *const words[] = {"the", "program", "is", "free", "software", "and", "you", "may", "copy"};
    char *buf = malloc((size_t)lines * 64), *q = buf;
    for (int i = 0; i < lines; i++) {
        q += sprintf(q, "%d:", i % 10);
        for (int w = 0; w < 5; w++) q += sprintf(q, " %s", words[(i * 7 + w * 3) % 9]);
        *q++ = '\n';
    }
    write_file(rel, buf, (size_t)(q - buf));
    free(buf);
}

#define SMALL " --layers 1 --d-model 32 --heads 2 --context 16 --batch 8 --threads 1 --save-every 0 "

/* The loss and grad_norm columns of dir/rel/log.csv into loss[n] and
 * gnorm[n] (may be NULL); the row count. */
static int read_log(const char *rel, double *loss, double *gnorm, int n)
{
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/%s/log.csv", dir, rel);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    int k = 0;
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_assert(strncmp(line, "step,loss,lr,grad_norm,ms,val_loss,val_bpb", 42) == 0, "%s", line);
    for (; k < n && fgets(line, sizeof line, f); k++) {
        char *col = strchr(line, ',') + 1;
        loss[k] = strtod(col, &col);
        if (gnorm) gnorm[k] = strtod(strchr(col + 1, ',') + 1, NULL);  /* past lr */
    }
    fclose(f);
    return k;
}

static int read_losses(const char *rel, double *loss, int n) { return read_log(rel, loss, NULL, n); }

/* cl_train with its stdout (the summary) into out[len]. */
static int train_capturing(cl_config *c, long stop_after, char *out, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/stdout.txt", dir);
    fflush(stdout);
    int saved = dup(1);
    FILE *f = fopen(path, "w+");
    cr_assert(saved >= 0 && f);
    cr_assert_geq(dup2(fileno(f), 1), 0);
    int rc = cl_train(c, stop_after);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    rewind(f);
    out[fread(out, 1, len - 1, f)] = 0;
    fclose(f);
    return rc;
}

Test(charlm, refuses_bad_flags_naming_them)
{
    cl_config c;
    cr_assert_eq(parse(&c, "train --no-such-flag 3"), -1);
    cr_assert(strstr(tg_error(), "unknown flag --no-such-flag"), "%s", tg_error());
    cr_assert_eq(parse(&c, "train --layers 0"), -1);
    cr_assert(strstr(tg_error(), "charlm train: --layers '0' is not allowed: expected an integer in [1, 64]"), "%s",
              tg_error());
    cr_assert_eq(parse(&c, "train --d-model 30 --heads 4"), -1);
    cr_assert(strstr(tg_error(), "--d-model 30 is not divisible by --heads 4"), "%s", tg_error());
    cr_assert_eq(parse(&c, "train --steps"), -1);
    cr_assert(strstr(tg_error(), "--steps needs a value"), "%s", tg_error());
    cr_assert_eq(parse(&c, "train --warmup 50 --steps 50"), -1);
    cr_assert(strstr(tg_error(), "--warmup 50 must be less than --steps 50"), "%s", tg_error());
    cr_assert_eq(parse(&c, "sample"), -1);
    cr_assert(strstr(tg_error(), "charlm sample: --model FILE is required"), "%s", tg_error());
    cr_assert_eq(parse(&c, "sample --model x --lr 1"), -1, "a training flag is not sample's");
    cr_assert_eq(parse(&c, "train --precision f8"), -1);
    cr_assert(strstr(tg_error(), "charlm train: --precision 'f8' is not allowed: expected one of f32, bf16, f16"),
              "%s", tg_error());
    cr_assert_eq(parse(&c, "train --precision f16"), 0, "%s", tg_error());
    cr_assert_eq(c.precision, 2);
}

Test(charlm, refuses_missing_empty_and_short_files_naming_them)
{
    cl_config c;
    char want[600];
    cr_assert_eq(parse(&c, "train --data @/none --out @/o" SMALL), 0, "%s", tg_error());
    cr_assert_eq(cl_cmd_train(&c), 2);
    snprintf(want, sizeof want, "%s/none: cannot open: No such file", dir);
    cr_assert(strstr(tg_error(), want), "%s", tg_error());

    write_file("empty", "", 0);
    cr_assert_eq(parse(&c, "train --data @/empty --out @/o" SMALL), 0);
    cr_assert_eq(cl_cmd_train(&c), 2);
    cr_assert(strstr(tg_error(), "empty: 0 bytes: its held-out tenth needs at least --context + 1 = 17 bytes"),
              "%s", tg_error());

    /* 169 bytes: a held-out tenth of 16, one short of a window */
    char shortf[169];
    memset(shortf, 'a', sizeof shortf);
    write_file("short", shortf, sizeof shortf);
    cr_assert_eq(parse(&c, "train --data @/short --out @/o" SMALL), 0);
    cr_assert_eq(cl_cmd_train(&c), 2);
    cr_assert(strstr(tg_error(), "(a file of at least 170 bytes)"), "%s", tg_error());
    cr_assert(access(tu_path(dir, "o/log.csv"), F_OK) != 0, "nothing is written for a refused file");
}

/* Any bytes are text to a byte-level model: NULs and 0xff train too. */
Test(charlm, trains_on_binary_bytes)
{
    uint8_t bin[4000];
    for (int i = 0; i < 4000; i++) bin[i] = (uint8_t)(i * 37 % 256);
    write_file("bin", bin, sizeof bin);
    cl_config c;
    cr_assert_eq(parse(&c, "train --data @/bin --out @/b --steps 3 --warmup 1" SMALL), 0);
    cr_assert_eq(cl_cmd_train(&c), 0, "%s", tg_error());
    double loss[3];
    cr_assert_eq(read_losses("b", loss, 3), 3);
    for (int i = 0; i < 3; i++) cr_assert(isfinite(loss[i]));
}

Test(charlm, learns_a_text_below_the_uniform_loss)
{
    write_text("text", 600);
    cl_config c;
    cr_assert_eq(parse(&c, "train --data @/text --out @/t --steps 60 --warmup 5 --eval-every 0 --lr 0.01" SMALL), 0);
    cr_assert_eq(cl_cmd_train(&c), 0, "%s", tg_error());
    tg_safetensors *s;
    cr_assert_eq(tg_st_load(tu_path(dir, "t/model.safetensors"), &s), 0, "%s", tg_error());
    double val = atof(tg_st_meta(s, "val_loss"));
    tg_st_free(s);
    /* log(256) = 5.545 nats/byte: what a model that learned nothing gets */
    cr_assert_lt(val, 0.6 * log(256.0), "held-out loss %g nats/byte", val);
}

/* 10 steps, a resume to 20, and 20 straight: the same losses and weights. */
Test(charlm, resume_continues_bit_for_bit)
{
    write_text("text", 300);
    cl_config c;
    cr_assert_eq(parse(&c, "train --data @/text --out @/full --steps 20 --warmup 3 --eval-every 0" SMALL), 0);
    cr_assert_eq(cl_cmd_train(&c), 0, "%s", tg_error());
    cr_assert_eq(parse(&c, "train --data @/text --out @/half --steps 20 --warmup 3 --eval-every 0" SMALL), 0);
    cr_assert_eq(cl_train(&c, 10), 0, "%s", tg_error());
    cr_assert_eq(parse(&c, "train --resume @/half/checkpoint.safetensors --threads 1"), 0);
    cr_assert_eq(cl_cmd_train(&c), 0, "%s", tg_error());
    double a[20], b[20];
    cr_assert_eq(read_losses("full", a, 20), 20);
    cr_assert_eq(read_losses("half", b, 20), 20);
    for (int i = 0; i < 20; i++) cr_assert_eq(a[i], b[i], "step %d: %.9g vs %.9g", i + 1, a[i], b[i]);
    tg_safetensors *x, *y;
    cr_assert_eq(tg_st_load(tu_path(dir, "full/model.safetensors"), &x), 0);
    cr_assert_eq(tg_st_load(tu_path(dir, "half/model.safetensors"), &y), 0);
    cr_assert_eq(tg_st_count(x), tg_st_count(y));
    for (int i = 0; i < tg_st_count(x); i++) {
        const tg_tensor *p = tg_st_at(x, i), *q = tg_st_get(y, p->name);
        cr_assert_not_null(q, "%s", p->name);
        cr_assert_eq(memcmp(p->data, q->data, p->size * sizeof *p->data), 0, "%s differs", p->name);
    }
    tg_st_free(x);
    tg_st_free(y);
}

/* The metadata value of key in dir/rel into buf ("" when absent). */
static const char *meta_of(const char *rel, const char *key, char *buf, size_t len)
{
    tg_safetensors *s;
    cr_assert_eq(tg_st_load(tu_path(dir, rel), &s), 0, "%s", tg_error());
    const char *v = tg_st_meta(s, key);
    snprintf(buf, len, "%s", v ? v : "");
    tg_st_free(s);
    return buf;
}

/* --precision bf16 and f16 (the products' operands rounded to 8 and 11
 * significant bits) against float32 from the same weights on the same
 * batches, 10 steps. The first loss differs (the products were rounded),
 * and every step's loss and gradient norm stay near float32's: within about ten times the largest differences measured
 * (bf16: 9.0e-4 nats, 0.16% of the norm; f16: 3.6e-4 nats, 0.03%), so
 * another BLAS's rounding passes, while a gradient norm 65536 times
 * float32's (f16's grads not unscaled) or a loss off by a product not
 * rounded as asked does not. f16 runs half the steps, then resumes: its
 * checkpoint carries the scale (2^16, torch's initial one: no step
 * overflows), the growth tracker (one clean step each) and the skipped
 * steps, as seqtask's does, and the run reports the scale. */
Test(charlm, bf16_and_f16_train_near_float32)
{
    enum { N = 10 };
    write_text("text", 300);
    cl_config c;
    const char *const precisions[3] = {"f32", "bf16", "f16"};
    const double loss_tol[3] = {0, 1e-2, 4e-3}, gnorm_tol[3] = {0, 1e-2, 3e-3};
    double loss[3][N], gnorm[3][N];
    static char out[4096], line[512], v[64];
    for (int k = 0; k < 3; k++) {
        snprintf(line, sizeof line, "train --data @/text --out @/%s --steps %d --warmup 2 --eval-every 0 --lr 0.01 "
                 "--precision %s" SMALL, precisions[k], N, precisions[k]);
        cr_assert_eq(parse(&c, line), 0, "%s", tg_error());
        cr_assert_eq(cl_train(&c, k == 2 ? N / 2 : N), 0, "%s", tg_error());
    }
    cr_assert_eq(parse(&c, "train --resume @/f16/checkpoint.safetensors --threads 1"), 0, "%s", tg_error());
    cr_assert_eq(train_capturing(&c, N, out, sizeof out), 0, "%s", tg_error());
    cr_assert(strstr(out, "step 10,") && strstr(out, "loss scale 65536 (0 steps skipped for an Inf or NaN gradient)"),
              "%s", out);
    for (int k = 0; k < 3; k++) {
        snprintf(line, sizeof line, "%s/model.safetensors", precisions[k]);
        cr_assert_str_eq(meta_of(line, "precision", v, sizeof v), precisions[k]);
        snprintf(line, sizeof line, "%s/checkpoint.safetensors", precisions[k]);
        cr_assert_str_eq(meta_of(line, "optim.grad_scaler.scale", v, sizeof v), k == 2 ? "65536" : "",
                         "only f16 has a scaler");
        cr_assert_eq(read_log(precisions[k], loss[k], gnorm[k], N), N);
    }
    cr_assert_str_eq(meta_of("f16/checkpoint.safetensors", "optim.grad_scaler.growth_tracker", v, sizeof v), "10");
    cr_assert_str_eq(meta_of("f16/checkpoint.safetensors", "skipped_steps", v, sizeof v), "0");
    for (int k = 1; k < 3; k++) {
        double worst = 0, worst_g = 0;
        cr_assert_neq(loss[k][0], loss[0][0], "%s: the products are rounded", precisions[k]);
        for (int i = 0; i < N; i++) {
            double d = fabs(loss[k][i] - loss[0][i]), g = fabs(gnorm[k][i] / gnorm[0][i] - 1);
            worst = d > worst ? d : worst;
            worst_g = g > worst_g ? g : worst_g;
            cr_assert(isfinite(loss[k][i]) && d <= loss_tol[k], "%s step %d: loss %.6g, float32 %.6g",
                      precisions[k], i + 1, loss[k][i], loss[0][i]);
            cr_assert_leq(g, gnorm_tol[k], "%s step %d: gradient norm %.6g, float32 %.6g", precisions[k], i + 1,
                          gnorm[k][i], gnorm[0][i]);
        }
        cr_log_info("%s: largest |loss - float32's| %.3g, |gnorm / float32's - 1| %.3g", precisions[k], worst,
                    worst_g);
        cr_assert_lt(loss[k][N - 1], loss[k][0] - 0.5, "%s: the loss falls", precisions[k]);
    }
}

/* sample's text: the same seed gives the same bytes, greedy decoding over
 * the cache is what whole forward passes over the growing text give, and
 * the heatmap of the result is written. */
Test(charlm, sampling_is_reproducible_and_greedy_equals_whole_passes)
{
    cl_config c;
    cr_assert_eq(parse(&c, "train --steps 0 --layers 2 --d-model 32 --heads 4 --context 24"), 0);
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_params *p;
    tg_model m;
    cr_assert_eq(cl_model_build(&c, &rng, &p, &m), 0, "%s", tg_error());
    int32_t seq[24] = {'T', 'h', 'e', ' '}, a[24], b[24];
    int na, nb, n_out;
    tg_sample_opts warm = {.temperature = 0.8, .top_k = 40, .top_p = 0.95}, greedy = {0};
    tg_rng_seed(&rng, 7);
    cr_assert_eq(tg_model_generate(&m, a, 100, seq, 4, &warm, NULL, 0, &rng, &na), 0, "%s", tg_error());
    tg_rng_seed(&rng, 7);
    cr_assert_eq(tg_model_generate(&m, b, 100, seq, 4, &warm, NULL, 0, &rng, &nb), 0, "%s", tg_error());
    cr_assert_eq(na, 20, "stops at the context");
    cr_assert_eq(nb, na);
    cr_assert_eq(memcmp(a, b, sizeof(int32_t) * 20), 0, "the same seed, the same bytes");
    cr_assert_eq(tg_model_generate(&m, seq + 4, 100, seq, 4, &greedy, NULL, 0, NULL, &n_out), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_no_grad_begin(t);
    for (int L = 4; L < 24; L++) {
        tg_tape_reset(t);
        tg_tensor *lg = tg_model_forward(t, &m, tg_tensor_from_dtype(t, TG_I32, seq, 2, (int[]){1, L}), NULL, NULL);
        cr_assert_not_null(lg, "%s", tg_tape_error(t));
        const tg_real *x = lg->data + (size_t)(L - 1) * CL_VOCAB;
        int best = 0;
        for (int v = 1; v < CL_VOCAB; v++)
            if (x[v] > x[best]) best = v;
        cr_assert_eq(seq[L], best, "byte %d: cache %d, whole pass %d", L, seq[L], best);
    }
    tg_tape_free(t);
    cr_assert_eq(cl_attention_png(&m, seq, 24, tu_path(dir, "attn.png")), 0, "%s", tg_error());
    FILE *f = fopen(tu_path(dir, "attn.png"), "rb");
    unsigned char sig[8] = {0};
    cr_assert_not_null(f);
    cr_assert_eq(fread(sig, 1, 8, f), 8u);
    fclose(f);
    cr_assert_eq(memcmp(sig, "\x89PNG\r\n\x1a\n", 8), 0, "a PNG");
    tg_model_free(&m);
    tg_params_free(p);
}

/* The default command's first steps (of --arch gpt2, the default, and
 * llama) against the PyTorch twin from the same initial weights on the same
 * batches: |dloss| <= 2e-5 against the float32 twin (float32 rounding,
 * grown over 30 Adam steps; measured 7.6e-6 for gpt2 when its loss started at
 * 82.6, 4.8e-7 for llama), <= 1e-9 for the double build
 * against a float64 twin. The sanitizer builds check 5 steps. */
static void check_twin(const char *arch)
{
    tg_safetensors *fix = load_fixture("charlm_twin.safetensors");
    char name[64], line[256], sub[32];
    snprintf(name, sizeof name, "%s_loss_f64", arch);
    /* the double build against the float64 twin when the fixture has it,
     * else against the float32 one (the float32 twin's rounding bounds it) */
    bool f64 = sizeof(tg_real) == 8 && tg_st_get(fix, name);
    if (!f64) snprintf(name, sizeof name, "%s_loss_f32", arch);
    const tg_tensor *want = fx(fix, name);
    snprintf(sub, sizeof sub, "twin_%s", arch);
    snprintf(line, sizeof line, "train --arch %s --out @/%s --eval-every 0 --save-every 0", arch, sub);
    cl_config c;
    cr_assert_eq(parse(&c, line), 0, "%s", tg_error());
    int steps = (int)want->size;
#if defined(__SANITIZE_ADDRESS__)
    steps = 5;
#endif
    cr_assert_eq(cl_train(&c, steps), 0, "%s", tg_error());
    tg_safetensors *s;
    snprintf(line, sizeof line, "%s/model.safetensors", sub);
    cr_assert_eq(tg_st_load(tu_path(dir, line), &s), 0);
    char hash[32];
    snprintf(hash, sizeof hash, "%s", tg_st_meta(s, "data_hash"));
    tg_st_free(s);
    cr_assert_str_eq(hash, tg_st_meta(fix, "corpus_hash"),
                     "the default corpus is not the one the fixture was made from");
    double got[30], tol = f64 ? 1e-9 : 2e-5, worst = 0;
    cr_assert_eq(read_losses(sub, got, steps), steps);
    for (int i = 0; i < steps; i++) {
        double d = fabs(got[i] - (double)want->data[i]);
        worst = d > worst ? d : worst;
        cr_assert_leq(d, tol, "%s step %d: tapegrad %.9g, torch %.9g", arch, i + 1, got[i], (double)want->data[i]);
    }
    cr_log_info("%s: largest |loss - torch (%s)| over %d steps: %.3g", arch, name, steps, worst);
    tg_st_free(fix);
}

Test(charlm, default_gpt2_matches_the_pytorch_twin, .timeout = 600) { check_twin("gpt2"); }
Test(charlm, default_llama_matches_the_pytorch_twin, .timeout = 600) { check_twin("llama"); }
