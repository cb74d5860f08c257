/* A training run at the machine's limits: every write it makes is checked,
 * and it ends promptly when memory runs out.
 *
 * disk: a full disk is a file size limit here (RLIMIT_FSIZE with SIGXFSZ
 * ignored: a write past it fails with EFBIG as one on a full disk fails with
 * ENOSPC; no root, no mount). A log row that cannot be written stops the
 * run with status 1 naming log.csv and the step; the file holds whole rows
 * only, and once the disk has room the resume from the last checkpoint
 * gives a log without a gap. A checkpoint that cannot be written fails the
 * run and leaves the old one byte for byte, with no temporary file beside
 * it. stdout that cannot be written is an error.
 *
 * memory: under an address-space limit (RLIMIT_AS) seqtask says "out of
 * memory" and exits 1 with OpenBLAS's threads left at their defaults (they
 * are what hung it at exit: docs/RELIABILITY.md, section 5), where the
 * GEMMs are tapegrad's own (OpenBLAS's hang inside); a watchdog kills a run
 * that has not ended after 30 s. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "../core/kernels/gemm.h"
#include "seqtask_util.h"

static void setup(void) { seqtask_setup("tg_test_limits", true); }
static void teardown(void) { seqtask_teardown(); }

TestSuite(disk, .init = setup, .fini = teardown, .timeout = 300);
TestSuite(memory, .init = setup, .fini = teardown, .timeout = 300);

/* A checkpoint of 20 KB (40 KB in double), a log row of about 50 bytes. */
#define TINY "--task copy --symbols 6 --min-len 1 --max-len 4 --layers 1 --d-model 8 --heads 1 --d-ff 8 " \
             "--batch 4 --warmup 2 --eval-every 0 --eval-size 4 --target-acc 0 --log-every 1000 --threads 1"

static int limit_resource;
static rlim_t limit_value;

/* In the child: the limit, SIGXFSZ ignored, OpenBLAS's thread count unset. */
static void set_limit(void)
{
    signal(SIGXFSZ, SIG_IGN);
    unsetenv("OPENBLAS_NUM_THREADS");
    struct rlimit rl = {limit_value, limit_value};
    if (setrlimit(limit_resource, &rl) != 0) _exit(126);
}

/* Runs "seqtask <args>" like spawn() under setrlimit(resource, limit) with
 * SIGXFSZ ignored, and with OpenBLAS's thread count unset (its default: one
 * per core). A run that has not ended after 30 s is killed (128 + SIGKILL).
 * Its stderr lands in err_text. */
static int run_limited(int resource, rlim_t limit, const char *args)
{
    limit_resource = resource;
    limit_value = limit;
    pid_t pid = spawn_then(args, set_limit);
    int st = 0;
    struct timespec t0, now, pause = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        cr_assert_neq(w, -1);
        if (w == pid) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 30) {
            kill(pid, SIGKILL);
            cr_assert_eq(waitpid(pid, &st, 0), pid);
            break;
        }
        nanosleep(&pause, NULL);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    slurp(path, err_text, sizeof err_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static long file_size(const char *rel)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Checks that dir/rel is log.csv's header then whole rows of the steps 1,
 * 2, ... (7 fields each, a newline at the end); returns their count. The
 * text goes to buf. */
static long whole_rows(const char *rel, char *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    slurp(path, buf, len);
    const char *header = "step,loss,lr,grad_norm,ms,eval_acc,eval_token_acc\n";
    cr_assert(strncmp(buf, header, strlen(header)) == 0, "%s: header: %.80s", rel, buf);
    long rows = 0;
    for (const char *s = buf + strlen(header); *s; rows++) {
        const char *nl = strchr(s, '\n');
        cr_assert_not_null(nl, "%s: the last row is cut off: '%s'", rel, s);
        int commas = 0;
        for (const char *c = s; c < nl; c++) commas += *c == ',';
        cr_assert_eq(commas, 6, "%s: row %ld has %d fields: '%.*s'", rel, rows + 1, commas + 1, (int)(nl - s), s);
        cr_assert_eq(atol(s), rows + 1, "%s: row %ld is of step %ld", rel, rows + 1, atol(s));
        s = nl + 1;
    }
    return rows;
}

Test(disk, a_full_disk_stops_the_run_with_whole_rows_and_the_resume_fills_the_log)
{
    static char first[1 << 17], second[1 << 17];
    /* the checkpoints fit, the log outgrows it after some 1200 rows */
    const long limit = 64 * 1024, steps = 2000, every = 200;
    char args[1024];
    snprintf(args, sizeof args, "train " TINY " --steps %ld --save-every %ld --out run", steps, every);
    int st = run_limited(RLIMIT_FSIZE, (rlim_t)limit, args);
    cr_assert_eq(st, 1, "status %d:\n%s", st, err_text);
    long rows = whole_rows("run/log.csv", first, sizeof first);
    cr_assert(rows > every && rows < steps, "%ld rows", rows);
    cr_assert_leq(file_size("run/log.csv"), limit);
    char want[256];
    snprintf(want, sizeof want, "run/log.csv: cannot write the row of step %ld: %s", rows + 1, strerror(EFBIG));
    cr_assert(strstr(err_text, want), "expected \"%s\" in:\n%s", want, err_text);

    /* the disk has room again: the resume from the last checkpoint carries the log on */
    cr_assert_eq(run("train --resume run/checkpoint.safetensors --steps %ld", steps), 0, "%s", err_text);
    cr_assert_eq(whole_rows("run/log.csv", second, sizeof second), steps);
    /* the rows up to the checkpoint are the first run's, byte for byte */
    const char *cut = first;
    for (long r = 0; r <= rows / every * every; r++) cut = strchr(cut, '\n') + 1;
    cr_assert(strncmp(first, second, (size_t)(cut - first)) == 0);
}

/* dir/rel's bytes into buf; their count. */
static size_t read_bytes(const char *rel, char *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s is missing", rel);
    size_t n = fread(buf, 1, len, f);
    fclose(f);
    cr_assert_lt(n, len);
    return n;
}

Test(disk, a_checkpoint_that_cannot_be_written_leaves_the_old_one)
{
    static char before[1 << 17], after[1 << 17];
    cr_assert_eq(run("train " TINY " --steps 20 --out run"), 0, "%s", err_text);
    size_t n = read_bytes("run/checkpoint.safetensors", before, sizeof before);
    /* room for the log, not for a checkpoint */
    int st = run_limited(RLIMIT_FSIZE, 8 * 1024, "train --resume run/checkpoint.safetensors --steps 40 --save-every 10");
    cr_assert_eq(st, 1, "status %d:\n%s", st, err_text);
    cr_assert(strstr(err_text, "run/checkpoint.safetensors: cannot write the file") && strstr(err_text, strerror(EFBIG)) &&
              strstr(err_text, "the old file, if any, is untouched"), "%s", err_text);
    cr_assert_eq(read_bytes("run/checkpoint.safetensors", after, sizeof after), n);
    cr_assert(memcmp(before, after, n) == 0, "the old checkpoint changed");
    char run_dir[512];
    snprintf(run_dir, sizeof run_dir, "%s/run", dir);
    cr_assert_eq(tu_dir_entries(run_dir), 5, "a temporary file is left in run/");  /* log, 2 safetensors, 2 PNGs */
    cr_assert_eq(whole_rows("run/log.csv", after, sizeof after), 30);  /* the row of step 30, then its save */
}

Test(disk, stdout_that_cannot_be_written_is_an_error)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' train " TINY " --steps 3 --out run >/dev/full 2>stderr.txt", dir,
             SEQTASK);
    if (access("/dev/full", W_OK) != 0) cr_skip_test("no /dev/full");
    int st = system(cmd);
    char path[512];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    slurp(path, err_text, sizeof err_text);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d:\n%s", st, err_text);
    cr_assert(strstr(err_text, "seqtask: cannot write to stdout: No space left on device"), "%s", err_text);
}

/* seqtask under `ulimit -v` limits around OpenBLAS's 128 MiB buffer per
 * thread, and above it, --threads 1 and 2: each run exits 1 saying "out of
 * memory" (a hang is killed after 30 s), and a command that succeeds ends. */
static void out_of_memory_exits_1(const char *gemm)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("RLIMIT_AS and AddressSanitizer do not mix (it reserves terabytes of address space)");
#elif defined(TG_EMULATED)
    cr_skip_test("under qemu-user RLIMIT_AS limits the emulator's own address space, not the program's");
#else
    if (gemm) setenv("TAPEGRAD_GEMM", gemm, 1);
    const long limits[] = {100000, 150000, 200000, 250000, 400000};  /* KiB, as ulimit -v */
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        for (int threads = 1; threads <= 2; threads++) {
            char args[256];
            snprintf(args, sizeof args, "train --steps 5 --threads %d --out oom --overwrite", threads);
            int st = run_limited(RLIMIT_AS, (rlim_t)limits[i] * 1024, args);
            cr_expect_eq(st, 1, "GEMM %s, ulimit -v %ld, --threads %d: status %d%s:\n%s", gemm ? gemm : "default",
                         limits[i], threads, st, st == 128 + SIGKILL ? " (killed after 30 s: it hung)" : "", err_text);
            cr_expect(strstr(err_text, "out of memory"), "GEMM %s, ulimit -v %ld, --threads %d:\n%s",
                      gemm ? gemm : "default", limits[i], threads, err_text);
        }
    }
    int st = run_limited(RLIMIT_AS, (rlim_t)100000 * 1024, "--help");
    cr_expect_eq(st, 0, "ulimit -v 100000, --help: status %d:\n%s", st, err_text);
#endif
}

Test(memory, out_of_memory_under_an_address_space_limit_exits_1) { out_of_memory_exits_1(NULL); }

/* The same with OpenBLAS's GEMMs (CPUs without AVX2, aarch64): OpenBLAS 0.3.21
 * retries forever when it cannot map its buffer, so core/kernels/openblas.c
 * runs a product that has no room for it in plain loops. */
Test(memory, out_of_memory_under_an_address_space_limit_exits_1_with_openblas_gemms)
{
    out_of_memory_exits_1("blas");
}
