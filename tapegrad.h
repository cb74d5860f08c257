/* tapegrad: one include for the whole library. */
#ifndef TAPEGRAD_H
#define TAPEGRAD_H

#include "core/alloc.h"
#include "core/gradcheck.h"
#include "core/mask.h"
#include "core/ops.h"
#include "core/params.h"
#include "core/rng.h"
#include "core/tape.h"
#include "core/tensor.h"
#include "core/threads.h"
#include "core/io.h"
#include "nn/nn.h"
#include "optim/optim.h"

#endif
