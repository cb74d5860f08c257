/* PNG rendering: canvas primitives, attention heatmaps, line and bar plots.
 * Each image is written to a fresh temp dir, decoded again with stb_image
 * and checked for its size and content. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stb/stb_image.h>

#include <tapegrad/viz/canvas.h>
#include <tapegrad/viz/heatmap.h>
#include <tapegrad/viz/plot.h>
#include "test_util.h"

#define BAD_PATH "/nonexistent/dir/x.png"

typedef struct {
    int w, h;
    unsigned char *px; /* [h, w, 3] */
} image;

static char tmp_dir[256];
static char tmp_path[320];

static void make_tmp_dir(void)
{
    tu_tmpdir(tmp_dir, sizeof tmp_dir, "tg_heatmap");
}

static void remove_tmp_dir(void)
{
    tu_tmpdir_remove(tmp_dir);
}

TestSuite(viz, .init = make_tmp_dir, .fini = remove_tmp_dir);

static const char *tmp_file(const char *name)
{
    snprintf(tmp_path, sizeof tmp_path, "%s/%s", tmp_dir, name);
    return tmp_path;
}

/* Decodes path as RGB and deletes the file. */
static image load_png(const char *path)
{
    image im = {0, 0, NULL};
    int comp = 0;
    im.px = stbi_load(path, &im.w, &im.h, &comp, 3);
    cr_assert_not_null(im.px, "cannot decode %s: %s", path, stbi_failure_reason());
    remove(path);
    return im;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int distinct_colors(const image *im)
{
    size_t n = (size_t)im->w * im->h;
    uint32_t *keys = malloc(n * sizeof *keys);
    cr_assert_not_null(keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = (uint32_t)im->px[3 * i] << 16 | (uint32_t)im->px[3 * i + 1] << 8 |
                  im->px[3 * i + 2];
    qsort(keys, n, sizeof *keys, cmp_u32);
    int distinct = n > 0;
    for (size_t i = 1; i < n; i++) distinct += keys[i] != keys[i - 1];
    free(keys);
    return distinct;
}

static long count_color(const image *im, tg_rgb c)
{
    long n = 0;
    for (size_t i = 0; i < (size_t)im->w * im->h; i++)
        n += im->px[3 * i] == c.r && im->px[3 * i + 1] == c.g && im->px[3 * i + 2] == c.b;
    return n;
}

Test(viz, viridis_endpoints_and_clamping)
{
    tg_rgb lo = tg_viridis(0.0), mid = tg_viridis(0.5), hi = tg_viridis(1.0);
    cr_assert(lo.r == 68 && lo.g == 1 && lo.b == 84, "viridis(0) = %d,%d,%d", lo.r, lo.g, lo.b);
    cr_assert(abs(mid.r - 33) <= 2 && abs(mid.g - 145) <= 2 && abs(mid.b - 140) <= 2,
              "viridis(0.5) = %d,%d,%d", mid.r, mid.g, mid.b);
    cr_assert(hi.r == 253 && hi.g == 231 && hi.b == 37, "viridis(1) = %d,%d,%d", hi.r, hi.g, hi.b);
    tg_rgb below = tg_viridis(-3.0), above = tg_viridis(7.0), nan = tg_viridis(NAN);
    cr_assert(below.r == lo.r && below.g == lo.g && below.b == lo.b);
    cr_assert(above.r == hi.r && above.g == hi.g && above.b == hi.b);
    cr_assert(nan.r == lo.r && nan.g == lo.g && nan.b == lo.b);
}

Test(viz, canvas_text_line_and_save)
{
    cr_assert_eq(tg_text_width("", 1), 0);
    cr_assert_eq(tg_text_width("L0", 2), 2 * tg_text_width("L0", 1));
    cr_assert_gt(tg_text_width("L0 H2", 1), tg_text_width("L0", 1));
    cr_assert_eq(tg_text_width("\xff\x01", 1), tg_text_width("??", 1), "non-ASCII draws as '?'");
    cr_assert_null(tg_canvas_new(0, 10, (tg_rgb){0, 0, 0}));

    tg_canvas *c = tg_canvas_new(40, 20, (tg_rgb){255, 255, 255});
    cr_assert_not_null(c);
    tg_canvas_line(c, -100, -50, 100, 70, 1, (tg_rgb){0, 0, 255}); /* clipped */
    tg_canvas_line(c, 0, 19, 39, 19, 1, (tg_rgb){255, 0, 0});
    tg_canvas_text(c, 2, 2, "Hi", 1, (tg_rgb){0, 128, 0});
    tg_canvas_text_up(c, 30, 18, "up", 1, (tg_rgb){0, 128, 0});
    cr_assert_eq(tg_canvas_save_png(c, tmp_file("c.png")), 0, "%s", tg_error());
    cr_assert_eq(tg_canvas_save_png(c, BAD_PATH), -1);
    cr_assert(strstr(tg_error(), BAD_PATH), "message names the file: %s", tg_error());
    tg_canvas_free(c);

    image im = load_png(tmp_file("c.png"));
    cr_assert_eq(im.w, 40);
    cr_assert_eq(im.h, 20);
    cr_assert_eq(count_color(&im, (tg_rgb){255, 0, 0}), 40, "bottom row is a full red line");
    cr_assert_gt(count_color(&im, (tg_rgb){0, 128, 0}), 10, "text is drawn");
    cr_assert_gt(count_color(&im, (tg_rgb){0, 0, 255}), 10, "clipped line is drawn");
    stbi_image_free(im.px);
}

/* A write that fails part-way (a full disk; here a file size limit, which
 * fails a write with EFBIG once SIGXFSZ is ignored) leaves no cut-off PNG. */
Test(viz, a_failed_write_leaves_no_partial_png)
{
    tg_canvas *c = tg_canvas_new(200, 200, (tg_rgb){255, 255, 255});
    cr_assert_not_null(c);
    for (int i = 0; i < 200; i += 3) tg_canvas_line(c, 0, i, 199, 199 - i, 1, (tg_rgb){(uint8_t)i, 0, 255});
    cr_assert_eq(tg_canvas_save_png(c, tmp_file("full.png")), 0, "%s", tg_error());
    FILE *f = fopen(tmp_path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_gt(size, 2048);
    /* this test's own worker process: the limit ends with it */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {(rlim_t)size / 2, RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    cr_assert_eq(tg_canvas_save_png(c, tmp_file("full.png")), -1);
    cr_assert(strstr(tg_error(), tmp_path) && strstr(tg_error(), strerror(EFBIG)), "%s", tg_error());
    cr_assert_neq(access(tmp_path, F_OK), 0, "%s is left behind", tmp_path);
    tg_canvas_free(c);
}

enum { NL = 2, NH = 3, LQ = 8, LK = 8 };

/* Reverse-task attention: every query looks at the mirrored key. Layer 1
 * uses out-of-range values (2 and -1) that must clamp to the same colours. */
static void anti_diagonal(tg_real *w)
{
    for (int l = 0; l < NL; l++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < LQ; i++)
                for (int j = 0; j < LK; j++) {
                    int on = j == LK - 1 - i;
                    tg_real v = l == 0 ? (on ? 1 : 0) : (on ? 2 : -1);
                    w[((l * NH + h) * LQ + i) * LK + j] = v;
                }
}

Test(viz, heatmap_grid_of_heads)
{
    static tg_real w[NL * NH * LQ * LK];
    anti_diagonal(w);
    const char *toks[LQ] = {"<bos>", "the", "cat", "sat", "on", NULL, "mat", "<eos>"};
    const char *path = tmp_file("heat.png");
    cr_assert_eq(tg_heatmap_png(path, w, NL, NH, LQ, LK, toks, NULL), 0, "%s", tg_error());

    image im = load_png(path);
    const int s = 24; /* 192 / 8, see viz/heatmap.h */
    cr_assert_gt(im.w, NH * LK * s, "width %d holds 3 heads of 8 x 24 px", im.w);
    cr_assert_gt(im.h, NL * LQ * s, "height %d holds 2 layers of 8 x 24 px", im.h);
    cr_assert_lt(im.w, 4000);
    cr_assert_lt(im.h, 4000);
    cr_assert_gt(im.w, im.h, "3 heads side by side, 2 layers stacked");
    cr_assert_gt(distinct_colors(&im), 50, "cells, labels and colorbar gradient");

    /* Crisp nearest upscaling: every 1.0 entry is an exact s x s square of
     * viridis(1); the colorbar adds at most a few rows of it. */
    long bright = count_color(&im, tg_viridis(1.0));
    long expect = (long)NL * NH * LQ * s * s;
    cr_assert(bright >= expect && bright <= expect + 64, "bright px %ld, expected %ld", bright,
              expect);
    long dark = count_color(&im, tg_viridis(0.0));
    long expect_dark = (long)NL * NH * LQ * (LK - 1) * s * s;
    cr_assert(dark >= expect_dark && dark <= expect_dark + 64, "dark px %ld, expected %ld", dark,
              expect_dark);
    stbi_image_free(im.px);
}

static const tg_rgb INK = {30, 30, 30};  /* viz/heatmap.c's text colour */

/* Whether text (rotated: read bottom to top) is drawn somewhere in im in
 * INK at scale sc: its exact glyph pixels, with no other ink in its box and
 * a 1-px frame around it. */
static bool has_text(const image *im, const char *text, int sc, bool rotated)
{
    int tw = tg_text_width(text, sc), th = tg_text_height(sc);
    int w = (rotated ? th : tw) + 2, h = (rotated ? tw : th) + 2;
    tg_canvas *t = tg_canvas_new(w, h, (tg_rgb){255, 255, 255});
    cr_assert_not_null(t);
    if (rotated) tg_canvas_text_up(t, 1, tw + 1, text, sc, INK);
    else tg_canvas_text(t, 1, 1, text, sc, INK);
    bool found = false;
    for (int y = 0; y + h <= im->h && !found; y++)
        for (int x = 0; x + w <= im->w && !found; x++) {
            bool ok = true;
            for (int v = 0; v < h && ok; v++)
                for (int u = 0; u < w && ok; u++) {
                    const uint8_t *a = t->px + ((size_t)v * w + u) * 3,
                                  *b = im->px + ((size_t)(y + v) * im->w + (x + u)) * 3;
                    bool ink_t = a[0] == INK.r && a[1] == INK.g && a[2] == INK.b;
                    bool ink_i = b[0] == INK.r && b[1] == INK.g && b[2] == INK.b;
                    ok = ink_t == ink_i;
                }
            found = ok;
        }
    tg_canvas_free(t);
    return found;
}

Test(viz, heatmap_label_step_thins_what_does_not_fit)
{
    cr_assert_eq(tg_heatmap_label_step(12, 10), 1);  /* 10 px + 2 px gap fit a 12-px column */
    cr_assert_eq(tg_heatmap_label_step(12, 11), 2);
    cr_assert_eq(tg_heatmap_label_step(12, 34), 3);  /* "<bos>"-wide labels over 12-px columns */
    cr_assert_eq(tg_heatmap_label_step(24, 22), 1);
    cr_assert_eq(tg_heatmap_label_step(3, 7), 3);    /* query rows of 3 px: every third cap height */
    cr_assert_eq(tg_heatmap_label_step(0, 7), 1);
    for (int s = 1; s <= 40; s++)
        for (int e = 1; e <= 70; e++) {
            int k = tg_heatmap_label_step(s, e);
            cr_assert(k >= 1 && k * s >= e + 2 && (k == 1 || (k - 1) * s < e + 2), "s %d, extent %d: step %d", s,
                      e, k);
        }
}

/* Key labels horizontal at their size, every k-th where they do not fit
 * their column (L = 8: 24-px columns, text at scale 2; L = 64: 12-px
 * columns, scale 1); the axis titles at the labels' size. */
Test(viz, heatmap_key_labels_horizontal_thinned_and_axis_titles)
{
    static tg_real w[NL * NH * LQ * LK];
    anti_diagonal(w);
    const char *toks[LQ] = {"<bos>", "the", "cat", "sat", "on", "in", "mat", "<eos>"};
    cr_assert_eq(tg_heatmap_png(tmp_file("l8.png"), w, 1, 1, LQ, LK, NULL, toks), 0, "%s", tg_error());
    image im = load_png(tmp_file("l8.png"));
    int widest = 0;
    for (int j = 0; j < LK; j++) widest = tg_text_width(toks[j], 2) > widest ? tg_text_width(toks[j], 2) : widest;
    int k8 = tg_heatmap_label_step(24, widest);
    cr_assert_eq(k8, 3, "'<bos>' is %d px wide at scale 2", widest);
    for (int j = 0; j < LK; j++) {
        cr_assert_eq(has_text(&im, toks[j], 2, false), j % k8 == 0, "L = 8: key label '%s' %s", toks[j],
                     j % k8 ? "drawn where it does not fit" : "missing or not horizontal");
        cr_assert(!has_text(&im, toks[j], 2, true), "L = 8: key label '%s' rotated", toks[j]);
    }
    cr_assert(has_text(&im, "key", 2, false), "L = 8: no axis title 'key'");
    cr_assert(has_text(&im, "query", 2, true), "L = 8: no axis title 'query' (read bottom to top)");
    stbi_image_free(im.px);

    enum { L = 64 };
    static tg_real w64[L * L];
    static char text[L][8];
    const char *labels[L];
    for (int i = 0; i < L; i++) {
        snprintf(text[i], sizeof text[i], "k%02d", i);
        labels[i] = text[i];
        for (int j = 0; j < L; j++) w64[i * L + j] = j <= i ? (tg_real)(1.0 / (i + 1)) : (tg_real)-INFINITY;
    }
    int step = tg_heatmap_label_step(12, tg_text_width("k00", 1));
    cr_assert_eq(step, 2, "'k00' is %d px wide", tg_text_width("k00", 1));
    cr_assert_eq(tg_heatmap_png(tmp_file("l64.png"), w64, 1, 1, L, L, labels, labels), 0, "%s", tg_error());
    im = load_png(tmp_file("l64.png"));
    cr_assert(has_text(&im, "key", 1, false) && has_text(&im, "query", 1, true), "L = 64: the axis titles");
    for (int i = 0; i < L; i += 7)  /* rows of 12 px: every query label */
        cr_assert(has_text(&im, labels[i], 1, false), "L = 64: query label '%s' missing", labels[i]);
    stbi_image_free(im.px);
    /* the key labels alone (empty query labels) */
    static char none[L][2];
    const char *blank[L];
    for (int i = 0; i < L; i++) blank[i] = none[i];
    cr_assert_eq(tg_heatmap_png(tmp_file("k64.png"), w64, 1, 1, L, L, blank, labels), 0, "%s", tg_error());
    im = load_png(tmp_file("k64.png"));
    for (int j = 0; j < 8; j++)
        cr_assert_eq(has_text(&im, labels[j], 1, false), j % step == 0, "L = 64: key label '%s' %s", labels[j],
                     j % step ? "drawn, but they do not all fit" : "missing");
    stbi_image_free(im.px);
}

/* A masked entry (-inf) is light grey, a weight of 0 viridis' dark end:
 * each an exact s x s square per entry (the masked key adds one swatch). */
Test(viz, heatmap_masked_entries_differ_from_zero_weights)
{
    enum { L = 8, S = 24 };
    tg_real w[L * L];
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) w[i * L + j] = j > i ? (tg_real)-INFINITY : j == 0 ? 1 : 0;
    cr_assert_eq(tg_heatmap_png(tmp_file("mask.png"), w, 1, 1, L, L, NULL, NULL), 0, "%s", tg_error());
    image im = load_png(tmp_file("mask.png"));
    const tg_rgb masked = {222, 222, 222}, zero = tg_viridis(0.0);
    long n_masked = count_color(&im, masked), n_zero = count_color(&im, zero);
    long want_masked = (long)L * (L - 1) / 2 * S * S + 12 * 12, want_zero = (long)L * (L - 1) / 2 * S * S;
    cr_assert_eq(n_masked, want_masked, "masked px %ld, want %ld", n_masked, want_masked);
    cr_assert(n_zero >= want_zero && n_zero <= want_zero + 64, "zero-weight px %ld, want %ld", n_zero, want_zero);
    int dist = abs(masked.r - zero.r) + abs(masked.g - zero.g) + abs(masked.b - zero.b);
    cr_assert_gt(dist, 300, "masked and 0 must look different");
    stbi_image_free(im.px);
}

Test(viz, heatmap_rejects_bad_arguments)
{
    static tg_real w[NL * NH * LQ * LK];
    cr_assert_eq(tg_heatmap_png(NULL, w, NL, NH, LQ, LK, NULL, NULL), -1);
    cr_assert(strstr(tg_error(), "path"), "%s", tg_error());
    cr_assert_eq(tg_heatmap_png(tmp_file("x.png"), NULL, NL, NH, LQ, LK, NULL, NULL), -1);
    cr_assert(strstr(tg_error(), "weights"), "%s", tg_error());
    cr_assert_eq(tg_heatmap_png(tmp_file("x.png"), w, NL, NH, 0, LK, NULL, NULL),
                 -1);
    cr_assert(strstr(tg_error(), "Lq=0"), "%s", tg_error());
    cr_assert_eq(tg_heatmap_png(tmp_file("x.png"), w, -1, NH, LQ, LK, NULL, NULL),
                 -1);
    cr_assert(strstr(tg_error(), "n_layers=-1"), "%s", tg_error());
    cr_assert_eq(tg_heatmap_png(tmp_file("x.png"), w, NL, NH, 100000, LK, NULL, NULL), -1);
    cr_assert(strstr(tg_error(), "too large"), "%s", tg_error());
    cr_assert_eq(tg_heatmap_png(tmp_file("x.png"), w, 64, 64, 2000, 2000, NULL, NULL), -1);
    cr_assert(strstr(tg_error(), "do not fit"), "%s", tg_error());
    cr_assert_eq(tg_heatmap_png(BAD_PATH, w, NL, NH, LQ, LK, NULL, NULL), -1);
    cr_assert(strstr(tg_error(), BAD_PATH) && strstr(tg_error(), "No such file"), "%s", tg_error());
    cr_assert_eq(tg_heatmap_png(NULL, w, NL, NH, LQ, LK, NULL, NULL), -1);
    cr_assert_eq(access(tmp_file("x.png"), F_OK), -1, "nothing written on bad arguments");
}

enum { STEPS = 500 };

Test(viz, line_plot_with_sparse_right_axis)
{
    static double x[STEPS], loss[STEPS], val[STEPS], acc[STEPS];
    for (int i = 0; i < STEPS; i++) {
        x[i] = i;
        loss[i] = 2.5 * exp(-i / 100.0) + 0.05;
        val[i] = i % 50 == 0 ? 2.6 * exp(-i / 110.0) + 0.1 : NAN; /* sparse */
        acc[i] = i % 50 == 0 ? 1.0 - exp(-i / 120.0) : NAN;
    }
    tg_plot_series s[3] = {{"train loss", x, loss, STEPS, false},
                           {"val loss", x, val, STEPS, false},
                           {"val accuracy", x, acc, STEPS, true}};
    const char *path = tmp_file("lines.png");
    cr_assert_eq(tg_plot_lines_png(path, "loss", "step", s, 3), 0, "%s", tg_error());

    image im = load_png(path);
    cr_assert_eq(im.w, 960);
    cr_assert_eq(im.h, 600);
    cr_assert_geq(distinct_colors(&im), 6, "white, ink, grid and three series");
    /* NaN gaps are bridged: the sparse series is a line, not 10 markers
     * (10 markers + legend swatch alone are ~600 px). */
    cr_assert_gt(count_color(&im, (tg_rgb){255, 127, 14}), 1200);
    cr_assert_gt(count_color(&im, (tg_rgb){44, 160, 44}), 1200);
    cr_assert_gt(count_color(&im, (tg_rgb){31, 119, 180}), 1200);
    stbi_image_free(im.px);
}

Test(viz, line_plot_rejects_bad_arguments)
{
    double y[3] = {1, 2, 3};
    tg_plot_series ok = {"y", NULL, y, 3, false}, bad = {"y", NULL, NULL, 3, false};
    cr_assert_eq(tg_plot_lines_png(NULL, NULL, NULL, &ok, 1), -1);
    cr_assert(strstr(tg_error(), "path"), "%s", tg_error());
    cr_assert_eq(tg_plot_lines_png(tmp_file("x.png"), NULL, NULL, &ok, 0), -1);
    cr_assert(strstr(tg_error(), "series"), "%s", tg_error());
    cr_assert_eq(tg_plot_lines_png(tmp_file("x.png"), NULL, NULL, &bad, 1), -1);
    cr_assert(strstr(tg_error(), "y NULL"), "%s", tg_error());
    cr_assert_eq(tg_plot_lines_png(BAD_PATH, NULL, NULL, &ok, 1), -1);
    cr_assert(strstr(tg_error(), BAD_PATH), "%s", tg_error());
    cr_assert_eq(access(tmp_file("x.png"), F_OK), -1);
}

Test(viz, line_plot_all_nan_still_renders)
{
    double y[4] = {NAN, NAN, INFINITY, NAN};
    tg_plot_series s = {NULL, NULL, y, 4, false};
    const char *path = tmp_file("nan.png");
    cr_assert_eq(tg_plot_lines_png(path, "diverged", NULL, &s, 1), 0, "%s", tg_error());
    image im = load_png(path);
    cr_assert_eq(im.w, 960);
    stbi_image_free(im.px);
}

Test(viz, bar_chart_with_negative_values)
{
    const char *labels[5] = {"matmul", "softmax", "layernorm", NULL, "adam"};
    double v[5] = {12.5, 3.2, -4.1, 25.0, 0.25};
    const char *path = tmp_file("bars.png");
    cr_assert_eq(tg_plot_bars_png(path, "speedup", labels, v, 5), 0, "%s", tg_error());

    image im = load_png(path);
    cr_assert_eq(im.w, 960);
    cr_assert_eq(im.h, 600);
    cr_assert_geq(distinct_colors(&im), 5);
    long pos = count_color(&im, (tg_rgb){31, 119, 180});
    long neg = count_color(&im, (tg_rgb){255, 127, 14});
    cr_assert_gt(neg, 500, "the negative bar hangs below zero");
    cr_assert_gt(pos, 5 * neg, "positive bars are together ~10x the negative one");
    stbi_image_free(im.px);
}

Test(viz, bar_chart_rejects_bad_arguments)
{
    double v[2] = {1, 2};
    cr_assert_eq(tg_plot_bars_png(NULL, NULL, NULL, v, 2), -1);
    cr_assert(strstr(tg_error(), "path"), "%s", tg_error());
    cr_assert_eq(tg_plot_bars_png(tmp_file("x.png"), NULL, NULL, NULL, 2), -1);
    cr_assert(strstr(tg_error(), "values NULL"), "%s", tg_error());
    cr_assert_eq(tg_plot_bars_png(tmp_file("x.png"), NULL, NULL, v, 0), -1);
    cr_assert(strstr(tg_error(), "got 0"), "%s", tg_error());
    cr_assert_eq(tg_plot_bars_png(BAD_PATH, NULL, NULL, v, 2), -1);
    cr_assert(strstr(tg_error(), BAD_PATH), "%s", tg_error());
    cr_assert_eq(access(tmp_file("x.png"), F_OK), -1);
}

Test(viz, png_writers)
{
    tg_canvas *c = tg_canvas_new(4, 4, (tg_rgb){0, 0, 0});
    cr_assert_eq(tg_canvas_save_png(c, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_canvas_save_png: the path is NULL");
    cr_assert_eq(tg_canvas_save_png(NULL, "x.png"), -1);
    cr_assert_str_eq(tg_error(), "tg_canvas_save_png: the canvas is NULL");
    cr_assert_eq(tg_canvas_save_png(c, "/dev/full"), -1);  /* every write fails */
    cr_assert_str_eq(tg_error(), "cannot write PNG '/dev/full': No space left on device");
    struct stat st;  /* a failed write removes a cut-off file, never a device */
    cr_assert(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "/dev/full is no longer a device");
    tg_canvas_free(c);
    /* out of memory for the image, in each writer */
    char dir[256], path[300];
    tu_tmpdir(dir, sizeof dir, "tg_png");
    snprintf(path, sizeof path, "%s/p.png", dir);
    const double ys[3] = {1, 2, 3};
    const tg_plot_series s = {.name = "loss", .y = ys, .n = 3};
    const tg_real w[4] = {0.5, 0.5, 0, 1};
    for (uint64_t n = 1; n <= 2; n++) {
        tg_alloc_fail_at(n);
        cr_assert_eq(tg_plot_lines_png(path, "t", "step", &s, 1), -1);
        tg_alloc_fail_at(0);
        tu_assert_has(tg_error(), "tg_plot_lines_png: out of memory");
        tg_alloc_fail_at(n);
        cr_assert_eq(tg_plot_bars_png(path, "t", NULL, ys, 3), -1);
        tg_alloc_fail_at(0);
        tu_assert_has(tg_error(), "tg_plot_bars_png: out of memory");
        tg_alloc_fail_at(n);
        cr_assert_eq(tg_heatmap_png(path, w, 1, 1, 2, 2, NULL, NULL), -1);
        tg_alloc_fail_at(0);
        tu_assert_has(tg_error(), "tg_heatmap_png: out of memory for a");
    }
    cr_assert_eq(access(path, F_OK), -1, "no file is written when the image could not be made");
    cr_assert_eq(tg_heatmap_png(path, w, 1, 1, 2, 2, NULL, NULL), 0, "%s", tg_error());
    unlink(path);
    rmdir(dir);
}
