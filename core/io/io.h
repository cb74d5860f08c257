/* tapegrad: safetensors files.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value", ...}}, then the raw little-endian data.
 * tapegrad writes F32 or F64 and reads both (converting to tg_real).
 *
 * Reading validates what the reference implementation validates (header at
 * most 100 MB and within the file, known dtypes, shapes and byte sizes without
 * overflow, offsets in range, contiguous, not overlapping, covering the data
 * exactly, no duplicate names); a hostile file only yields an error message
 * naming the file and the problem. Writing is atomic: a temporary file in the
 * same directory, fsync, rename; on failure the old file is untouched.
 *
 * Every function returns 0 (or a pointer) on success, -1 (or NULL) on failure
 * with the message in tg_error() (core/engine/error.h).
 *
 * Details:
 *   - dtypes: F32 and F64 load into tg_real (F64 -> float rounds to nearest;
 *     F32 -> double is exact). The other safetensors dtypes (BOOL, U8, I8, I16,
 *     U16, I32, U32, I64, U64, F16, BF16, F8_E4M3, F8_E5M2, ...) are known but
 *     rejected as "not supported"; anything else is an "unknown dtype".
 *   - shapes have at most 8 dims (TG_MAX_DIMS), each an integer in
 *     [0, INT_MAX]; 0-d (shape []) and empty (a 0 dim) tensors are fine.
 *   - the header must be valid UTF-8 JSON (no raw control characters, no
 *     \u0000 escapes, numbers in strict JSON syntax), a single object; an
 *     optional "__metadata__" maps strings to strings (null counts as absent);
 *     unknown fields inside a tensor entry are ignored, as the reference does.
 *   - written files: "__metadata__" first, then tensors in insertion order with
 *     contiguous offsets in that order; the header is padded with spaces to a
 *     multiple of 8 bytes (so the data starts 8-aligned), as the reference does.
 *   - loaded sets list tensors in file-offset order.
 *   - where tapegrad differs from the reference reader: dims and offsets
 *     written as integral non-integers (4.0, 4e0) are accepted; offsets above
 *     2^53 and dims above INT_MAX are rejected; names and metadata may not
 *     contain \u0000 (tapegrad names are C strings).
 *   - cJSON's allocations are routed through tg_malloc/tg_free
 *     (cJSON_InitHooks, process-wide: do not install other cJSON hooks in a
 *     program that uses tapegrad's I/O).
 */
#ifndef TAPEGRAD_IO_H
#define TAPEGRAD_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../engine/params.h"
#include "../engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_dtype { TG_F32, TG_F64 } tg_dtype;

/* An in-memory set of named tensors (heap copies) and string metadata. */
typedef struct tg_safetensors tg_safetensors;

/* NULL only when out of memory. */
tg_safetensors *tg_st_new(void);
void tg_st_free(tg_safetensors *s);
/* Copies x's data under name (x->name when name is NULL). Names are UTF-8
 * (empty is allowed, as in the reference), not "__metadata__", and unique: a
 * duplicate fails. */
int tg_st_add(tg_safetensors *s, const char *name, const tg_tensor *x);
int tg_st_add_data(tg_safetensors *s, const char *name, const tg_real *data, int ndim,
                   const int *shape);
/* A new zero-filled tensor under name, owned by s, to be filled in place;
 * NULL with a message in tg_error() on a bad name or shape or out of memory. */
tg_tensor *tg_st_add_zeros(tg_safetensors *s, const char *name, int ndim, const int *shape);
/* Sets (or replaces) a metadata entry; key and value are UTF-8 strings. */
int tg_st_set_meta(tg_safetensors *s, const char *key, const char *value);
const char *tg_st_meta(const tg_safetensors *s, const char *key);  /* NULL if absent */
int tg_st_meta_count(const tg_safetensors *s);
const char *tg_st_meta_key(const tg_safetensors *s, int i);

int tg_st_count(const tg_safetensors *s);
tg_tensor *tg_st_at(const tg_safetensors *s, int i);       /* ->name is the key */
tg_tensor *tg_st_get(const tg_safetensors *s, const char *name);

/* Writes every tensor as dtype (F64 from the float build is exact; F32 from
 * the double build rounds to nearest). Atomic: "<path>.tmp.XXXXXX" (mkstemp)
 * is written, flushed, fsync'ed, closed and renamed over path (then the
 * directory is fsync'ed, best effort); on any failure it is removed and an
 * existing file at path is untouched. A new file gets mode 0666 & ~umask, a
 * replaced file keeps its mode. */
int tg_st_save(const tg_safetensors *s, const char *path, tg_dtype dtype);
/* The same bytes in memory: *buf (tg_malloc'ed, free with tg_free), *len. */
int tg_st_to_bytes(const tg_safetensors *s, tg_dtype dtype, uint8_t **buf, size_t *len);
/* Reads and parses a whole file; messages name path. *out is NULL on failure. */
int tg_st_load(const char *path, tg_safetensors **out);
/* Parses a whole file already in memory; `what` names it in messages
 * ("<memory>" when NULL). Everything is validated before anything is
 * allocated for the tensors; *out is NULL on failure. */
int tg_st_parse(const uint8_t *buf, size_t len, const char *what, tg_safetensors **out);

/* Every parameter of p: copied into s under its name (data only). */
int tg_st_add_params(tg_safetensors *s, const tg_params *p);
/* Loads every parameter of p from s: each must be present with p's shape;
 * the first missing or mis-shaped name is reported. When strict, a tensor of
 * s that p does not have (outside the `ignore_prefix`, e.g. "optim.") is an
 * error too. Everything is checked before anything is copied: on failure p is
 * left unchanged. */
int tg_st_load_params(tg_params *p, const tg_safetensors *s, bool strict, const char *ignore_prefix);

#ifdef __cplusplus
}
#endif

#endif
