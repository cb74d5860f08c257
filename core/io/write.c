/* tapegrad: writing safetensors (see core/io/io.h): the header is built with
 * cJSON and carries the checksums (core/io/json.h), the data converted
 * to little-endian bytes of each tensor's file dtype in fixed-size chunks
 * (float tensors to the dtype asked for, the others as themselves), and files are replaced
 * atomically (temp file, fsync, rename). */
#include "io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elements.h"
#include "json.h"
#include "../engine/alloc.h"
#include "../engine/error.h"


static void put_le(uint8_t *p, uint64_t v, int nbytes)
{
    for (int i = 0; i < nbytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The dtype x is written as: a float tensor as dtype (unless dtype is
 * TG_ST_OWN_DTYPE), an integer or bool one as itself. */
static tg_dtype file_dtype(const tg_tensor *x, tg_dtype dtype)
{
    return dtype == TG_ST_OWN_DTYPE || !tg_dtype_is_float(x->dtype) ? x->dtype : dtype;
}

/* Element i of a float array of es-byte elements at p, bit for bit. */
static uint64_t float_bits(const void *p, size_t i, size_t es)
{
    switch (es) {
    case 2: return ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}

/* Elements j, j+1, ... of x encoded as its file dtype into buf [16384]: as
 * many as fit; returns the bytes written. Integers go through int64 (a
 * double holds only 2^53), floats as their bits when written as themselves
 * (NaN payloads kept, as PyTorch's save), else through double (exact from
 * any float). */
static size_t encode_chunk(const tg_tensor *x, size_t j, tg_dtype dtype, uint8_t *buf)
{
    tg_dtype dt = file_dtype(x, dtype);
    size_t es = tg_st_dtype_size(dt), per = 16384 / es, k = x->size - j < per ? x->size - j : per;
    for (size_t e = 0; e < k; e++) {
        if (tg_dtype_is_float(dt) && dt == x->dtype) {
            put_le(buf + e * es, float_bits(x->data, j + e, es), (int)es);
        } else if (tg_dtype_is_float(dt)) {
            tg_st_encode_real(buf + e * es, tg_dtype_load(x->dtype, x->data, j + e), dt);
        } else {
            int64_t v = dt == TG_I64 ? ((const int64_t *)x->data)[j + e] : (int64_t)tg_dtype_load(dt, x->data, j + e);
            put_le(buf + e * es, (uint64_t)v, (int)es);
        }
    }
    return k * es;
}

/* CRC-32 of x's bytes as the file holds them. */
static uint32_t data_crc(const tg_tensor *x, tg_dtype dtype)
{
    uint8_t buf[16384];
    uint32_t c = 0;
    for (size_t j = 0, n; j < x->size; j += n / tg_st_dtype_size(file_dtype(x, dtype))) {
        n = encode_chunk(x, j, dtype, buf);
        c = tg_crc32(c, buf, n);
    }
    return c;
}

/* Every tensor's CRC, then the checksum table as a metadata string of meta
 * (core/io/json.h); false on OOM. */
static bool add_checksums(cJSON *meta, const tg_safetensors *s, tg_dtype dtype)
{
    size_t nm = 0, nt = (size_t)tg_st_count(s);
    tg_st_item *items = tg_malloc(((size_t)tg_st_meta_count(s) + nt + 1) * sizeof *items);
    uint32_t *crcs = items ? tg_malloc((nt ? nt : 1) * sizeof *crcs) : NULL;
    char *table = NULL;
    if (crcs) {
        for (int i = 0; i < tg_st_meta_count(s); i++) {
            const char *k = tg_st_meta_key(s, i);
            if (strcmp(k, TG_ST_CHECKSUM_KEY) != 0) items[nm++] = (tg_st_item){k, tg_st_meta(s, k), 0, NULL};
        }
        for (size_t i = 0; i < nt; i++) {
            const tg_tensor *x = tg_st_at(s, (int)i);
            items[nm + i] = (tg_st_item){x->name, tg_st_dtype_name(file_dtype(x, dtype)), x->ndim, x->shape};
            crcs[i] = data_crc(x, dtype);
        }
        table = tg_st_checksum_table(items, nm, nt, crcs);
    }
    bool ok = table && cJSON_AddStringToObject(meta, TG_ST_CHECKSUM_KEY, table);
    tg_free(table);
    tg_free(crcs);
    tg_free(items);
    return ok;
}

/* {"dtype": dt, "shape": [...], "data_offsets": [begin, end]} added to root
 * under x->name; false on OOM. Offsets stay below 2^53, exact as doubles. */
static bool add_entry(cJSON *root, const tg_tensor *x, const char *dt, size_t begin, size_t end)
{
    cJSON *o = cJSON_AddObjectToObject(root, x->name);
    if (!o || !cJSON_AddStringToObject(o, "dtype", dt)) return false;
    cJSON *shape = cJSON_AddArrayToObject(o, "shape"), *offs = cJSON_AddArrayToObject(o, "data_offsets");
    if (!shape || !offs) return false;
    for (int i = 0; i < x->ndim; i++)
        if (!cJSON_AddItemToArray(shape, cJSON_CreateNumber(x->shape[i]))) return false;
    return cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)begin)) &&
           cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)end));
}

static cJSON *header_json(const tg_safetensors *s, tg_dtype dtype, size_t *data_len)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
    if (!meta) goto oom;
    for (int i = 0; i < tg_st_meta_count(s); i++) {
        const char *k = tg_st_meta_key(s, i);
        if (strcmp(k, TG_ST_CHECKSUM_KEY) != 0 && !cJSON_AddStringToObject(meta, k, tg_st_meta(s, k))) goto oom;
    }
    if (!add_checksums(meta, s, dtype)) goto oom;
    size_t off = 0;
    for (int i = 0; i < tg_st_count(s); i++) {
        const tg_tensor *x = tg_st_at(s, i);
        tg_dtype dt = file_dtype(x, dtype);
        size_t bytes = x->size * tg_st_dtype_size(dt); /* tg_shape_size bounds size * 8 */
        if (!add_entry(root, x, tg_st_dtype_name(dt), off, off + bytes)) goto oom;
        off += bytes;
    }
    *data_len = off;
    return root;
oom:
    cJSON_Delete(root);
    return NULL;
}

/* The JSON header padded with spaces to a multiple of 8 (*n bytes, not
 * NUL-terminated, tg_malloc'ed) and the length of the data section. */
static int build_header(const tg_safetensors *s, tg_dtype dtype, char **hdr, size_t *n, size_t *data_len,
                        const char *what)
{
    tg_st_json_hooks();
    cJSON *root = header_json(s, dtype, data_len);
    char *json = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json) return tg_error_set("%s: out of memory building the safetensors header", what);
    size_t len = strlen(json), padded = (len + 7) / 8 * 8;
    if (padded > TG_ST_MAX_HEADER) {
        tg_free(json);
        return tg_error_set("%s: the header would be %zu bytes, over the %u-byte limit", what,
                            padded, TG_ST_MAX_HEADER);
    }
    char *h = tg_realloc(json, padded);
    if (!h) {
        tg_free(json);
        return tg_error_set("%s: out of memory building the safetensors header", what);
    }
    memset(h + len, ' ', padded - len);
    *hdr = h;
    *n = padded;
    return 0;
}

/* Appends n bytes to the file f, or to *mem (advanced) when f is NULL. */
static bool put(FILE *f, uint8_t **mem, const void *p, size_t n)
{
    if (f) return fwrite(p, 1, n, f) == n;
    memcpy(*mem, p, n);
    *mem += n;
    return true;
}

/* Length, header, then every tensor's data. false on a write error (errno). */
static bool emit(const tg_safetensors *s, tg_dtype dtype, const char *hdr, size_t n, FILE *f, uint8_t *mem)
{
    uint8_t buf[16384];
    put_le(buf, n, 8);
    if (!put(f, &mem, buf, 8) || !put(f, &mem, hdr, n)) return false;
    for (int i = 0; i < tg_st_count(s); i++) {
        const tg_tensor *x = tg_st_at(s, i);
        for (size_t j = 0, k; j < x->size; j += k / tg_st_dtype_size(file_dtype(x, dtype))) {
            k = encode_chunk(x, j, dtype, buf);
            if (!put(f, &mem, buf, k)) return false;
        }
    }
    return true;
}

static int check_args(const char *fn, const tg_safetensors *s, const void *dst, tg_dtype dtype)
{
    if (!s || !dst) return tg_error_set("%s: %s is NULL", fn, !s ? "the set" : "the destination");
    if (dtype != TG_ST_OWN_DTYPE && !tg_dtype_is_float(dtype))
        return tg_error_set("%s: float tensors cannot be written as dtype %s (F32, F64, F16, BF16, or "
                            "TG_ST_OWN_DTYPE for each tensor's own)", fn, tg_st_dtype_name(dtype));
    return 0;
}

int tg_st_to_bytes(const tg_safetensors *s, tg_dtype dtype, uint8_t **buf, size_t *len)
{
    if (check_args("tg_st_to_bytes", s, buf && len ? buf : NULL, dtype)) return -1;
    *buf = NULL;
    *len = 0;
    char *hdr;
    size_t n, data_len;
    if (build_header(s, dtype, &hdr, &n, &data_len, "<memory>")) return -1;
    uint8_t *b = data_len <= SIZE_MAX - 8 - n ? tg_malloc(8 + n + data_len) : NULL;
    if (!b) {
        tg_free(hdr);
        return tg_error_set("<memory>: out of memory for a safetensors buffer (%zu bytes of data)",
                            data_len);
    }
    emit(s, dtype, hdr, n, NULL, b);
    tg_free(hdr);
    *buf = b;
    *len = 8 + n + data_len;
    return 0;
}

/* A replaced file keeps its mode; a new one gets 0666 & ~umask (mkstemp
 * makes 0600). umask can only be read by setting it. Best effort. */
static void set_mode(int fd, const char *path)
{
    struct stat st;
    mode_t mode;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        mode = st.st_mode & 07777;
    } else {
        mode_t mask = umask(077);
        umask(mask);
        mode = 0666 & ~mask;
    }
    (void)fchmod(fd, mode);
}

/* fsync of path's directory so the rename itself is durable. Best effort. */
static void sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash || slash == path ? 1 : (size_t)(slash - path);
    char dir[4096];  /* PATH_MAX on Linux: no allocation, so this cannot fail silently */
    if (n >= sizeof dir) return;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* Writes the whole file through fd, flushes, fsyncs and closes it (in every
 * case). 0, or the errno of the first failure. */
static int write_fd(int fd, const tg_safetensors *s, tg_dtype dtype, const char *hdr, size_t n)
{
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        return e;
    }
    errno = 0;
    int e = 0;
    if (!emit(s, dtype, hdr, n, f, NULL) || fflush(f) != 0) e = errno ? errno : EIO;
    if (!e && fsync(fileno(f)) != 0) e = errno;
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    return e;
}

int tg_st_save(const tg_safetensors *s, const char *path, tg_dtype dtype)
{
    if (check_args("tg_st_save", s, path, dtype)) return -1;
    char *hdr;
    size_t n, data_len;
    if (build_header(s, dtype, &hdr, &n, &data_len, path)) return -1;
    size_t plen = strlen(path);
    char *tmp = tg_malloc(plen + sizeof ".tmp.XXXXXX");
    if (!tmp) {
        tg_free(hdr);
        return tg_error_set("%s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    int rc = 0, fd = mkstemp(tmp);
    if (fd < 0) {
        rc = tg_error_set("%s: cannot create a temporary file %s.tmp.XXXXXX next to it: %s", path,
                          path, strerror(errno));
    } else {
        set_mode(fd, path);
        int e = write_fd(fd, s, dtype, hdr, n);
        if (!e && rename(tmp, path) != 0) e = errno;
        if (e) {
            unlink(tmp);
            rc = tg_error_set("%s: cannot write the file (via %s): %s; the old file, if any, is untouched",
                              path, tmp, strerror(e));
        } else {
            sync_dir(path);
        }
    }
    tg_free(tmp);
    tg_free(hdr);
    return rc;
}

/* ---- parameters ---------------------------------------------------------------------- */

int tg_st_add_params(tg_safetensors *s, const tg_params *p)
{
    if (!s || !p) return tg_error_set("tg_st_add_params: NULL argument");
    for (int i = 0; i < tg_params_count(p); i++)
        if (tg_st_add(s, NULL, tg_params_at(p, i))) return -1;
    return 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return prefix && *prefix && strncmp(s, prefix, strlen(prefix)) == 0;
}

int tg_st_load_params(tg_params *p, const tg_safetensors *s, bool strict, const char *ignore_prefix)
{
    if (!p || !s) return tg_error_set("tg_st_load_params: NULL argument");
    char sa[TG_SHAPE_STR], sb[TG_SHAPE_STR];
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *x = tg_params_at(p, i), *y = tg_st_get(s, x->name);
        if (!y)
            return tg_error_set("tg_st_load_params: missing tensor '%s' (the model expects shape %s)", x->name,
                                tg_shape_str(x, sa));
        if (!tg_shape_equal(x, y))
            return tg_error_set("tg_st_load_params: tensor '%s' has shape %s, the model expects %s", x->name,
                                tg_shape_str(y, sa), tg_shape_str(x, sb));
        /* an integer buffer (BatchNorm's num_batches_tracked) may be held as float; a weight may not */
        if (!tg_dtype_is_float(y->dtype) && tg_dtype_is_float(x->dtype) && x->requires_grad)
            return tg_error_set("tg_st_load_params: tensor '%s' is %s, but the parameter is %s and takes a gradient",
                                x->name, tg_dtype_name(y->dtype), tg_dtype_name(x->dtype));
    }
    for (int i = 0; strict && i < tg_st_count(s); i++) {
        const char *name = tg_st_at(s, i)->name;
        if (!has_prefix(name, ignore_prefix) && !tg_params_get(p, name))
            return tg_error_set("tg_st_load_params: unexpected tensor '%s' (not a parameter of the model)",
                                name);
    }
    for (int i = 0; i < tg_params_count(p); i++) {
        tg_tensor *x = tg_params_at(p, i);
        const tg_tensor *y = tg_st_get(s, x->name);
        if (x->dtype == y->dtype) {
            if (x->size) memcpy(x->data, y->data, x->size * tg_dtype_size(x->dtype));
        } else {
            for (size_t j = 0; j < x->size; j++) tg_dtype_store(x->dtype, x->data, j, tg_dtype_load(y->dtype, y->data, j));
        }
    }
    return 0;
}
