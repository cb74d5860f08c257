/* tapegrad: pictures as PNG: a small RGB canvas, line and bar plots, and
 * attention heatmaps. Not part of training; seqtask and bench use it. */
#ifndef TAPEGRAD_VIZ_H
#define TAPEGRAD_VIZ_H

#include "canvas.h"
#include "heatmap.h"
#include "plot.h"

#endif
