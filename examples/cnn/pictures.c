/* cnn: confusion.png and filters.png, drawn on viz/'s canvas. */
#include <math.h>
#include <stdio.h>

#include "cnn.h"

static const tg_rgb WHITE = {255, 255, 255}, BLACK = {0, 0, 0}, GREY = {120, 120, 120};

int cnn_confusion_png(const char *path, const long confusion[CNN_CLASSES][CNN_CLASSES], const char *title)
{
    enum { N = CNN_CLASSES, CELL = 52, PAD = 12, BAR = 16 };
    int label = 0;
    for (int i = 0; i < N; i++) {
        int w = tg_text_width(cnn_class_names[i], 1);
        label = w > label ? w : label;
    }
    int th = tg_text_height(1), left = PAD + th + 8 + label + 8;
    int top = PAD + tg_text_height(2) + 12 + th + 8 + label + 8;
    int W = left + N * CELL + 24 + BAR + 40, H = top + N * CELL + PAD + th;
    tg_canvas *c = tg_canvas_new(W, H, WHITE);
    if (!c) return -1;
    tg_canvas_text(c, PAD, PAD, title, 2, BLACK);
    int ty = PAD + tg_text_height(2) + 12;  /* "predicted", then the rotated column names */
    tg_canvas_text(c, left + (N * CELL - tg_text_width("predicted", 1)) / 2, ty, "predicted", 1, BLACK);
    tg_canvas_text_up(c, PAD, top + (N * CELL + tg_text_width("true", 1)) / 2, "true", 1, BLACK);
    for (int i = 0; i < N; i++) {
        const char *name = cnn_class_names[i];
        tg_canvas_text(c, left - 8 - tg_text_width(name, 1), top + i * CELL + (CELL - th) / 2, name, 1, BLACK);
        tg_canvas_text_up(c, left + i * CELL + (CELL - th) / 2, top - 8, name, 1, BLACK);
    }
    for (int i = 0; i < N; i++) {
        long row = 0;
        for (int j = 0; j < N; j++) row += confusion[i][j];
        for (int j = 0; j < N; j++) {
            double f = row ? (double)confusion[i][j] / (double)row : 0;  /* of the true class's images */
            int x = left + j * CELL, y = top + i * CELL;
            tg_canvas_fill_rect(c, x, y, CELL, CELL, tg_viridis(f));
            char count[24];
            snprintf(count, sizeof count, "%ld", confusion[i][j]);
            tg_canvas_text(c, x + (CELL - tg_text_width(count, 1)) / 2, y + (CELL - th) / 2, count, 1,
                           f > 0.6 ? BLACK : WHITE);
        }
    }
    int bx = left + N * CELL + 24;  /* the colorbar: fraction of the row, 0 at the bottom */
    for (int y = 0; y < N * CELL; y++)
        tg_canvas_fill_rect(c, bx, top + y, BAR, 1, tg_viridis(1 - (double)y / (N * CELL - 1)));
    tg_canvas_rect(c, bx, top, BAR, N * CELL, GREY);
    tg_canvas_text(c, bx + BAR + 4, top, "1", 1, BLACK);
    tg_canvas_text(c, bx + BAR + 4, top + N * CELL / 2 - th / 2, "0.5", 1, BLACK);
    tg_canvas_text(c, bx + BAR + 4, top + N * CELL - th, "0", 1, BLACK);
    tg_canvas_text(c, left, top + N * CELL + PAD / 2, "rows: true class, as fractions of its images; cells: counts",
                   1, GREY);
    int rc = tg_canvas_save_png(c, path);
    tg_canvas_free(c);
    return rc;
}

/* v in [-1, 1] -> blue (-1), white (0), red (1) */
static tg_rgb diverging(double v)
{
    v = v < -1 ? -1 : v > 1 ? 1 : v;
    uint8_t fade = (uint8_t)lround(255 * (1 - fabs(v)));
    return v < 0 ? (tg_rgb){fade, fade, 255} : (tg_rgb){255, fade, fade};
}

int cnn_filters_png(const char *path, const tg_tensor *w)
{
    if (!w || w->ndim != 4 || w->shape[1] != 1)
        return tg_error_set("%s: the filters must be [O, 1, kh, kw]", path);
    int O = w->shape[0], kh = w->shape[2], kw = w->shape[3];
    int s = 96 / (kh > kw ? kh : kw), cols = O < 8 ? O : 8, rows = (O + cols - 1) / cols;
    int th = tg_text_height(1), gap = 14, top = 16 + tg_text_height(2) + 10;
    int W = 2 * gap + cols * (kw * s + gap), H = top + rows * (kh * s + th + 4 + gap) + gap;
    tg_canvas *c = tg_canvas_new(W, H, WHITE);
    if (!c) return -1;
    char title[96];
    snprintf(title, sizeof title, "conv1: %d filters %dx%d (each on its own scale)", O, kh, kw);
    tg_canvas_text(c, gap, 16, title, 2, BLACK);
    for (int o = 0; o < O; o++) {
        const tg_real *f = w->data + (size_t)o * kh * kw;
        double big = 0;  /* the largest |weight|; a compare, not fmax: GCC 12's aarch64 vectoriser fails on that */
        for (int i = 0; i < kh * kw; i++)
            if (fabs((double)f[i]) > big) big = fabs((double)f[i]);
        int x0 = 2 * gap + (o % cols) * (kw * s + gap), y0 = top + (o / cols) * (kh * s + th + 4 + gap);
        char name[16];
        snprintf(name, sizeof name, "%d", o);
        tg_canvas_text(c, x0, y0, name, 1, GREY);
        y0 += th + 4;
        for (int i = 0; i < kh; i++)
            for (int j = 0; j < kw; j++)
                tg_canvas_fill_rect(c, x0 + j * s, y0 + i * s, s, s,
                                    diverging(big > 0 ? (double)f[i * kw + j] / big : 0));
        tg_canvas_rect(c, x0 - 1, y0 - 1, kw * s + 2, kh * s + 2, GREY);
    }
    int rc = tg_canvas_save_png(c, path);
    tg_canvas_free(c);
    return rc;
}
