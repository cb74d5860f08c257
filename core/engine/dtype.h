/* tapegrad: element types.
 *
 * Every tensor carries one (tg_tensor.dtype). The library computes in float32
 * and float64: each op is compiled once per float type (docs/DESIGN.md
 * "Dtypes"), and an op given the other float type hands the call to that
 * type's copy. bfloat16 and float16 are storage types (converted with tg_to);
 * int32, int64, uint8 and bool hold ids, targets, indices and masks and never
 * take a gradient.
 *
 * A program's default dtype is its tg_real: float32, or float64 when it is
 * compiled with TAPEGRAD_DOUBLE defined. Both link the same library.
 */
#ifndef TAPEGRAD_DTYPE_H
#define TAPEGRAD_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_dtype { TG_F32, TG_F64, TG_F16, TG_BF16, TG_I32, TG_I64, TG_U8, TG_BOOL, TG_DTYPE_COUNT } tg_dtype;

#ifdef TAPEGRAD_DOUBLE
typedef double tg_real;
#define TG_REAL_DTYPE TG_F64
#define TG_REAL_NAME "double"
#include "f64_names.h"
#else
typedef float tg_real;
#define TG_REAL_DTYPE TG_F32
#define TG_REAL_NAME "float32"
#endif

/* PyTorch's names: "float32", "bfloat16", "int64", "bool"; "?" for no dtype. */
const char *tg_dtype_name(tg_dtype dt);
size_t tg_dtype_size(tg_dtype dt);   /* bytes per element; 0 for no dtype */
bool tg_dtype_is_float(tg_dtype dt); /* F32, F64, F16, BF16 */
bool tg_dtype_is_half(tg_dtype dt);  /* F16, BF16: stored, computed in float32 */

/* One element of dtype dt at p as a double (exact for every dtype but
 * int64 beyond 2^53), and v stored as one element of dt: float types round to
 * nearest even, integers truncate toward zero (NaN: 0), bool is v != 0. */
double tg_dtype_load(tg_dtype dt, const void *p, size_t i);
void tg_dtype_store(tg_dtype dt, void *p, size_t i, double v);
/* The bits of one F16 or BF16 element as a double, and v rounded to them. */
double tg_half_to_double(uint16_t h, tg_dtype dt);
uint16_t tg_half_from_double(double v, tg_dtype dt);

#ifdef __cplusplus
}
#endif

#endif
