/* seqtask: datasets in memory and the --data file format (docs/FORMATS.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include "task.h"

sq_dataset *sq_data_new(void)
{
    sq_dataset *d = tg_calloc(1, sizeof *d);
    if (d) d->hash = 0xcbf29ce484222325ULL;
    return d;
}

void sq_data_free(sq_dataset *d)
{
    if (!d) return;
    tg_free(d->ex);
    tg_free(d->pool);
    tg_free(d);
}

static void hash_add(uint64_t *h, uint32_t v)
{
    for (int k = 0; k < 4; k++) {
        *h ^= (v >> (8 * k)) & 0xffu;
        *h *= 0x100000001b3ULL;
    }
}

/* Grows the symbol pool to hold `need` more; re-points every example at the
 * moved pool. */
static int pool_reserve(sq_dataset *d, size_t need)
{
    if (d->pool_used + need <= d->pool_cap) return 0;
    size_t cap = d->pool_cap ? d->pool_cap : 256;
    while (cap < d->pool_used + need) cap *= 2;
    int32_t *old = d->pool, *pool = tg_malloc(cap * sizeof *pool);
    if (!pool) return -1;
    if (old) memcpy(pool, old, d->pool_used * sizeof *pool);
    for (int i = 0; i < d->count; i++) {
        d->ex[i].src = pool + (d->ex[i].src - old);
        d->ex[i].tgt = pool + (d->ex[i].tgt - old);
    }
    tg_free(old);
    d->pool = pool;
    d->pool_cap = cap;
    return 0;
}

int sq_data_add(sq_dataset *d, const int32_t *src, int n, const int32_t *tgt, int m)
{
    if (d->count == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        sq_example *ex = tg_realloc(d->ex, (size_t)cap * sizeof *ex);
        if (!ex) return -1;
        d->ex = ex;
        d->cap = cap;
    }
    if (pool_reserve(d, (size_t)n + (size_t)m) != 0) return -1;
    int32_t *s = d->pool + d->pool_used, *t = s + n;
    memcpy(s, src, (size_t)n * sizeof *s);
    memcpy(t, tgt, (size_t)m * sizeof *t);
    d->pool_used += (size_t)n + (size_t)m;
    d->ex[d->count++] = (sq_example){s, t, n, m};
    hash_add(&d->hash, (uint32_t)n);
    for (int i = 0; i < n; i++) hash_add(&d->hash, (uint32_t)src[i]);
    hash_add(&d->hash, (uint32_t)m);
    for (int i = 0; i < m; i++) hash_add(&d->hash, (uint32_t)tgt[i]);
    return 0;
}

/* Parses space-separated symbols of s (NUL-terminated) into out (room for
 * max; more is an error). Returns the count, or -1 with a message. */
static int parse_side(const char *s, int n_symbols, int32_t *out, int max)
{
    int count = 0;
    while (*s) {
        if (*s == ' ') {
            s++;
            continue;
        }
        size_t len = strcspn(s, " ");
        char tok[32];
        snprintf(tok, sizeof tok, "%.*s", (int)(len < 24 ? len : 24), s);
        if (len >= 24) strcat(tok, "..");
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        /* strtol would also take a sign '+' or leading white space (\v, \f, \r) */
        bool digit = (s[0] >= '0' && s[0] <= '9') || s[0] == '-';
        if (end != s + len || len == 0 || !digit || errno != 0) {
            tg_error_set("'%s' is not a symbol (an integer in [0, %d))", tok, n_symbols);
            return -1;
        }
        if (v < 0 || v >= n_symbols) {
            tg_error_set("symbol %s is outside [0, %d) (--symbols %d)", tok, n_symbols,
                         n_symbols);
            return -1;
        }
        if (count == max) {
            tg_error_set("more than %d symbols", max);
            return -1;
        }
        out[count++] = (int32_t)v;
        s += len;
    }
    return count;
}

int sq_parse_symbols(const char *s, int n_symbols, int32_t *src, int max)
{
    int n = parse_side(s, n_symbols, src, max);
    if (n == 0) tg_error_set("no symbols (expected e.g. \"3 1 4\")");
    return n > 0 ? n : -1;
}

/* Checks and parses one line (no newline) into src/tgt. 0, or -1 with a
 * message (without the FILE:LINE prefix). */
static int parse_line(char *line, int n_symbols, int max_len, int32_t *src, int *n, int32_t *tgt,
                      int *m, int room)
{
    char *tab = strchr(line, '\t');
    if (!tab) {
        tg_error_set("no tab between the source and the target symbols");
        return -1;
    }
    if (strchr(tab + 1, '\t')) {
        tg_error_set("more than one tab (expected: source symbols, a tab, target symbols)");
        return -1;
    }
    *tab = '\0';
    if ((*n = parse_side(line, n_symbols, src, room)) < 0) return -1;
    if ((*m = parse_side(tab + 1, n_symbols, tgt, room)) < 0) return -1;
    if (*n == 0 || *m == 0) {
        tg_error_set("empty %s", *n == 0 ? "source" : "target");
        return -1;
    }
    int tmax = sq_tmax(max_len);
    if (*n + *m + 3 > tmax) {
        return tg_error_set("source (%d) and target (%d) need %d tokens with BOS, SEP and EOS, more "
                            "than Tmax = %d (2 * --max-len + 3; raise --max-len)",
                            *n, *m, *n + *m + 3, tmax);
    }
    return 0;
}

int sq_data_load(const char *path, int n_symbols, int max_len, sq_dataset **out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        tg_error_set("%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    sq_dataset *d = sq_data_new();
    int room = sq_tmax(max_len);
    int32_t *buf = tg_malloc(2 * (size_t)room * sizeof *buf);
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int rc = 0;
    if (!d || !buf) {
        tg_error_set("%s: out of memory", path);
        rc = -1;
    }
    while (rc == 0) {
        errno = 0;
        ssize_t len = getline(&line, &cap, f);
        if (len < 0) {
            if (errno != 0) tg_error_set("%s: read error: %s", path, strerror(errno));
            rc = errno != 0 ? -1 : 0;
            break;
        }
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len == 0) continue;
        if (strlen(line) != (size_t)len) {
            tg_error_set("%s:%ld: contains a NUL byte", path, lineno);
            rc = -1;
            break;
        }
        /* two ways an editor's file looks like a wrong line to the parser */
        if (lineno == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0) {
            tg_error_set("%s:1: starts with a UTF-8 byte order mark (bytes EF BB BF): save the file "
                         "without it", path);
            rc = -1;
            break;
        }
        if (strchr(line, '\r')) {
            tg_error_set("%s:%ld: a carriage return (CR) inside the line: the file has CR-only line "
                         "endings (old Mac); save it with LF or CRLF line endings", path, lineno);
            rc = -1;
            break;
        }
        int n, m;
        if (parse_line(line, n_symbols, max_len, buf, &n, buf + room, &m, room) != 0) {
            tg_error_set("%s:%ld: %s", path, lineno, tg_error());
            rc = -1;
        } else if (sq_data_add(d, buf, n, buf + room, m) != 0) {
            tg_error_set("%s:%ld: out of memory", path, lineno);
            rc = -1;
        }
    }
    if (rc == 0 && d->count == 0) {
        tg_error_set("%s: no examples (expected lines of source symbols, a tab, target "
                     "symbols)", path);
        rc = -1;
    }
    free(line);
    tg_free(buf);
    fclose(f);
    if (rc != 0) {
        sq_data_free(d);
        return -1;
    }
    *out = d;
    return 0;
}
