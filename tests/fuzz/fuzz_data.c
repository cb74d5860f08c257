/* libFuzzer target for seqtask's --data file parser (see README).
 *
 * Input: byte 0 picks --symbols, byte 1 picks --max-len (each from a table
 * of eight, by value % 8, so the ASCII digits '0'..'7' pick entry 0..7 and
 * seeds stay readable); the rest is the file. It is written to a scratch
 * file and read by sq_data_load (examples/seqtask/data.c) exactly as
 * `seqtask train --data FILE` reads it.
 *
 * The documented format (docs/FORMATS.md, task.h) is also parsed here,
 * independently and naively; the two must agree: a file is accepted exactly
 * when every non-blank line is `SIDE \t SIDE` with each side one or more
 * tokens -?[0-9]+ in [0, symbols) separated by spaces, the sequence fits in
 * Tmax = 2 * max_len + 3 (with BOS, SEP, EOS), no line holds a NUL byte and
 * there is at least one example; the examples, and their hash, are then
 * the same. A refusal must name the file. Anything else aborts.
 *
 * With TG_FUZZ_NO_MAIN defined (tests/test_seqtask_cli.c) only
 * fuzz_data_one is compiled, for replaying the corpora in CTest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad/core/engine/alloc.h>
#include "../../examples/seqtask/task.h"
#include "fuzz.h"

static const int data_symbols[8] = {1, 2, 8, 10, 16, 100, 1000, 65536};
static const int data_max_len[8] = {1, 2, 3, 5, 8, 12, 100, 500};

static void data_check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_data: %s\n", what);
        abort();
    }
}

/* The reference reading of one side (bytes s[0..len)): the symbol count, or
 * -1 when a token is not -?[0-9]+ in [0, symbols). Symbols go to out when
 * it has room (max). */
static int ref_side(const char *s, size_t len, int symbols, int32_t *out, int max)
{
    int count = 0;
    size_t i = 0;
    while (i < len) {
        if (s[i] == ' ') {
            i++;
            continue;
        }
        bool neg = s[i] == '-';
        size_t j = i + neg, digits = 0;
        long long v = 0;
        for (; j < len && s[j] != ' '; j++, digits++) {
            if (s[j] < '0' || s[j] > '9') return -1;
            if (v < 1000000000LL) v = 10 * v + (s[j] - '0');
        }
        if (digits == 0 || (neg && v != 0) || v >= symbols) return -1;
        if (count < max) out[count] = (int32_t)v;
        count++;
        i = j;
    }
    return count;
}

static void ref_hash(uint64_t *h, uint32_t v)
{
    for (int k = 0; k < 4; k++) {
        *h ^= (v >> (8 * k)) & 0xffu;
        *h *= 0x100000001b3ULL;
    }
}

/* Compares example e of d with the reference reading of a line; returns
 * whether the line is acceptable. *k counts the examples seen. */
static bool ref_line(const char *line, size_t len, int symbols, int max_len, const sq_dataset *d,
                     int *k, uint64_t *hash, int32_t *buf)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n')) len--;
    if (len == 0) return true;
    if (memchr(line, '\0', len)) return false;
    const char *tab = memchr(line, '\t', len);
    if (!tab || memchr(tab + 1, '\t', len - (size_t)(tab + 1 - line))) return false;
    int tmax = sq_tmax(max_len);
    int n = ref_side(line, (size_t)(tab - line), symbols, buf, tmax);
    int m = n < 0 ? -1 : ref_side(tab + 1, len - (size_t)(tab + 1 - line), symbols, buf + tmax, tmax);
    if (n <= 0 || m <= 0 || n + m + 3 > tmax) return false;
    ref_hash(hash, (uint32_t)n);
    for (int i = 0; i < n; i++) ref_hash(hash, (uint32_t)buf[i]);
    ref_hash(hash, (uint32_t)m);
    for (int i = 0; i < m; i++) ref_hash(hash, (uint32_t)buf[tmax + i]);
    if (d) {
        data_check(*k < d->count, "fewer examples than lines");
        const sq_example *e = &d->ex[*k];
        data_check(e->n == n && e->m == m, "an example's length differs from the reference");
        for (int i = 0; i < n; i++) data_check(e->src[i] == buf[i], "a source symbol differs");
        for (int i = 0; i < m; i++) data_check(e->tgt[i] == buf[tmax + i], "a target symbol differs");
    }
    (*k)++;
    return true;
}

/* The reference verdict on the file text[0..len); with d (the parser's
 * result), also checks every example against it. */
static bool ref_accepts(const char *text, size_t len, int symbols, int max_len, const sq_dataset *d)
{
    int32_t *buf = malloc(2 * (size_t)sq_tmax(max_len) * sizeof *buf);
    data_check(buf != NULL, "out of memory");
    uint64_t hash = 0xcbf29ce484222325ULL;
    int k = 0;
    bool ok = true;
    for (size_t start = 0; ok && start < len;) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        ok = ref_line(text + start, end - start, symbols, max_len, d, &k, &hash, buf);
        start = end + 1;
    }
    free(buf);
    if (ok && d) data_check(k == d->count && hash == d->hash, "example count or hash differs");
    return ok && k > 0;
}

/* A scratch file private to this process. */
static const char *data_scratch(void)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "%s/tg_fuzz_data.%ld.txt",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
    return path;
}

/* One input: 0 when the parser accepted it, -1 when it refused it (both
 * agreeing with the reference), 1 when it is too short to mean a file. */
int fuzz_data_one(const uint8_t *data, size_t size)
{
    if (size < 2) return 1;
    int symbols = data_symbols[data[0] % 8], max_len = data_max_len[data[1] % 8];
    const char *text = (const char *)data + 2, *path = data_scratch();
    size_t len = size - 2;
    FILE *f = fopen(path, "wb");
    data_check(f && fwrite(text, 1, len, f) == len && fclose(f) == 0, "cannot write the scratch file");
    sq_dataset *d = (sq_dataset *)1;
    int rc = sq_data_load(path, symbols, max_len, &d);
    unlink(path);
    if (rc != 0) {
        data_check(rc == -1 && d == (sq_dataset *)1, "a refusal touched *out");
        data_check(strncmp(tg_error(), path, strlen(path)) == 0 && tg_error()[strlen(path)] == ':',
                   "a refusal does not name the file");
        data_check(!ref_accepts(text, len, symbols, max_len, NULL), "a valid file was refused");
        return -1;
    }
    data_check(d != NULL && d->count > 0, "accepted with no examples");
    data_check(ref_accepts(text, len, symbols, max_len, d), "an invalid file was accepted");
    sq_data_free(d);
    return 0;
}

#ifndef TG_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_data_one(data, size);
    return 0;
}
#endif
