/* tapegrad: the tape, its arena, its nodes and its error slot (see
 * core/engine/tape.h and core/engine/op.h). */
#include "op.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "headers.h"
#include "tape.h"

#define ARENA_ALIGN 64
#define ARENA_MIN_CHUNK ((size_t)1 << 20)

typedef struct chunk {
    struct chunk *next;
    size_t cap, used;
    unsigned char *start; /* ARENA_ALIGN-aligned start inside mem[] */
    unsigned char mem[];
} chunk;

/* Arena memory that is dead before the reset: a temporary's grad once its
 * node's backward has run, an op's scratch once the op returns. tg_grad and
 * tg_arena_scratch hand it out again. The list is kept in address order and
 * neighbours merge, so two dead 4 MiB grads side by side can hold an 8 MiB
 * one; a taker gets the smallest piece that fits and the rest stays spare.
 * Sizes are whole arena units. The link lives in the memory itself. */
typedef struct spare {
    struct spare *next;
    size_t bytes;
} spare;

/* One recorded op: backward reads out->grad and adds into in[]'s (or stores, tg_grad_write). */
typedef struct node {
    const char *op;
    tg_backward_fn backward;
    tg_tensor *out;
    tg_tensor **in;          /* n_in entries (arena), NULL where an optional input is absent */
    int n_in;
    const void *ctx;         /* the op's context (arena copy), or NULL */
} node;

struct tg_tape {
    chunk *first, *cur;
    node *nodes;
    int n_nodes, cap_nodes;
    spare *spares;       /* address order; rewound with the arena */
    tg_hblock *headers;  /* the arena tensors' headers (core/engine/headers.h) */
    uint32_t id, gen;    /* stamped on every arena tensor (core/engine/tensor.h) */
    bool recording, training, anomaly, has_error, backward_done;
    tg_dtype autocast;   /* TG_F32: off; TG_BF16 / TG_F16: the products' operand type */
    char error[TG_ERROR_MAX];  /* a copy of the failure tg_error() reports */
};

tg_tape *tg_tape_new(void)
{
    tg_tape *t = tg_calloc(1, sizeof *t);
    if (!t) return NULL;
    static atomic_uint next_id = 1;
    t->id = atomic_fetch_add(&next_id, 1);
    t->gen = 1;
    t->recording = true;
    t->training = true;
    t->autocast = TG_F32;
    return t;
}

void tg_tape_free(tg_tape *t)
{
    if (!t) return;
    for (chunk *c = t->first, *next; c; c = next) {
        next = c->next;
        tg_free(c);
    }
    tg_headers_free(t->headers);
    tg_free(t->nodes);
    tg_free(t);
}

void tg_tape_reset(tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", );
    t->gen++;
    for (chunk *c = t->first; c; c = c->next) c->used = 0;
    tg_headers_release(t->headers);
    t->cur = t->first;
    t->n_nodes = 0;
    t->spares = NULL;
    t->backward_done = false;
    tg_tape_clear_error(t);
}

bool tg_no_grad_begin(tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", false);
    bool prev = t->recording;
    t->recording = false;
    return prev;
}

void tg_no_grad_end(tg_tape *t, bool prev)
{
    TG_REFUSE_NULL(t, "the tape", );
    t->recording = prev;
}

bool tg_tape_recording(const tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", false);
    return t->recording;
}

tg_dtype tg_autocast_begin(tg_tape *t, tg_dtype dt)
{
    TG_REFUSE_NULL(t, "the tape", TG_F32);
    tg_dtype prev = t->autocast;
    if (dt != TG_F32 && !tg_dtype_is_half(dt)) {
        tg_fail(t, "tg_autocast_begin: %s is not bfloat16, float16 or float32 (off)", tg_dtype_name(dt));
        return prev;
    }
    t->autocast = dt;
    return prev;
}

void tg_autocast_end(tg_tape *t, tg_dtype prev)
{
    TG_REFUSE_NULL(t, "the tape", );
    t->autocast = prev == TG_F32 || tg_dtype_is_half(prev) ? prev : TG_F32;
}

tg_dtype tg_tape_autocast(const tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", TG_F32);
    return t->autocast;
}

void tg_tape_set_training(tg_tape *t, bool on)
{
    TG_REFUSE_NULL(t, "the tape", );
    t->training = on;
}

bool tg_tape_training(const tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", false);
    return t->training;
}

void tg_tape_set_anomaly(tg_tape *t, bool on)
{
    TG_REFUSE_NULL(t, "the tape", );
    t->anomaly = on;
}

const char *tg_tape_error(const tg_tape *t)
{
    if (!t) return "tg_tape_error: the tape is NULL";
    return t->has_error ? t->error : NULL;
}

int tg_tape_node_count(const tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", -1);
    return t->n_nodes;
}

void tg_tape_clear_error(tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", );
    t->has_error = false;
    t->error[0] = '\0';
}

tg_tensor *tg_fail(tg_tape *t, const char *fmt, ...)
{
    char msg[sizeof t->error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tg_error_set("%s", msg);
    if (t && !t->has_error) {
        snprintf(t->error, sizeof t->error, "%s", tg_error());  /* as tg_error_set wrote it */
        t->has_error = true;
    }
    return NULL;
}

tg_tensor *tg_fail_null(tg_tape *t, const char *op)
{
    if (!op) return tg_fail(t, "tg_fail_null: the op name is NULL");
    if (t && t->has_error) {
        tg_error_set("%s", t->error);  /* the NULL is that failure's result */
        return NULL;
    }
    return tg_fail(t, "%s: input is NULL", op);
}

/* ---- arena ---------------------------------------------------------------- */

/* cap usable bytes after room for the alignment. */
static chunk *chunk_new(size_t need)
{
    size_t cap = need > ARENA_MIN_CHUNK ? need : ARENA_MIN_CHUNK;
    if (cap > SIZE_MAX - sizeof(chunk) - ARENA_ALIGN) return NULL;
    chunk *c = tg_malloc(sizeof(chunk) + cap + ARENA_ALIGN);
    if (!c) return NULL;
    c->next = NULL;
    c->cap = cap;
    c->used = 0;
    uintptr_t p = (uintptr_t)c->mem;
    c->start = c->mem + ((ARENA_ALIGN - p % ARENA_ALIGN) % ARENA_ALIGN);
    return c;
}

/* bytes rounded up to whole arena units, at least one (bytes <= SIZE_MAX - ARENA_ALIGN) */
static size_t arena_units(size_t bytes)
{
    size_t need = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    return need ? need : ARENA_ALIGN;
}

static void *arena_take(tg_tape *t, size_t bytes)
{
    if (bytes > SIZE_MAX - ARENA_ALIGN) return NULL;
    size_t need = arena_units(bytes);
    while (t->cur && t->cur->cap - t->cur->used < need && t->cur->next && t->cur->next->cap >= need) {
        t->cur = t->cur->next;  /* chunks after cur are empty (rewound) */
    }
    if (!t->cur || t->cur->cap - t->cur->used < need) {
        /* Grow geometrically so the number of chunks stays small. */
        size_t want = need;
        if (t->cur && t->cur->cap <= SIZE_MAX / 2 && t->cur->cap * 2 > want) want = t->cur->cap * 2;
        chunk *c = chunk_new(want);
        if (!c) return NULL;
        if (!t->cur) {
            t->first = c;
        } else {
            c->next = t->cur->next;
            t->cur->next = c;
        }
        t->cur = c;
    }
    void *p = t->cur->start + t->cur->used;
    t->cur->used += need;
    return p;
}

void *tg_arena_alloc(tg_tape *t, size_t bytes, const char *op)
{
    if (!t) return tg_fail(NULL, "%s: the tape is NULL", op);
    void *p = arena_take(t, bytes);
    if (!p) tg_fail(t, "out of memory: %.1f MiB for %s", (double)bytes / (1 << 20), op);
    return p;
}

size_t tg_tape_arena_capacity(const tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", 0);
    size_t n = 0;
    for (chunk *c = t->first; c; c = c->next) n += c->cap;
    return n;
}

size_t tg_tape_arena_used(const tg_tape *t)
{
    TG_REFUSE_NULL(t, "the tape", 0);
    size_t n = 0;
    for (chunk *c = t->first; c; c = c->next) n += c->used;
    return n;
}

/* ---- temporaries ------------------------------------------------------------- */

tg_tensor *tg_new_header(tg_tape *t, const char *op)
{
    if (!t) return tg_fail(NULL, "%s: the tape is NULL", op);
    tg_tensor *x = tg_headers_take(&t->headers, sizeof *x);
    if (!x) return tg_fail(t, "out of memory: a tensor header for %s", op);
    *x = (tg_tensor){.magic = TG_TENSOR_LIVE, .tape = t->id, .gen = t->gen};
    return x;
}

tg_tensor *tg_new_dtype(tg_tape *t, const char *op, tg_dtype dt, int ndim, const int *shape)
{
    size_t size;
    if (!op) return tg_fail(t, "tg_new_named: the name is NULL");
    if (!t) return tg_fail(NULL, "%s: the tape is NULL", op);
    if (!tg_dtype_size(dt)) return tg_fail(t, "%s: %d is not a dtype", op, (int)dt);
    if (ndim > 0 && !shape) return tg_fail(t, "%s: the shape is NULL", op);
    if (!tg_shape_size(ndim, shape, &size))
        return tg_fail(t, "%s: invalid shape (%d dims)", op, ndim);
    tg_tensor *x = tg_new_header(t, op);
    if (!x) return NULL;
    tg_tensor_set_shape(x, ndim, shape, size);
    x->dtype = dt;
    char what[96];
    snprintf(what, sizeof what, "%s output", op);
    x->data = tg_arena_alloc(t, size * tg_dtype_size(dt), what);
    return x->data ? x : NULL;
}

tg_tensor *tg_new_op(tg_tape *t, const tg_op *op, tg_dtype dt, int ndim, const int *shape)
{
    if (!op) return tg_fail(t, "tg_new: the op is NULL");
    return tg_new_dtype(t, op->name, dt, ndim, shape);
}

tg_tensor *tg_new_like(tg_tape *t, const tg_op *op, const tg_tensor *x)
{
    if (!op) return tg_fail(t, "tg_new_like: the op is NULL");
    if (!x) return tg_fail_null(t, op->name);
    return tg_new_dtype(t, op->name, x->dtype, x->ndim, x->shape);
}

tg_tensor *tg_tensor_new_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape)
{
    return tg_new_dtype(t, "tg_tensor_new", dt, ndim, shape);
}

tg_tensor *tg_tensor_zeros_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape)
{
    tg_tensor *x = tg_new_dtype(t, "tg_tensor_zeros", dt, ndim, shape);
    if (x) memset(x->data, 0, x->size * tg_dtype_size(dt));
    return x;
}

tg_tensor *tg_tensor_from_dtype(tg_tape *t, tg_dtype dt, const void *data, int ndim, const int *shape)
{
    if (!data) return tg_fail_null(t, "tg_tensor_from");
    tg_tensor *x = tg_new_dtype(t, "tg_tensor_from", dt, ndim, shape);
    if (x) memcpy(x->data, data, x->size * tg_dtype_size(dt));
    return x;
}

/* `bytes` of the smallest spare piece that holds them (its rest stays spare),
 * or NULL. */
static void *spare_take(tg_tape *t, size_t bytes)
{
    if (bytes > SIZE_MAX - ARENA_ALIGN) return NULL;
    size_t need = arena_units(bytes);
    spare **best = NULL;
    for (spare **s = &t->spares; *s; s = &(*s)->next)
        if ((*s)->bytes >= need && (!best || (*s)->bytes < (*best)->bytes)) best = s;
    if (!best) return NULL;
    spare *s = *best;
    if (s->bytes == need) {
        *best = s->next;
    } else {
        spare *rest = (spare *)(void *)((unsigned char *)s + need);
        *rest = (spare){.next = s->next, .bytes = s->bytes - need};
        *best = rest;
    }
    return s;
}

/* [p, p + bytes) is dead until the reset: into the list in address order,
 * merged with the pieces it touches. Pieces of different chunks never touch
 * (a chunk's usable bytes end before the next allocation's header). */
static void spare_give(tg_tape *t, void *p, size_t bytes)
{
    unsigned char *a = p;
    size_t n = arena_units(bytes);
    spare **at = &t->spares, *prev = NULL;
    while (*at && (unsigned char *)*at < a) prev = *at, at = &(*at)->next;
    spare *next = *at;
    if (prev && (unsigned char *)prev + prev->bytes == a) {
        prev->bytes += n;
    } else {
        prev = (spare *)(void *)a;
        *prev = (spare){.next = next, .bytes = n};
        *at = prev;
    }
    if (next && (unsigned char *)prev + prev->bytes == (unsigned char *)next) {
        prev->bytes += next->bytes;
        prev->next = next->next;
    }
}

/* After n's backward: n->out's grad is dead (every reader of n->out, or of a
 * view of it, was recorded after n and has run). Heap tensors' grads are
 * left alone. */
static void grad_give(tg_tape *t, const node *n)
{
    tg_tensor *out = n->out;
    if (out->owns_data || !out->grad || out->retains_grad) return;
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] && n->in[k]->grad == out->grad) return;  /* an op that aliases its input */
    spare_give(t, out->grad, out->size * tg_dtype_size(out->dtype));
    out->grad = NULL;
}

void *tg_arena_scratch(tg_tape *t, size_t bytes, const char *op)
{
    if (!t) return tg_fail(NULL, "%s: the tape is NULL", op);
    void *p = spare_take(t, bytes);
    return p ? p : tg_arena_alloc(t, bytes, op);
}

void tg_arena_release(tg_tape *t, void *p, size_t bytes)
{
    if (t && p) spare_give(t, p, bytes);
}

void *tg_grad_as(tg_tape *t, tg_tensor *x, tg_dtype dt)
{
    if (!x) return tg_fail(t, "tg_grad: the tensor is NULL");
    if (x->dtype != dt)
        return tg_fail(t, "tg_grad: the tensor is %s, its grad is read as %s", tg_dtype_name(x->dtype), tg_dtype_name(dt));
    if (!tg_dtype_is_float(x->dtype)) return tg_fail(t, "tg_grad: a %s tensor has no grad", tg_dtype_name(x->dtype));
    if (x->grad) return x->grad;
    if (x->view_of) {  /* a view made before its base had a grad (tg_reshape) */
        unsigned char *g = tg_grad_as(t, x->view_of, dt);
        return x->grad = g ? (void *)(g + x->view_off * tg_dtype_size(x->dtype)) : NULL;
    }
    if (x->owns_data) {
        if (!tg_tensor_alloc_grad(x)) tg_fail(t, "out of memory: grad of a %zu-element tensor", x->size);
        return x->grad;
    }
    size_t bytes = x->size * tg_dtype_size(x->dtype);
    x->grad = tg_arena_scratch(t, bytes, "a grad");
    if (x->grad) memset(x->grad, 0, bytes);
    return x->grad;
}

void *tg_grad_fresh(tg_tape *t, tg_tensor *x, tg_dtype dt, bool *fresh)
{
    if (!fresh) return tg_fail(t, "tg_grad_fresh: fresh is NULL");
    *fresh = false;
    if (!x || x->grad || x->view_of || x->owns_data || x->dtype != dt || !tg_dtype_is_float(dt)) return tg_grad_as(t, x, dt);
    *fresh = true;
    return x->grad = tg_arena_scratch(t, x->size * tg_dtype_size(x->dtype), "a grad");
}

/* ---- misuse checks ------------------------------------------------------------------ */

/* What is wrong with x as `what` ("input 1", "loss") of op on t, or NULL. */
static const char *misuse(const tg_tape *t, const tg_tensor *x)
{
    if (x->magic != TG_TENSOR_LIVE && tg_headers_own(t->headers, x))
        return "is a tensor from before tg_tape_reset";  /* its page went back to the system */
    if (x->magic != TG_TENSOR_LIVE)
        return "is not a live tensor (freed, from before tg_tape_reset, or not made by tapegrad)";
    if (x->tape && x->tape != t->id) return "belongs to another tape (a graph lives on one tape)";
    if (x->tape && x->gen != t->gen) return "is a tensor from before tg_tape_reset";
    return NULL;
}


tg_tensor *tg_op_fail(tg_tape *t, const tg_op *op, const char *fmt, ...)
{
    char msg[TG_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!op) return tg_fail(t, "tg_op_fail: the op is NULL (message: %s)", msg);
    return tg_fail(t, "%s: %s", op->name, msg);
}

bool tg_inputs_check_dtype(tg_tape *t, const tg_op *rec, tg_dtype dt, tg_tensor *const *in, int n, int n_required)
{
    if (!rec) {
        tg_fail(t, "tg_inputs_check: the op is NULL");
        return false;
    }
    const char *op = rec->name;
    if (!t) {
        tg_fail(NULL, "%s: the tape is NULL", op);
        return false;
    }
    if (!in && n > 0) return tg_fail_null(t, op);
    for (int k = 0; k < n; k++) {
        const tg_tensor *x = in[k];
        if (!x) {
            if (k < n_required) return tg_fail_null(t, op);
            continue;
        }
        const char *why = misuse(t, x);
        if (why) return tg_fail(t, "%s: input %d %s", op, k, why);
        if (x->dtype != dt)
            return tg_fail(t, "%s: input %d is %s, but the op computes in %s here (%s; convert with tg_to)", op, k,
                           tg_dtype_name(x->dtype), tg_dtype_name(dt),
                           tg_dtype_is_float(x->dtype) || !tg_dtype_is_float(dt) ? "no implicit promotion"
                                                                                 : "it takes float tensors");
    }
    return true;
}

bool tg_index_check(tg_tape *t, const tg_op *rec, const tg_tensor *ix, const char *what)
{
    if (!rec) return tg_fail(t, "tg_index_check: the op is NULL"), false;
    const char *op = rec->name;
    if (!t) return tg_fail(NULL, "%s: the tape is NULL", op), false;
    if (!what) what = "the index";
    if (!ix) return (t->has_error ? tg_fail_null(t, op) : tg_fail(t, "%s: %s is NULL", op, what)), false;
    const char *why = misuse(t, ix);
    if (why) return tg_fail(t, "%s: %s %s", op, what, why), false;
    if (ix->dtype != TG_I64 && ix->dtype != TG_I32)
        return tg_fail(t, "%s: %s is %s, but indices are int64 or int32 (convert with tg_to)", op, what,
                       tg_dtype_name(ix->dtype)), false;
    return true;
}

bool tg_index_rows_check(tg_tape *t, const tg_op *rec, const tg_tensor *ix, const char *what, int n)
{
    if (!tg_index_check(t, rec, ix, what)) return false;
    if (ix->ndim != 1 || ix->shape[0] != n) {
        char sx[TG_SHAPE_STR];
        return tg_fail(t, "%s: %s is %s, but it is [B] = [%d] (one per row)", rec->name, what ? what : "the index",
                       tg_shape_str(ix, sx), n), false;
    }
    return true;
}

/* ---- recording ------------------------------------------------------------------ */

bool tg_needs_grad(const tg_tape *t, tg_tensor *const *in, int n)
{
    if (!t || !in || !t->recording) return false;
    for (int k = 0; k < n; k++)
        if (in[k] && in[k]->requires_grad) return true;
    return false;
}

/* Appends a node; in[] and ctx_size bytes of ctx are copied into the arena. */
static node *node_push(tg_tape *t, const char *op, tg_backward_fn backward, tg_tensor *out,
                       tg_tensor *const *in, int n, const void *ctx, size_t ctx_size)
{
    if (t->n_nodes == t->cap_nodes) {
        int cap = t->cap_nodes ? 2 * t->cap_nodes : 256;
        node *nodes = tg_realloc(t->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            tg_fail(t, "out of memory: %.1f MiB for the tape's nodes (%s)",
                    (double)cap * sizeof *nodes / (1 << 20), op);
            return NULL;
        }
        t->nodes = nodes;
        t->cap_nodes = cap;
    }
    /* one arena block: the input pointers, then the context */
    size_t in_bytes = ((size_t)n * sizeof *in + 15) / 16 * 16;
    unsigned char *rec = tg_arena_alloc(t, in_bytes + ctx_size, op);
    if (!rec) return NULL;
    memcpy(rec, in, (size_t)n * sizeof *in);
    if (ctx_size) memcpy(rec + in_bytes, ctx, ctx_size);
    node *nd = &t->nodes[t->n_nodes++];
    *nd = (node){.op = op, .backward = backward, .out = out, .in = (tg_tensor **)(void *)rec, .n_in = n,
                 .ctx = ctx_size ? rec + in_bytes : NULL};
    out->requires_grad = true;
    return nd;
}

bool tg_op_record(tg_tape *t, const tg_op *op, tg_tensor *out, tg_tensor *const *in, int n,
                  const void *ctx)
{
    if (!t || !op || !out) {
        tg_fail(t, "tg_op_record: the %s is NULL", !t ? "tape" : !op ? "op" : "output");
        return false;
    }
    if (!tg_needs_grad(t, in, n)) return true;
    return node_push(t, op->name, op->backward, out, in, n, ctx, op->ctx_size) != NULL;
}

static bool all_finite(tg_dtype dt, const void *x, size_t n)
{
    if (!tg_dtype_is_float(dt)) return true;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(tg_dtype_load(dt, x, i))) return false;
    return true;
}


tg_tensor *tg_op_done(tg_tape *t, const tg_op *rec, tg_tensor *out)
{
    if (!rec) return tg_fail(t, "tg_op_done: the op is NULL");
    const char *op = rec->name;
    if (!t) return tg_fail(NULL, "%s: the tape is NULL", op);
    if (!out) return tg_fail_null(t, op);
    if (t->anomaly && !all_finite(out->dtype, out->data, out->size)) {
        char s[TG_SHAPE_STR];
        return tg_fail(t, "anomaly: %s produced NaN/Inf in its output %s", op, tg_shape_str(out, s));
    }
    return out;
}

/* ---- backward --------------------------------------------------------------------- */

static int check_node_grads(tg_tape *t, const node *n)
{
    for (int k = 0; k < n->n_in; k++) {
        const tg_tensor *x = n->in[k];
        if (x && x->grad && !all_finite(x->dtype, x->grad, x->size)) {
            char s[TG_SHAPE_STR];
            tg_fail(t, "anomaly: backward of %s produced NaN/Inf in the grad of input %d %s", n->op,
                    k, tg_shape_str(x, s));
            return -1;
        }
    }
    return 0;
}

/* Why tg_backward must not run from out, or NULL. */
static const char *backward_refusal(const tg_tape *t, const tg_tensor *out, const void *seed)
{
    if (!out) return "tg_backward: output is NULL";
    if (!seed) return "tg_backward: seed is NULL";
    if (t->backward_done) return "tg_backward called twice on one tape: reset it first";
    return NULL;
}

int tg_backward_seed(tg_tape *t, tg_tensor *out, const void *seed)
{
    if (!t) return tg_error_set("tg_backward: the tape is NULL");
    if (t->has_error) return tg_error_set("%s", t->error);  /* the forward failed: its message stays */
    const char *why = backward_refusal(t, out, seed);
    if (why) {
        tg_fail(t, "%s", why);
        return -1;
    }
    if ((why = misuse(t, out))) {
        tg_fail(t, "tg_backward: the loss %s", why);
        return -1;
    }
    if (!out->requires_grad) {
        tg_fail(t, "tg_backward: loss does not depend on any tensor that requires grad (is recording off?)");
        return -1;
    }
    t->backward_done = true;
    void *g = tg_grad_as(t, out, out->dtype);
    if (!g) return -1;
    for (size_t i = 0; i < out->size; i++)
        tg_dtype_store(out->dtype, g, i, tg_dtype_load(out->dtype, g, i) + tg_dtype_load(out->dtype, seed, i));
    for (int i = t->n_nodes - 1; i >= 0; i--) {
        node *n = &t->nodes[i];
        if (!n->out->grad) continue;  /* nothing flows back through this node */
        n->backward(t, n->out, n->in, n->ctx);
        if (t->has_error) return -1;
        if (t->anomaly && check_node_grads(t, n)) return -1;
        grad_give(t, n);
    }
    return 0;
}

int tg_retain_grad(tg_tape *t, tg_tensor *x)
{
    if (!t) return tg_error_set("tg_retain_grad: the tape is NULL");
    if (!x) return tg_error_set("tg_retain_grad: the tensor is NULL");
    const char *why = misuse(t, x);
    char s[TG_SHAPE_STR];
    if (why) return tg_error_set("tg_retain_grad: the tensor %s", why);
    if (!x->requires_grad)
        return tg_error_set("tg_retain_grad: the tensor %s does not require grad (nothing would flow into it)",
                            tg_shape_str(x, s));
    x->retains_grad = true;
    if (x->view_of) x->view_of->retains_grad = true;  /* the view's grad is a slice of its base's */
    return 0;
}

int tg_backward(tg_tape *t, tg_tensor *loss)
{
    if (t && !t->has_error && loss && !misuse(t, loss) && loss->size != 1) {
        char s[TG_SHAPE_STR];
        tg_fail(t, "tg_backward: loss must have one element, got %s (use tg_backward_seed)",
                tg_shape_str(loss, s));
        return -1;
    }
    const union { float f32; double f64; } one = {.f64 = 1};
    const union { float f32; double f64; } one32 = {.f32 = 1};
    return tg_backward_seed(t, loss, loss && loss->dtype == TG_F64 ? (const void *)&one : (const void *)&one32);
}

void tg_tape_dump(const tg_tape *t, FILE *f)
{
    TG_REFUSE_NULL(t, "the tape", );
    TG_REFUSE_NULL(f, "the file", );
    fprintf(f, "tape: %d nodes, arena %zu / %zu bytes%s\n", t->n_nodes, tg_tape_arena_used(t),
            tg_tape_arena_capacity(t), t->has_error ? " (error set)" : "");
    for (int i = 0; i < t->n_nodes; i++) {
        const node *n = &t->nodes[i];
        char s[TG_SHAPE_STR];
        fprintf(f, "%4d %-22s %-18s <-", i, n->op, tg_shape_str(n->out, s));
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k]) fprintf(f, " %s", tg_shape_str(n->in[k], s));
        fputc('\n', f);
    }
    if (t->has_error) fprintf(f, "error: %s\n", t->error);
}
