/* tapegrad internal: the safetensors dtypes tapegrad reads (core/io/elements.c):
 * names, element sizes and the conversion of a tensor's little-endian bytes.
 * Not part of the public API. */
#ifndef TAPEGRAD_IO_ELEMENTS_H
#define TAPEGRAD_IO_ELEMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"
#include "../engine/tensor.h"

/* "F32", "BF16", ...: false when name is not one tapegrad reads. */
bool tg_st_dtype_parse(const char *name, tg_dtype *out);
size_t tg_st_dtype_size(tg_dtype dt);  /* bytes per element; 0 for an invalid dt */
bool tg_st_dtype_is_int(tg_dtype dt);  /* I32, I64, U8, BOOL */
/* n elements of dtype dt at src (little-endian) as tg_real: float dtypes
 * round to nearest (F16, BF16 and F32 are exact in either build), integers
 * convert (exact up to 2^24 in the float build, 2^53 in the double), BOOL is
 * 0 or 1 (any nonzero byte is true). */
void tg_st_decode_real(tg_real *dst, const uint8_t *src, size_t n, tg_dtype dt);
/* n elements of dtype dt at src as the host's elements of dt, bit for bit. */
void tg_st_decode_bits(void *dst, const uint8_t *src, size_t n, tg_dtype dt);
/* n elements of an integer dtype dt at src as int64 (exact). */
void tg_st_decode_int(int64_t *dst, const uint8_t *src, size_t n, tg_dtype dt);
/* v as one little-endian element of F32, F64, F16 or BF16 (rounded to
 * nearest-even from the double directly; too large: infinity). */
void tg_st_encode_real(uint8_t *dst, double v, tg_dtype dt);

#endif
