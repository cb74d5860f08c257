/* tapegrad: a tensor printed as PyTorch prints it (tensor.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "tensor.h"

#define SUMMARIZE 1000  /* PyTorch's threshold: more elements print summarized */
#define EDGE 3          /* elements kept at each end of a summarized dim */

/* An appender that counts what it cannot store, as snprintf. */
typedef struct out {
    char *buf;
    size_t cap, len;
} out;

static void put(out *o, const char *s)
{
    for (; *s; s++, o->len++)
        if (o->len + 1 < o->cap) o->buf[o->len] = *s;
}

typedef struct style {
    enum { INTEGRAL, FIXED, SCI } kind;
    int width;
    bool summarize;
} style;

static bool shown(const tg_tensor *x, int d, int i, bool summarize)
{
    return !summarize || x->shape[d] <= 2 * EDGE || i < EDGE || i >= x->shape[d] - EDGE;
}

static void number(char *s, size_t n, double v, int kind)
{
    if (isnan(v)) snprintf(s, n, "nan");
    else if (isinf(v)) snprintf(s, n, v > 0 ? "inf" : "-inf");
    else if (kind == INTEGRAL) snprintf(s, n, "%.0f.", v);
    else if (kind == FIXED) snprintf(s, n, "%.4f", v);
    else snprintf(s, n, "%.4e", v);
}

/* Calls f on every printed element (flat index) of x, in order. */
static void each_shown(const tg_tensor *x, bool summarize, void (*f)(double, void *), void *ctx)
{
    int idx[TG_MAX_DIMS] = {0};
    for (size_t i = 0; i < x->size; i++) {
        bool ok = true;
        for (int d = 0; ok && d < x->ndim; d++) ok = shown(x, d, idx[d], summarize);
        if (ok) f(tg_dtype_load(x->dtype, x->data, i), ctx);
        for (int d = x->ndim - 1; d >= 0 && ++idx[d] == x->shape[d]; d--) idx[d] = 0;
    }
}

typedef struct scan {
    bool integral;
    double max, min_nonzero;
} scan;

static void scan_one(double v, void *ctx)
{
    scan *s = ctx;
    if (!isfinite(v)) return;
    double a = fabs(v);
    if (v != floor(v)) s->integral = false;
    if (a > s->max) s->max = a;
    if (a > 0 && a < s->min_nonzero) s->min_nonzero = a;
}

static void width_one(double v, void *ctx)
{
    style *st = ctx;
    char s[64];
    number(s, sizeof s, v, st->kind);
    int w = (int)strlen(s);
    if (w > st->width) st->width = w;
}

/* PyTorch's choice: integers as "3.", large or wide-ranging values in
 * scientific form, the rest with 4 decimals; every element as wide as the widest. */
static style style_of(const tg_tensor *x)
{
    style st = {FIXED, 0, x->size > SUMMARIZE};
    scan s = {true, 0, INFINITY};
    each_shown(x, st.summarize, scan_one, &s);
    if (s.integral && s.max < 1e8) st.kind = INTEGRAL;
    else if (s.max >= 1e8 || (s.min_nonzero < INFINITY && (s.max / s.min_nonzero > 1e4 || s.min_nonzero < 1e-4)))
        st.kind = SCI;
    each_shown(x, st.summarize, width_one, &st);
    return st;
}

/* The elements of x under dim d starting at flat offset off; indent is
 * the column of this bracket's contents. */
static void nest(out *o, const tg_tensor *x, const style *st, int d, size_t off, int indent)
{
    char s[64];
    if (d == x->ndim) {
        number(s, sizeof s, tg_dtype_load(x->dtype, x->data, off), st->kind);
        for (int k = (int)strlen(s); k < st->width; k++) put(o, " ");
        put(o, s);
        return;
    }
    size_t inner = 1;
    for (int k = d + 1; k < x->ndim; k++) inner *= (size_t)x->shape[k];
    put(o, "[");
    bool first = true;
    for (int i = 0; i < x->shape[d]; i++) {
        if (!first) {
            put(o, ",");
            if (d == x->ndim - 1) put(o, " ");
            else {
                for (int k = d; k < x->ndim - 1; k++) put(o, "\n");
                for (int k = 0; k < indent; k++) put(o, " ");
            }
        }
        first = false;
        if (!shown(x, d, i, st->summarize)) {
            put(o, "...");
            i = x->shape[d] - EDGE - 1;
            continue;
        }
        nest(o, x, st, d + 1, off + (size_t)i * inner, indent + 1);
    }
    put(o, "]");
}

size_t tg_tensor_str(const tg_tensor *x, char *buf, size_t cap)
{
    TG_REFUSE_NULL(buf || !cap, "the buffer", 0);
    out o = {buf, cap, 0};
    if (!x || x->magic != TG_TENSOR_LIVE) {
        put(&o, x ? "tensor(<not a live tensor>)" : "tensor(NULL)");
    } else {
        style st = style_of(x);
        put(&o, "tensor(");
        nest(&o, x, &st, 0, 0, 8);
        char s[TG_SHAPE_STR];
        put(&o, ", shape=");
        put(&o, tg_shape_str(x, s));
        if (x->requires_grad) put(&o, ", requires_grad=True");
        put(&o, ")");
    }
    if (cap) buf[o.len < cap ? o.len : cap - 1] = '\0';
    return o.len;
}

int tg_tensor_print(FILE *f, const tg_tensor *x)
{
    TG_REFUSE_NULL(f, "the file", -1);
    size_t n = tg_tensor_str(x, NULL, 0);
    char *s = tg_malloc(n + 1);
    if (!s) return -1;
    tg_tensor_str(x, s, n + 1);
    int rc = fprintf(f, "%s\n", s) < 0 ? -1 : 0;
    tg_free(s);
    return rc;
}
