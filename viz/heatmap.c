/* tapegrad: attention heatmap PNG (see viz/heatmap.h for the picture). */
#include "heatmap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "canvas.h"
#include "../core/engine/error.h"

#define MAX_SIDE 4000   /* image width and height limit, px */
#define LABEL_CHARS 10  /* longer labels are cut to 8 chars + ".." */
#define LABEL_BUF 16    /* > LABEL_CHARS and any int index */
#define MARGIN 16
#define CELL_PAD 20     /* between grid cells */
#define LABEL_GAP 4     /* between labels and the matrix */
#define CBAR_GAP 24     /* between the grid and the colorbar */
#define CBAR_W 16
#define CBAR_MIN_H 120
#define SWATCH 12       /* the masked colour's key below the colorbar */
#define KEY_ROOM (12 + SWATCH + 4 + 9)  /* the tick label's overhang, the swatch, its text */

static const tg_rgb WHITE = {255, 255, 255};
static const tg_rgb INK = {30, 30, 30};
static const tg_rgb NAN_GREY = {128, 128, 128};
static const tg_rgb MASKED = {222, 222, 222};  /* far from every viridis colour and from NaN's grey */

typedef struct {
    int n_layers, n_heads, Lq, Lk;
    const char *const *q_labels, *const *k_labels;
    int n_kv_heads;      /* < n_heads: titles name each head's key/value group */
} hm_args;

/* Pixel geometry of the whole image; every cell has the same size. */
typedef struct {
    int s;               /* px per matrix entry */
    int lscale, tscale;  /* text scale of labels and titles */
    int qstep, kstep;    /* draw every qstep-th query / kstep-th key label */
    int qlab_w, klab_h;  /* room for query labels (left), key labels (top) */
    int axis;            /* room for the axis titles: "query" (left, rotated), "key" (top) */
    int title_h;
    int cell_w, cell_h;  /* labels + matrix */
    int cb_x, cb_y, cb_h;
    int w, h;
} hm_layout;

/* The text of label i into buf (LABEL_BUF bytes). */
static void label_text(const char *const *labels, int i, char *buf)
{
    const char *s = labels ? labels[i] : NULL;
    if (!s) {
        snprintf(buf, LABEL_BUF, "%d", i);
        return;
    }
    size_t n = strlen(s);
    if (n <= LABEL_CHARS) {
        memcpy(buf, s, n + 1);
        return;
    }
    memcpy(buf, s, LABEL_CHARS - 2);
    memcpy(buf + LABEL_CHARS - 2, "..", 3);
}

static int max_label_width(const char *const *labels, int n, int scale)
{
    char buf[LABEL_BUF];
    int w = 0;
    for (int i = 0; i < n; i++) {
        label_text(labels, i, buf);
        int t = tg_text_width(buf, scale);
        if (t > w) w = t;
    }
    return w;
}

int tg_heatmap_label_step(int s, int extent)
{
    if (s < 1) return 1;
    int need = extent + 2; /* the label + a 2-px gap to the next */
    return (need + s - 1) / s;
}

static int max_i(int a, int b) { return a > b ? a : b; }

static void compute_layout(const hm_args *a, int s, hm_layout *o)
{
    o->s = s;
    o->lscale = s >= 24 ? 2 : 1;
    o->qstep = tg_heatmap_label_step(s, 7 * o->lscale);  /* rows: a cap height each */
    o->kstep = tg_heatmap_label_step(s, max_label_width(a->k_labels, a->Lk, o->lscale));
    o->qlab_w = max_label_width(a->q_labels, a->Lq, o->lscale) + LABEL_GAP;
    o->klab_h = tg_text_height(o->lscale) + LABEL_GAP;
    o->axis = tg_text_height(o->lscale) + LABEL_GAP;
    int mat_w = a->Lk * s, mat_h = a->Lq * s;
    o->tscale = mat_w >= 80 ? 2 : 1;
    o->title_h = tg_text_height(o->tscale) + 6;
    int title_w = tg_text_width(a->n_kv_heads < a->n_heads ? "L00 H00 KV00" : "L00 H00", o->tscale);
    o->cell_w = max_i(o->axis + o->qlab_w + mat_w, title_w);
    o->cell_h = o->title_h + o->axis + o->klab_h + mat_h;

    int grid_w = a->n_heads * o->cell_w + (a->n_heads - 1) * CELL_PAD;
    int grid_h = a->n_layers * o->cell_h + (a->n_layers - 1) * CELL_PAD;
    o->cb_x = MARGIN + grid_w + CBAR_GAP;
    o->cb_y = MARGIN + o->title_h + o->axis + o->klab_h;
    o->cb_h = max_i(MARGIN + grid_h - o->cb_y, CBAR_MIN_H);
    int tick_w = max_i(10 + tg_text_width("0.5", 2), tg_text_width("masked", 1));
    o->w = o->cb_x + CBAR_W + tick_w + MARGIN;
    o->h = max_i(MARGIN + grid_h, o->cb_y + o->cb_h + KEY_ROOM) + MARGIN;
}

/* Largest entry size (<= the preferred one) whose image fits MAX_SIDE;
 * 0 if none does. */
static int choose_layout(const hm_args *a, hm_layout *o)
{
    int max_len = max_i(a->Lq, a->Lk);
    int s = 192 / max_len;
    if (s > 32) s = 32;
    if (s < 12) s = 12;
    for (; s >= 1; s--) {
        compute_layout(a, s, o);
        if (o->w <= MAX_SIDE && o->h <= MAX_SIDE) return s;
    }
    return 0;
}

static void draw_matrix(tg_canvas *c, const tg_real *m, int Lq, int Lk,
                        int x0, int y0, int s)
{
    for (int i = 0; i < Lq; i++) {
        for (int j = 0; j < Lk; j++) {
            double v = (double)m[(size_t)i * (size_t)Lk + (size_t)j];
            tg_rgb col = isnan(v) ? NAN_GREY : v == -INFINITY ? MASKED : tg_viridis(v);
            tg_canvas_fill_rect(c, x0 + j * s, y0 + i * s, s, s, col);
        }
    }
}

/* Query labels right-aligned left of the matrix, centred on their row by
 * cap height; key labels horizontal above it, centred on their column (the
 * first flush with the matrix's left edge); the axis titles "query", read
 * bottom to top, and "key" outside them. */
static void draw_labels(tg_canvas *c, const hm_args *a, const hm_layout *o,
                        int mx, int my)
{
    char buf[LABEL_BUF];
    int cap = 7 * o->lscale, mat_w = a->Lk * o->s, mat_h = a->Lq * o->s;
    for (int i = 0; i < a->Lq; i += o->qstep) {
        label_text(a->q_labels, i, buf);
        int tw = tg_text_width(buf, o->lscale);
        int y = my + i * o->s + (o->s - cap) / 2;
        tg_canvas_text(c, mx - LABEL_GAP - tw, y, buf, o->lscale, INK);
    }
    int ky = my - o->klab_h;
    for (int j = 0; j < a->Lk; j += o->kstep) {
        label_text(a->k_labels, j, buf);
        int tw = tg_text_width(buf, o->lscale);
        int x = max_i(mx + j * o->s + (o->s - tw) / 2, mx);
        tg_canvas_text(c, x, ky, buf, o->lscale, INK);
    }
    int ls = o->lscale;
    tg_canvas_text(c, mx + (mat_w - tg_text_width("key", ls)) / 2, ky - o->axis, "key", ls, INK);
    tg_canvas_text_up(c, mx - o->qlab_w - o->axis, my + (mat_h + tg_text_width("query", ls)) / 2, "query", ls, INK);
}

static void draw_cell(tg_canvas *c, const hm_args *a, const hm_layout *o,
                      const tg_real *m, int layer, int head)
{
    int cx = MARGIN + head * (o->cell_w + CELL_PAD);
    int cy = MARGIN + layer * (o->cell_h + CELL_PAD);
    int mat_w = a->Lk * o->s;
    int mx = cx + o->cell_w - mat_w; /* matrix flush right in its cell */
    int my = cy + o->title_h + o->axis + o->klab_h;

    char title[48];
    if (a->n_kv_heads < a->n_heads)
        snprintf(title, sizeof title, "L%d H%d KV%d", layer, head, head / (a->n_heads / a->n_kv_heads));
    else
        snprintf(title, sizeof title, "L%d H%d", layer, head);
    int tw = tg_text_width(title, o->tscale);
    int tx = mx + (mat_w - tw) / 2;
    if (tx < cx) tx = cx;
    tg_canvas_text(c, tx, cy, title, o->tscale, INK);

    draw_labels(c, a, o, mx, my);
    draw_matrix(c, m, a->Lq, a->Lk, mx, my, o->s);
}

/* Vertical gradient, 1 at the top, with ticks and labels at 0, 0.5, 1;
 * below it the masked colour's swatch. */
static void draw_colorbar(tg_canvas *c, const hm_layout *o)
{
    int x = o->cb_x, y = o->cb_y, h = o->cb_h;
    for (int r = 0; r < h; r++) {
        double t = h > 1 ? 1.0 - (double)r / (double)(h - 1) : 1.0;
        tg_canvas_fill_rect(c, x, y + r, CBAR_W, 1, tg_viridis(t));
    }
    tg_canvas_rect(c, x - 1, y - 1, CBAR_W + 2, h + 2, INK);
    static const char *const tick_text[3] = {"0", "0.5", "1"};
    int scale = 2;
    for (int k = 0; k < 3; k++) {
        int ty = y + h - 1 - (int)lround(0.5 * k * (h - 1));
        tg_canvas_fill_rect(c, x + CBAR_W + 1, ty, 5, 1, INK);
        int text_y = ty - (7 * scale) / 2;
        tg_canvas_text(c, x + CBAR_W + 10, text_y, tick_text[k], scale, INK);
    }
    int sy = y + h + 12;
    tg_canvas_fill_rect(c, x, sy, SWATCH, SWATCH, MASKED);
    tg_canvas_rect(c, x - 1, sy - 1, SWATCH + 2, SWATCH + 2, INK);
    tg_canvas_text(c, x, sy + SWATCH + 4, "masked", 1, INK);
}

static int validate(const char *path, const hm_args *a)
{
    if (a->n_layers <= 0 || a->n_heads <= 0 || a->Lq <= 0 || a->Lk <= 0)
        return tg_error_set("tg_heatmap_png: sizes must be positive: n_layers=%d "
                            "n_heads=%d Lq=%d Lk=%d ('%s')",
                            a->n_layers, a->n_heads, a->Lq, a->Lk, path);
    if (a->n_layers > TG_HEATMAP_MAX_GRID || a->n_heads > TG_HEATMAP_MAX_GRID ||
        a->Lq > TG_HEATMAP_MAX_LEN || a->Lk > TG_HEATMAP_MAX_LEN)
        return tg_error_set("tg_heatmap_png: too large: n_layers=%d n_heads=%d "
                            "(max %d) Lq=%d Lk=%d (max %d) ('%s')",
                            a->n_layers, a->n_heads, TG_HEATMAP_MAX_GRID, a->Lq,
                            a->Lk, TG_HEATMAP_MAX_LEN, path);
    return 0;
}

int tg_heatmap_png(const char *path, const tg_real *weights, int n_layers,
                   int n_heads, int Lq, int Lk, const char *const *q_labels,
                   const char *const *k_labels)
{
    TG_REFUSE_NULL(path, "path", -1);
    TG_REFUSE_NULL(weights, "weights", -1);
    return tg_heatmap_png_groups(path, weights, n_layers, n_heads, n_heads, Lq, Lk, q_labels, k_labels);
}

int tg_heatmap_png_groups(const char *path, const tg_real *weights, int n_layers, int n_heads, int n_kv_heads,
                          int Lq, int Lk, const char *const *q_labels, const char *const *k_labels)
{
    TG_REFUSE_NULL(path, "path", -1);
    TG_REFUSE_NULL(weights, "weights", -1);
    hm_args a = {n_layers, n_heads, Lq, Lk, q_labels, k_labels, n_kv_heads};
    if (validate(path, &a) != 0) return -1;
    if (n_kv_heads < 1 || n_heads % n_kv_heads)
        return tg_error_set("tg_heatmap_png: n_kv_heads %d must divide n_heads %d ('%s')", n_kv_heads, n_heads,
                            path);

    hm_layout o;
    if (!choose_layout(&a, &o))
        return tg_error_set("tg_heatmap_png: %d layers x %d heads of %d x %d do not "
                            "fit in %d x %d px ('%s')",
                            n_layers, n_heads, Lq, Lk, MAX_SIDE, MAX_SIDE, path);

    tg_canvas *c = tg_canvas_new(o.w, o.h, WHITE);
    if (!c)
        return tg_error_set("tg_heatmap_png: out of memory for a %d x %d image "
                            "('%s')", o.w, o.h, path);
    size_t per = (size_t)Lq * (size_t)Lk;
    for (int l = 0; l < n_layers; l++)
        for (int h = 0; h < n_heads; h++) {
            size_t cell = (size_t)l * (size_t)n_heads + (size_t)h;
            draw_cell(c, &a, &o, weights + cell * per, l, h);
        }
    draw_colorbar(c, &o);
    int rc = tg_canvas_save_png(c, path);
    tg_canvas_free(c);
    return rc;
}
