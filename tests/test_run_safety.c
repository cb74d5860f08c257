/* A training run never loses another run's files, and SIGUSR1 (or SIGINT)
 * is always a clean stop.
 *
 * outdir: a --out that holds a run is refused before anything in it is
 * touched, even by a run killed a moment after it started; --overwrite
 * replaces it; --resume carries on its own run.
 *
 * checkpoint: a flipped data byte or an edited metadata value in a
 * checkpoint is refused by --resume, naming the tensor or the metadata;
 * so is a checkpoint holding NaN in a weight or a moment. A checkpoint
 * whose checksum table was renamed by one flipped bit, or removed, is
 * refused by --resume, --init and eval, naming the problem and
 * --no-verify, which loads it; no single flipped bit of a checkpoint's
 * header, with a flipped data byte, loads.
 *
 * stop: SIGUSR1 as early as the process can catch it (its handler shows in
 * /proc/<pid>/status), and a burst of them while the run stops and saves,
 * each end with status 130 and a checkpoint that resumes. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tapegrad/core/io/io.h>
#include "seqtask_util.h"

static void setup(void) { seqtask_setup("tg_test_run_safety", true); }
static void teardown(void) { seqtask_teardown(); }

TestSuite(outdir, .init = setup, .fini = teardown, .timeout = 300);
TestSuite(stop, .init = setup, .fini = teardown, .timeout = 300);
TestSuite(checkpoint, .init = setup, .fini = teardown, .timeout = 300);

#define TINY "--task copy --symbols 6 --min-len 1 --max-len 4 --layers 1 --d-model 16 --heads 2 --d-ff 32 " \
             "--batch 8 --warmup 2 --eval-every 0 --eval-size 8 --target-acc 0 --threads 1"

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, us % 1000000 * 1000};
    nanosleep(&ts, NULL);
}

/* dir/rel's bytes into a new buffer (*n of them, then a NUL). */
static char *read_all(const char *rel, size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s is missing", rel);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    char *b = malloc(*n + 1);
    cr_assert(b && fread(b, 1, *n, f) == *n);
    b[*n] = '\0';
    fclose(f);
    return b;
}

static const char *const run_files[] = {"log.csv", "checkpoint.safetensors", "model.safetensors"};

Test(outdir, a_run_into_a_directory_holding_a_run_leaves_it_intact)
{
    cr_assert_eq(run("train " TINY " --steps 10 --save-every 5 --out ow"), 0, "%s", err_text);
    char *before[3], rel[64];
    size_t len[3];
    for (int i = 0; i < 3; i++) {
        snprintf(rel, sizeof rel, "ow/%s", run_files[i]);
        before[i] = read_all(rel, &len[i]);
    }
    /* killed 0.7 s after it started, or refused before */
    pid_t pid = spawn("train " TINY " --steps 100000 --save-every 1 --out ow");
    sleep_us(700000);
    kill(pid, SIGKILL);
    spawn_wait(pid);
    cr_assert_eq(run("train " TINY " --steps 100000 --out ow"), 2, "%s", err_text);
    cr_assert(strstr(err_text, "--out ow holds another run (log.csv): give --overwrite to replace it"), "%s",
              err_text);
    for (int i = 0; i < 3; i++) {
        size_t n;
        snprintf(rel, sizeof rel, "ow/%s", run_files[i]);
        char *now = read_all(rel, &n);
        cr_assert(n == len[i] && memcmp(now, before[i], n) == 0, "%s changed", rel);
        free(now);
    }
    /* its own resume carries on; --overwrite replaces it */
    cr_assert_eq(run("train --resume ow/checkpoint.safetensors --steps 12 --threads 1"), 0, "%s", err_text);
    cr_assert_eq(run("train " TINY " --steps 3 --overwrite --out ow"), 0, "%s", err_text);
    size_t n;
    char *log = read_all("ow/log.csv", &n);
    cr_assert_eq(count_lines(log), 4, "the new run's log:\n%s", log);
    free(log);
    for (int i = 0; i < 3; i++) free(before[i]);
}

Test(outdir, help_says_what_happens_to_an_existing_run)
{
    cr_assert_eq(run("train --help"), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/stdout.txt", dir);
    slurp(path, err_text, sizeof err_text);
    cr_assert(strstr(err_text, "--overwrite") && strstr(err_text, "holds another run is refused"), "%s", err_text);
}

/* Waits until pid has a handler for sig (SigCgt in /proc/<pid>/status). */
static void wait_for_handler(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    for (int tries = 0; tries < 200000; tries++) {
        FILE *f = fopen(path, "r");
        unsigned long long mask = 0;
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "SigCgt:", 7) == 0) mask = strtoull(line + 7, NULL, 16);
        if (f) fclose(f);
        if (mask >> (sig - 1) & 1) return;
        sleep_us(10);
    }
    cr_assert_fail("seqtask never caught signal %d", sig);
}

static void assert_clean_stop(int st, const char *what)
{
    cr_assert_eq(st, 130, "%s: status %d\n%s", what, st, err_text);
    cr_assert(strstr(err_text, "interrupted at step") && strstr(err_text, "saved s/checkpoint.safetensors"), "%s:\n%s",
              what, err_text);
    cr_assert_eq(run("train --resume s/checkpoint.safetensors --steps 30 --threads 1"), 0, "%s: %s", what, err_text);
}

/* 200,000 lines of copy examples: a setup that takes a while. */
static void big_data(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/big.tsv", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 200000; i++) fprintf(f, "%d %d\t%d %d\n", i % 6, i / 6 % 6, i % 6, i / 6 % 6);
    fclose(f);
}

Test(stop, sigusr1_as_early_as_it_can_be_caught_is_a_clean_stop)
{
    /* scripts/test-aarch64.sh sets it: under qemu-user, /proc shows the
     * emulator's handlers (it catches every signal) long before seqtask's */
    if (getenv("QEMU_LD_PREFIX")) cr_skip_test("under qemu-user /proc cannot tell when seqtask's handler is in");
    big_data();
    char log[512];
    snprintf(log, sizeof log, "%s/s/log.csv", dir);
    for (int sig = 0; sig < 2; sig++) {
        int s = sig ? SIGINT : SIGUSR1;
        unlink(log);  /* the first round's run */
        pid_t pid = spawn("train --data big.tsv --symbols 6 --max-len 4 --layers 1 --d-model 16 --heads 2 "
                          "--d-ff 32 --batch 8 --warmup 2 --eval-every 0 --eval-size 8 --threads 1 --steps 100000 "
                          "--overwrite --out s");
        wait_for_handler(pid, s);
        /* the handler is there before the setup (reading 200,000 lines) is done */
        cr_assert(access(log, F_OK) != 0, "the handler came after the setup");
        kill(pid, s);
        assert_clean_stop(spawn_wait(pid), s == SIGUSR1 ? "SIGUSR1" : "SIGINT");
    }
}

Test(stop, a_burst_of_signals_while_stopping_does_not_kill_the_save)
{
    /* --save-every 1 and --dropout: the stop, the saves and the signals overlap */
    pid_t pid = spawn("train " TINY " --dropout 0.1 --steps 100000 --save-every 1 --out s");
    wait_for_handler(pid, SIGUSR1);
    sleep_us(300000);
    for (int i = 0; i < 200; i++) {
        if (kill(pid, SIGUSR1) != 0) break;  /* it has exited */
        sleep_us(500);
    }
    assert_clean_stop(spawn_wait(pid), "200 SIGUSR1 0.5 ms apart");
}

static void write_all(const char *rel, const char *b, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    cr_assert(f && fwrite(b, 1, n, f) == n);
    fclose(f);
}

static uint64_t header_len(const char *b)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | (uint8_t)b[i];
    return n;
}

Test(checkpoint, a_corrupt_or_edited_checkpoint_is_refused_by_name)
{
    cr_assert_eq(run("train " TINY " --steps 5 --lr 0.001 --out c"), 0, "%s", err_text);
    size_t n;
    char *b = read_all("c/checkpoint.safetensors", &n);
    size_t data = 8 + header_len(b);
    /* the first tensor in the data section is the token embedding */
    b[data + 5] ^= 0x04;
    write_all("c/flipped.safetensors", b, n);
    b[data + 5] ^= 0x04;
    cr_assert_eq(run("train --resume c/flipped.safetensors --steps 6 --threads 1 --out f"), 2, "%s", err_text);
    cr_assert(strstr(err_text, "c/flipped.safetensors: tensor 'tok_emb.weight': its data does not match its checksum"),
              "%s", err_text);
    char *lr = strstr(b + 8, "\"lr\":\"0.001\"");
    cr_assert_not_null(lr);
    lr[9] = '9';  /* 0.001 -> 0.009 */
    write_all("c/edited.safetensors", b, n);
    cr_assert_eq(run("train --resume c/edited.safetensors --steps 6 --threads 1 --out e"), 2, "%s", err_text);
    cr_assert(strstr(err_text, "c/edited.safetensors: the metadata or the list of tensors") &&
              strstr(err_text, "does not match its checksum"), "%s", err_text);
    free(b);
}

/* A checkpoint with valid checksums whose weight or moment is NaN. */
Test(checkpoint, non_finite_weights_or_moments_are_not_resumed)
{
    static const char *const names[] = {"head.bias", "optim.adam.v.ln_f.weight"};
    cr_assert_eq(run("train " TINY " --steps 5 --out c"), 0, "%s", err_text);
    char path[512];
    snprintf(path, sizeof path, "%s/c/checkpoint.safetensors", dir);
    for (int i = 0; i < 2; i++) {
        tg_safetensors *s;
        cr_assert_eq(tg_st_load(path, &s), 0, "%s", tg_error());
        tg_tensor *x = tg_st_get(s, names[i]);
        cr_assert_not_null(x, "%s", names[i]);
        x->data[1] = (tg_real)NAN;
        char nan_path[600];
        snprintf(nan_path, sizeof nan_path, "%s/c/nan%d.safetensors", dir, i);
        cr_assert_eq(tg_st_save(s, nan_path, sizeof(tg_real) == 8 ? TG_F64 : TG_F32), 0);
        tg_st_free(s);
        cr_assert_eq(run("train --resume c/nan%d.safetensors --steps 6 --threads 1 --out n%d", i, i), 2, "%s",
                     err_text);
        cr_assert(strstr(err_text, names[i]) && strstr(err_text, "non-finite"), "%s", err_text);
    }
}

/* The bytes (*n) of c/checkpoint.safetensors after a run of `steps`. */
static char *trained_checkpoint(int steps, size_t *n)
{
    cr_assert_eq(run("train " TINY " --steps %d --out c", steps), 0, "%s", err_text);
    return read_all("c/checkpoint.safetensors", n);
}

/* Every command that reads c/<name> refuses it with exit status 2 and a
 * message holding `want` and naming --no-verify; with --no-verify a resume
 * from it runs. */
static void refused_unless_no_verify(const char *name, const char *want)
{
    static const char *const cmds[] = {"train --resume c/%s --steps 6 --threads 1 --out r",
                                       "train " TINY " --steps 3 --init c/%s --out i",
                                       "eval --model c/%s --eval-size 4 --threads 1"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(run(cmds[i], name), 2, "%s: %s", cmds[i], err_text);
        cr_assert(strstr(err_text, want) && strstr(err_text, "--no-verify"), "%s: %s", cmds[i], err_text);
    }
    cr_assert_eq(run("train --resume c/%s --steps 6 --threads 1 --out r --no-verify", name), 0, "%s", err_text);
    cr_assert_eq(run("eval --model c/%s --eval-size 4 --threads 1 --no-verify", name), 0, "%s", err_text);
}

/* "tapegrad.crc32" -> "tapegrad.Crc32" and a data byte flipped (the low
 * byte of a weight: a small change that --no-verify then trains on). */
Test(checkpoint, a_checksum_key_renamed_by_one_bit_is_refused_unless_no_verify)
{
    size_t n;
    char *b = trained_checkpoint(5, &n);
    char *key = strstr(b + 8, "\"tapegrad.crc32\"");
    cr_assert_not_null(key);
    key[10] ^= 0x20;
    b[8 + header_len(b)] ^= 0x01;
    write_all("c/damaged.safetensors", b, n);
    refused_unless_no_verify("damaged.safetensors", "c/damaged.safetensors: metadata 'tapegrad.Crc32' says tapegrad "
                                                    "wrote the file, but it has no checksum table 'tapegrad.crc32'");
    free(b);
}

/* The table's entry replaced by spaces (valid JSON, the same length): the
 * "format" left says seqtask wrote it. Blanking "format" instead is caught
 * by the table. */
Test(checkpoint, a_checkpoint_without_its_table_is_refused_unless_no_verify)
{
    size_t n;
    char *b = trained_checkpoint(5, &n);
    char *at = strstr(b + 8, ",\"tapegrad.crc32\":\"");
    cr_assert_not_null(at);
    char *end = at + strlen(",\"tapegrad.crc32\":\"");
    while (*end != '"') end += *end == '\\' ? 2 : 1;
    char *saved = malloc(n);
    memcpy(saved, b, n);
    memset(at, ' ', (size_t)(end + 1 - at));
    write_all("c/no_table.safetensors", b, n);
    refused_unless_no_verify("no_table.safetensors", "c/no_table.safetensors: ");
    cr_assert_eq(run("train --resume c/no_table.safetensors --steps 6 --threads 1 --out r2"), 2);
    cr_assert(strstr(err_text, "the file has no checksum table 'tapegrad.crc32'"), "%s", err_text);
    cr_assert_eq(run("train " TINY " --steps 3 --init c/no_table.safetensors --out i2"), 2);
    cr_assert(strstr(err_text, "metadata \"format\" is \"seqtask-1\" (seqtask wrote the file), but it has no "
                               "checksum table"), "%s", err_text);
    char *fmt = strstr(saved + 8, "\"format\":\"seqtask-1\",");
    cr_assert_not_null(fmt);
    memset(fmt, ' ', strlen("\"format\":\"seqtask-1\","));
    write_all("c/no_format.safetensors", saved, n);
    cr_assert_eq(run("train --resume c/no_format.safetensors --steps 6 --threads 1 --out r3"), 2);
    cr_assert(strstr(err_text, "the metadata or the list of tensors") &&
                  strstr(err_text, "does not match its checksum"),
              "%s", err_text);
    free(saved);
    free(b);
}

/* One bit of every header byte (bit i % 8 of byte i, and every bit of the
 * table's key and of the 8-byte length), with a data byte flipped: none
 * loads, as seqtask reads (every file it opens must carry its table) or by
 * default. */
Test(checkpoint, no_flipped_header_bit_with_a_flipped_data_byte_loads)
{
    size_t n;
    char *b = trained_checkpoint(3, &n);
    size_t data = 8 + header_len(b), key = (size_t)(strstr(b + 8, "\"tapegrad.crc32\"") - b), tried = 0;
    b[data + (n - data) / 2] ^= 0x10;
    for (size_t i = 0; i < data; i++)
        for (int bit = 0; bit < 8; bit++) {
            if (bit != (int)(i % 8) && i >= 8 && (i < key || i >= key + 16)) continue;
            b[i] ^= (char)(1u << bit);
            for (int v = 0; v < 2; v++) {
                tg_safetensors *s = NULL;
                tg_st_verify how = v ? TG_ST_VERIFY_REQUIRED : TG_ST_VERIFY_AUTO;
                int rc = tg_st_parse_verify((const uint8_t *)b, n, "ckpt", how, &s);
                cr_assert(rc == -1 && !s, "header byte %zu with bit %d flipped: loaded", i, bit);
            }
            b[i] ^= (char)(1u << bit);
            tried++;
        }
    cr_assert_gt(tried, data);
    free(b);
}
