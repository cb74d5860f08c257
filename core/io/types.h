/* tapegrad: the types of safetensors files that core/io/io.h's readers and
 * writers and their internal helpers (dtype.h, json.h) share: below them all,
 * so that no two of them include each other. */
#ifndef TAPEGRAD_IO_TYPES_H
#define TAPEGRAD_IO_TYPES_H

#include "../engine/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A safetensors dtype's name in a file: "F32", "BF16", ...; "?" for no dtype. */
const char *tg_st_dtype_name(tg_dtype dt);

/* What a read verifies of the checksums ("tapegrad.crc32", core/io/io.h). */
typedef enum tg_st_verify {
    TG_ST_VERIFY_AUTO,     /* the table if present; refused without one when
                              the metadata says tapegrad wrote the file; other
                              files (PyTorch's) load unchecked */
    TG_ST_VERIFY_REQUIRED, /* every file must carry a valid table (files this
                              program wrote) */
    TG_ST_VERIFY_OFF,      /* nothing: a damaged file, at the caller's risk */
    TG_ST_KEEP_DTYPE = 1 << 4, /* or'ed with one of the above: every float
                              tensor loads as its file's dtype (F16 and BF16
                              as half tensors), as PyTorch's load_file does,
                              instead of as tg_real */
} tg_st_verify;

#ifdef __cplusplus
}
#endif

#endif
