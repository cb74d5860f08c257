/* tapegrad: every nn layer (DESIGN.md sections 8 and 9). */
#ifndef TAPEGRAD_NN_H
#define TAPEGRAD_NN_H

#include "nn/attention.h"
#include "nn/block.h"
#include "nn/embedding.h"
#include "nn/ffn.h"
#include "nn/heatmap.h"
#include "nn/init.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/model.h"

#endif
