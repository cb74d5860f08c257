/* libFuzzer target for seqtask's command line (see README).
 *
 * Input: arguments separated by NUL or newline bytes; the first is the
 * command ("train", "eval", ...), the rest its flags, as main.c hands them
 * to sq_cli_parse and sq_cli_check, then sq_cli_check_values as
 * sq_run_init does (examples/seqtask/cli.c). An unknown command is what
 * main.c refuses before parsing: nothing to check.
 *
 * Every outcome must be one of: --help printed (1), a usage error whose
 * message starts with "seqtask COMMAND: " (or "--FLAG" for a rule between
 * values) (-1), or a configuration (0)
 * whose values lie in the documented ranges. A configuration must also
 * survive the metadata round trip that model files rely on: its flags
 * written as metadata (sq_config_to_meta), read back into a default
 * configuration (sq_config_from_meta) and written again give the same
 * text; merged with a checkpoint's metadata as --resume does, every flag
 * comes from the right side; and --input parses (sq_parse_symbols) to
 * symbols in range or a message. The same "--name value" pairs are also
 * read as a model file's metadata (sq_config_from_meta, then the two
 * checks, as sq_open and sq_run_init do): refused with a message naming the file,
 * or a configuration in range. Anything else aborts.
 *
 * With TG_FUZZ_NO_MAIN defined (tests/test_seqtask_cli.c) only
 * fuzz_args_one is compiled, for replaying the corpora in CTest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../examples/seqtask/cli.h"
#include "../../examples/seqtask/task.h"
#include "fuzz.h"

#define ARGS_MAX_META 64

static void args_check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_args: %s\n", what);
        abort();
    }
}

/* A configuration as metadata: keys and values in order. */
typedef struct args_meta {
    int n;
    char key[ARGS_MAX_META][64];
    char value[ARGS_MAX_META][SQ_INPUT_MAX];
} args_meta;

static int args_put(void *ctx, const char *key, const char *value)
{
    args_meta *m = ctx;
    args_check(m->n < ARGS_MAX_META && strlen(key) < 64 && strlen(value) < SQ_INPUT_MAX,
               "metadata does not fit");
    strcpy(m->key[m->n], key);
    strcpy(m->value[m->n], value);
    m->n++;
    return 0;
}

static const char *args_get(void *ctx, const char *key)
{
    args_meta *m = ctx;
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->key[i], key) == 0) return m->value[i];
    return NULL;
}

/* The ranges of the flag table that later code relies on. With cmdline,
 * c comes from a command line, whose flags tell whether d_head is derived. */
static void args_check_ranges(const sq_config *c, bool cmdline)
{
    args_check(c->symbols >= 1 && c->symbols <= 65536 && c->min_len >= 1 && c->max_len <= 500,
               "task flags out of range");
    args_check(c->layers >= 1 && c->heads >= 1 && c->d_model >= 1 && c->batch >= 1 && c->steps >= 1,
               "model or training flags out of range");
    args_check(c->dropout >= 0 && c->dropout < 1 && c->lr > 0 && c->lr <= 10, "reals out of range");
    args_check(c->kind >= SQ_TASK_COPY && c->kind <= SQ_TASK_DATA && c->mode >= 0 && c->mode <= 1,
               "choices out of range");
    if (c->cmd == SQ_CMD_TRAIN && !c->resume[0]) {
        args_check(c->min_len <= c->max_len && c->d_head >= 1 && c->d_ff >= 1, "train: derived sizes");
        args_check(!cmdline || sq_cli_was_set(c, "d-head") || c->d_head * c->heads == c->d_model,
                   "train: d_head * heads != d_model");
    }
}

/* Flags -> metadata -> a default configuration -> metadata: the same text. */
static void args_round_trip(const sq_config *c)
{
    static args_meta a, b;
    static sq_config back;
    static char *argv0[] = {"train", NULL};
    unsigned all = SQ_META_MODEL | SQ_META_TASK | SQ_META_TRAIN;
    a.n = b.n = 0;
    args_check(sq_config_to_meta(c, all, args_put, &a) == 0, "to_meta failed");
    args_check(sq_cli_parse(SQ_CMD_TRAIN, 1, argv0, &back, NULL) == 0, "defaults refused");
    args_check(sq_config_from_meta(&back, all, all, args_get, &a, "meta") == 0,
               "metadata written from a configuration is refused");
    args_check(sq_config_to_meta(&back, all, args_put, &b) == 0 && a.n == b.n, "to_meta differs");
    for (int i = 0; i < a.n; i++)
        args_check(strcmp(a.key[i], b.key[i]) == 0 && strcmp(a.value[i], b.value[i]) == 0,
                   "a value changed in the metadata round trip");
}

/* A resume: c (the command line) merged with a checkpoint's metadata (the
 * defaults'). Refused only when a model or task flag differs; otherwise a
 * flag the command line gave keeps its value and the rest come from the
 * file. */
static void args_merge(const sq_config *c)
{
    static args_meta file, merged, mine;
    static sq_config def, m;
    static char *argv0[] = {"train", NULL};
    char name[64];
    unsigned all = SQ_META_MODEL | SQ_META_TASK | SQ_META_TRAIN;
    file.n = merged.n = mine.n = 0;
    args_check(sq_cli_parse(SQ_CMD_TRAIN, 1, argv0, &def, NULL) == 0, "defaults refused");
    args_check(sq_config_to_meta(&def, all, args_put, &file) == 0, "to_meta failed");
    m = *c;
    if (sq_config_from_meta(&m, all, SQ_META_MODEL | SQ_META_TASK, args_get, &file, "ckpt") != 0) {
        args_check(strncmp(tg_error(), "--", 2) == 0 && strstr(tg_error(), " differs from ckpt's "),
                   "a merge was refused for another reason than a differing flag");
        return;
    }
    args_check(m.merged, "merged is not set");
    args_check(sq_config_to_meta(&m, all, args_put, &merged) == 0 && sq_config_to_meta(c, all, args_put, &mine) == 0,
               "to_meta failed");
    for (int i = 0; i < file.n; i++) {
        snprintf(name, sizeof name, "%s", file.key[i]);
        for (char *q = name; *q; q++)
            if (*q == '_') *q = '-';
        const char *want = sq_cli_was_set(c, name) ? mine.value[i] : file.value[i];
        args_check(strcmp(merged.value[i], want) == 0, "a merged value comes from the wrong side");
    }
}

/* The input's "--name value" pairs written as a model file's metadata over
 * the defaults' (sq_open's path): read back they are refused with a
 * message naming the file, or give a configuration in range. */
static void args_as_meta(int argc, char **argv)
{
    static args_meta meta;
    static sq_config c;
    static char *argv0[] = {"train", NULL};
    char key[64];
    unsigned all = SQ_META_MODEL | SQ_META_TASK | SQ_META_TRAIN;
    meta.n = 0;
    args_check(sq_cli_parse(SQ_CMD_TRAIN, 1, argv0, &c, NULL) == 0, "defaults refused");
    args_check(sq_config_to_meta(&c, all, args_put, &meta) == 0, "to_meta failed");
    for (int a = 1; a + 1 < argc; a += 2) {
        if (strncmp(argv[a], "--", 2) != 0 || strlen(argv[a]) >= sizeof key + 2 ||
            strlen(argv[a + 1]) >= SQ_INPUT_MAX)
            continue;
        snprintf(key, sizeof key, "%s", argv[a] + 2);
        for (char *q = key; *q; q++)
            if (*q == '-') *q = '_';
        for (int i = 0; i < meta.n; i++)
            if (strcmp(meta.key[i], key) == 0) strcpy(meta.value[i], argv[a + 1]);
    }
    if (sq_config_from_meta(&c, all, 0, args_get, &meta, "ckpt") != 0) {
        args_check(strncmp(tg_error(), "ckpt: metadata '", 16) == 0, "a metadata refusal does not name the file");
        return;
    }
    if (sq_cli_check(&c) != 0) {
        args_check(strncmp(tg_error(), "seqtask train: ", 15) == 0, "a check refusal does not name the command");
        return;
    }
    if (sq_cli_check_values(&c) != 0) {
        args_check(strncmp(tg_error(), "--", 2) == 0, "a value refusal does not name a flag");
        return;
    }
    args_check_ranges(&c, false);
}

static void args_input(const sq_config *c)
{
    int32_t src[64];
    tg_error_clear();
    int n = sq_parse_symbols(c->input, (int)c->symbols, src, 64);
    args_check(n == -1 ? tg_error() != NULL : n >= 1 && n <= 64, "sq_parse_symbols: bad return");
    for (int i = 0; i < n; i++) args_check(src[i] >= 0 && src[i] < c->symbols, "symbol out of range");
}

/* One input: the result of sq_cli_parse, then of sq_cli_check when it
 * parsed (0 configuration, 1 help, -1 usage error); 2 for an unknown
 * command. */
int fuzz_args_one(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    static sq_config c;
    if (!devnull) devnull = fopen("/dev/null", "w");
    args_check(devnull != NULL, "cannot open /dev/null");
    char *text = malloc(size + 1), **argv = malloc((size + 2) * sizeof *argv);
    args_check(text && argv, "out of memory");
    memcpy(text, data, size);
    text[size] = '\0';
    int argc = 0;
    for (size_t i = 0, start = 0; i <= size; i++)
        if (i == size || text[i] == '\0' || text[i] == '\n') {
            text[i] = '\0';
            argv[argc++] = text + start;
            start = i + 1;
        }
    argv[argc] = NULL;
    int cmd = sq_command_parse(argv[0]), rc = 2;
    char prefix[32];
    if (cmd >= 0) {
        tg_error_clear();
        rc = sq_cli_parse((sq_command)cmd, argc, argv, &c, devnull);
        if (rc == 0) rc = sq_cli_check(&c);
        args_check(rc >= -1 && rc <= 1, "unexpected return value");
        snprintf(prefix, sizeof prefix, "seqtask %s: ", sq_command_name((sq_command)cmd));
        if (rc == -1)
            args_check(tg_error() && strncmp(tg_error(), prefix, strlen(prefix)) == 0,
                       "a usage error does not start with \"seqtask COMMAND: \"");
        /* as sq_run_init does once the data files are read */
        if (rc == 0 && sq_cli_check_values(&c) != 0) {
            args_check(tg_error() && strncmp(tg_error(), "--", 2) == 0,
                       "a value refusal does not name a flag");
            rc = -1;
        }
        if (rc == 0) {
            args_check_ranges(&c, true);
            args_round_trip(&c);
            args_merge(&c);
            if (c.input[0]) args_input(&c);
        }
        args_as_meta(argc, argv);
    }
    free(argv);
    free(text);
    return rc;
}

#ifndef TG_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_args_one(data, size);
    return 0;
}
#endif
