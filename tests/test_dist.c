/* seqtask train split three ways gives the run of one pass over the whole
 * batch: --accum N micro-batches, and P ranks under mpirun (when the build
 * has MPI and mpirun is installed). The losses and grad norms of 30 steps
 * agree to float rounding in both attention modes, repeated runs with the
 * same split agree bit for bit, a resumed run under 2 ranks repeats the run
 * in one piece, and a rank that fails (a bad flag, different flags, a kill)
 * ends the whole job with a message. Every mpirun is bounded by timeout(1):
 * a hang fails the test instead of stalling CI. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "seqtask_util.h"

static void setup(void) { seqtask_setup("tg_test_dist", true); }
static void teardown(void) { seqtask_teardown(); }

TestSuite(accum, .init = setup, .fini = teardown, .timeout = 300);
TestSuite(mpi, .init = setup, .fini = teardown, .timeout = 300);

#define SMALL "--symbols 8 --min-len 1 --max-len 5 --layers 2 --d-model 16 --heads 4 --d-ff 32 " \
              "--batch 8 --warmup 4 --lr 0.01 --eval-every 10 --eval-size 16 --target-acc 0 --threads 1 --steps 30"

/* How far the losses and grad norms of two splits of the same batch may
 * drift apart (relative) over 30 steps: they differ only in the order
 * rounding errors are summed (the weight-grad GEMMs sum fewer rows at a
 * time) and training carries that forward. Measured: at most 1.6e-7 in the
 * float build; in the double build the log's 9 digits agree, so the bound
 * is two units of the 9th digit. */
#ifdef TAPEGRAD_DOUBLE
#define DRIFT 2e-8
#else
#define DRIFT 1e-5
#endif

enum { STEPS = 30 };

/* The loss and grad_norm columns of dir/out/log.csv. */
static void read_log(const char *out, double loss[STEPS], double gnorm[STEPS])
{
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/%s/log.csv", dir, out);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s is missing", path);
    int n = 0;
    cr_assert_not_null(fgets(line, sizeof line, f));  /* header */
    while (fgets(line, sizeof line, f)) {
        long step;
        double lr;
        cr_assert(n < STEPS && sscanf(line, "%ld,%lf,%lf,%lf", &step, &loss[n], &lr, &gnorm[n]) == 4,
                  "%s: %s", path, line);
        cr_assert_eq(step, n + 1);
        n++;
    }
    fclose(f);
    cr_assert_eq(n, STEPS, "%s has %d rows", path, n);
}

/* The logs of two runs: the same losses and grad norms to within DRIFT. */
static void assert_close(const char *a, const char *b)
{
    double la[STEPS], ga[STEPS], lb[STEPS], gb[STEPS];
    read_log(a, la, ga);
    read_log(b, lb, gb);
    for (int i = 0; i < STEPS; i++) {
        cr_assert(fabs(la[i] - lb[i]) <= DRIFT * fabs(la[i]), "step %d: loss %.9g (%s) vs %.9g (%s)", i + 1,
                  la[i], a, lb[i], b);
        cr_assert(fabs(ga[i] - gb[i]) <= DRIFT * fabs(ga[i]), "step %d: grad norm %.9g (%s) vs %.9g (%s)",
                  i + 1, ga[i], a, gb[i], b);
    }
    cr_assert(la[STEPS - 1] < 0.9 * la[0], "%s did not train: %g -> %g", a, la[0], la[STEPS - 1]);
}

/* The two files have the same bytes. */
static void assert_same_file(const char *a, const char *b)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cmp -s '%s/%s' '%s/%s'", dir, a, dir, b);
    cr_assert_eq(system(cmd), 0, "%s and %s differ", a, b);
}

static void accum_equals_one_pass(const char *mode)
{
    cr_assert_eq(run("train %s --mode %s --out one", SMALL, mode), 0, "%s", err_text);
    cr_assert_eq(run("train %s --mode %s --accum 2 --out two", SMALL, mode), 0, "%s", err_text);
    cr_assert(strstr(err_text, "1 rank x 2 micro-batches"), "%s", err_text);
    /* 8 examples in 3 micro-batches of 2, 3 and 3 */
    cr_assert_eq(run("train %s --mode %s --accum 3 --out three", SMALL, mode), 0, "%s", err_text);
    assert_close("one", "two");
    assert_close("one", "three");
    cr_assert_eq(run("train %s --mode %s --accum 2 --out two_again", SMALL, mode), 0, "%s", err_text);
    assert_same_file("two/model.safetensors", "two_again/model.safetensors");
}

Test(accum, fused_equals_one_pass) { accum_equals_one_pass("fused"); }
Test(accum, per_head_equals_one_pass) { accum_equals_one_pass("per-head"); }

Test(accum, more_micro_batches_than_examples_is_refused)
{
    cr_assert_eq(run("train %s --batch 4 --accum 8", SMALL), 2);
    cr_assert(strstr(err_text, "--batch 4 is less than --accum 8 x 1 ranks"), "%s", err_text);
}

/* ---- under mpirun ------------------------------------------------------- */

static char mpirun[512];

/* Skips the test without MPI; else launcher = "timeout mpirun ... -np <np>"
 * (root needs --allow-run-as-root; 2 ranks on fewer cores need
 * --oversubscribe). A hang ends after 90 s with status 124. */
static void use_mpirun(int np)
{
#ifndef TG_MPIEXEC
    teardown(); /* a skipped test's .fini does not run */
    cr_skip_test("the build has no MPI");
#else
    if (access(TG_MPIEXEC, X_OK) != 0) {
        teardown();
        cr_skip_test("%s is not installed", TG_MPIEXEC);
    }
    snprintf(mpirun, sizeof mpirun, "timeout -k 5 90 %s --oversubscribe %s -np %d", TG_MPIEXEC,
             geteuid() == 0 ? "--allow-run-as-root" : "", np);
    launcher = mpirun;
    /* OpenMPI's session directory in the test's own: two jobs starting at once
     * under one /tmp race on creating it ("ompi.<host>.<uid>: File exists") */
    setenv("OMPI_MCA_orte_tmpdir_base", dir, 1);
    /* the sanitizer build: OpenMPI's own allocations are not leaks of ours */
    setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 1);
    setenv("ASAN_OPTIONS", "detect_leaks=1:fast_unwind_on_malloc=0", 1);
    setenv("LSAN_OPTIONS", "suppressions=" TG_SOURCE_DIR "/tests/lsan_mpi.supp", 1);
#endif
}

static void ranks_equal_one_process(const char *mode)
{
    cr_assert_eq(run("train %s --mode %s --out one", SMALL, mode), 0, "%s", err_text);
    use_mpirun(2);
    cr_assert_eq(run("train %s --mode %s --out ranks", SMALL, mode), 0, "%s", err_text);
    cr_assert(strstr(err_text, "2 ranks x 1 micro-batch of"), "%s", err_text);
    cr_assert_eq(run("train %s --mode %s --out ranks_again", SMALL, mode), 0, "%s", err_text);
    assert_close("one", "ranks");
    assert_same_file("ranks/model.safetensors", "ranks_again/model.safetensors");
    static char a[1 << 14], b[1 << 14];
    log_text("ranks/log.csv", 0, 0, a, sizeof a);
    log_text("ranks_again/log.csv", 0, 0, b, sizeof b);
    cr_assert_str_eq(a, b);
    /* both splits at once: 2 ranks x 2 micro-batches of 2 examples */
    cr_assert_eq(run("train %s --mode %s --accum 2 --out both", SMALL, mode), 0, "%s", err_text);
    assert_close("one", "both");
}

Test(mpi, fused_two_ranks_equal_one_process) { ranks_equal_one_process("fused"); }
Test(mpi, per_head_two_ranks_equal_one_process) { ranks_equal_one_process("per-head"); }

/* 2 ranks: 16 steps in one go, and 8 steps then --resume to 16, log the same
 * rows; a checkpoint of one process resumes under 2 ranks too. */
Test(mpi, resume_under_two_ranks_is_bit_exact)
{
    static char a[1 << 14], b[1 << 14];
    const char *flags = "--symbols 8 --min-len 1 --max-len 5 --layers 2 --d-model 16 --heads 4 --d-ff 32 "
                        "--batch 8 --warmup 4 --eval-every 4 --eval-size 16 --target-acc 0 --threads 1 "
                        "--schedule constant --dropout 0.1";
    cr_assert_eq(run("train %s --steps 8 --out single", flags), 0, "%s", err_text);
    use_mpirun(2);
    cr_assert_eq(run("train %s --steps 16 --out A", flags), 0, "%s", err_text);
    cr_assert_eq(run("train %s --steps 8 --out B", flags), 0, "%s", err_text);
    cr_assert_eq(run("train --resume B/checkpoint.safetensors --steps 16 --threads 1"), 0, "%s", err_text);
    cr_assert(strstr(err_text, "resuming at step 8"), "%s", err_text);
    log_text("A/log.csv", 8, 0, a, sizeof a);
    log_text("B/log.csv", 8, 0, b, sizeof b);
    cr_assert_eq(count_lines(a), 8);
    cr_assert_str_eq(b, a, "resumed:\n%s\nin one go:\n%s", b, a);
    cr_assert_eq(run("train --resume single/checkpoint.safetensors --steps 16 --threads 1"), 0, "%s", err_text);
    cr_assert(strstr(err_text, "resuming at step 8"), "%s", err_text);
    log_text("single/log.csv", 8, 0, b, sizeof b);
    cr_assert_eq(count_lines(b), 8);
}

/* mpirun's MPMD form: rank 0 and rank 1 get different command lines. */
Test(mpi, a_bad_flag_on_one_rank_ends_the_job)
{
    use_mpirun(1);
    int st = run("train %s --out x : -np 1 '%s' train %s --out x --no-such-flag 1", SMALL, SEQTASK, SMALL);
    cr_assert(st != 0 && st != 124, "exit status %d\n%s", st, err_text);
    cr_assert(strstr(err_text, "rank 1: seqtask train: unknown flag --no-such-flag"), "%s", err_text);
    cr_assert(strstr(err_text, "another rank refused its command line"), "%s", err_text);
}

/* Before step 1 every rank compares its resolved configuration with rank
 * 0's: a flag that keeps the parameter count (--heads, --mode, the
 * optimizer's) would otherwise train a wrong model silently. */
Test(mpi, different_flags_on_the_ranks_end_the_job_naming_both_values)
{
    static const char *const cases[][2] = {
        {"--batch 6", "--batch is 6 here but 8 on rank 0"},
        {"--heads 8", "--heads is 8 here but 4 on rank 0"},
        {"--mode per-head", "--mode is per-head here but fused on rank 0"},
        {"--optimizer sgd", "--optimizer is sgd here but adamw on rank 0"},
        {"--clip 0.5", "--clip is 0.5 here but 1 on rank 0"},
        {"--weight-decay 0.02", "--weight-decay is 0.02 here but 0.01 on rank 0"},
        {"--warmup 3", "--warmup is 3 here but 4 on rank 0"},
        {"--schedule linear", "--schedule is linear here but cosine on rank 0"},
        {"--lr 0.002", "--lr is 0.002 here but 0.01 on rank 0"},
        {"--seed 2", "--seed is 2 here but 1 on rank 0"},
        {"--accum 2", "--accum is 2 here but 1 on rank 0"},
        {"--layers 1", "--layers is 1 here but 2 on rank 0"},
    };
    use_mpirun(1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
#if defined(__SANITIZE_ADDRESS__)
        /* an integer, a choice and a real flag: the one check they share
         * under the sanitizers, every flag in the other builds (an mpirun
         * launch each, seconds under ASan) */
        if (i != 0 && i != 2 && i != 4) continue;
#endif
        int st = run("train %s --out x : -np 1 '%s' train %s --out x %s", SMALL, SEQTASK, SMALL, cases[i][0]);
        cr_assert(st == 2, "%s: exit status %d\n%s", cases[i][0], st, err_text);
        cr_assert(strstr(err_text, "rank 1: seqtask train: ") && strstr(err_text, cases[i][1]), "%s:\n%s",
                  cases[i][0], err_text);
        cr_assert(strstr(err_text, "the check of the configuration failed on 1 rank(s)"), "%s", err_text);
        char log[300];
        snprintf(log, sizeof log, "%s/x/log.csv", dir);
        cr_assert(access(log, F_OK) != 0, "%s: a step ran", cases[i][0]);
    }
}

/* The same flags, --data files of different contents: the paths may differ
 * between hosts, the contents may not. */
Test(mpi, different_data_contents_on_the_ranks_end_the_job)
{
    char path[300];
    snprintf(path, sizeof path, "%s/a.tsv", dir);
    FILE *f = fopen(path, "w");
    fputs("1 2 3\t3 2 1\n4 5\t5 4\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/b.tsv", dir);
    f = fopen(path, "w");
    fputs("1 2 3\t3 2 1\n4 6\t6 4\n", f);
    fclose(f);
    use_mpirun(1);
    const char *flags = "--symbols 8 --max-len 5 --layers 1 --d-model 16 --heads 4 --batch 2 --steps 2 --threads 1";
    int st = run("train %s --data a.tsv --out x : -np 1 '%s' train %s --data b.tsv --out x", flags, SEQTASK,
                 flags);
    cr_assert(st == 2, "exit status %d\n%s", st, err_text);
    cr_assert(strstr(err_text, "rank 1: seqtask train: the --data contents (hash) is "), "%s", err_text);
}

/* Rank 1 is SIGKILLed two seconds into a long run: mpirun ends rank 0 too. */
Test(mpi, a_killed_rank_ends_the_job)
{
    use_mpirun(1);
    int st = run("train %s --steps 1000000 --eval-every 0 --out x : -np 1 sh -c '(sleep 2; kill -9 $$) & exec "
                 "\"$0\" \"$@\"' '%s' train %s --steps 1000000 --eval-every 0 --out x", SMALL, SEQTASK, SMALL);
    cr_assert(st != 0 && st != 124, "exit status %d (124: timed out)\n%s", st, err_text);
    cr_assert(strstr(err_text, "signal 9") || strstr(err_text, "Killed"), "%s", err_text);
}

/* A rank stopped by SIGSTOP (frozen: it never exits) once the ranks train
 * with --save-every 5 --collective-timeout 3: the other rank gives up on it
 * after the deadline, naming it, and the job ends. Rank 0 stopped: rank 1
 * names rank 0; rank 1 stopped: rank 0 names rank 1 and the checkpoint,
 * which resumes. Without the deadline both jobs hang until timeout(1). */
Test(mpi, a_stopped_rank_ends_the_job_naming_it)
{
    static char wrapped[sizeof mpirun + 256];
    char stop[256], flags[512];
    use_mpirun(1);
    const char *plain = launcher;
    for (int r = 0; r < 2; r++) {
        snprintf(stop, sizeof stop, "sh -c '(while [ ! -s x%d/log.csv ]; do sleep 0.1; done; sleep 0.5; "
                 "kill -STOP $$) & exec \"$0\" \"$@\"'", r);
        snprintf(flags, sizeof flags, "%s --steps 1000000 --eval-every 0 --save-every 5 --collective-timeout 3 "
                 "--out x%d", SMALL, r);
        /* rank 0 is mpirun's first program */
        snprintf(wrapped, sizeof wrapped, "%s %s", mpirun, stop);
        launcher = r == 0 ? wrapped : plain;
        int st = run("train %s : -np 1 %s '%s' train %s", flags, r == 1 ? stop : "", SEQTASK, flags);
        launcher = plain;
        cr_assert(st == 1, "rank %d stopped: exit status %d (124: timed out)\n%s", r, st, err_text);
        char want[64];
        snprintf(want, sizeof want, "rank %d: no word from rank %d for ", 1 - r, r);
        cr_assert(strstr(err_text, want) && strstr(err_text, "(--collective-timeout 3 s); ending the job"),
                  "rank %d stopped:\n%s", r, err_text);
    }
    const char *intact = strstr(err_text, "the last checkpoint x1/checkpoint.safetensors (step ");
    long step = 0;
    cr_assert(intact && sscanf(intact, "the last checkpoint x1/checkpoint.safetensors (step %ld) is intact",
                               &step) == 1 && step >= 5, "%s", err_text);
    launcher = "";
    cr_assert_eq(run("train --resume x1/checkpoint.safetensors --steps %ld --threads 1", step + 2), 0, "%s",
                 err_text);
    cr_assert(strstr(err_text, "resuming at step"), "%s", err_text);
}

/* SIGUSR1 to mpirun (which passes it on to every rank) three times, 10 ms
 * apart, once the ranks train with --save-every 1: every rank stops after
 * the same step, the checkpoint is saved, the job exits 130 and resumes.
 * mpirun is the spawned process itself (timeout(1) would not pass the
 * signal on); a hang is ended after 90 s. */
static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
    nanosleep(&ts, NULL);
}

#ifndef TG_MPIEXEC
#define TG_MPIEXEC "" /* never run: use_mpirun skips the test in a build without MPI */
#endif

Test(mpi, sigusr1_three_times_is_one_clean_stop)
{
    use_mpirun(2);
    char cmd[2048], log[300];
    snprintf(log, sizeof log, "%s/m/log.csv", dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && exec %s --oversubscribe %s -np 2 '%s' train %s --steps 1000000 "
             "--save-every 1 --out m >/dev/null 2>stderr.txt", dir, TG_MPIEXEC,
             geteuid() == 0 ? "--allow-run-as-root" : "", SEQTASK, SMALL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int st = -1;
    bool sent = false;
    for (int ms = 0; ms < 90000 && waitpid(pid, &st, WNOHANG) == 0; ms += 10) {
        if (!sent && access(log, F_OK) == 0) {
            sleep_ms(200);  /* some steps in */
            for (int i = 0; i < 3; i++, sleep_ms(10)) kill(pid, SIGUSR1);
            sent = true;
        }
        sleep_ms(10);
    }
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        cr_assert_fail("the job did not stop within 90 s");
    }
    char path[300];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    slurp(path, err_text, sizeof err_text);
    cr_assert(sent && WIFEXITED(st) && WEXITSTATUS(st) == 130, "status %d\n%s", st, err_text);
    cr_assert(strstr(err_text, "interrupted at step"), "%s", err_text);
    cr_assert_eq(run("train --resume m/checkpoint.safetensors --steps 40 --threads 1"), 0, "%s", err_text);
}

/* An error of rank 0's own setup (its --out) names the rank. */
Test(mpi, rank_0s_setup_error_names_the_rank)
{
    char path[300];
    snprintf(path, sizeof path, "%s/afile", dir);
    FILE *f = fopen(path, "w");
    fclose(f);
    use_mpirun(2);
    int st = run("train %s --out afile/sub", SMALL);
    cr_assert(st == 2, "exit status %d\n%s", st, err_text);
    cr_assert(strstr(err_text, "rank 0: seqtask train: afile/sub: cannot create the directory: Not a directory"),
              "%s", err_text);
}

Test(mpi, other_commands_refuse_ranks)
{
    cr_assert_eq(run("train %s --steps 5 --eval-every 0 --out m", SMALL), 0, "%s", err_text);
    use_mpirun(2);
    cr_assert_eq(run("eval --model m/model.safetensors"), 2, "%s", err_text);
    cr_assert(strstr(err_text, "only train splits across mpirun's ranks"), "%s", err_text);
}
