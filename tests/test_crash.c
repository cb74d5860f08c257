/* seqtask under SIGKILL, and at the edges of its configuration space.
 *
 * crash: `seqtask train --save-every 1` rewrites its checkpoint after every
 * step; it is killed at random moments, many times. After each kill the
 * checkpoint on disk (if there is one yet) must load, and --resume from it
 * must run to the end and log exactly the rows of an uninterrupted run.
 * Stale temporary files of the killed writers must not stop later saves.
 *
 * edges: one symbol, sequences of length 1, one head, batch 1, d_head 1,
 * an empty data file: each trains (finite losses, a model that evaluates
 * and decodes) or is refused with a message and status 2.
 *
 * Tiny configurations, one thread: seconds, also under the sanitizers. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tapegrad/core/io/io.h>
#include "seqtask_util.h"

static void setup(void) { seqtask_setup("tg_test_crash", true); }
static void teardown(void) { seqtask_teardown(); }

TestSuite(crash, .init = setup, .fini = teardown, .timeout = 300);

static const char *path_of(const char *rel)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, rel);
    return p[k];
}

/* Files in dir/rel whose name holds ".tmp." (the writer's temporaries). */
static int count_temps(const char *rel)
{
    DIR *d = opendir(path_of(rel));
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

/* Cosine schedule and dropout: a resume must restore the step, the
 * optimizer and the dropout RNG to log the same rows. */
#define CRASH_RUN "train --task copy --symbols 6 --min-len 1 --max-len 4 --layers 1 --d-model 16 " \
                  "--heads 2 --d-ff 32 --batch 8 --warmup 5 --schedule cosine --dropout 0.1 "     \
                  "--eval-every 0 --eval-size 8 --target-acc 0 --threads 1"
#define CRASH_STEPS 40
#define KILLS 20

static const char *const modes[] = {"fused", "per-head"};

/* Runs the two uninterrupted runs ref0 (fused) and ref1 (per-head);
 * returns the time they took, in microseconds. */
static long reference_runs(void)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int m = 0; m < 2; m++)
        cr_assert_eq(run(CRASH_RUN " --mode %s --steps %d --save-every 1 --out ref%d", modes[m], CRASH_STEPS, m),
                     0, "%s", err_text);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (long)(1e6 * ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)));
}

/* Starts a run in dir/run and SIGKILLs it after `us` microseconds; returns
 * whether it had already finished. */
static bool kill_run_after(int mode, long us)
{
    char args[1024];
    snprintf(args, sizeof args, CRASH_RUN " --mode %s --steps %d --save-every 1 --overwrite --out run", modes[mode],
             CRASH_STEPS);
    pid_t pid = spawn(args);
    struct timespec ts = {us / 1000000, us % 1000000 * 1000};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(!WIFEXITED(st) || WEXITSTATUS(st) == 0, "seqtask exited with %d", WEXITSTATUS(st));
    return WIFEXITED(st);
}

/* dir/run/checkpoint.safetensors loads; --resume from it runs to the end
 * (in dir/res: it logs from the checkpoint's step on) and logs the rows of
 * the uninterrupted run of its mode. `what` names the kill. Returns the
 * checkpoint's step. */
static long check_checkpoint(const char *what)
{
    static char got[1 << 14], want[1 << 14];
    tg_safetensors *s;
    char ref[32];
    cr_assert_eq(tg_st_load(path_of("run/checkpoint.safetensors"), &s), 0, "%s: %s", what, tg_error());
    const char *step = tg_st_meta(s, "step"), *mode = tg_st_meta(s, "mode");
    cr_assert(step && mode && tg_st_meta(s, "rng_dropout") && tg_st_meta(s, "format"), "%s", what);
    long k = atol(step);
    snprintf(ref, sizeof ref, "ref%d/log.csv", strcmp(mode, "per-head") == 0);
    tg_st_free(s);
    cr_assert(k >= 1 && k <= CRASH_STEPS, "%s: step %ld", what, k);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/res'", dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(run("train --resume run/checkpoint.safetensors --threads 1 --overwrite --out res"), 0, "%s: %s", what,
                 err_text);
    log_text("res/log.csv", k, 4, got, sizeof got);
    log_text(ref, k, 4, want, sizeof want);
    cr_assert_str_eq(got, want, "%s, resumed at step %ld:\n%s\nuninterrupted:\n%s", what, k, got, want);
    return k;
}

Test(crash, sigkill_while_saving_then_resume)
{
    /* kills land anywhere in [0, 0.6 x the time of the two references] */
    long span = (long)(0.6 * (double)reference_runs());
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    srand(seed);
    int loaded = 0, finished = 0;
    char steps[KILLS * 8] = "", what[128];
    for (int i = 0; i < KILLS; i++) {
        long us = (long)((double)rand() / RAND_MAX * (double)span), k = -1;
        finished += kill_run_after(i % 2, us);
        snprintf(what, sizeof what, "kill %d after %ld us (seed %u)", i, us, seed);
        if (access(path_of("run/checkpoint.safetensors"), F_OK) == 0) {
            k = check_checkpoint(what);
            loaded++;
        }
        snprintf(steps + strlen(steps), sizeof steps - strlen(steps), " %ld", k);
    }
    /* killed writers leave their temporaries; the next run removes them */
    int stale = count_temps("run");
    cr_assert_eq(run(CRASH_RUN " --mode fused --steps 8 --save-every 1 --overwrite --out run"), 0, "%s", err_text);
    cr_assert_eq(count_temps("run"), 0, "%d stale temporaries were not removed", count_temps("run"));
    cr_log_info("crash: %d kills in [0, %ld] us (seed %u): %d checkpoints loaded and resumed bit for bit, "
                "%d runs had finished; stale temporaries left: %d; checkpoint steps (-1: none yet):%s",
                KILLS, span, seed, loaded, finished, stale, steps);
    cr_assert_geq(loaded, KILLS / 2);
}

/* ---- edges ------------------------------------------------------------- */

/* Every loss and gradient norm of dir/rel/log.csv is finite; returns the
 * number of rows. */
static int check_finite_log(const char *rel)
{
    char line[512];
    FILE *f = fopen(path_of(rel), "r");
    cr_assert_not_null(f, "%s is missing", rel);
    int rows = 0;
    for (int row = 0; fgets(line, sizeof line, f); row++) {
        if (row == 0) continue;
        char *s = strchr(line, ',');
        cr_assert_not_null(s);
        double loss = strtod(s + 1, &s), lr = strtod(s + 1, &s), gnorm = strtod(s + 1, &s);
        cr_assert(isfinite(loss) && isfinite(lr) && isfinite(gnorm), "%s: %s", rel, line);
        rows++;
    }
    fclose(f);
    return rows;
}

typedef struct {
    const char *name, *flags;
} edge;

#define EDGE_BASE "--min-len 1 --max-len 3 --layers 1 --d-model 8 --heads 2 --d-ff 16 --batch 4 --steps 3 --warmup 1 " \
                  "--eval-size 8 --threads 1 --target-acc 0"

Test(crash, edges_train_evaluate_and_decode)
{
    /* later flags win over EDGE_BASE's */
    const edge cases[] = {
        {"one_symbol", "--task copy --symbols 1"},
        {"one_symbol_sort", "--task sort --symbols 1"},
        {"length_one", "--task reverse --min-len 1 --max-len 1"},
        {"one_head", "--task copy --heads 1"},
        {"batch_one", "--task copy --batch 1"},
        {"d_head_one", "--task copy --heads 4 --d-head 1"},
        {"d_head_one_per_head", "--task copy --heads 4 --d-head 1 --mode per-head --dropout 0.5"},
        {"all_at_once", "--task copy --symbols 1 --min-len 1 --max-len 1 --heads 1 --d-model 1 "
                        "--d-head 1 --d-ff 1 --batch 1"},
        {"all_at_once_per_head", "--task copy --symbols 1 --min-len 1 --max-len 1 --heads 1 --d-model 1 "
                                 "--d-head 1 --d-ff 1 --batch 1 --mode per-head --dropout 0.5"},
        {"one_line_file", "--data one.txt --symbols 1 --max-len 1 --batch 1"},
    };
    FILE *f = fopen(path_of("one.txt"), "w");
    cr_assert_not_null(f);
    fputs("0\t0\n", f);
    fclose(f);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const edge *e = &cases[i];
        cr_assert_eq(run("train " EDGE_BASE " %s --out %s", e->flags, e->name), 0, "%s: %s", e->name, err_text);
        char rel[128];
        snprintf(rel, sizeof rel, "%s/log.csv", e->name);
        cr_assert_eq(check_finite_log(rel), 3, "%s", e->name);
        cr_assert_eq(run("eval --model %s/model.safetensors --eval-size 4 --threads 1", e->name), 0, "%s: %s",
                     e->name, err_text);
        cr_assert_eq(run("generate --model %s/model.safetensors --input 0 --threads 1", e->name), 0, "%s: %s",
                     e->name, err_text);
        cr_assert_eq(run("train --resume %s/checkpoint.safetensors --steps 4 --threads 1", e->name), 0,
                     "%s: %s", e->name, err_text);
        cr_assert_eq(check_finite_log(rel), 4, "%s", e->name);
    }
}

Test(crash, edges_refused_with_a_message)
{
    const edge cases[] = {
        {"empty.txt", ""},
        {"blank.txt", "\n\r\n  \n"},
        {"one.txt", "0\t0\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path_of(cases[i].name), "w");
        cr_assert_not_null(f);
        fputs(cases[i].flags, f);
        fclose(f);
    }
    /* an empty file, or one with only blank lines, holds no example */
    cr_assert_eq(run("train " EDGE_BASE " --data empty.txt"), 2);
    cr_assert(strstr(err_text, "empty.txt: no examples"), "%s", err_text);
    /* "  " is a line (not blank) without a tab */
    cr_assert_eq(run("train " EDGE_BASE " --data blank.txt"), 2);
    cr_assert(strstr(err_text, "blank.txt:3: no tab"), "%s", err_text);
    cr_assert_eq(run("train " EDGE_BASE " --data one.txt --symbols 1 --max-len 1 --eval-data empty.txt"), 2);
    cr_assert(strstr(err_text, "empty.txt: no examples"), "%s", err_text);
    /* the limits of the flags themselves */
    const edge refused[] = {
        {"--symbols 0", "--symbols '0' is not allowed: expected an integer in [1, 65536]"},
        {"--max-len 0", "--max-len '0' is not allowed"},
        {"--max-len 2049", "--max-len '2049' is not allowed: expected an integer in [1, 2048]"},
        {"--min-len 0", "--min-len '0' is not allowed"},
        {"--heads 0", "--heads '0' is not allowed"},
        {"--batch 0", "--batch '0' is not allowed"},
        {"--d-model 0", "--d-model '0' is not allowed"},
        {"--d-model 1 --heads 2", "--d-model 1 is not divisible by --heads 2"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        cr_expect_eq(run("train " EDGE_BASE " %s", refused[i].name), 2, "%s", refused[i].name);
        cr_expect(strstr(err_text, refused[i].flags), "%s: expected \"%s\" in:\n%s", refused[i].name,
                  refused[i].flags, err_text);
    }
}
