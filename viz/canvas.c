/* tapegrad: RGB canvas, stb_easy_font text, viridis, PNG output. */
#include "canvas.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/engine/alloc.h"
#include "../core/engine/error.h"

/* stb_easy_font is all static functions; we use only some of them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop
#include <stb/stb_image_write.h>

/* Canvas sides beyond this are refused: 16384^2 * 3 bytes = 768 MiB. */
#define CANVAS_MAX_SIDE 16384
#define GLYPH_BOX_H 9 /* ascent 7 + descent 2, at scale 1 */

tg_canvas *tg_canvas_new(int w, int h, tg_rgb bg)
{
    if (w <= 0 || h <= 0 || w > CANVAS_MAX_SIDE || h > CANVAS_MAX_SIDE) {
        tg_error_set("tg_canvas_new: size %d x %d is outside [1, %d]", w, h, CANVAS_MAX_SIDE);
        return NULL;
    }
    tg_canvas *c = tg_malloc(sizeof *c);
    if (!c) return NULL;
    c->w = w;
    c->h = h;
    c->px = tg_malloc((size_t)w * (size_t)h * 3);
    if (!c->px) {
        tg_free(c);
        return NULL;
    }
    tg_canvas_fill_rect(c, 0, 0, w, h, bg);
    return c;
}

void tg_canvas_free(tg_canvas *c)
{
    if (!c) return;
    tg_free(c->px);
    tg_free(c);
}

void tg_canvas_pixel(tg_canvas *c, int x, int y, tg_rgb col)
{
    TG_REFUSE_NULL(c, "the canvas", );
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    p[0] = col.r;
    p[1] = col.g;
    p[2] = col.b;
}

void tg_canvas_fill_rect(tg_canvas *c, int x, int y, int w, int h, tg_rgb col)
{
    TG_REFUSE_NULL(c, "the canvas", );
    /* Clip in 64-bit so x + w cannot overflow for far-off rectangles. */
    long long x0 = x, y0 = y, x1 = (long long)x + w, y1 = (long long)y + h;
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > c->w) x1 = c->w;
    if (y1 > c->h) y1 = c->h;
    for (long long yy = y0; yy < y1; yy++) {
        uint8_t *p = c->px + ((size_t)yy * (size_t)c->w + (size_t)x0) * 3;
        for (long long xx = x0; xx < x1; xx++, p += 3) {
            p[0] = col.r;
            p[1] = col.g;
            p[2] = col.b;
        }
    }
}

void tg_canvas_rect(tg_canvas *c, int x, int y, int w, int h, tg_rgb col)
{
    TG_REFUSE_NULL(c, "the canvas", );
    if (w <= 0 || h <= 0) return;
    tg_canvas_fill_rect(c, x, y, w, 1, col);
    tg_canvas_fill_rect(c, x, y + h - 1, w, 1, col);
    tg_canvas_fill_rect(c, x, y, 1, h, col);
    tg_canvas_fill_rect(c, x + w - 1, y, 1, h, col);
}

void tg_canvas_line(tg_canvas *c, int x0, int y0, int x1, int y1,
                    int thickness, tg_rgb col)
{
    TG_REFUSE_NULL(c, "the canvas", );
    if (thickness < 1) thickness = 1;
    int half = (thickness - 1) / 2;
    long long dx = llabs((long long)x1 - x0), dy = -llabs((long long)y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    long long e = dx + dy;
    for (;;) {
        tg_canvas_fill_rect(c, x0 - half, y0 - half, thickness, thickness, col);
        if (x0 == x1 && y0 == y1) break;
        long long e2 = 2 * e;
        if (e2 >= dy) {
            e += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            e += dx;
            y0 += sy;
        }
    }
}

/* stb_easy_font indexes its tables with (c - 32): keep bytes in 32..126. */
static void sanitize(const char *s, char *out)
{
    size_t i = 0;
    for (; s && s[i] && i < TG_TEXT_MAX - 1; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[i] = (ch >= 32 && ch < 127) ? (char)ch : '?';
    }
    out[i] = '\0';
}

/* Draws one glyph's quads at pen position (x, y) in text space, mapped to
 * the canvas upright (up = false) or rotated counter-clockwise (up = true,
 * text space (u, v) -> canvas (ox + v, oy - u)). */
static void glyph(tg_canvas *c, int ox, int oy, int pen, char ch, int scale,
                  bool up, tg_rgb col)
{
    /* float-typed so stb's float stores into it are aligned; 4 floats per
     * vertex, 4 vertices per quad; no glyph needs more than 32 quads. */
    float vb[4 * 4 * 32];
    char one[2] = {ch, '\0'};
    int nq = stb_easy_font_print(0.f, 0.f, one, NULL, vb, (int)sizeof vb);
    for (int q = 0; q < nq; q++) {
        const float *v0 = vb + q * 16, *v2 = vb + q * 16 + 8;
        int u0 = pen + (int)v0[0] * scale, u1 = pen + (int)v2[0] * scale;
        int w0 = (int)v0[1] * scale, w1 = (int)v2[1] * scale;
        if (up)
            tg_canvas_fill_rect(c, ox + w0, oy - u1, w1 - w0, u1 - u0, col);
        else
            tg_canvas_fill_rect(c, ox + u0, oy + w0, u1 - u0, w1 - w0, col);
    }
}

static void text_any(tg_canvas *c, int x, int y, const char *s, int scale,
                     bool up, tg_rgb col)
{
    char buf[TG_TEXT_MAX];
    sanitize(s, buf);
    if (scale < 1) scale = 1;
    int pen = 0;
    for (const char *p = buf; *p; p++) {
        glyph(c, x, y, pen, *p, scale, up, col);
        char one[2] = {*p, '\0'};
        pen += stb_easy_font_width(one) * scale;
    }
}

void tg_canvas_text(tg_canvas *c, int x, int y, const char *s, int scale,
                    tg_rgb col)
{
    TG_REFUSE_NULL(c, "the canvas", );
    text_any(c, x, y, s, scale, false, col);
}

void tg_canvas_text_up(tg_canvas *c, int x, int y, const char *s, int scale,
                       tg_rgb col)
{
    TG_REFUSE_NULL(c, "the canvas", );
    text_any(c, x, y, s, scale, true, col);
}

int tg_text_width(const char *s, int scale)
{
    char buf[TG_TEXT_MAX];
    sanitize(s, buf);
    if (scale < 1) scale = 1;
    if (!buf[0]) return 0;
    /* The last advance includes one pixel of spacing that carries no ink. */
    return (stb_easy_font_width(buf) - 1) * scale;
}

int tg_text_height(int scale)
{
    return GLYPH_BOX_H * (scale < 1 ? 1 : scale);
}

/* viridis sampled every 8th of matplotlib's 256 entries (+ the last one);
 * linear interpolation between them stays within 2/255 of the full table. */
static const uint8_t VIRIDIS[33][3] = {
    {68, 1, 84},     {71, 13, 96},    {72, 24, 106},   {72, 35, 116},
    {71, 45, 123},   {69, 55, 129},   {66, 64, 134},   {62, 73, 137},
    {59, 82, 139},   {55, 91, 141},   {51, 99, 141},   {47, 107, 142},
    {44, 114, 142},  {41, 122, 142},  {38, 130, 142},  {35, 137, 142},
    {33, 145, 140},  {31, 152, 139},  {31, 160, 136},  {34, 167, 133},
    {40, 174, 128},  {50, 182, 122},  {63, 188, 115},  {78, 195, 107},
    {94, 201, 98},   {112, 207, 87},  {132, 212, 75},  {152, 216, 62},
    {173, 220, 48},  {194, 223, 35},  {216, 226, 25},  {236, 229, 27},
    {253, 231, 37},
};

tg_rgb tg_viridis(double t)
{
    if (!(t > 0.0)) t = 0.0; /* also catches NaN */
    if (t > 1.0) t = 1.0;
    double p = t * 255.0; /* position in the 256-entry table */
    int k = (int)(p / 8.0);
    if (k > 31) k = 31;
    double span = (k == 31) ? 7.0 : 8.0; /* entries 248 .. 255 */
    double f = (p - 8.0 * k) / span;
    const uint8_t *a = VIRIDIS[k], *b = VIRIDIS[k + 1];
    tg_rgb out = {
        (uint8_t)lround(a[0] + f * (b[0] - a[0])),
        (uint8_t)lround(a[1] + f * (b[1] - a[1])),
        (uint8_t)lround(a[2] + f * (b[2] - a[2])),
    };
    return out;
}

typedef struct {
    FILE *f;
    bool failed;
} png_sink;

static void sink_write(void *ctx, void *data, int size)
{
    png_sink *s = ctx;
    if (size > 0 && fwrite(data, 1, (size_t)size, s->f) != (size_t)size)
        s->failed = true;
}

static int fail(const char *path, const char *why)
{
    return tg_error_set("cannot write PNG '%s': %s", path, why);
}

int tg_canvas_save_png(const tg_canvas *c, const char *path)
{
    TG_REFUSE_NULL(path, "the path", -1);
    TG_REFUSE_NULL(c && c->px, "the canvas", -1);
    /* Our own FILE (not stbi_write_png) so errno and write errors reach the
     * message. */
    png_sink s = {fopen(path, "wb"), false};
    if (!s.f) return fail(path, strerror(errno));
    errno = 0;
    int ok = stbi_write_png_to_func(sink_write, &s, c->w, c->h, 3, c->px,
                                    c->w * 3);
    struct stat st;
    bool regular = fstat(fileno(s.f), &st) == 0 && S_ISREG(st.st_mode);
    if (fclose(s.f) != 0) s.failed = true;
    if (ok && !s.failed) return 0;
    int e = errno ? errno : EIO;
    /* no cut-off picture left behind (only a regular file: never /dev/full
     * or a FIFO); "wb" had already emptied it */
    if (regular) unlink(path);
    return fail(path, !ok ? "PNG encoder failed (out of memory?)" : strerror(e));
}
