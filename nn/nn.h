/* tapegrad: every nn layer. */
#ifndef TAPEGRAD_NN_H
#define TAPEGRAD_NN_H

#include "attention.h"
#include "batchnorm.h"
#include "block.h"
#include "check.h"
#include "conv.h"
#include "dropout.h"
#include "embedding.h"
#include "ffn.h"
#include "init.h"
#include "layernorm.h"
#include "linear.h"
#include "model.h"
#include "names.h"
#include "pool.h"
#include "rmsnorm.h"
#include "sample.h"
#include "upsample.h"

#endif
