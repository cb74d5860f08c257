/* tapegrad: validation of safetensors headers (see core/io/io.h, core/io/json.h).
 *
 * Order of checks (each failure names the file and stops): file length >= 8;
 * header length N <= 100000000 and 8 + N <= file length; the header is UTF-8
 * with strict JSON lexemes; it parses (cJSON) as one JSON object; no name
 * twice; __metadata__ maps strings to strings; each entry is well formed
 * (dtype, shape, data_offsets matching the byte size, inside the data
 * section); the offsets, sorted, tile the data section exactly. Nothing is
 * allocated for tensor data here. */
#include "json.h"
#include "elements.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/alloc.h"
#include "../engine/error.h"

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    if (c < 0x80) return 1;
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return len;
}

bool tg_st_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_seq(p + i, n - i))) return false;
    return true;
}

/* cJSON reports a failed allocation as a parse error: remember it, so the
 * message says "out of memory" rather than calling a good file corrupt.
 * Per thread: files may be read on several threads at once. */
static _Thread_local bool json_oom;

static void *json_malloc(size_t n)
{
    void *p = tg_malloc(n);
    if (!p) json_oom = true;
    return p;
}

static void set_hooks(void)
{
    cJSON_Hooks hooks = {json_malloc, tg_free};
    cJSON_InitHooks(&hooks);
}

/* cJSON's hooks are process-wide: set once, not by every reader and writer. */
void tg_st_json_hooks(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, set_hooks);
}

#define ST_MAX_OFFSET ((uint64_t)1 << 53) /* exact in cJSON's doubles */

typedef tg_st_entry entry;

/* Length of the strict JSON number at p (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)
 * when the whole run of number characters is one; 0 otherwise. cJSON alone
 * accepts "01", "1." and "-.5". */
static size_t json_number(const unsigned char *p, size_t n)
{
    size_t run = 0, i = 0;
    while (run < n && p[run] && strchr("0123456789+-.eE", p[run])) run++;
#define DIGITS(min)                                                                                          \
    do {                                                                                                     \
        size_t s_ = i;                                                                                       \
        while (i < run && p[i] >= '0' && p[i] <= '9') i++;                                                   \
        if (i - s_ < (min)) return 0;                                                                        \
    } while (0)
    if (i < run && p[i] == '-') i++;
    if (i < run && p[i] == '0')
        i++;
    else
        DIGITS(1);
    if (i < run && p[i] == '.') {
        i++;
        DIGITS(1);
    }
    if (i < run && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < run && (p[i] == '+' || p[i] == '-')) i++;
        DIGITS(1);
    }
#undef DIGITS
    return i == run ? run : 0;
}

/* UTF-8 and the lexical rules cJSON does not enforce (serde_json, which the
 * reference uses, does): no raw control characters, strict numbers, and no
 * \u0000 (tapegrad names are C strings). */
static int scan_header(const unsigned char *h, size_t n, const char *what)
{
    bool in_str = false;
    for (size_t i = 0; i < n;) {
        unsigned c = h[i];
        size_t k = 1;
        if (c >= 0x80) {
            if (!(k = utf8_seq(h + i, n - i)))
                return tg_error_set("%s: header is not valid UTF-8 (byte %zu of the header)", what,
                                    i);
        } else if (in_str) {
            if (c < 0x20)
                return tg_error_set("%s: header has a raw control character 0x%02x in a string (byte %zu of the header)",
                                    what, c, i);
            if (c == '"') in_str = false;
            if (c == '\\' && n - i > 5 && memcmp(h + i + 1, "u0000", 5) == 0)
                return tg_error_set("%s: header has a \\u0000 escape in a string (byte %zu of the header)",
                                    what, i);
            if (c == '\\' && i + 1 < n && h[i + 1] < 0x80) k = 2; /* skip the escaped character */
        } else if (c == '"') {
            in_str = true;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            if (!(k = json_number(h + i, n - i)))
                return tg_error_set("%s: header has a malformed number (byte %zu of the header)",
                                    what, i);
        } else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            return tg_error_set("%s: header has a raw control character 0x%02x (byte %zu of the header)", what,
                                c, i);
        }
        i += k;
    }
    return 0;
}

static const char *kind(const cJSON *c)
{
    return cJSON_IsString(c)   ? "a string"
           : cJSON_IsNumber(c) ? "a number"
           : cJSON_IsArray(c)  ? "an array"
           : cJSON_IsObject(c) ? "an object"
           : cJSON_IsBool(c)   ? "a boolean"
                               : "null";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first name occurring twice among the n children of obj, or NULL. */
static const char *find_duplicate(const cJSON *obj, size_t n, const char **scratch)
{
    size_t k = 0;
    for (const cJSON *c = obj->child; c && k < n; c = c->next) scratch[k++] = c->string;
    qsort(scratch, k, sizeof *scratch, cmp_str);
    for (size_t i = 1; i < k; i++)
        if (strcmp(scratch[i - 1], scratch[i]) == 0) return scratch[i];
    return NULL;
}

/* v as an integer in [0, max], or false. */
static bool as_uint(const cJSON *v, double max, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= max) ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

static const char *shape_str(const entry *e, char *buf)
{
    tg_tensor t = {.ndim = e->ndim};
    memcpy(t.shape, e->shape, sizeof t.shape);
    return tg_shape_str(&t, buf);
}

static const char *const unsupported[] = {"I8",      "U16",     "I16", "U32",     "U64",     "F8_E4M3",
                                          "F8_E5M2", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};

static int entry_dtype(const cJSON *c, entry *e, const char *what)
{
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(c, "dtype");
    if (!dt) return tg_error_set("%s: tensor '%s': missing 'dtype'", what, e->name);
    if (!cJSON_IsString(dt))
        return tg_error_set("%s: tensor '%s': 'dtype' is %s, it must be a string", what, e->name,
                            kind(dt));
    if (tg_st_dtype_parse(dt->valuestring, &e->dtype)) return 0;
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (strcmp(dt->valuestring, unsupported[i]) == 0)
            return tg_error_set("%s: tensor '%s': dtype %s is not supported (tapegrad reads F32, F64, "
                                "F16, BF16, I32, I64, U8, BOOL)", what, e->name, dt->valuestring);
    return tg_error_set("%s: tensor '%s': unknown dtype '%s'", what, e->name, dt->valuestring);
}

static int entry_shape(const cJSON *c, entry *e, const char *what)
{
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(c, "shape");
    if (!sh) return tg_error_set("%s: tensor '%s': missing 'shape'", what, e->name);
    if (!cJSON_IsArray(sh))
        return tg_error_set("%s: tensor '%s': 'shape' is %s, it must be an array of dims", what,
                            e->name, kind(sh));
    int ndim = cJSON_GetArraySize(sh), i = 0;
    if (ndim > TG_MAX_DIMS)
        return tg_error_set("%s: tensor '%s': shape has %d dims, tapegrad tensors have at most %d",
                            what, e->name, ndim, TG_MAX_DIMS);
    e->ndim = ndim;
    for (const cJSON *d = sh->child; d; d = d->next, i++) {
        uint64_t v;
        if (!as_uint(d, INT32_MAX, &v)) {
            char val[40];
            if (cJSON_IsNumber(d))
                snprintf(val, sizeof val, "%.17g", d->valuedouble);
            else
                snprintf(val, sizeof val, "%s", kind(d));
            return tg_error_set("%s: tensor '%s': shape dim %d is %s, dims must be integers in [0, %d]", what,
                                e->name, i, val, INT32_MAX);
        }
        e->shape[i] = (int)v;
    }
    return 0;
}

static int entry_offsets(const cJSON *c, entry *e, uint64_t data_len, const char *what)
{
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(c, "data_offsets");
    if (!of) return tg_error_set("%s: tensor '%s': missing 'data_offsets'", what, e->name);
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2 || !as_uint(of->child, ST_MAX_OFFSET, &e->begin) ||
        !as_uint(of->child->next, ST_MAX_OFFSET, &e->end))
        return tg_error_set("%s: tensor '%s': 'data_offsets' must be two non-negative integers [begin, end]",
                            what, e->name);
    if (e->end < e->begin)
        return tg_error_set("%s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                            what, e->name, (unsigned long long)e->begin, (unsigned long long)e->end);
    /* bytes = product(shape) * dtype size, with overflow checks */
    uint64_t bytes = tg_st_dtype_size(e->dtype);
    char sb[TG_SHAPE_STR];
    for (int i = 0; i < e->ndim; i++) {
        if (e->shape[i] && bytes > UINT64_MAX / (uint64_t)e->shape[i])
            return tg_error_set("%s: tensor '%s': shape %s overflows (its byte size exceeds 64 bits)", what,
                                e->name, shape_str(e, sb));
        bytes *= (uint64_t)e->shape[i];
    }
    if (e->end - e->begin != bytes)
        return tg_error_set("%s: tensor '%s': data_offsets [%llu, %llu] do not match dtype %s and shape %s (%llu bytes)",
                            what, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                            tg_st_dtype_name(e->dtype), shape_str(e, sb), (unsigned long long)bytes);
    if (e->end > data_len)
        return tg_error_set("%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the data (%llu "
                            "bytes; truncated file?)",
                            what, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                            (unsigned long long)data_len);
    size_t size;
    if (!tg_shape_size(e->ndim, e->shape, &size))
        return tg_error_set("%s: tensor '%s': shape %s is too large for this build", what, e->name,
                            shape_str(e, sb));
    return 0;
}

static int parse_entry(const cJSON *c, entry *e, uint64_t data_len, const char *what)
{
    e->name = c->string;
    if (!cJSON_IsObject(c))
        return tg_error_set("%s: tensor '%s': entry is %s, not an object", what, e->name, kind(c));
    static const char *const fields[] = {"dtype", "shape", "data_offsets"};
    for (int f = 0; f < 3; f++) {
        int seen = 0;
        for (const cJSON *k = c->child; k; k = k->next) seen += strcmp(k->string, fields[f]) == 0;
        if (seen > 1)
            return tg_error_set("%s: tensor '%s': field '%s' appears twice", what, e->name,
                                fields[f]);
    }
    if (entry_dtype(c, e, what) || entry_shape(c, e, what)) return -1;
    return entry_offsets(c, e, data_len, what);
}

static int cmp_entry(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Sorted by offsets, the entries must tile [0, data_len) exactly. */
static int check_tiling(entry *es, size_t n, uint64_t data_len, const char *what)
{
    qsort(es, n, sizeof *es, cmp_entry);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const entry *e = &es[i];
        if (e->begin < at)
            return tg_error_set("%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' [%llu, %llu]",
                                what, e->name, (unsigned long long)e->begin, (unsigned long long)e->end, es[i - 1].name,
                                (unsigned long long)es[i - 1].begin, (unsigned long long)es[i - 1].end);
        if (e->begin > at)
            return tg_error_set("%s: gap in the data: bytes [%llu, %llu) before tensor '%s' belong to no tensor",
                                what, (unsigned long long)at, (unsigned long long)e->begin, e->name);
        at = e->end;
    }
    if (at != data_len)
        return tg_error_set("%s: the tensors cover %llu bytes of data but the data section has %llu (trailing bytes)", what,
                            (unsigned long long)at, (unsigned long long)data_len);
    return 0;
}

static int check_metadata(const cJSON *meta, const char **scratch, const char *what)
{
    if (!meta || cJSON_IsNull(meta)) return 0;
    if (!cJSON_IsObject(meta))
        return tg_error_set("%s: '__metadata__' is %s, it must be an object of strings", what,
                            kind(meta));
    size_t n = 0;
    for (const cJSON *c = meta->child; c; c = c->next, n++)
        if (!cJSON_IsString(c))
            return tg_error_set("%s: '__metadata__' must map strings to strings, but '%s' is %s",
                                what, c->string, kind(c));
    const char *dup = find_duplicate(meta, n, scratch);
    if (dup) return tg_error_set("%s: '__metadata__' key '%s' appears twice", what, dup);
    return 0;
}

/* Everything after the JSON parse: names, metadata, entries, tiling. */
static int check_header(tg_st_header *h, uint64_t data_len, const char *what)
{
    const cJSON *root = h->root;
    size_t n = 0, nm = 0;
    for (const cJSON *c = root->child; c; c = c->next) n++;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    if (cJSON_IsObject(meta))
        for (const cJSON *c = meta->child; c; c = c->next) nm++;
    const char **scratch = tg_malloc((n > nm ? n : nm) * sizeof *scratch + 1);
    h->entries = tg_malloc(n * sizeof *h->entries + 1);
    int rc = -1;
    if (!scratch || !h->entries) {
        tg_error_set("%s: out of memory reading the header (%zu entries)", what, n);
        goto out;
    }
    const char *dup = find_duplicate(root, n, scratch);
    if (dup) {
        tg_error_set("%s: %s'%s' appears twice in the header", what,
                     strcmp(dup, "__metadata__") ? "tensor name " : "", dup);
        goto out;
    }
    if (check_metadata(meta, scratch, what)) goto out;
    h->meta = cJSON_IsObject(meta) ? meta : NULL;
    for (const cJSON *c = root->child; c; c = c->next) {
        if (c == meta) continue;
        entry *e = &h->entries[h->n_entries];
        memset(e, 0, sizeof *e);
        e->index = h->n_entries++;
        if (parse_entry(c, e, data_len, what)) goto out;
    }
    rc = check_tiling(h->entries, h->n_entries, data_len, what);
out:
    tg_free(scratch);
    return rc;
}

int tg_st_header_read(const uint8_t *buf, size_t len, const char *what, tg_st_header *h)
{
    memset(h, 0, sizeof *h);
    /* a file that fails these is most likely some other kind of file: say so first */
    if (len < 8)
        return tg_error_set("%s: not a safetensors file: too small for a safetensors header (%zu bytes, "
                            "need at least 8)", what, len);
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--) n = n << 8 | buf[b];
    if (n > TG_ST_MAX_HEADER)
        return tg_error_set("%s: not a safetensors file: its first 8 bytes give a header length of %llu, "
                            "which exceeds the limit of %u bytes", what, (unsigned long long)n,
                            TG_ST_MAX_HEADER);
    if (n > len - 8)
        return tg_error_set("%s: not a safetensors file: its first 8 bytes give a header length of %llu, "
                            "which runs past the end of the file (%zu bytes)", what, (unsigned long long)n,
                            len);
    if (scan_header(buf + 8, n, what)) return -1;
    /* a NUL-terminated copy: cJSON then checks that only whitespace follows */
    char *copy = tg_malloc(n + 1);
    if (!copy)
        return tg_error_set("%s: out of memory for a %llu-byte header", what,
                            (unsigned long long)n);
    memcpy(copy, buf + 8, n);
    copy[n] = '\0';
    tg_st_json_hooks();
    const char *end = copy;
    json_oom = false;
    h->root = cJSON_ParseWithLengthOpts(copy, n + 1, &end, 1);
    int rc;
    if (!h->root && json_oom)
        rc = tg_error_set("%s: out of memory parsing the %llu-byte header", what,
                          (unsigned long long)n);
    else if (!h->root)
        rc = tg_error_set("%s: header is not valid JSON (error near byte %zu of the header)", what,
                          (size_t)(end - copy));
    else if (!cJSON_IsObject(h->root))
        rc = tg_error_set("%s: header is %s, not a JSON object", what, kind(h->root));
    else
        rc = check_header(h, len - 8 - n, what);
    tg_free(copy);
    h->data = buf + 8 + n;
    if (rc) tg_st_header_free(h);
    return rc;
}

void tg_st_header_free(tg_st_header *h)
{
    cJSON_Delete(h->root);
    tg_free(h->entries);
    memset(h, 0, sizeof *h);
}
