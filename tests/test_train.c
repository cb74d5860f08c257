/* examples/seqtask, end to end: the built seqtask binary is run as a user
 * would run it (training, resume, --init from a PyTorch file, every command,
 * bad flags and bad data files, the PNGs it writes). Small configurations,
 * one thread: seconds each, also under the sanitizers. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stb/stb_image.h>

#define SEQTASK_CAPTURE_STDOUT
#include "seqtask_util.h"

#define FIXTURE TG_SOURCE_DIR "/tests/fixtures/init_model.safetensors"

/* A small copy task every test can train in a second or two. */
#define SMALL "--task copy --symbols 8 --min-len 1 --max-len 5 --layers 2 --d-model 32 --heads 2 " \
              "--d-ff 64 --batch 32 --lr 3e-3 --warmup 20 --eval-size 200 --threads 1"

static void setup(void) { seqtask_setup("tg_test_train", false); }
static void teardown(void) { seqtask_teardown(); }

TestSuite(train, .init = setup, .fini = teardown, .timeout = 300);

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* The last "accuracy X%" of the train / eval output. */
static double reported_acc(const char *text)
{
    const char *s = strstr(text, "exact-sequence accuracy ");
    cr_assert_not_null(s, "no accuracy in:\n%s", text);
    return atof(s + strlen("exact-sequence accuracy ")) / 100;
}

/* Decodes a PNG: its size, and that it is not one flat colour. */
static void check_png(const char *rel, int *w, int *h)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    int c;
    unsigned char *px = stbi_load(path, w, h, &c, 3);
    cr_assert_not_null(px, "%s does not decode: %s", path, stbi_failure_reason());
    long differ = 0, n = (long)*w * *h;
    for (long i = 0; i < n; i++) differ += memcmp(px + 3 * i, px, 3) != 0;
    stbi_image_free(px);
    cr_assert(differ > n / 50, "%s is (almost) blank: %ld of %ld pixels differ from the first", path,
              differ, n);
}

static bool exists(const char *rel)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return stat(path, &st) == 0 && st.st_size > 0;
}

Test(train, copy_converges_and_every_command_works)
{
    cr_assert_eq(run("train " SMALL " --steps 600 --eval-every 50 --target-acc 0.95 --out run"), 0, "%s",
                 err_text);
    cr_assert_geq(reported_acc(out_text), 0.95, "%s", out_text);
    const char *files[] = {"run/model.safetensors", "run/checkpoint.safetensors", "run/log.csv",
                           "run/loss.png", "run/attention.png"};
    for (int i = 0; i < 5; i++) cr_assert(exists(files[i]), "%s was not written", files[i]);

    /* eval reads the task from the model and agrees on held-out accuracy */
    cr_assert_eq(run("eval --model run/model.safetensors --eval-size 200 --threads 1"), 0, "%s", err_text);
    cr_assert_geq(reported_acc(out_text), 0.9, "%s", out_text);
    cr_assert_eq(run("generate --model run/model.safetensors --input '3 1 4 1 5' --threads 1"), 0);
    cr_assert(strstr(out_text, "3 1 4 1 5 -> "), "%s", out_text);

    int w, h, w2, h2;
    check_png("run/attention.png", &w, &h);
    check_png("run/loss.png", &w, &h);
    cr_assert(w == 960 && h == 600, "loss.png is %dx%d", w, h);
    cr_assert_eq(run("attn --model run/model.safetensors --input '2 7' --png a2.png --threads 1"), 0, "%s",
                 err_text);
    check_png("a2.png", &w, &h);
    /* BOS + 5 + SEP + 5 tokens: 2 layers x 2 heads of 12 x 12 entries, >= 12 px each */
    cr_assert_eq(run("attn --model run/model.safetensors --input '2 7 1 0 5' --png a5.png --threads 1"), 0);
    check_png("a5.png", &w2, &h2);
    cr_assert(w2 >= 2 * 12 * 12 && h2 >= 2 * 12 * 12 && w2 <= 4000 && h2 <= 4000, "a5.png is %dx%d", w2, h2);
    cr_assert_eq(run("heads --model run/model.safetensors --eval-size 50 --threads 1"), 0, "%s", err_text);
    cr_assert(strstr(out_text, "L1 H1") || strstr(out_text, "    1    1"), "%s", out_text);
    check_png("run/heads.png", &w, &h);

    /* export: bfloat16 weights in a file half the size, read back by eval at
     * the accuracy of the float32 model (rounding moves it by at most a few
     * examples); an existing --to survives without --overwrite */
    cr_assert_eq(run("export --model run/model.safetensors --to m16.safetensors"), 0, "%s", err_text);
    cr_assert(strstr(out_text, "as bfloat16"), "%s", out_text);
    cr_assert_eq(run("eval --model m16.safetensors --eval-size 200 --threads 1"), 0, "%s", err_text);
    cr_assert_geq(reported_acc(out_text), 0.88, "%s", out_text);
    cr_assert_eq(run("export --model run/checkpoint.safetensors --to m16.safetensors --dtype f16"), 2);
    cr_assert(strstr(err_text, "exists (give --overwrite"), "%s", err_text);
    cr_assert_eq(run("export --model run/checkpoint.safetensors --to m16.safetensors --dtype f16 --overwrite"), 0,
                 "%s", err_text);
    cr_assert(strstr(out_text, "as float16"), "%s", out_text);
}

/* Run A: 2N steps. Run B: N steps, then --resume to 2N. Same rows. */
static void check_resume(const char *flags, int n)
{
    char a[1 << 15], b[1 << 15];
    cr_assert_eq(run("train %s --steps %d --out A", flags, 2 * n), 0, "%s", err_text);
    cr_assert_eq(run("train %s --steps %d --out B", flags, n), 0, "%s", err_text);
    cr_assert_eq(run("train --resume B/checkpoint.safetensors --steps %d --threads 1", 2 * n), 0, "%s",
                 err_text);
    log_text("A/log.csv", -1, 4, a, sizeof a);  /* step, loss, lr, grad_norm */
    log_text("B/log.csv", -1, 4, b, sizeof b);
    cr_assert_eq(count_lines(a), 2 * n + 1);
    cr_assert_str_eq(b, a, "resumed run differs:\n%s\nuninterrupted:\n%s", b, a);
}

Test(train, resume_is_bit_for_bit)
{
    /* constant schedule (the total does not enter the curve), dropout on */
    check_resume(SMALL " --schedule constant --dropout 0.1 --eval-every 7 --target-acc 0", 15);
}

Test(train, resume_is_bit_for_bit_with_data_file_and_sgd)
{
    char text[4096];
    size_t n = 0;
    for (int i = 0; i < 50; i++)  /* copy examples: 50 lines, shuffled per epoch, B = 32 */
        n += (size_t)snprintf(text + n, sizeof text - n, "%d %d %d\t%d %d %d\n", i % 8, (i / 8) % 8, (i * 3) % 8,
                              i % 8, (i / 8) % 8, (i * 3) % 8);
    write_file("copy.txt", text);
    check_resume("--data copy.txt --symbols 8 --max-len 5 --layers 1 --d-model 16 --heads 2 --batch 32 "
                 "--optimizer sgd --lr 0.05 --schedule constant --warmup 3 --eval-size 20 --eval-every 5 "
                 "--threads 1 --target-acc 0", 10);
}

/* The loss column of log.csv, one entry per line. */
static void log_losses(const char *rel, char *buf, size_t len)
{
    char all[1 << 14];
    log_text(rel, -1, 2, all, sizeof all);
    size_t n = 0;
    for (char *line = strchr(all, '\n'); line && line[1]; line = strchr(line + 1, '\n'))
        n += (size_t)snprintf(buf + n, len - n, "%.*s\n", (int)strcspn(strchr(line, ',') + 1, "\n"),
                              strchr(line, ',') + 1);
}

/* --no-shuffle: batch k holds lines kB .. kB+B-1, wrapping around. With a
 * learning rate too small to move any weight, step k's loss is the loss of
 * those lines alone, so it equals step 1 of a file holding just them. */
Test(train, no_shuffle_reads_the_file_in_order)
{
    const char *flags = "--symbols 8 --max-len 5 --layers 1 --d-model 16 --heads 2 --batch 2 --optimizer sgd "
                        "--lr 1e-30 --schedule constant --warmup 0 --clip 0 --eval-size 2 --threads 1";
    write_file("abcd.txt", "1 2\t2 1\n3 4 5\t5 4 3\n6\t6\n7 0 1 2\t2 1 0 7\n");
    write_file("ab.txt", "1 2\t2 1\n3 4 5\t5 4 3\n");
    write_file("cd.txt", "6\t6\n7 0 1 2\t2 1 0 7\n");
    char abcd[4096], ab[256], cd[256], want[1024];
    cr_assert_eq(run("train --data abcd.txt --no-shuffle --steps 3 %s --out abcd", flags), 0, "%s", err_text);
    cr_assert_eq(run("train --data ab.txt --no-shuffle --steps 1 %s --out ab", flags), 0, "%s", err_text);
    cr_assert_eq(run("train --data cd.txt --no-shuffle --steps 1 %s --out cd", flags), 0, "%s", err_text);
    log_losses("abcd/log.csv", abcd, sizeof abcd);
    log_losses("ab/log.csv", ab, sizeof ab);
    log_losses("cd/log.csv", cd, sizeof cd);
    snprintf(want, sizeof want, "%s%s%s", ab, cd, ab);  /* lines 0-1, 2-3, then 0-1 again */
    cr_assert_str_eq(abcd, want, "batches are not the file's lines in order");
    cr_assert_str_neq(ab, cd);
}

/* Ctrl-C in the middle of a cosine schedule: a checkpoint is saved, exit 130,
 * and --resume finishes with exactly the uninterrupted run's rows. */
Test(train, interrupt_then_resume_is_bit_for_bit)
{
    const char *flags = "--task copy --symbols 8 --max-len 5 --layers 1 --d-model 16 --heads 2 --batch 16 "
                        "--dropout 0.1 --steps 400 --warmup 5 --eval-every 0 --target-acc 0 --save-every 0 "
                        "--eval-size 20 --threads 1";
    char cmd[4096], a[1 << 17], b[1 << 17], path[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && exec '%s' train %s --out B >/dev/null 2>stderr.txt", dir, SEQTASK, flags);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    snprintf(path, sizeof path, "%s/B/log.csv", dir);
    for (int tries = 0; tries < 60000; tries++) {  /* until 10 steps are logged (at most 300 s) */
        FILE *f = fopen(path, "r");
        int lines = 0;
        for (int ch; f && (ch = fgetc(f)) != EOF;) lines += ch == '\n';
        if (f) fclose(f);
        if (lines > 10) break;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status %d after SIGINT", st);
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    slurp(path, err_text, sizeof err_text);
    cr_assert(strstr(err_text, "interrupted at step"), "%s", err_text);
    cr_assert_eq(run("train --resume B/checkpoint.safetensors --threads 1"), 0, "%s", err_text);
    cr_assert_eq(run("train %s --out A", flags), 0, "%s", err_text);
    log_text("A/log.csv", -1, 4, a, sizeof a);
    log_text("B/log.csv", -1, 4, b, sizeof b);
    cr_assert_str_eq(b, a, "resumed run differs:\n%s\nuninterrupted:\n%s", b, a);
}

/* tests/fixtures/init_model.safetensors is a model trained by PyTorch on
 * copy (bench/torch/make_init_fixture.py): loaded with --init it decodes. */
Test(train, init_from_pytorch)
{
    const char *model = "--task copy --symbols 6 --min-len 1 --max-len 4 --layers 2 --d-model 32 "
                        "--heads 2 --d-ff 64 --threads 1 --eval-size 300";
    cr_assert_eq(run("train %s --init " FIXTURE " --steps 1 --lr 1e-9 --warmup 0 --schedule constant "
                     "--out run", model), 0, "%s", err_text);
    cr_assert_geq(reported_acc(out_text), 0.98, "PyTorch's weights decode badly:\n%s", out_text);
    /* per-head mode converts the packed in_proj weights exactly */
    cr_assert_eq(run("train %s --mode per-head --init " FIXTURE " --steps 1 --lr 1e-9 --warmup 0 "
                     "--schedule constant --out per-head", model), 0, "%s", err_text);
    cr_assert(strstr(err_text, "converted to --mode per-head"), "%s", err_text);
    cr_assert_geq(reported_acc(out_text), 0.98, "converted weights decode badly:\n%s", out_text);
    /* the same model from a random init knows nothing */
    cr_assert_eq(run("train %s --steps 1 --warmup 0 --out scratch", model), 0, "%s", err_text);
    cr_assert_leq(reported_acc(out_text), 0.2, "%s", out_text);
    /* a mismatched model names the tensor and both shapes */
    cr_assert_eq(run("train %s --d-model 48 --init " FIXTURE " --steps 1 --warmup 0", model), 2);
    cr_assert(strstr(err_text, "tok_emb.weight") && strstr(err_text, "[10,32]") &&
              strstr(err_text, "[10,48]"), "%s", err_text);
}

typedef struct {
    const char *args, *message;
} bad_case;

Test(train, bad_flags_are_refused_with_status_2)
{
    cr_assert_eq(run("train " SMALL " --steps 2 --warmup 1 --out m"), 0, "%s", err_text);
    write_file("empty.safetensors", "");
    const bad_case cases[] = {
        {"", "usage: seqtask COMMAND"},
        {"frobnicate", "unknown command 'frobnicate'"},
        {"train --layers 0", "--layers '0' is not allowed: expected an integer in [1, 64]"},
        {"train --layers", "--layers needs a value: an integer in [1, 64]"},
        {"train --layers 2x", "--layers '2x' is not allowed"},
        {"train --steps 1e3", "--steps '1e3' is not allowed: expected an integer"},
        {"train --lr abc", "--lr 'abc' is not allowed: expected a number in (0, 10]"},
        {"train --lr 0", "--lr '0' is not allowed: expected a number in (0, 10]"},
        {"train --lr nan", "--lr 'nan' is not allowed"},
        {"train --dropout 1", "--dropout '1' is not allowed: expected a number in [0, 1)"},
        {"train --mode fast", "--mode 'fast' is not allowed: expected one of fused, per-head"},
        {"train --task shuffle", "expected one of copy, reverse, sort"},
        {"train --schedule step", "expected one of constant, cosine, linear"},
        {"train --optimizer lion", "expected one of adam, adamw, sgd"},
        {"train --threads -1", "--threads '-1' is not allowed"},
        {"train --eval-size 0", "--eval-size '0' is not allowed"},
        {"train --target-acc 1.5", "--target-acc '1.5' is not allowed: expected a number in [0, 1]"},
        {"train --bogus 3", "unknown flag --bogus"},
        {"train --model x", "unknown flag --model"},
        {"train stray", "unexpected argument 'stray'"},
        {"train --min-len 9 --max-len 4", "--min-len 9 is more than --max-len 4"},
        {"train --d-model 30 --heads 4", "--d-model 30 is not divisible by --heads 4"},
        {"train --warmup 50 --steps 50", "--warmup 50 must be less than --steps 50 with --schedule cosine"},
        {"train --warmup 5 --steps 3 --schedule linear", "--warmup 5 must be less than --steps 3 with "
                                                         "--schedule linear"},
        {"train --task copy --data f.txt", "--task and --data exclude each other"},
        {"train --no-shuffle", "--no-shuffle needs --data FILE"},
        {"train --resume a --init b", "--resume and --init exclude each other"},
        {"train --resume m/model.safetensors", "use checkpoint.safetensors"},
        {"train --resume m/checkpoint.safetensors --layers 3", "--layers 3 differs from"},
        {"train --resume nothere.safetensors", "nothere.safetensors"},
        {"train --init nothere.safetensors --steps 2 --warmup 1", "nothere.safetensors"},
        {"eval", "--model FILE is required"},
        {"eval --model nothere.safetensors", "nothere.safetensors"},
        {"eval --model m/log.csv", "m/log.csv: not a safetensors file: its first 8 bytes give a header length"},
        {"eval --model m/loss.png", "m/loss.png: not a safetensors file: its first 8 bytes give"},
        {"eval --model empty.safetensors", "empty.safetensors: not a safetensors file: too small"},
        {"generate --model m/log.csv --input 1", "m/log.csv: not a safetensors file"},
        {"train --init m/loss.png", "m/loss.png: not a safetensors file"},
        {"eval --layers 2 --model m/model.safetensors", "unknown flag --layers"},
        {"generate --model m/model.safetensors", "--input \"S S ..\" is required"},
        {"generate --model m/model.safetensors --input '1 x'", "'x' is not a symbol"},
        {"generate --model m/model.safetensors --input '1 8'", "symbol 8 is outside [0, 8)"},
        {"generate --model m/model.safetensors --input ' '", "no symbols"},
        {"attn --model m/model.safetensors --input '1'", "--png FILE is required"},
        /* Tmax 13: 11 symbols leave no room for an output token */
        {"generate --model m/model.safetensors --input '1 2 3 4 5 6 7 0 1 2 3'", "the model takes at most 10"},
        {"attn --model m/model.safetensors --input '1 2 3 4 5 6 7 0 1 2 3' --png a.png", "the model takes at most 10"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = run("%s", cases[i].args);
        cr_expect_eq(st, 2, "seqtask %s: status %d", cases[i].args, st);
        cr_expect(strstr(err_text, cases[i].message), "seqtask %s: expected \"%s\" in:\n%s", cases[i].args,
                  cases[i].message, err_text);
    }
    /* --flag=value works too, and --help is not an error */
    cr_assert_eq(run("train --lr=0.002 --help"), 0);
    cr_assert(strstr(out_text, "--target-acc"));
    cr_assert_eq(run("eval --help"), 0);
    cr_assert(strstr(out_text, "--model FILE"));
}

/* Without --warmup, short runs train under every schedule (the warmup is
 * min(50, steps / 10)). */
Test(train, default_warmup_fits_any_steps)
{
    const char *tiny = "--task copy --symbols 8 --min-len 1 --max-len 3 --layers 1 --d-model 16 --heads 2 "
                       "--batch 8 --eval-size 20 --eval-every 0 --save-every 0 --target-acc 0 --threads 1";
    const char *sched[] = {"constant", "cosine", "linear"};
    const long steps[] = {1, 20, 51};
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 3; i++) {
            int st = run("train %s --steps %ld --schedule %s --overwrite --out o", tiny, steps[i], sched[s]);
            cr_expect_eq(st, 0, "--steps %ld --schedule %s: status %d\n%s", steps[i], sched[s], st, err_text);
            char want[64];
            snprintf(want, sizeof want, "(%s, warmup %ld), batch 8, %ld steps", sched[s], steps[i] / 10,
                     steps[i]);
            cr_expect(strstr(err_text, want), "expected \"%s\" in:\n%s", want, err_text);
        }
}

/* A bad --data or --eval-data file is reported before a conflict between
 * flags: the file is the problem to fix first. */
Test(train, a_bad_data_file_is_reported_before_conflicting_flags)
{
    const char *flags = "--symbols 8 --max-len 5 --layers 1 --d-model 16 --heads 2 --threads 1";
    const char *conflicts[] = {"--steps 20 --warmup 50", "--min-len 5 --max-len 4", "--d-model 15"};
    write_file("bad.txt", "1 2 3\n");
    write_file("good.txt", "1 2\t2 1\n");
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(run("train --data bad.txt %s %s", flags, conflicts[i]), 2);
        cr_expect(strstr(err_text, "seqtask train: bad.txt:1: no tab") && !strstr(err_text, "--"),
                  "%s: expected the data file's error only, got:\n%s", conflicts[i], err_text);
        cr_expect_eq(run("train --data good.txt --eval-data bad.txt %s %s", flags, conflicts[i]), 2);
        cr_expect(strstr(err_text, "seqtask train: bad.txt:1: no tab") && !strstr(err_text, "--"),
                  "%s: expected the --eval-data file's error only, got:\n%s", conflicts[i], err_text);
        /* with good files, the conflict */
        cr_expect_eq(run("train --data good.txt %s %s", flags, conflicts[i]), 2);
        cr_expect(strstr(err_text, "seqtask train: --"), "%s: got:\n%s", conflicts[i], err_text);
    }
}

/* Batch buffers too large for the address space: the message gives the
 * size. (Not under ASan: its shadow memory needs the address space.) */
Test(train, batch_buffers_out_of_memory_gives_the_size)
{
#ifdef __SANITIZE_ADDRESS__
    cr_skip_test("RLIMIT_AS and AddressSanitizer do not mix");
#else
    launcher = "ulimit -v 1536000 &&";  /* RLIMIT_AS of seqtask's shell only */
    int st = run("train --batch 65536 --max-len 2048 --layers 1 --d-model 16 --heads 2 --eval-size 4 "
                 "--threads 1 --out oom");
    launcher = "";
    cr_assert_eq(st, 1, "status %d\n%s", st, err_text);
    cr_assert(strstr(err_text, "out of memory for the batch buffers: 4100 MiB (65536 sequences x 4098 positions)"),
              "%s", err_text);
#endif
}

typedef struct {
    const char *text, *message;
} bad_data;

Test(train, bad_data_files_are_refused_with_file_and_line)
{
    const bad_data cases[] = {
        {"", "data.txt: no examples"},
        {"\n\n", "data.txt: no examples"},
        {"1 2 3\n", "data.txt:1: no tab between the source and the target"},
        {"1 2\t2 1\n1 2\t3\t4\n", "data.txt:2: more than one tab"},
        {"\xEF\xBB\xBF" "1 2\t2 1\n", "data.txt:1: starts with a UTF-8 byte order mark (bytes EF BB BF)"},
        {"1 2\t2 1\r3 4\t4 3\r", "data.txt:1: a carriage return (CR) inside the line: the file has CR-only line "
                                "endings"},
        {"1 2\t2 1\n3 4\r\t4 3\n", "data.txt:2: a carriage return (CR) inside the line"},
        {"1 x\t2\n", "data.txt:1: 'x' is not a symbol (an integer in [0, 8))"},
        {"1 2\t2 1\n\n5 9\t1\n", "data.txt:3: symbol 9 is outside [0, 8)"},
        {"-1\t2\n", "data.txt:1: symbol -1 is outside [0, 8)"},
        {"1.5\t2\n", "data.txt:1: '1.5' is not a symbol"},
        {"\t1 2\n", "data.txt:1: empty source"},
        {"1 2\t\n", "data.txt:1: empty target"},
        {"1 2 3 4 5\t1 2 3 4 5\n1 2 3 4 5 6\t1 2 3 4 5\n", "data.txt:2: source (6) and target (5) need 14 "
                                                           "tokens with BOS, SEP and EOS, more than Tmax = 13"},
    };
    const char *flags = "--symbols 8 --max-len 5 --layers 1 --d-model 16 --heads 2 --steps 2 --warmup 1 "
                        "--threads 1";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file("data.txt", cases[i].text);
        int st = run("train --data data.txt %s", flags);
        cr_expect_eq(st, 2, "case %zu: status %d", i, st);
        cr_expect(strstr(err_text, cases[i].message), "case %zu: expected \"%s\" in:\n%s", i, cases[i].message,
                  err_text);
    }
    cr_assert_eq(run("train --data nothere.txt %s", flags), 2);
    cr_assert(strstr(err_text, "nothere.txt: cannot open"), "%s", err_text);
    /* blank lines and CRLF are fine; a bad --eval-data is named */
    write_file("data.txt", "1 2\t2 1\r\n\r\n3 4 5\t5 4 3\r\n");
    write_file("eval.txt", "1 2\t2 1\n7 7 7\n");
    cr_assert_eq(run("train --data data.txt --eval-data eval.txt %s", flags), 2);
    cr_assert(strstr(err_text, "eval.txt:2: no tab"), "%s", err_text);
    cr_assert_eq(run("train --data data.txt %s --out ok", flags), 0, "%s", err_text);
    cr_assert(strstr(err_text, "2 lines"), "%s", err_text);
}
