/* tapegrad: the in-memory safetensors set and reading files (see core/io/io.h).
 * Validation is in core/io/json.c, writing in core/io/write.c. */
#include "io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "elements.h"
#include "json.h"
#include "../engine/alloc.h"
#include "../engine/error.h"
#include "../engine/named.h"

/* What the file said of a tensor beyond its values. */
typedef struct st_item {
    tg_dtype dtype;  /* its dtype in the file (the tensor's if added) */
    int64_t *ints;   /* the values of an integer dtype as int64, or NULL */
} st_item;

struct tg_safetensors {
    tg_named list;     /* the tensors, owned here */
    st_item *extra;    /* [extra_cap >= list.count], parallel to list.items */
    int extra_cap;
    char **keys, **vals; /* metadata, in insertion order */
    int n_meta, cap_meta;
    bool verified;       /* read from a file whose checksums were verified */
};

tg_safetensors *tg_st_new(void) { return tg_calloc(1, sizeof(tg_safetensors)); }

void tg_st_free(tg_safetensors *s)
{
    if (!s) return;
    for (int i = 0; i < s->list.count; i++) tg_free(s->extra[i].ints);
    tg_named_truncate(&s->list, 0, tg_tensor_free);
    for (int i = 0; i < s->n_meta; i++) {
        tg_free(s->keys[i]);
        tg_free(s->vals[i]);
    }
    tg_free(s->extra);
    tg_free(s->keys);
    tg_free(s->vals);
    tg_free(s);
}

int tg_st_count(const tg_safetensors *s)
{
    TG_REFUSE_NULL(s, "the set", 0);
    return s->list.count;
}

tg_tensor *tg_st_at(const tg_safetensors *s, int i)
{
    TG_REFUSE_NULL(s, "the set", NULL);
    return tg_named_at(&s->list, i);
}

static int find(const tg_safetensors *s, const char *name)
{
    return s ? tg_named_find(&s->list, name) : -1;
}

tg_tensor *tg_st_get(const tg_safetensors *s, const char *name)
{
    TG_REFUSE_NULL(s && name, !s ? "the set" : "the name", NULL);
    return tg_named_at(&s->list, find(s, name));
}

int tg_st_dtype(const tg_safetensors *s, const char *name, tg_dtype *out)
{
    TG_REFUSE_NULL(s, "the set", -1);
    TG_REFUSE_NULL(name, "the name", -1);
    TG_REFUSE_NULL(out, "the dtype", -1);
    int i = find(s, name);
    if (i < 0) return tg_error_set("tg_st_dtype: no tensor '%s'", name ? name : "(NULL)");
    *out = s->extra[i].dtype;
    return 0;
}

const int64_t *tg_st_ints(const tg_safetensors *s, const char *name)
{
    TG_REFUSE_NULL(s, "the set", NULL);
    TG_REFUSE_NULL(name, "the name", NULL);
    int i = find(s, name);
    if (i < 0) return tg_error_set("tg_st_ints: no tensor '%s'", name ? name : "(NULL)"), NULL;
    if (!s->extra[i].ints)
        return tg_error_set("tg_st_ints: tensor '%s' is %s, not an integer dtype (read it with tg_st_get)",
                            name, tg_st_dtype_name(s->extra[i].dtype)), NULL;
    return s->extra[i].ints;
}

/* Appends a zero-filled tensor of dtype dt without checking the name, with
 * room for its int64 copy when dt is an integer dtype (filled by the caller);
 * NULL on OOM or a shape too large for this build. */
static tg_tensor *append(tg_safetensors *s, const char *name, tg_dtype dt, int ndim, const int *shape)
{
    if (tg_named_reserve(&s->list)) return NULL;
    if (s->extra_cap < s->list.cap) {
        st_item *extra = tg_realloc(s->extra, (size_t)s->list.cap * sizeof *extra);
        if (!extra) return NULL;
        s->extra = extra;
        s->extra_cap = s->list.cap;
    }
    tg_tensor *x = tg_tensor_alloc_dtype(dt, ndim, shape);
    int64_t *ints = x && tg_st_dtype_is_int(dt) ? tg_malloc(x->size ? x->size * sizeof *ints : 1) : NULL;
    if (!x || (tg_st_dtype_is_int(dt) && !ints) || tg_named_push(&s->list, x, name)) {
        tg_tensor_free(x);
        tg_free(ints);
        return NULL;
    }
    s->extra[s->list.count - 1] = (st_item){.dtype = dt, .ints = ints};
    return x;
}

/* A new zero-filled tensor of dtype dt under name, after checking both. */
static tg_tensor *add_zeros(tg_safetensors *s, const char *name, tg_dtype dt, int ndim, const int *shape)
{
    size_t size;
    if (!s || !name) {
        tg_error_set("tg_st_add: %s is NULL", s ? "name" : "set");
    } else if (!tg_st_utf8_valid(name)) {
        tg_error_set("tg_st_add: tensor name is not valid UTF-8");
    } else if (strcmp(name, "__metadata__") == 0) {
        tg_error_set("tg_st_add: tensor name '__metadata__' is reserved");
    } else if (tg_st_get(s, name)) {
        tg_error_set("tg_st_add: tensor name '%s' is already taken", name);
    } else if (!tg_shape_size(ndim, shape, &size)) {
        tg_error_set("tg_st_add: tensor '%s': invalid shape (%d dims)", name, ndim);
    } else {
        tg_tensor *x = append(s, name, dt, ndim, shape);
        if (!x) tg_error_set("out of memory adding tensor '%s' (%zu elements)", name, size);
        return x;
    }
    return NULL;
}

tg_tensor *tg_st_add_zeros(tg_safetensors *s, const char *name, int ndim, const int *shape)
{
    return add_zeros(s, name, TG_REAL_DTYPE, ndim, shape);
}

int tg_st_add_data(tg_safetensors *s, const char *name, const tg_real *data, int ndim, const int *shape)
{
    tg_tensor *x = tg_st_add_zeros(s, name, ndim, shape);
    if (!x) return -1;
    if (x->size && data) memcpy(x->data, data, x->size * sizeof(tg_real));
    return 0;
}

int tg_st_add(tg_safetensors *s, const char *name, const tg_tensor *x)
{
    if (!x) return tg_error_set("tg_st_add: tensor '%s' is NULL", name ? name : "?");
    tg_tensor *y = add_zeros(s, name ? name : x->name, x->dtype, x->ndim, x->shape);
    if (!y) return -1;
    if (x->size) memcpy(y->data, x->data, x->size * tg_dtype_size(x->dtype));
    int64_t *ints = s->extra[s->list.count - 1].ints;
    for (size_t i = 0; ints && i < x->size; i++)  /* I64 directly: a double holds 2^53 */
        ints[i] = x->dtype == TG_I64 ? ((const int64_t *)x->data)[i] : (int64_t)tg_dtype_load(x->dtype, x->data, i);
    return 0;
}

/* ---- metadata ----------------------------------------------------------------- */

static int meta_find(const tg_safetensors *s, const char *key)
{
    for (int i = 0; s && key && i < s->n_meta; i++)
        if (strcmp(s->keys[i], key) == 0) return i;
    return -1;
}

/* Appends a metadata entry without looking for the key. */
static int meta_append(tg_safetensors *s, const char *key, const char *value)
{
    if (s->n_meta == s->cap_meta) {
        int cap = s->cap_meta ? 2 * s->cap_meta : 8;
        char **keys = tg_realloc(s->keys, (size_t)cap * sizeof *keys);
        if (keys) s->keys = keys;
        char **vals = keys ? tg_realloc(s->vals, (size_t)cap * sizeof *vals) : NULL;
        if (!vals) return -1;
        s->vals = vals;
        s->cap_meta = cap;
    }
    char *k = tg_strdup(key), *v = tg_strdup(value);
    if (!k || !v) {
        tg_free(k);
        tg_free(v);
        return -1;
    }
    s->keys[s->n_meta] = k;
    s->vals[s->n_meta++] = v;
    return 0;
}

int tg_st_set_meta(tg_safetensors *s, const char *key, const char *value)
{
    if (!s || !key || !value) return tg_error_set("tg_st_set_meta: NULL argument");
    if (!tg_st_utf8_valid(key) || !tg_st_utf8_valid(value))
        return tg_error_set("tg_st_set_meta: metadata key or value is not valid UTF-8");
    int i = meta_find(s, key);
    char *v = i >= 0 ? tg_strdup(value) : NULL;
    if (i >= 0 && v) {
        tg_free(s->vals[i]);
        s->vals[i] = v;
    }
    if (i >= 0 ? !v : meta_append(s, key, value) != 0)
        return tg_error_set("out of memory setting metadata '%s'", key);
    return 0;
}

const char *tg_st_meta(const tg_safetensors *s, const char *key)
{
    TG_REFUSE_NULL(s && key, !s ? "the set" : "the key", NULL);
    int i = meta_find(s, key);
    return i >= 0 ? s->vals[i] : NULL;
}

int tg_st_meta_count(const tg_safetensors *s)
{
    TG_REFUSE_NULL(s, "the set", 0);
    return s->n_meta;
}

const char *tg_st_meta_key(const tg_safetensors *s, int i)
{
    TG_REFUSE_NULL(s, "the set", NULL);
    return i >= 0 && i < s->n_meta ? s->keys[i] : NULL;
}

/* ---- reading ----------------------------------------------------------------------- */

bool tg_st_verified(const tg_safetensors *s)
{
    TG_REFUSE_NULL(s, "the set", false);
    return s->verified;
}

int tg_st_parse_verify(const uint8_t *buf, size_t len, const char *what, tg_st_verify verify,
                       tg_safetensors **out)
{
    if (!what) what = "<memory>";
    if (!out) return tg_error_set("%s: tg_st_parse: out is NULL", what);
    *out = NULL;
    if (!buf && len) return tg_error_set("%s: tg_st_parse: buffer is NULL", what);
    bool keep = verify & TG_ST_KEEP_DTYPE;
    verify &= ~TG_ST_KEEP_DTYPE;
    if (verify != TG_ST_VERIFY_AUTO && verify != TG_ST_VERIFY_REQUIRED && verify != TG_ST_VERIFY_OFF)
        return tg_error_set("%s: tg_st_parse: verify = %d is not a tg_st_verify", what, (int)verify);
    tg_st_header h;
    if (tg_st_header_read(buf, len, what, &h)) return -1;
    int checked = tg_st_checksum_verify(&h, verify, what);
    if (checked < 0) {
        tg_st_header_free(&h);
        return -1;
    }
    tg_safetensors *s = tg_st_new();
    int rc = s ? 0 : -1;
    if (s) s->verified = checked == 1;
    for (const cJSON *c = h.meta ? h.meta->child : NULL; c && !rc; c = c->next)
        if (strcmp(c->string, TG_ST_CHECKSUM_KEY) != 0) rc = meta_append(s, c->string, c->valuestring);
    for (size_t i = 0; i < h.n_entries && !rc; i++) {
        const tg_st_entry *e = &h.entries[i];
        bool is_int = tg_st_dtype_is_int(e->dtype);
        tg_tensor *x = append(s, e->name, is_int || keep ? e->dtype : TG_REAL_DTYPE, e->ndim, e->shape);
        rc = x ? 0 : -1;
        if (rc) break;
        st_item *it = &s->extra[s->list.count - 1];
        it->dtype = e->dtype;
        if (!is_int) {
            if (keep)
                tg_st_decode_bits(x->data, h.data + e->begin, x->size, e->dtype);
            else
                tg_st_decode_real(x->data, h.data + e->begin, x->size, e->dtype);
            continue;
        }
        tg_st_decode_int(it->ints, h.data + e->begin, x->size, e->dtype);
        if (e->dtype == TG_I64 && x->size) memcpy(x->data, it->ints, x->size * sizeof *it->ints);
        for (size_t j = 0; e->dtype != TG_I64 && j < x->size; j++)  /* exact: 32 bits at most */
            tg_dtype_store(e->dtype, x->data, j, (double)it->ints[j]);
    }
    tg_st_header_free(&h);
    if (rc) {
        tg_st_free(s);
        return tg_error_set("%s: out of memory loading the tensors", what);
    }
    *out = s;
    return 0;
}

int tg_st_parse(const uint8_t *buf, size_t len, const char *what, tg_safetensors **out)
{
    return tg_st_parse_verify(buf, len, what, TG_ST_VERIFY_AUTO, out);
}

int tg_st_load_verify(const char *path, tg_st_verify verify, tg_safetensors **out)
{
    if (!out || !path) return tg_error_set("tg_st_load: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return tg_error_set("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = -1;
    uint8_t *buf = NULL;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        tg_error_set("%s: not a regular file", path);
    } else if ((uint64_t)st.st_size > SIZE_MAX || !(buf = tg_malloc((size_t)st.st_size))) {
        tg_error_set("%s: out of memory reading %lld bytes", path, (long long)st.st_size);
    } else if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size || fgetc(f) != EOF) {
        tg_error_set("%s: read error or the file changed while reading: %s", path,
                     ferror(f) ? strerror(errno) : "unexpected length");
    } else {
        rc = tg_st_parse_verify(buf, (size_t)st.st_size, path, verify, out);
    }
    tg_free(buf);
    fclose(f);
    return rc;
}

int tg_st_load(const char *path, tg_safetensors **out) { return tg_st_load_verify(path, TG_ST_VERIFY_AUTO, out); }
