/* The seqtask fuzz targets (tests/fuzz/fuzz_data.c, fuzz_args.c) replayed
 * on their seed corpora and on the regression corpus, with the same checks
 * the fuzzers make (a check that fails aborts: Criterion reports a crash).
 *
 * The tests link only the library, so the two seqtask parsers and the two
 * targets are compiled into this file by inclusion. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TG_FUZZ_NO_MAIN
/* compiled in one unit with the targets' constant buffer sizes, cli.c's
 * deliberate snprintf truncations would be reported by GCC */
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include "fuzz/fuzz_args.c"
#include "fuzz/fuzz_data.c"
#include "../examples/seqtask/cli.c"
#include "../examples/seqtask/data.c"
#pragma GCC diagnostic pop

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
    char err[256];
    const char *bad[] = {"\v1", "\f2", "\r3", "1 \v2", "+1", " -\v1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(sq_parse_symbols(bad[i], 8, s, 8, err, sizeof err), -1, "'%s' accepted", bad[i]);
    cr_assert_eq(sq_parse_symbols("  07 -0  1 ", 8, s, 8, err, sizeof err), 3, "%s", err);
    cr_assert(s[0] == 7 && s[1] == 0 && s[2] == 1);
}
