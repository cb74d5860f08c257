/* tapegrad internal: VDPBF16PS and TDPBF16PS, the bfloat16 dot products of
 * AVX512-BF16 and AMX-BF16, emulated in scalar code with the bits Intel's
 * SDM (vol. 2C) defines: DAZ on the inputs, each accumulation rounded once
 * to nearest even, denormal results flushed to zero, whatever the caller's
 * MXCSR. core/kernels/gemm_half.c builds its kernels once over the vector
 * operations, and runs them with these in place of the instructions on
 * every CPU, so that its packing, blocking and tiles are tested where the
 * instructions are missing. Slow: a test device. */
#ifndef TAPEGRAD_BF16_EMU_H
#define TAPEGRAD_BF16_EMU_H

#include <stdint.h>

/* One float32 lane of VDPBF16PS: acc plus the products of the bfloat16 pairs
 * x and y (low word: the even element), the odd product first. */
float tg_emu_dpbf16(float acc, uint32_t x, uint32_t y);

/* A tile as gemm_half.c configures them: 16 rows of 64 bytes (16 dwords). */
typedef struct tg_emu_tile { uint32_t d[16][16]; } tg_emu_tile;

/* TDPBF16PS c, a, b: c (float32) += a (16 rows x 16 pairs) b (16 pairs x
 * 16 columns), the even and odd products in two sums. */
void tg_emu_tdpbf16(tg_emu_tile *c, const tg_emu_tile *a, const tg_emu_tile *b);

#endif
