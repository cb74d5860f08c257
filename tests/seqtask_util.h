/* Harness shared by the suites that run the built examples/seqtask binary
 * as a user would (test_train.c, test_determinism.c, test_crash.c): a
 * per-test temporary directory, reading a whole file and a log.csv, and run(), which
 * executes "seqtask <args>" in that directory and captures its stderr (and
 * its stdout when SEQTASK_CAPTURE_STDOUT is defined before the include);
 * spawn() / spawn_then() / spawn_wait() start one without a shell, to signal
 * it or to limit it. */
#ifndef TAPEGRAD_TESTS_SEQTASK_UTIL_H
#define TAPEGRAD_TESTS_SEQTASK_UTIL_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#define SEQTASK TG_BINARY_DIR "/seqtask"

/* The test's temporary directory: made by seqtask_setup, removed by seqtask_teardown. */
static char dir[256];
/* Put before the binary by run(): "" or a launcher ("timeout 90 mpirun -np 2"). */
static const char *launcher = "";
static char err_text[1 << 16];
#ifdef SEQTASK_CAPTURE_STDOUT
static char out_text[1 << 16];
#endif

/* For a suite's .init: skips the test when seqtask is not built, optionally
 * pins OpenBLAS to one thread (for bit-identical runs), and makes
 * /tmp/<name>.XXXXXX. */
static inline void seqtask_setup(const char *name, bool one_blas_thread)
{
    if (access(SEQTASK, X_OK) != 0) cr_skip_test("%s is not built (TAPEGRAD_EXAMPLES=OFF)", SEQTASK);
    if (one_blas_thread) setenv("OPENBLAS_NUM_THREADS", "1", 1);
    tu_tmpdir(dir, sizeof dir, name);
}

/* For a suite's .fini: rm -rf the test's directory. */
static inline void seqtask_teardown(void) { tu_tmpdir_remove(dir); }

/* Newlines in text. */
static inline int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

/* The whole file at `path` (at most len - 1 bytes), NUL-terminated; "" when
 * it cannot be opened. */
static inline void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
}

/* Runs "seqtask <args>" (args: printf format; use the dir variable for the
 * test's directory) in the test's directory; stderr lands in err_text (and
 * stdout in out_text with SEQTASK_CAPTURE_STDOUT). Fails the test on a
 * sanitizer report. Returns the exit status (128 + signal when killed). */
/* The rows of dir/rel (a log.csv) as text: the header and every row when
 * after < 0, else the rows of the steps after `after`. Of each row the first
 * `cols` columns, or with cols 0 every column but ms (the 5th: the one
 * timing that differs between identical runs), which the row must have. */
static inline void log_text(const char *rel, long after, int cols, char *buf, size_t len)
{
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s is missing", path);
    size_t n = 0;
    buf[0] = '\0';
    for (int row = 0; fgets(line, sizeof line, f); row++) {
        if (after >= 0 && (row == 0 || atol(line) <= after)) continue;
        line[strcspn(line, "\n")] = '\0';
        char *a = line;  /* the comma that ends column cols - 1 (or 3: before ms) */
        for (int c = 0; c < (cols ? cols : 4) && a; c++) a = strchr(a + 1, ',');
        if (cols) {
            if (a) *a = '\0';
            n += (size_t)snprintf(buf + n, len - n, "%s\n", line);
        } else {
            char *b = a ? strchr(a + 1, ',') : NULL;
            cr_assert_not_null(b, "%s: %s", path, line);
            n += (size_t)snprintf(buf + n, len - n, "%.*s%s\n", (int)(a - line), line, b);
        }
        cr_assert(n < len);
    }
    fclose(f);
}

static inline int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int run(const char *fmt, ...)
{
    char args[4096], cmd[8192], path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s' %s >stdout.txt 2>stderr.txt", dir, launcher, SEQTASK, args);
    int st = system(cmd);
#ifdef SEQTASK_CAPTURE_STDOUT
    snprintf(path, sizeof path, "%s/stdout.txt", dir);
    slurp(path, out_text, sizeof out_text);
#endif
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    slurp(path, err_text, sizeof err_text);
    cr_assert(!strstr(err_text, "Sanitizer") && !strstr(err_text, "runtime error:"),
              "sanitizer report from seqtask %s:\n%s", args, err_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Starts "seqtask <args>" (split on spaces) in the test's directory without
 * a shell in between, so that a signal reaches seqtask itself; its stdout
 * goes to /dev/null, its stderr to stderr.txt (read it with spawn_wait).
 * in_child, when not NULL, runs in the child just before the exec (to set
 * a limit, say). */
static inline pid_t spawn_then(const char *args, void (*in_child)(void))
{
    static char buf[4096];
    char *argv[128];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", args);
    argv[argc++] = SEQTASK;
    for (char *s = strtok(buf, " "); s && argc < 127; s = strtok(NULL, " ")) argv[argc++] = s;
    argv[argc] = NULL;
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (chdir(dir) != 0 || null < 0) _exit(127);
        int err = open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(null, 1);
        dup2(err >= 0 ? err : null, 2);
        if (in_child) in_child();
        execv(SEQTASK, argv);
        _exit(127);
    }
    return pid;
}

static inline pid_t spawn(const char *args) { return spawn_then(args, NULL); }

/* Waits for a spawned seqtask: its exit status (128 + signal when killed),
 * its stderr in err_text. */
static inline int spawn_wait(pid_t pid)
{
    int st;
    char path[512];
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    slurp(path, err_text, sizeof err_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
