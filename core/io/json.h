/* tapegrad internal: validation of a safetensors file's header (core/io/json.c),
 * shared by the reader (core/io/read.c) and the writer (core/io/write.c). Not part
 * of the public API. */
#ifndef TAPEGRAD_IO_JSON_H
#define TAPEGRAD_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"
#include "../engine/tensor.h"

#define TG_ST_MAX_HEADER 100000000u /* the reference's limit on the header length N */

struct cJSON;

/* One tensor entry of a validated header. */
typedef struct tg_st_entry {
    const char *name; /* points into the cJSON tree */
    tg_dtype dtype;
    int ndim, shape[TG_MAX_DIMS];
    uint64_t begin, end; /* within the data section */
    size_t index;        /* position in the header */
} tg_st_entry;

typedef struct tg_st_header {
    struct cJSON *root;       /* the parsed header */
    const struct cJSON *meta; /* "__metadata__" (an object), or NULL */
    tg_st_entry *entries;     /* sorted by offsets, tiling the data exactly */
    size_t n_entries;
    const uint8_t *data; /* the data section of the buffer */
} tg_st_header;

/* Validates a whole file in memory (every rule of core/io/io.h) without
 * allocating anything for the tensors. 0 and *h filled (free it with
 * tg_st_header_free), or -1 with a message naming `what`. */
int tg_st_header_read(const uint8_t *buf, size_t len, const char *what, tg_st_header *h);
void tg_st_header_free(tg_st_header *h);

/* Routes cJSON's allocations through tg_malloc/tg_free. */
void tg_st_json_hooks(void);
/* True when s is valid UTF-8 (no overlongs, surrogates or code points above
 * U+10FFFF). */
bool tg_st_utf8_valid(const char *s);

/* ---- checksums (core/io/checksum.c) --------------------------------------
 * Written by core/io/write.c into every file, verified by core/io/read.c.
 *
 * The metadata entry "tapegrad.crc32" holds a JSON object, as a string:
 *   {"__metadata__": "<crc>", "<tensor name>": "<crc>", ...}
 * each <crc> 8 lowercase hex digits of CRC-32 (zlib's crc32, the one of
 * Python's zlib.crc32):
 *   - of a tensor: its bytes in the data section;
 *   - "__metadata__": the bytes, in this order, of every other metadata
 *     entry sorted by key (key NUL value NUL), then of every tensor sorted
 *     by name (name NUL dtype NUL dims in decimal joined by "," NUL).
 * Keyed by name and sorted, so a tool that rewrites the file in another
 * order (safetensors' save_file does) keeps it valid if it keeps the
 * bytes, names, dtypes and shapes. Which files must carry it: io.h
 * (tg_st_verify), docs/FORMATS.md. */
#define TG_ST_CHECKSUM_KEY "tapegrad.crc32"

/* crc updated with n bytes at p (start from 0). */
uint32_t tg_crc32(uint32_t crc, const void *p, size_t n);

/* A metadata entry (key, value; shape NULL) or a tensor (name, dtype name,
 * shape), as the checksums read them. */
typedef struct tg_st_item {
    const char *key, *value;
    int ndim;
    const int *shape;
} tg_st_item;

/* The table "{...}" (tg_malloc'ed; NULL on OOM) of the metadata items[0, nm)
 * (the table's own key left out) and the tensors items[nm, nm + nt), in the
 * file's order, crcs [nt] their data CRCs. Sorts the items. */
char *tg_st_checksum_table(tg_st_item *items, size_t nm, size_t nt, const uint32_t *crcs);

/* Checks a validated header against its table as `verify` asks: 1 when
 * the table was verified, 0 when there was none to verify and that is
 * allowed, -1 with a message naming `what` and the tensor, the metadata or
 * the missing table. */
int tg_st_checksum_verify(const tg_st_header *h, tg_st_verify verify, const char *what);

#endif
