/* tapegrad internal: the operands of core/kernels/gemm_half.c's bfloat16
 * kernels packed into panels of k-pair dwords (a pair of bfloat16 at k,
 * k+1, the even one in the low word: what VDPBF16PS and TDPBF16PS
 * multiply), from bfloat16 or from float32 rounded as it is read. A panel
 * is w lines (rows of op(A) or columns of op(B)) by kp pairs, cut into
 * groups of G pairs (G = the kernel's pairs per step, 1 or 16), each group
 * w x G dwords, in which every 16 lines are one block of 16 x G, by line
 * (by_row: line l's G pairs together) or by pair. With G = 1 that is pair
 * p of line l at p*w + l (VDPBF16PS's broadcasts and vectors); with G = 16
 * every block is one AMX tile, 1 KiB contiguous (a strided tile load is
 * slower). */
#ifndef TAPEGRAD_BF16_PACK_H
#define TAPEGRAD_BF16_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An operand as packing reads it: bfloat16, or float32 rounded to
 * bfloat16 as it is read (tg_gemm_rounded: no rounded copy is made). */
typedef struct tg_bf16_src {
    const void *p;
    bool f32;
} tg_bf16_src;

/* Lines [r0, r0+n) x k [k0, k0+kc) of X -> panels of w lines and kp pairs
 * (kp >= kc/2 rounded up to G), panel q at dst + q*w*kp; lines past n and
 * pairs past kc are zero. Element (l, k) of X is at X[k*ld + l] (kmajor)
 * or X[l*ld + k]. A panels: the rows of op(A) (w = mr, kmajor = ta); B
 * panels: the columns of op(B) (w = nr, kmajor = !tb). */
void tg_bf16_pack(tg_bf16_src X, int ld, bool kmajor, int r0, int n, int k0, int kc, int kp, int w, int G,
                  bool by_row, uint32_t *dst);

#endif
