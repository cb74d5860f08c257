/* tapegrad: one include for the whole library (libtapegrad). The data-parallel
 * layer is a library of its own: <tapegrad/dist/dist.h>, libtapegrad-dist. */
#ifndef TAPEGRAD_H
#define TAPEGRAD_H

#include "core/engine/alloc.h"
#include "core/engine/error.h"
#include "core/engine/gradcheck.h"
#include "core/engine/op.h"
#include "core/engine/params.h"
#include "core/engine/rng.h"
#include "core/engine/tape.h"
#include "core/engine/tensor.h"
#include "core/engine/version.h"
#include "core/io/io.h"
#include "core/kernels/threads.h"
#include "core/ops/nn/mask.h"
#include "core/ops/ops.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "optim/scaler.h"
#include "viz/viz.h"

#endif
