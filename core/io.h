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
 * Functions that touch files return 0 on success, -1 on failure with a
 * message in err (errlen bytes, may be 0).
 */
#ifndef TAPEGRAD_IO_H
#define TAPEGRAD_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/params.h"
#include "core/tensor.h"

typedef enum tg_dtype { TG_F32, TG_F64 } tg_dtype;

/* An in-memory set of named tensors (heap copies) and string metadata. */
typedef struct tg_safetensors tg_safetensors;

tg_safetensors *tg_st_new(void);
void tg_st_free(tg_safetensors *s);
/* Copies x's data under name (replacing nothing: duplicate names fail). */
int tg_st_add(tg_safetensors *s, const char *name, const tg_tensor *x, char *err, size_t errlen);
int tg_st_add_data(tg_safetensors *s, const char *name, const tg_real *data, int ndim,
                   const int *shape, char *err, size_t errlen);
int tg_st_set_meta(tg_safetensors *s, const char *key, const char *value, char *err, size_t errlen);
const char *tg_st_meta(const tg_safetensors *s, const char *key);  /* NULL if absent */
int tg_st_meta_count(const tg_safetensors *s);
const char *tg_st_meta_key(const tg_safetensors *s, int i);

int tg_st_count(const tg_safetensors *s);
tg_tensor *tg_st_at(const tg_safetensors *s, int i);       /* ->name is the key */
tg_tensor *tg_st_get(const tg_safetensors *s, const char *name);

int tg_st_save(const tg_safetensors *s, const char *path, tg_dtype dtype, char *err, size_t errlen);
int tg_st_load(const char *path, tg_safetensors **out, char *err, size_t errlen);
/* Parses a whole file already in memory; `what` names it in messages. */
int tg_st_parse(const uint8_t *buf, size_t len, const char *what, tg_safetensors **out, char *err,
                size_t errlen);

/* Every parameter of p: copied into s under its name. */
int tg_st_add_params(tg_safetensors *s, const tg_params *p, char *err, size_t errlen);
/* Loads every parameter of p from s: each must be present with p's shape;
 * the first missing or mis-shaped name is reported. When strict, a tensor of
 * s that p does not have (outside the `ignore_prefix`, e.g. "optim.") is an
 * error too. On failure p is left unchanged. */
int tg_st_load_params(tg_params *p, const tg_safetensors *s, bool strict, const char *ignore_prefix,
                      char *err, size_t errlen);

#endif
