/* tapegrad: line plots and bar charts as PNG (see viz/plot.h). */
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canvas.h"
#include "../core/engine/error.h"

#define TS 2            /* text scale of everything but tiny bar labels */
#define MARGIN 16
#define TICK 6          /* tick mark length, px */
#define LINES_W 960
#define LINES_H 600
#define MARKER_MAX_PTS 40 /* series with fewer finite points get markers */
#define BAR_LABEL_CHARS 16
#define LEGEND_CHARS 40

static const tg_rgb WHITE = {255, 255, 255};
static const tg_rgb INK = {30, 30, 30};
static const tg_rgb GRID = {225, 225, 225};
/* matplotlib's tab10: distinct, colour-blind-friendlier than pure RGB. */
static const tg_rgb PALETTE[10] = {
    {31, 119, 180}, {255, 127, 14}, {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
    {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};

typedef struct { double lo, hi, step; } axis; /* ticks lo, lo+step .. hi */
typedef struct { int x, y, w, h; } rect;      /* the plotting area */

static int max_i(int a, int b) { return a > b ? a : b; }

/* Widens [lo, hi] to multiples of a 1/2/5 x 10^k step giving 4 to 8 ticks.
 * An empty range (lo > hi, no data) becomes [0, 1]. */
static axis nice_axis(double lo, double hi)
{
    if (!(lo <= hi) || !isfinite(hi - lo)) lo = 0.0, hi = 1.0;
    if (hi - lo <= 1e-12 * fmax(fabs(lo), fabs(hi))) { /* flat: centre it */
        double d = lo == 0.0 ? 1.0 : 0.5 * fabs(lo);
        lo -= d, hi += d;
    }
    double raw = (hi - lo) / 5.0, mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    double step = (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * mag;
    axis a = {floor(lo / step + 1e-9) * step, ceil(hi / step - 1e-9) * step, step};
    return a;
}

static int n_ticks(const axis *a)
{
    long n = lround((a->hi - a->lo) / a->step) + 1;
    return n < 2 ? 2 : n > 50 ? 50 : (int)n; /* 50: never reached in practice */
}

static double tick_value(const axis *a, int k)
{
    double v = a->lo + k * a->step;
    return fabs(v) < 1e-9 * a->step ? 0.0 : v; /* no "-0.0" */
}

/* Decimals follow the step (0.05 -> 2) so ticks read 0.00, 0.05, ... */
static void fmt_value(double v, double step, char *buf, size_t n)
{
    int k = (int)floor(log10(step) + 1e-9);
    int decimals = k < 0 ? -k : 0;
    if (decimals > 6 || fabs(v) >= 1e7) snprintf(buf, n, "%.3g", v);
    else snprintf(buf, n, "%.*f", decimals, v);
}

static int ticks_max_width(const axis *a)
{
    char buf[64];
    int w = 0;
    for (int k = 0; k < n_ticks(a); k++) {
        fmt_value(tick_value(a, k), a->step, buf, sizeof buf);
        w = max_i(w, tg_text_width(buf, TS));
    }
    return w;
}

/* Pixel of v on an axis spanning [p0, p0 + len - 1]; y axes flip. */
static int to_px(double v, const axis *a, int p0, int len, int flip)
{
    double t = (v - a->lo) / (a->hi - a->lo);
    if (flip) t = 1.0 - t;
    return (int)lround(fmin(fmax(p0 + t * (len - 1), -1e6), 1e6)); /* int-safe */
}

/* Tick marks and labels of a y axis at x = edge, outward to the left
 * (side < 0) or right (side > 0); grid lines across r when grid is set. */
static void draw_y_axis(tg_canvas *c, const axis *a, const rect *r, int edge,
                        int side, int grid)
{
    char buf[64];
    for (int k = 0; k < n_ticks(a); k++) {
        double v = tick_value(a, k);
        int y = to_px(v, a, r->y, r->h, 1);
        if (grid) tg_canvas_fill_rect(c, r->x, y, r->w, 1, GRID);
        tg_canvas_fill_rect(c, side < 0 ? edge - TICK : edge + 1, y, TICK, 1, INK);
        fmt_value(v, a->step, buf, sizeof buf);
        int tx = side < 0 ? edge - TICK - 4 - tg_text_width(buf, TS) : edge + TICK + 5;
        tg_canvas_text(c, tx, y - 7 * TS / 2, buf, TS, INK);
    }
}

static void draw_x_axis(tg_canvas *c, const axis *a, const rect *r)
{
    char buf[64];
    int base = r->y + r->h;
    for (int k = 0; k < n_ticks(a); k++) {
        double v = tick_value(a, k);
        int x = to_px(v, a, r->x, r->w, 0);
        tg_canvas_fill_rect(c, x, r->y, 1, r->h, GRID);
        tg_canvas_fill_rect(c, x, base, 1, TICK, INK);
        fmt_value(v, a->step, buf, sizeof buf);
        tg_canvas_text(c, x - tg_text_width(buf, TS) / 2, base + TICK + 4, buf, TS, INK);
    }
}

/* s (if any) centred on [x, x + w), top at y. */
static void text_centred(tg_canvas *c, const char *s, int x, int w, int y)
{
    if (s) tg_canvas_text(c, max_i(x, x + (w - tg_text_width(s, TS)) / 2), y, s, TS, INK);
}

/* ---- line plot ---------------------------------------------------------- */

static double pt_x(const tg_plot_series *s, int i) { return s->x ? s->x[i] : i; }

static int finite_pt(const tg_plot_series *s, int i)
{
    return isfinite(pt_x(s, i)) && isfinite(s->y[i]);
}

/* x extent of all series into xr; y extent of each axis into yr[side]
 * (side 1 = right). Ranges stay (inf, -inf) without finite points. */
static void extents(const tg_plot_series *ss, int n_series, double xr[2],
                    double yr[2][2])
{
    for (int k = 0; k < n_series; k++)
        for (int i = 0; i < ss[k].n; i++) {
            if (!finite_pt(&ss[k], i)) continue;
            double x = pt_x(&ss[k], i), y = ss[k].y[i];
            double *r = yr[ss[k].right_axis ? 1 : 0];
            xr[0] = fmin(xr[0], x), xr[1] = fmax(xr[1], x);
            r[0] = fmin(r[0], y), r[1] = fmax(r[1], y);
        }
}

static int count_finite(const tg_plot_series *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) n += finite_pt(s, i);
    return n;
}

static void draw_series(tg_canvas *c, const tg_plot_series *s, tg_rgb col,
                        const axis *ax, const axis *ay, const rect *r)
{
    int markers = count_finite(s) <= MARKER_MAX_PTS;
    int have_prev = 0, px = 0, py = 0;
    for (int i = 0; i < s->n; i++) {
        if (!finite_pt(s, i)) continue;
        int x = to_px(pt_x(s, i), ax, r->x, r->w, 0);
        int y = to_px(s->y[i], ay, r->y, r->h, 1);
        if (have_prev) tg_canvas_line(c, px, py, x, y, 2, col);
        if (markers) tg_canvas_fill_rect(c, x - 3, y - 3, 7, 7, col);
        have_prev = 1, px = x, py = y;
    }
}

/* Legend entries (swatch + name, cut to LEGEND_CHARS) in rows above the
 * plot, left to right from x0 and wrapping at x0 + avail_w, so they never
 * hide data. Draws when c is not NULL; returns the height used either way. */
static int legend(tg_canvas *c, const tg_plot_series *ss, int n_series,
                  int x0, int y0, int avail_w)
{
    char buf[LEGEND_CHARS + 1];
    int row = tg_text_height(TS) + 8, sw = 28, x = x0, y = y0;
    for (int k = 0; k < n_series; k++) {
        const char *side = ss[k].right_axis ? " (right)" : "";
        if (ss[k].name) snprintf(buf, sizeof buf, "%.32s%s", ss[k].name, side);
        else snprintf(buf, sizeof buf, "series %d%s", k, side);
        int w = sw + 8 + tg_text_width(buf, TS);
        if (x > x0 && x + w > x0 + avail_w) x = x0, y += row;
        if (c) {
            tg_rgb col = PALETTE[k % 10];
            int mid = y + 7 * TS / 2;
            tg_canvas_line(c, x, mid, x + sw, mid, 2, col);
            if (count_finite(&ss[k]) <= MARKER_MAX_PTS)
                tg_canvas_fill_rect(c, x + sw / 2 - 3, mid - 3, 7, 7, col);
            tg_canvas_text(c, x + sw + 8, y, buf, TS, INK);
        }
        x += w + 24;
    }
    return y - y0 + row;
}

static int validate_series(const tg_plot_series *ss, int n_series,
                           const char *path)
{
    if (!ss || n_series <= 0 || n_series > TG_PLOT_MAX_SERIES)
        return tg_error_set("tg_plot_lines_png: need 1..%d series, got %d%s ('%s')",
                            TG_PLOT_MAX_SERIES, n_series, ss ? "" : " (NULL)", path);
    for (int k = 0; k < n_series; k++)
        if (ss[k].n < 0 || (ss[k].n > 0 && !ss[k].y))
            return tg_error_set("tg_plot_lines_png: series %d: n=%d, y %s ('%s')",
                                k, ss[k].n, ss[k].y ? "set" : "NULL", path);
    return 0;
}

/* Axes (x, left y, right y) and plotting area of a line plot. */
typedef struct { axis ax, ayl, ayr; bool has_right; rect r; int legend_y; } lines_frame;

static void lines_frame_init(const tg_plot_series *ss, int n_series,
                             const char *title, const char *x_label,
                             lines_frame *f)
{
    double xr[2] = {INFINITY, -INFINITY};
    double yr[2][2] = {{INFINITY, -INFINITY}, {INFINITY, -INFINITY}};
    extents(ss, n_series, xr, yr);
    f->has_right = false;
    for (int k = 0; k < n_series; k++) f->has_right |= ss[k].right_axis;
    f->ax = nice_axis(xr[0], xr[1]);
    f->ayl = nice_axis(yr[0][0], yr[0][1]);
    f->ayr = nice_axis(yr[1][0], yr[1][1]);
    if (!(yr[1][0] < 0.0 || yr[1][1] > 1.0)) f->ayr = (axis){0.0, 1.0, 0.2};

    int th = tg_text_height(TS);
    int right = f->has_right ? ticks_max_width(&f->ayr) + TICK + 8
                             : ticks_max_width(&f->ax) / 2 + 8;
    f->r.x = MARGIN + ticks_max_width(&f->ayl) + TICK + 6;
    f->r.w = LINES_W - f->r.x - MARGIN - right;
    f->legend_y = MARGIN + (title ? th + 14 : 0);
    f->r.y = f->legend_y + legend(NULL, ss, n_series, f->r.x, 0, f->r.w) + 4;
    int bottom = MARGIN + th + TICK + 6 + (x_label ? th + 10 : 0);
    f->r.h = LINES_H - f->r.y - bottom;
}

int tg_plot_lines_png(const char *path, const char *title, const char *x_label,
                      const tg_plot_series *series, int n_series)
{
    if (!path) return tg_error_set("tg_plot_lines_png: path is NULL");
    if (validate_series(series, n_series, path)) return -1;
    lines_frame f;
    lines_frame_init(series, n_series, title, x_label, &f);
    const rect *r = &f.r;

    tg_canvas *c = tg_canvas_new(LINES_W, LINES_H, WHITE);
    if (!c) return tg_error_set("tg_plot_lines_png: out of memory ('%s')", path);
    draw_x_axis(c, &f.ax, r);
    draw_y_axis(c, &f.ayl, r, r->x - 1, -1, 1);
    if (f.has_right) draw_y_axis(c, &f.ayr, r, r->x + r->w, 1, 0);
    for (int k = 0; k < n_series; k++)
        draw_series(c, &series[k], PALETTE[k % 10], &f.ax,
                    series[k].right_axis ? &f.ayr : &f.ayl, r);
    tg_canvas_rect(c, r->x - 1, r->y - 1, r->w + 2, r->h + 2, INK);
    legend(c, series, n_series, r->x, f.legend_y, r->w);
    text_centred(c, title, MARGIN, LINES_W - 2 * MARGIN, MARGIN);
    text_centred(c, x_label, r->x, r->w, LINES_H - MARGIN - tg_text_height(TS));
    int rc = tg_canvas_save_png(c, path);
    tg_canvas_free(c);
    return rc;
}

/* ---- bar chart ---------------------------------------------------------- */

static void bar_label(const char *const *labels, int i, char *buf)
{
    const char *s = labels ? labels[i] : NULL;
    if (!s)
        snprintf(buf, BAR_LABEL_CHARS + 1, "%d", i);
    else if (strlen(s) <= BAR_LABEL_CHARS)
        snprintf(buf, BAR_LABEL_CHARS + 1, "%s", s);
    else
        snprintf(buf, BAR_LABEL_CHARS + 1, "%.*s..", BAR_LABEL_CHARS - 2, s);
}

/* Value labels are drawn for all bars or none, so the chart stays even. */
static int values_fit(const double *values, int n, double slot)
{
    char buf[64];
    for (int i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "%.3g", values[i]);
        if (tg_text_width(buf, TS) > (int)slot - 4) return 0;
    }
    return 1;
}

/* One bar hanging from the zero line, its value above (below if negative);
 * a non-finite value draws only its text ("nan", "inf") over the zero line. */
static void draw_bar(tg_canvas *c, const axis *ay, const rect *r, int cx,
                     int bw, double v, int show_value)
{
    char buf[64];
    int zero = to_px(0.0, ay, r->y, r->h, 1), y = zero;
    if (isfinite(v)) {
        y = to_px(v, ay, r->y, r->h, 1);
        int top = v >= 0 ? y : zero, h = abs(y - zero) + 1;
        tg_canvas_fill_rect(c, cx - bw / 2, top, bw, h, PALETTE[v >= 0 ? 0 : 1]);
    }
    if (!show_value) return;
    snprintf(buf, sizeof buf, "%.3g", v);
    int tw = tg_text_width(buf, TS);
    int ty = v < 0 ? y + 4 : y - tg_text_height(TS) - 3;
    tg_canvas_text(c, cx - tw / 2, ty, buf, TS, INK);
}

/* Value axis, plotting area, image size and label style of a bar chart. */
typedef struct { axis ay; rect r; int w, h, lscale, rotate; } bars_frame;

static void bars_frame_init(const char *title, const char *const *labels,
                            const double *values, int n, bars_frame *f)
{
    double lo = 0.0, hi = 0.0; /* the axis always shows the zero line */
    for (int i = 0; i < n; i++)
        if (isfinite(values[i])) lo = fmin(lo, values[i]), hi = fmax(hi, values[i]);
    double room = 0.08 * (hi - lo); /* headroom for the value labels */
    f->ay = nice_axis(lo < 0.0 ? lo - room : lo, hi > 0.0 ? hi + room : hi);
    f->r.x = MARGIN + ticks_max_width(&f->ay) + TICK + 6;
    f->r.y = MARGIN + (title ? tg_text_height(TS) + 14 : 0) + 6;
    /* Slots of >= 12 px fit a rotated scale-1 label each, and keep
     * TG_PLOT_MAX_BARS bars under 4000 px. */
    f->r.w = max_i(LINES_W - f->r.x - 30, 12 * n);
    int slot = f->r.w / n, lab_w = 0;
    f->lscale = slot >= 20 ? TS : 1;
    char lab[BAR_LABEL_CHARS + 1];
    for (int i = 0; i < n; i++) {
        bar_label(labels, i, lab);
        lab_w = max_i(lab_w, tg_text_width(lab, f->lscale));
    }
    f->rotate = lab_w > slot - 4;
    int lab_h = f->rotate ? lab_w : tg_text_height(f->lscale);
    f->r.h = max_i(LINES_H - f->r.y - MARGIN - 8 - lab_h, 300);
    f->w = f->r.x + f->r.w + 30;
    f->h = f->r.y + f->r.h + 8 + lab_h + MARGIN;
}

/* Bars plus their category labels below the plot area. */
static void draw_bars(tg_canvas *c, const bars_frame *f,
                      const char *const *labels, const double *values, int n)
{
    const rect *r = &f->r;
    double slot = (double)r->w / n;
    int bw = max_i(1, (int)fmin(slot * 0.7, 80.0)), ls = f->lscale;
    int show_values = values_fit(values, n, slot);
    for (int i = 0; i < n; i++) {
        int cx = r->x + (int)lround(slot * (i + 0.5));
        draw_bar(c, &f->ay, r, cx, bw, values[i], show_values);
        char lab[BAR_LABEL_CHARS + 1];
        bar_label(labels, i, lab);
        int lw = tg_text_width(lab, ls), base = r->y + r->h + 8;
        if (f->rotate)
            tg_canvas_text_up(c, cx - 7 * ls / 2, base + lw, lab, ls, INK);
        else
            tg_canvas_text(c, cx - lw / 2, base, lab, ls, INK);
    }
}

int tg_plot_bars_png(const char *path, const char *title,
                     const char *const *labels, const double *values, int n)
{
    if (!path) return tg_error_set("tg_plot_bars_png: path is NULL");
    if (!values || n <= 0 || n > TG_PLOT_MAX_BARS)
        return tg_error_set("tg_plot_bars_png: need 1..%d values, got %d%s ('%s')",
                            TG_PLOT_MAX_BARS, n, values ? "" : " (values NULL)", path);
    bars_frame f;
    bars_frame_init(title, labels, values, n, &f);

    tg_canvas *c = tg_canvas_new(f.w, f.h, WHITE);
    if (!c) return tg_error_set("tg_plot_bars_png: out of memory ('%s')", path);
    draw_y_axis(c, &f.ay, &f.r, f.r.x - 1, -1, 1);
    draw_bars(c, &f, labels, values, n);
    tg_canvas_fill_rect(c, f.r.x, to_px(0.0, &f.ay, f.r.y, f.r.h, 1), f.r.w, 1, INK);
    tg_canvas_rect(c, f.r.x - 1, f.r.y - 1, f.r.w + 2, f.r.h + 2, INK);
    text_centred(c, title, MARGIN, f.w - 2 * MARGIN, MARGIN);
    int rc = tg_canvas_save_png(c, path);
    tg_canvas_free(c);
    return rc;
}
