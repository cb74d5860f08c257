/* tapegrad: a tiny RGB canvas for the PNG heatmaps and plots.
 *
 * Pixels are 8-bit RGB, row-major [h, w, 3], origin top-left, y down. Every
 * drawing call clips to the canvas, so callers may draw partly (or wholly)
 * outside it. Text uses stb_easy_font (ASCII 32..126; other bytes draw as
 * '?'): at scale 1 a glyph is 7 px tall above the baseline, descenders reach
 * 9 px, and most glyphs advance 6 px. Text positions are the top-left corner
 * of that 9-px box (times scale).
 */
#ifndef TAPEGRAD_VIZ_CANVAS_H
#define TAPEGRAD_VIZ_CANVAS_H

#include <stddef.h>
#include <stdint.h>

#include "../core/engine/dtype.h" /* the float64 copy's names */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint8_t r, g, b;
} tg_rgb;

typedef struct {
    int w, h;
    uint8_t *px; /* [h, w, 3] */
} tg_canvas;

/* Longest text drawn or measured; longer strings are cut. */
#define TG_TEXT_MAX 256

/* A w x h canvas filled with bg, or NULL (tg_error() says why) on a bad size
 * or out of memory. */
tg_canvas *tg_canvas_new(int w, int h, tg_rgb bg);
void tg_canvas_free(tg_canvas *c);

void tg_canvas_pixel(tg_canvas *c, int x, int y, tg_rgb col);
/* Fills [x, x+w) x [y, y+h). */
void tg_canvas_fill_rect(tg_canvas *c, int x, int y, int w, int h, tg_rgb col);
/* 1-px outline of [x, x+w) x [y, y+h). */
void tg_canvas_rect(tg_canvas *c, int x, int y, int w, int h, tg_rgb col);
/* Bresenham line including both end points; thickness >= 1 stamps a square
 * brush of that side at every step. */
void tg_canvas_line(tg_canvas *c, int x0, int y0, int x1, int y1,
                    int thickness, tg_rgb col);

/* Horizontal text with its box's top-left corner at (x, y). */
void tg_canvas_text(tg_canvas *c, int x, int y, const char *s, int scale,
                    tg_rgb col);
/* Text rotated 90 degrees counter-clockwise (reads bottom to top). Its box
 * is [x, x + tg_text_height(scale)) x [y - tg_text_width(s, scale), y):
 * (x, y) is the bottom-left corner, where the first character starts. */
void tg_canvas_text_up(tg_canvas *c, int x, int y, const char *s, int scale,
                       tg_rgb col);
/* Ink width in pixels of s at scale (0 for an empty string). */
int tg_text_width(const char *s, int scale);
/* Height of the text box (ascent + descent) at scale. */
int tg_text_height(int scale);

/* Matplotlib's viridis at t in [0, 1] (clamped; NaN gives the t = 0 end). */
tg_rgb tg_viridis(double t);

/* Writes c to path as PNG. 0 on success; -1 with a message naming the file
 * in tg_error() on failure (a write error, a full disk), and then no file
 * is left at path: never a cut-off picture. */
int tg_canvas_save_png(const tg_canvas *c, const char *path);

#ifdef __cplusplus
}
#endif

#endif
