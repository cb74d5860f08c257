/* seqtask is deterministic: with one BLAS thread (OPENBLAS_NUM_THREADS=1
 * and --threads 1), the same seed and flags give bit-identical log.csv
 * rows (every column but the step time), in both attention modes, with
 * dropout, on a generated task and on a shuffled data file; and a run cut
 * in two by a checkpoint gives the same rows as the run in one piece.
 *
 * test_train.c already resumes fused AdamW (constant schedule), a data
 * file with SGD and a Ctrl-C'd cosine run; test_crash.c resumes SIGKILLed
 * cosine runs in both modes. Here: per-head attention with dropout and
 * plain Adam resumed across a warmup, with evaluations on both sides. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "seqtask_util.h"

static void setup(void) { seqtask_setup("tg_test_determinism", true); }
static void teardown(void) { seqtask_teardown(); }

TestSuite(determinism, .init = setup, .fini = teardown, .timeout = 300);

#define TINY "--symbols 8 --min-len 1 --max-len 5 --layers 2 --d-model 16 --heads 4 --d-ff 32 " \
             "--batch 8 --warmup 4 --eval-size 16 --target-acc 0 --threads 1"

/* Two runs of the same flags log the same rows; another seed does not. */
static void check_twice(const char *flags, int steps)
{
    static char a[1 << 15], b[1 << 15];
    cr_assert_eq(run("train %s --steps %d --out A", flags, steps), 0, "%s", err_text);
    cr_assert_eq(run("train %s --steps %d --out B", flags, steps), 0, "%s", err_text);
    log_text("A/log.csv", -1, 0, a, sizeof a);
    log_text("B/log.csv", -1, 0, b, sizeof b);
    cr_assert_eq(count_lines(a), steps + 1);
    cr_assert_str_eq(b, a, "two runs of %s differ:\n%s\nand:\n%s", flags, b, a);
    cr_assert_eq(run("train %s --seed 2 --steps %d --out C", flags, steps), 0, "%s", err_text);
    log_text("C/log.csv", -1, 0, b, sizeof b);
    cr_assert_str_neq(b, a, "--seed changes nothing");
}

Test(determinism, fused_twice)
{
    check_twice("--task reverse --mode fused --dropout 0.1 --eval-every 5 " TINY, 12);
}

Test(determinism, per_head_twice)
{
    check_twice("--task sort --mode per-head --dropout 0.1 --eval-every 5 " TINY, 12);
}

Test(determinism, shuffled_data_file_twice)
{
    char path[512];
    snprintf(path, sizeof path, "%s/rev.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 21; i++)  /* not a multiple of the batch: epochs straddle batches */
        fprintf(f, "%d %d %d\t%d %d %d\n", i % 8, i / 8, (i * 5) % 8, (i * 5) % 8, i / 8, i % 8);
    fclose(f);
    check_twice("--data rev.txt --mode per-head --dropout 0.2 --optimizer sgd --lr 0.05 --eval-every 4 "
                "--symbols 8 --max-len 5 --layers 1 --d-model 16 --heads 2 --batch 8 --warmup 2 "
                "--eval-size 8 --target-acc 0 --threads 1", 10);
}

/* Per-head attention, dropout, plain Adam, a warmup that runs across the
 * checkpoint and evaluations on both sides of it: N steps then --resume to
 * 2N logs the rows of 2N steps in one go, evaluations included. */
Test(determinism, per_head_resume_with_dropout)
{
    static char a[1 << 15], b[1 << 15];
    const char *flags = "--task copy --mode per-head --dropout 0.2 --optimizer adam --schedule constant "
                        "--warmup 12 --eval-every 3 " TINY;
    const int n = 8;
    cr_assert_eq(run("train %s --steps %d --out A", flags, 2 * n), 0, "%s", err_text);
    cr_assert_eq(run("train %s --steps %d --out B", flags, n), 0, "%s", err_text);
    cr_assert_eq(run("train --resume B/checkpoint.safetensors --steps %d --threads 1", 2 * n), 0, "%s",
                 err_text);
    cr_assert(strstr(err_text, "resuming at step 8"), "%s", err_text);
    log_text("A/log.csv", -1, 0, a, sizeof a);
    log_text("B/log.csv", -1, 0, b, sizeof b);
    cr_assert_eq(count_lines(a), 2 * n + 1);
    /* row n of B is the end of its first run: evaluated there, A was not */
    char *row_b = b, *row_a = a;
    for (int i = 0; i <= n; i++) {
        row_b = strchr(row_b, '\n') + 1;
        row_a = strchr(row_a, '\n') + 1;
    }
    cr_assert_str_eq(row_b, row_a, "the resumed rows differ:\n%s\nuninterrupted:\n%s", b, a);
    /* before the cut: the same losses, learning rates and gradient norms */
    cr_assert_eq(strncmp(a, b, (size_t)(strstr(a, "\n8,") - a)), 0, "%s\n%s", a, b);
}
