/* tapegrad: every core op, in families (one header and folder each):
 *   linalg/     matmul, triangles and diagonals
 *   pointwise/  elementwise arithmetic with broadcasting, math, activations, comparisons
 *   reduce/     reductions of every element and along a dim, statistics, scans, sort
 *   shape/      views, moves, joins and splits, slicing, gather / scatter / index
 *   create/     constants, ranges and random tensors
 *   nn/         softmax, masks, normalisation, embedding, dropout, attention, RoPE, ALiBi;
 *               conv.h: convolution, pooling, batch norm, channel dropout, resizing
 *   loss/       losses
 * Each op returns its output (a new arena tensor, or a view where said), or
 * NULL with the tape's error set; a NULL input gives NULL and keeps the first
 * message. Forward and backward of each op sit side by side in its family's
 * folder. */
#ifndef TAPEGRAD_OPS_H
#define TAPEGRAD_OPS_H

#include "create/create.h"
#include "linalg/linalg.h"
#include "loss/loss.h"
#include "nn/conv.h"
#include "nn/nn.h"
#include "pointwise/pointwise.h"
#include "reduce/reduce.h"
#include "shape/shape.h"

#endif
