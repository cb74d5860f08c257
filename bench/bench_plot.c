/* The plots of docs/PERF.md, drawn from the ROW lines scripts/bench.sh keeps.
 *
 *   bench_plot ROWS_FILE DIR    writes DIR/perf_scaling.png and DIR/perf_lsweep.png
 *
 * perf_scaling.png: the large MHA's effective GFLOP/s against log2 of the
 * swept size (tag=sweepL: B = 16, L varies; tag=sweepB: L = 128, B varies),
 * tapegrad fused and PyTorch, with the sgemm ceiling (the best repetition of
 * the square sgemm rows) as a flat line.
 * perf_lsweep.png: the toy model's training step (tag=sweepM: batch 4,
 * d_model 64, 2 layers, L = T) for tapegrad and PyTorch, log10 of ms/step
 * on the left axis and log10 of peak RSS on the right, against log2(L).
 * A plot whose rows are missing is skipped with a note. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/error.h>
#include <tapegrad/viz/plot.h>

#define PLOT_MAX 32

typedef struct curve {
    double x[PLOT_MAX], y[PLOT_MAX];
    int n;
} curve;

/* The value of "key=" in a ROW line, or NULL. */
static const char *row_get(const char *line, const char *key, char *buf, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    if (!p) return NULL;
    p += strlen(pat);
    size_t n = strcspn(p, " \n");
    if (n >= len) n = len - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

static double row_num(const char *line, const char *key)
{
    char v[64];
    return row_get(line, key, v, sizeof v) ? strtod(v, NULL) : NAN;
}

static int row_is(const char *line, const char *key, const char *want)
{
    char v[64];
    return row_get(line, key, v, sizeof v) && strcmp(v, want) == 0;
}

/* Adds (x, y) keeping the curve sorted by x; a repeated x (another round of
 * bench.sh) keeps the first value. */
static void curve_add(curve *c, double x, double y)
{
    if (c->n >= PLOT_MAX || !isfinite(x) || !isfinite(y)) return;
    for (int j = 0; j < c->n; j++)
        if (c->x[j] == x) return;
    int i = c->n++;
    for (; i > 0 && c->x[i - 1] > x; i--) c->x[i] = c->x[i - 1], c->y[i] = c->y[i - 1];
    c->x[i] = x;
    c->y[i] = y;
}

static int draw(const char *png, const char *title, const char *x_label, const tg_plot_series *s, int ns)
{
    if (tg_plot_lines_png(png, title, x_label, s, ns)) {
        fprintf(stderr, "bench_plot: %s\n", tg_error());
        return 1;
    }
    fprintf(stderr, "bench_plot: wrote %s\n", png);
    return 0;
}

static int plot_scaling(FILE *f, const char *png)
{
    curve cv[4] = {{{0}, {0}, 0}};  /* tapegrad L, torch L, tapegrad B, torch B */
    double ceiling = 0;
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "ROW ", 4) != 0) continue;
        char v[64];
        if (row_get(line, "name", v, sizeof v) && strncmp(v, "square", 6) == 0) {
            double best = 2 * row_num(line, "M") * row_num(line, "N") * row_num(line, "K") /
                          (row_num(line, "min_ms") * 1e6);
            if (best > ceiling) ceiling = best;
        }
        int torch = row_is(line, "impl", "torch_manual");
        if (!torch && !row_is(line, "impl", "tapegrad_fused")) continue;
        int byB = row_is(line, "tag", "sweepB");
        if (!byB && !row_is(line, "tag", "sweepL")) continue;
        curve_add(&cv[2 * byB + torch], log2(row_num(line, byB ? "B" : "L")), row_num(line, "gflops"));
    }
    static const char *const names[4] = {"tapegrad fused, L sweep (B=16)", "PyTorch, L sweep (B=16)",
                                         "tapegrad fused, B sweep (L=128)", "PyTorch, B sweep (L=128)"};
    tg_plot_series s[6];
    int ns = 0;
    for (int i = 0; i < 4; i++)
        if (cv[i].n > 0) s[ns++] = (tg_plot_series){names[i], cv[i].x, cv[i].y, cv[i].n, false};
    if (ns == 0) return fprintf(stderr, "bench_plot: no sweepL / sweepB rows: no %s\n", png), 0;
    double cx[2] = {0, 10}, cy[2] = {ceiling, ceiling}, ty[2] = {0.65 * ceiling, 0.65 * ceiling};
    if (ceiling > 0) {
        s[ns++] = (tg_plot_series){"sgemm 2048^3 ceiling", cx, cy, 2, false};
        s[ns++] = (tg_plot_series){"65% of the ceiling (target)", cx, ty, 2, false};
    }
    return draw(png, "MHA training step, D=512 H=8: effective GFLOP/s",
                "log2(L) for the L sweep, log2(B) for the B sweep", s, ns);
}

static int plot_lsweep(FILE *f, const char *png)
{
    curve cv[4] = {{{0}, {0}, 0}};  /* ms: tapegrad, torch; peak RSS: tapegrad, torch */
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "ROW ", 4) != 0 || !row_is(line, "tag", "sweepM")) continue;
        int torch = row_is(line, "impl", "torch");
        double L = log2(row_num(line, "T"));
        curve_add(&cv[torch], L, log10(row_num(line, "ms")));
        curve_add(&cv[2 + torch], L, log10(row_num(line, "peak_rss_mib")));
    }
    if (cv[0].n == 0) return fprintf(stderr, "bench_plot: no sweepM rows: no %s\n", png), 0;
    static const char *const names[4] = {"tapegrad ms/step", "PyTorch ms/step", "tapegrad peak RSS MiB",
                                         "PyTorch peak RSS MiB"};
    tg_plot_series s[4];
    int ns = 0;
    for (int i = 0; i < 4; i++)
        if (cv[i].n > 0) s[ns++] = (tg_plot_series){names[i], cv[i].x, cv[i].y, cv[i].n, i >= 2};
    return draw(png, "L sweep, toy model: log10 ms/step (left), log10 peak RSS MiB (right)",
                "log2(L); batch 4, d_model 64, 2 layers, 4 heads", s, ns);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_plot ROWS_FILE DIR (writes DIR/perf_scaling.png, DIR/perf_lsweep.png)\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "bench_plot: cannot open %s\n", argv[1]);
        return 1;
    }
    char png[4096];
    snprintf(png, sizeof png, "%s/perf_scaling.png", argv[2]);
    int rc = plot_scaling(f, png);
    rewind(f);
    snprintf(png, sizeof png, "%s/perf_lsweep.png", argv[2]);
    rc |= plot_lsweep(f, png);
    fclose(f);
    return rc;
}
