/* tapegrad: attention weights as one PNG heatmap.
 *
 * weights is [n_layers, n_heads, Lq, Lk], row-major: for each layer and head
 * the softmax-ed attention of Lq queries over Lk keys. The image is a grid of
 * cells, rows = layers, columns = heads. Each cell is titled "L<layer>
 * H<head>", has query labels down its left side under the axis title
 * "query", key labels (horizontal) along its top under the axis title "key",
 * and shows the Lq x Lk matrix with every entry a crisp s x s square,
 * s = clamp(192 / max(Lq, Lk), 12, 32) px (32 for L <= 6, 24 for L = 8, 12
 * for L >= 16), made smaller only to keep the image within 4000 x 4000 px.
 * Labels keep their size: where they do not fit their row or column, only
 * every k-th is drawn (tg_heatmap_label_step). Colours are viridis over
 * [0, 1]: values are clamped, NaN draws dark grey, and -INFINITY marks a
 * masked-out entry (a key the query may not see), drawn light grey, unlike
 * a weight of 0. A colorbar with ticks 0 / 0.5 / 1 sits on the right, the
 * masked swatch below it.
 *
 * q_labels (Lq strings) and k_labels (Lk strings) may be NULL, as may any
 * entry: the index is drawn instead. Labels longer than 10 characters are
 * cut and end in "..", non-ASCII bytes draw as '?'.
 */
#ifndef TAPEGRAD_VIZ_HEATMAP_H
#define TAPEGRAD_VIZ_HEATMAP_H

#include <stddef.h>

#include "../core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits beyond which tg_heatmap_png refuses (the image would exceed
 * 4000 px even at one pixel per entry long before these). */
#define TG_HEATMAP_MAX_GRID 64   /* n_layers, n_heads */
#define TG_HEATMAP_MAX_LEN 2048  /* Lq, Lk */

/* Labels extent px long (a key label's width, a query label's cap height),
 * centred on rows or columns s px apart, with 2 px between neighbours: the
 * smallest k such that every k-th label fits (1: all of them). */
int tg_heatmap_label_step(int s, int extent);

/* Renders weights to a PNG at path. 0 on success; -1 on a bad argument, an
 * image that would be too large, out of memory or a write error, with a
 * message in tg_error() (naming the file for I/O errors). */
int tg_heatmap_png(const char *path, const tg_real *weights, int n_layers,
                   int n_heads, int Lq, int Lk, const char *const *q_labels,
                   const char *const *k_labels);
/* The same for grouped-query attention: n_kv_heads (dividing n_heads) key/value
 * heads, and each cell titled "L<layer> H<head> KV<group>" (the key/value head
 * it reads) when n_kv_heads < n_heads. */
int tg_heatmap_png_groups(const char *path, const tg_real *weights, int n_layers, int n_heads, int n_kv_heads,
                          int Lq, int Lk, const char *const *q_labels, const char *const *k_labels);

#ifdef __cplusplus
}
#endif

#endif
