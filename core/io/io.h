/* tapegrad: safetensors files.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value", ...}}, then the raw little-endian data.
 * tapegrad reads and writes F32, F64, F16, BF16, I32, I64, U8 and BOOL: an
 * integer or bool tensor is kept as itself both ways; a float tensor is
 * written as the dtype tg_st_save is given (or as itself) and loads as the
 * program's tg_real, the dtype every op computes in, or, asked with
 * TG_ST_KEEP_DTYPE, as its file's dtype (core/io/types.h).
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
 *   - dtypes: a float tensor loads into tg_real: F64 -> float rounds to
 *     nearest; F32, F16 and BF16 convert exactly (tg_st_dtype tells the
 *     file's dtype). An I32, I64, U8 or BOOL tensor loads as a tensor of that
 *     dtype (BOOL is 0 or 1: a nonzero byte is true), its values also as
 *     int64 (tg_st_ints): token ids, BatchNorm's num_batches_tracked. The other
 *     safetensors dtypes (I8, I16, U16, U32, U64, F8_E4M3, F8_E5M2, ...) are
 *     known but rejected as "not supported"; anything else is an "unknown
 *     dtype".
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
 *   - checksums: every file written carries the metadata entry
 *     "tapegrad.crc32", a CRC-32 of each tensor's bytes and of the rest of
 *     the metadata with the tensors' names, dtypes and shapes (format in
 *     core/io/json.h, docs/FORMATS.md). Reading verifies it first and
 *     refuses a mismatch naming the tensor ("tensor 'w': its data does not
 *     match its checksum") or the metadata, and a table with an entry
 *     missing or extra. A file without the table loads unchecked only when
 *     nothing in it says tapegrad wrote it: a metadata key in the
 *     "tapegrad." namespace (any case) or one byte from "tapegrad.crc32"
 *     (a damaged key) makes it refused, so one corrupted byte cannot turn
 *     the check off. tg_st_load_verify chooses: a program reading back its
 *     own files asks for TG_ST_VERIFY_REQUIRED; TG_ST_VERIFY_OFF reads a
 *     file unchecked. The entry is not part of the loaded set's metadata (a
 *     caller's entry of that name is replaced on writing).
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
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An in-memory set of named tensors (heap copies) and string metadata. */
typedef struct tg_safetensors tg_safetensors;

/* NULL only when out of memory. */
tg_safetensors *tg_st_new(void);
void tg_st_free(tg_safetensors *s);
/* Copies x (any dtype, kept) under name (x->name when name is NULL). Names are UTF-8
 * (empty is allowed, as in the reference), not "__metadata__", and unique: a
 * duplicate fails. */
int tg_st_add(tg_safetensors *s, const char *name, const tg_tensor *x);
/* The same from data of tg_real's dtype (NULL: zeros). */
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
/* The dtype name had in the file it was loaded from (the tensor's own for a
 * tensor added in memory); -1 with a message when s has no tensor name. */
int tg_st_dtype(const tg_safetensors *s, const char *name, tg_dtype *out);
/* The values of an integer tensor (I32, I64, U8, BOOL) as int64,
 * tg_st_get(s, name)->size of them, owned by s; NULL with a message for a
 * missing name or a tensor of a float dtype. */
const int64_t *tg_st_ints(const tg_safetensors *s, const char *name);

/* tg_st_save's dtype for "every tensor as its own dtype". */
#define TG_ST_OWN_DTYPE TG_DTYPE_COUNT

/* Writes every float tensor as dtype, TG_F32, TG_F64, TG_F16 or TG_BF16 (a
 * wider one exactly; narrower ones round to nearest-even, as PyTorch does,
 * and overflow to infinity), and every integer and bool tensor as its own
 * dtype; with TG_ST_OWN_DTYPE every tensor as its own dtype (bit for bit). Atomic: "<path>.tmp.XXXXXX" (mkstemp)
 * is written, flushed, fsync'ed, closed and renamed over path (then the
 * directory is fsync'ed, best effort); on any failure it is removed and an
 * existing file at path is untouched. A new file gets mode 0666 & ~umask, a
 * replaced file keeps its mode. */
int tg_st_save(const tg_safetensors *s, const char *path, tg_dtype dtype);
/* The same bytes in memory: *buf (tg_malloc'ed, free with tg_free), *len. */
int tg_st_to_bytes(const tg_safetensors *s, tg_dtype dtype, uint8_t **buf, size_t *len);

/* Reads and parses a whole file; messages name path. *out is NULL on
 * failure. tg_st_load is tg_st_load_verify(path, TG_ST_VERIFY_AUTO, out);
 * verify may have TG_ST_KEEP_DTYPE or'ed in (every tensor as its file's
 * dtype, bit for bit, as PyTorch's load_file). */
int tg_st_load(const char *path, tg_safetensors **out);
int tg_st_load_verify(const char *path, tg_st_verify verify, tg_safetensors **out);
/* Parses a whole file already in memory; `what` names it in messages
 * ("<memory>" when NULL). Everything is validated before anything is
 * allocated for the tensors; *out is NULL on failure. */
int tg_st_parse(const uint8_t *buf, size_t len, const char *what, tg_safetensors **out);
int tg_st_parse_verify(const uint8_t *buf, size_t len, const char *what, tg_st_verify verify,
                       tg_safetensors **out);
/* True when s was read from a file whose checksums were verified (false
 * for a set built in memory or read unchecked). */
bool tg_st_verified(const tg_safetensors *s);

/* Every parameter of p: copied into s under its name (data only). */
int tg_st_add_params(tg_safetensors *s, const tg_params *p);
/* Loads every parameter of p from s: each must be present with p's shape,
 * converted to p's dtype; the first missing or mis-shaped name is reported,
 * and an integer tensor for a parameter that takes a gradient is refused
 * naming both dtypes (a buffer such as num_batches_tracked, an int64 in
 * PyTorch held as float, converts). When strict, a tensor of
 * s that p does not have (outside the `ignore_prefix`, e.g. "optim.") is an
 * error too. Everything is checked before anything is copied: on failure p is
 * left unchanged. */
int tg_st_load_params(tg_params *p, const tg_safetensors *s, bool strict, const char *ignore_prefix);

#ifdef __cplusplus
}
#endif

#endif
