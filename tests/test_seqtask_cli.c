/* seqtask's command line and --data parser (the seqtask_core library): the
 * help of each command against its parser, the default warmup, and the fuzz
 * targets (tests/fuzz/fuzz_data.c, fuzz_args.c) replayed on their seed
 * corpora and on the regression corpus, with the same checks the fuzzers
 * make (a check that fails aborts: Criterion reports a crash). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/seqtask/cli.h"
#include "../examples/seqtask/commands.h"
#include "../examples/seqtask/task.h"
#include "fuzz/fuzz.h"

#define CORPUS TG_SOURCE_DIR "/tests/fuzz/corpus"

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    uint8_t *b = malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    cr_assert_not_null(b);
    *len = n;
    return b;
}

typedef int (*one_fn)(const uint8_t *data, size_t size);

/* Runs every file of dir whose name starts with `prefix` through fn. With
 * `seeds`, ok_* files must give a status in [ok_lo, ok_hi] and bad_* files
 * -1. Returns the number of files. */
static int replay(const char *dir, const char *prefix, one_fn fn, bool seeds, int ok_lo, int ok_hi)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        size_t len;
        uint8_t *b = read_all(p, &len);
        int rc = fn(b, len);
        free(b);
        if (seeds && strncmp(e->d_name, "ok_", 3) == 0)
            cr_expect(rc >= ok_lo && rc <= ok_hi, "%s: status %d", p, rc);
        if (seeds && strncmp(e->d_name, "bad_", 4) == 0) cr_expect_eq(rc, -1, "%s: accepted", p);
        n++;
    }
    closedir(d);
    return n;
}

Test(fuzz_replay, data_seeds)
{
    cr_assert_geq(replay(CORPUS "/data", "", fuzz_data_one, true, 0, 0), 20);
}

Test(fuzz_replay, args_seeds)
{
    /* ok_*: a configuration (0) or --help (1) */
    cr_assert_geq(replay(CORPUS "/args", "", fuzz_args_one, true, 0, 1), 30);
}

/* regress/: inputs that once failed a target; data-* and args-* are
 * seqtask's (the rest are the safetensors reader's, see test_io_bad.c). */
Test(fuzz_replay, regressions)
{
    int n = replay(CORPUS "/regress", "data-", fuzz_data_one, false, 0, 0);
    n += replay(CORPUS "/regress", "args-", fuzz_args_one, false, 0, 0);
    cr_assert_geq(n, 1);
}

/* The finding of the data fuzzer: strtol skips leading white space, so
 * "\v1" was read as the symbol 1 (also by --input). */
Test(fuzz_replay, symbols_are_digits_only)
{
    int32_t s[8];
    const char *bad[] = {"\v1", "\f2", "\r3", "1 \v2", "+1", " -\v1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(sq_parse_symbols(bad[i], 8, s, 8), -1, "'%s' accepted", bad[i]);
    cr_assert_eq(sq_parse_symbols("  07 -0  1 ", 8, s, 8), 3, "%s", tg_error());
    cr_assert(s[0] == 7 && s[1] == 0 && s[2] == 1);
}

/* ---- the command line ---------------------------------------------------- */

static sq_config cfg;

/* Parses "CMD --flag value .." (split at spaces) as main.c and sq_run_init
 * do: parse, check, check the values. Returns the first non-zero status. */
static int parse(const char *line)
{
    char buf[512], *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
    argv[argc] = NULL;
    int cmd = sq_command_parse(argv[0]);
    cr_assert_geq(cmd, 0, "%s", line);
    tg_error_clear();
    int rc = sq_cli_parse((sq_command)cmd, argc, argv, &cfg, NULL);
    if (rc == 0) rc = sq_cli_check(&cfg);
    if (rc == 0) rc = sq_cli_check_values(&cfg);
    return rc;
}

/* A value the flag accepts, from its metavar in the help ("N", "X",
 * "a|b|c", "FILE", ...). */
static const char *value_for(const char *metavar)
{
    static char first[64];
    if (strchr(metavar, '|')) {
        snprintf(first, sizeof first, "%.*s", (int)strcspn(metavar, "|"), metavar);
        return first;
    }
    if (strcmp(metavar, "N") == 0) return "1";
    if (strcmp(metavar, "X") == 0 || strcmp(metavar, "P") == 0) return "0.5";
    if (metavar[0] == '"') return "1";
    return "f";
}

/* Each command's --help (every row of SQ_COMMANDS): no line longer than
 * 100 columns, and every flag it prints is one the command accepts, with a
 * value of the kind shown. */
Test(cli, every_flag_in_help_is_accepted)
{
    const int at_least[SQ_CMD_COUNT] = {[SQ_CMD_TRAIN] = 32, [SQ_CMD_EVAL] = 6, [SQ_CMD_GENERATE] = 3,
                                        [SQ_CMD_ATTN] = 4, [SQ_CMD_HEADS] = 6};
    for (int k = 0; k < SQ_CMD_COUNT; k++) {
        const char *cmd = sq_command_name((sq_command)k);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        char *argv[] = {(char *)cmd, "--help", NULL};
        cr_assert_eq(sq_cli_parse((sq_command)k, 2, argv, &cfg, f), 1);
        fclose(f);
        int flags = 0;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            cr_expect_leq(strlen(line), 100, "seqtask %s --help: a line of %zu columns:\n%s", cmd,
                          strlen(line), line);
            if (strncmp(line, "  --", 4) != 0 || strncmp(line, "  --help", 8) == 0) continue;
            /* "  --name METAVAR   text": the flag ends at two spaces */
            char name[64], metavar[64];
            const char *left = line + 2, *end = strstr(left, "  ");
            int n = end ? (int)(end - left) : (int)strlen(left), sp = (int)strcspn(left, " ");
            snprintf(name, sizeof name, "%.*s", sp < n ? sp : n, left);
            snprintf(metavar, sizeof metavar, "%.*s", sp < n ? n - sp - 1 : 0, sp < n ? left + sp + 1 : "");
            char *args[] = {(char *)cmd, name, (char *)value_for(metavar), NULL};
            int argc = metavar[0] ? 3 : 2;
            cr_expect_eq(sq_cli_parse((sq_command)k, argc, args, &cfg, NULL), 0,
                         "seqtask %s --help lists %s %s, which it refuses: %s", cmd, name,
                         metavar, tg_error());
            flags++;
        }
        cr_expect_geq(flags, at_least[k], "seqtask %s --help lists %d flags", cmd, flags);
        free(text);
    }
}

/* Every row of SQ_COMMANDS has a name that parses back, a line in the
 * usage, a --help and a handler of its own: main() runs the handler of the
 * parsed command, so a row without one would crash seqtask. */
Test(cli, every_command_has_a_handler)
{
    char *usage = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&usage, &len);
    sq_usage(f);
    fclose(f);
    for (int k = 0; k < SQ_CMD_COUNT; k++) {
        const char *name = sq_command_name((sq_command)k);
        cr_assert_not_null(name, "command %d", k);
        cr_expect_eq(sq_command_parse(name), k, "%s", name);
        char line[64];
        snprintf(line, sizeof line, "\n  %-9s ", name);
        cr_expect(strstr(usage, line), "seqtask --help does not list %s:\n%s", name, usage);
        sq_command_fn run = sq_command_handler((sq_command)k);
        cr_expect_not_null(run, "seqtask %s has no handler", name);
        for (int j = 0; j < k; j++)
            cr_expect_neq((void *)(uintptr_t)run, (void *)(uintptr_t)sq_command_handler((sq_command)j),
                          "seqtask %s runs the handler of %s", name, sq_command_name((sq_command)j));
        char *help = NULL;
        f = open_memstream(&help, &len);
        char *argv[] = {(char *)name, "--help", NULL};
        cr_expect_eq(sq_cli_parse((sq_command)k, 2, argv, &cfg, f), 1);
        fclose(f);
        cr_expect(help && strncmp(help, "usage: seqtask ", 15) == 0 && strlen(help) > 40, "seqtask %s --help", name);
        free(help);
    }
    cr_expect_null(sq_command_name(SQ_CMD_COUNT));
    cr_expect_null(sq_command_handler(SQ_CMD_COUNT));
    cr_expect_eq(sq_command_parse("frobnicate"), -1);
    free(usage);
}

/* The help of a command that reads a trained model has no training
 * heading, and --png reads as each command uses it. */
Test(cli, help_fits_the_command)
{
    char *text = NULL;
    size_t len = 0;
    const char *want[][3] = {
        {"eval", "\nevaluation:\n  --seed N", "training:"},
        {"heads", "--png FILE", "training:"},
        {"attn", "--png FILE", "heads.png"},
        {"generate", "--input", "--seed"},
        {"train", "\ntraining:\n", "[the model's]"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        FILE *f = open_memstream(&text, &len);
        char *argv[] = {(char *)want[i][0], "--help", NULL};
        cr_assert_eq(sq_cli_parse((sq_command)sq_command_parse(want[i][0]), 2, argv, &cfg, f), 1);
        fclose(f);
        cr_expect(strstr(text, want[i][1]), "seqtask %s --help has no \"%s\":\n%s", want[i][0], want[i][1], text);
        cr_expect(!strstr(text, want[i][2]), "seqtask %s --help has \"%s\":\n%s", want[i][0], want[i][2], text);
        free(text);
        text = NULL;
    }
}

/* Without --warmup, the warmup is min(50, steps / 10), which no --steps or
 * --schedule conflicts with; a --warmup given is checked as given. */
Test(cli, default_warmup_adapts_to_steps)
{
    const char *sched[] = {"constant", "cosine", "linear"};
    const long steps[] = {1, 2, 9, 20, 51, 499, 500, 1000, 1000000};
    char line[128];
    for (int s = 0; s < 3; s++)
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            snprintf(line, sizeof line, "train --steps %ld --schedule %s", steps[i], sched[s]);
            cr_assert_eq(parse(line), 0, "%s: %s", line, tg_error());
            long want = steps[i] / 10 < 50 ? steps[i] / 10 : 50;
            cr_expect_eq(cfg.warmup, want, "%s: warmup %ld, expected %ld", line, cfg.warmup, want);
        }
    cr_assert_eq(parse("train"), 0, "%s", tg_error());
    cr_expect_eq(cfg.warmup, 50);
    cr_assert_eq(parse("train --steps 20 --warmup 20"), -1);
    cr_expect_str_eq(tg_error(), "--warmup 20 must be less than --steps 20 with --schedule cosine");
    cr_assert_eq(parse("train --steps 20 --warmup 50 --schedule linear"), -1);
    cr_expect(strstr(tg_error(), "--warmup 50 must be less than --steps 20 with --schedule linear"), "%s", tg_error());
    cr_assert_eq(parse("train --steps 20 --warmup 50 --schedule constant"), 0, "%s", tg_error());
    cr_expect_eq(cfg.warmup, 50);
    cr_assert_eq(parse("train --steps 20 --warmup 0"), 0, "%s", tg_error());
    cr_expect_eq(cfg.warmup, 0);
}

/* A resumed run keeps its checkpoint's warmup, whatever --steps says. */
static struct {
    int n;
    char key[64][64], value[64][64];
} meta;

static int meta_put(void *ctx, const char *key, const char *value)
{
    (void)ctx;
    snprintf(meta.key[meta.n], sizeof meta.key[0], "%s", key);
    snprintf(meta.value[meta.n], sizeof meta.value[0], "%s", strcmp(key, "warmup") == 0 ? "7" : value);
    meta.n++;
    return 0;
}

static const char *meta_get(void *ctx, const char *key)
{
    (void)ctx;
    for (int i = 0; i < meta.n; i++)
        if (strcmp(meta.key[i], key) == 0) return meta.value[i];
    return NULL;
}

Test(cli, resumed_warmup_is_the_checkpoints)
{
    cr_assert_eq(parse("train"), 0, "%s", tg_error());
    cr_assert_eq(sq_config_to_meta(&cfg, SQ_META_TRAIN, meta_put, NULL), 0);
    char *argv[] = {"train", "--resume", "ck", "--steps", "30", NULL};
    cr_assert_eq(sq_cli_parse(SQ_CMD_TRAIN, 5, argv, &cfg, NULL), 0);
    cr_assert_eq(sq_cli_check(&cfg), 0, "%s", tg_error());
    cr_assert_eq(sq_config_from_meta(&cfg, SQ_META_TRAIN, 0, meta_get, NULL, "ck"), 0,
                 "%s", tg_error());
    cr_assert_eq(sq_cli_check_values(&cfg), 0, "%s", tg_error());
    cr_expect_eq(cfg.warmup, 7);
    cr_expect_eq(cfg.steps, 30);
}
