/* tapegrad: line plots (loss / accuracy curves) and bar charts as PNG.
 *
 * Both functions draw on a white canvas with stb_easy_font text and return 0,
 * or -1 with a message in tg_error() (naming the file for I/O errors). Tick values
 * are "nice" (1, 2 or 5 times a power of ten) and the axes are widened to
 * the enclosing ticks.
 */
#ifndef TAPEGRAD_VIZ_PLOT_H
#define TAPEGRAD_VIZ_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/engine/dtype.h" /* the float64 copy's names */

#ifdef __cplusplus
extern "C" {
#endif

/* One curve of n points. x may be NULL (then x = 0 .. n-1). Points whose x
 * or y is NaN or infinite are skipped and the line joins the finite points
 * around them, so a sparse column (evaluated every k steps) draws as a line
 * through its evaluations; series with few finite points also get markers.
 * right_axis puts the series on a second y axis at the right (e.g. accuracy
 * next to loss); that axis is exactly [0, 1] when all its values lie there.
 * name may be NULL ("series <i>"). */
typedef struct {
    const char *name;
    const double *x;
    const double *y;
    int n;
    bool right_axis;
} tg_plot_series;

#define TG_PLOT_MAX_SERIES 10

/* A 960 x 600 line plot of n_series (1 .. TG_PLOT_MAX_SERIES) series with a
 * legend in rows above the plot (never over the data). title and x_label
 * may be NULL. */
int tg_plot_lines_png(const char *path, const char *title, const char *x_label,
                      const tg_plot_series *series, int n_series);

#define TG_PLOT_MAX_BARS 256

/* A bar chart of n (1 .. TG_PLOT_MAX_BARS) values with labels under the
 * bars (rotated when they do not fit; NULL labels or entries draw the
 * index; cut to 16 characters). The value axis always includes 0; negative
 * bars hang below it in a second colour. Values are printed on the bars
 * when every one fits; NaN / inf draw no bar, only their text. The image is
 * 960 x 600 px; more than ~65 bars widen it (12 px per bar, < 4000 px) and
 * long rotated labels make it taller. title may be NULL. */
int tg_plot_bars_png(const char *path, const char *title,
                     const char *const *labels, const double *values, int n);

#ifdef __cplusplus
}
#endif

#endif
