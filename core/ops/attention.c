/* tapegrad: fused scaled-dot-product attention (tg_sdpa, tg_sdpa_heads).
 *
 * For each (b, h), with q [Lq, dk], k [Lk, dk], v [Lk, dv]:
 *   S = scale * q k^T (+ additive)      one GEMM with k transposed in place
 *   A = masked softmax(S)               rows in place, exact zeros where masked
 *   P = A * keep / (1 - p)              attention dropout (training, p > 0)
 *   O = P v                             one GEMM
 * Backward (hand-written, per (b, h)):
 *   dV += P^T dO     dP = dO V^T     dA = dP * keep / (1 - p)
 *   dS = A * (dA - rowsum(dA * A))   dQ += scale dS K   dK += scale dS^T Q
 * The node saves A [B, H, Lq, Lk], the dropout keep mask (bytes) and the plan
 * (dims and strides, a few words); P is rebuilt from A and the mask, q, k, v
 * are read from the node's inputs. Nothing is read from the caller's mask
 * arrays after the forward returns: masked weights are 0 in A, which is all
 * backward needs.
 *
 * One core serves both ops: each of q, k, v and out is a layout, the (b, h)
 * plane [L, d] starting at off + b*sb + h*sh with rows ld apart, and every
 * GEMM takes those leading dimensions.
 *   tg_sdpa        [B, H, L, d] contiguous:   sb = H*L*d, sh = L*d, ld = d
 *   tg_sdpa_heads  [B, L, C] packed columns:  sb = L*C,   sh = d,   ld = C,
 *                                             off = col (q_col, k_col, v_col)
 *       row i of xkv:  | ... | k h0 | k h1 | ... | v h0 | v h1 | ... |
 *                            ^k_col  ^k_col+dk      ^v_col  ^v_col+dv
 * The grads of the inputs use the same layouts, so backward accumulates
 * (+=, beta 1) straight into the column blocks of dxq and dxkv (one buffer
 * when xq == xkv).
 *
 * The optional *weights output is a plain arena tensor (requires_grad false,
 * valid until tg_tape_reset): gradients do NOT flow from it back to q and k;
 * it is the caller's to read or modify (a copy when backward keeps its own A).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "ops.h"
#include "../kernels/blas.h"
#include "../kernels/threads.h"

typedef struct sdpa_dims {
    int B, H, Lq, Lk, dk, dv;
} sdpa_dims;

/* The [L, d] plane of (b, h) in its tensor: element (i, c) at
 * off + b*sb + h*sh + i*ld + c; `in` is the node input that holds it. */
typedef struct sdpa_lay {
    size_t off, sb, sh;
    int ld, in;
} sdpa_lay;

/* Everything the forward planes and the backward need besides the tensors. */
typedef struct sdpa_plan {
    sdpa_dims d;
    sdpa_lay q, k, v, o;
    double scale, p;          /* p: the dropout applied (0 when none) */
    const uint8_t *keep;      /* dropout keep mask [B, H, Lq, Lk], or NULL */
} sdpa_plan;

static inline size_t lay_at(const sdpa_lay *l, int b, int h)
{
    return l->off + (size_t)b * l->sb + (size_t)h * l->sh;
}

/* C [M,N] = alpha op(A) op(B) + beta C with leading dimensions, beta 0 or 1;
 * zero dims are handled here because BLAS rejects zero leading dimensions.
 * The arguments of blas.h's tg_gemm_ld. */
static void gemm_ld(bool ta, bool tb, int M, int N, int K, tg_real alpha, const tg_real *A, int lda,
                    const tg_real *B, int ldb, tg_real beta, tg_real *C, int ldc)
{
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (beta == 0)
            for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof *C);
        return;
    }
    tg_gemm_ld(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- forward -------------------------------------------------------------------------- */

/* Validates the options shared by both ops (what: the shapes for messages). */
static bool opts_check(tg_tape *t, const char *op, const tg_sdpa_opts *o, const char *what)
{
    if (!(o->dropout >= 0 && o->dropout < 1)) {
        tg_fail(t, "%s: dropout %g is outside [0, 1): %s", op, o->dropout, what);
        return false;
    }
    if (o->dropout > 0 && tg_tape_training(t) && !o->rng) {  /* as tg_dropout: only while dropping */
        tg_fail(t, "%s: dropout %g needs an rng while training (opts->rng is NULL): %s", op, o->dropout,
                what);
        return false;
    }
    if (!isfinite(o->scale)) {
        tg_fail(t, "%s: scale %g is not finite: %s", op, o->scale, what);
        return false;
    }
    return true;
}

/* P = A * keep / (1 - p) over n entries, keep drawn from rng (dropped when
 * u32 < thr) and stored in kb when kb != NULL. Every entry draws, masked or
 * not, so the stream does not depend on the mask or on recording. */
static void dropout_plane(const tg_real *A, tg_real *P, uint8_t *kb, size_t n, uint32_t thr,
                          tg_real inv, tg_rng *rng)
{
    for (size_t e = 0; e < n; e++) {
        uint8_t keep = tg_rng_u32(rng) >= thr;
        if (kb) kb[e] = keep;
        P[e] = keep ? A[e] * inv : 0;
    }
}

/* One forward call: the plan, the tensors' data and where A goes. */
typedef struct sdpa_fwd {
    const sdpa_plan *p;
    const tg_real *q, *k, *v, *add;   /* add: additive mask [Lq, Lk] or NULL */
    tg_real *out, *A;                 /* A [B, H, Lq, Lk], or NULL: a scratch plane */
    uint8_t *keep;                    /* keep mask to save, or NULL */
    tg_rng *rng;                      /* non-NULL: dropout on */
    const tg_mask *mask;              /* with rules to fill per batch, or NULL */
    uint32_t thr;
    tg_real inv;
    int pieces;                       /* batches cut into this many pieces, one per thread */
    unsigned char *scr;               /* pieces x scr_bytes of scratch */
    size_t scr_bytes, n_real;
} sdpa_fwd;

/* The (b, h) plane: S, A (into A or sA), P (into sP with dropout), O.
 * vis: batch b's visibility [Lq, Lk] or NULL. */
static void fwd_plane(const sdpa_fwd *c, int b, int h, const uint8_t *vis, tg_real *sA, tg_real *sP)
{
    const sdpa_plan *p = c->p;
    const sdpa_dims *d = &p->d;
    size_t plane = (size_t)d->Lq * d->Lk, bh = (size_t)b * d->H + h;
    tg_real *Ab = c->A ? c->A + bh * plane : sA;
    const tg_real *P = Ab;
    gemm_ld(0, 1, d->Lq, d->Lk, d->dk, (tg_real)p->scale, c->q + lay_at(&p->q, b, h), p->q.ld,
            c->k + lay_at(&p->k, b, h), p->k.ld, 0, Ab, d->Lk);
    tg_softmax_block(Ab, Ab, (size_t)d->Lq, d->Lk, 1, vis, c->add);
    if (c->rng) {
        dropout_plane(Ab, sP, c->keep ? c->keep + bh * plane : NULL, plane, c->thr, c->inv, c->rng);
        P = sP;
    }
    gemm_ld(0, 0, d->Lq, d->dv, d->Lk, 1, P, d->Lk, c->v + lay_at(&p->v, b, h), p->v.ld, 0,
            c->out + lay_at(&p->o, b, h), p->o.ld);
}

/* True when a rule other than additive is set (additive alone needs no
 * visibility array: -inf entries vanish in the exp). */
static bool has_rules(const tg_mask *m)
{
    return m && (m->causal || m->key_lens || m->key_keep || m->window > 0 || m->keep);
}

static bool rules_per_batch(const tg_mask *m)
{
    return m->key_lens || m->key_keep || (m->keep && m->keep_batched);
}

/* Pieces of the batch loop: one per thread when the (b, h) planes are worth
 * waking the pool for (core/kernels/threads.h), else 1. Batches write disjoint rows
 * of every output and grad, so the result does not depend on the cut. */
static int pieces_for(const sdpa_dims *d)
{
    double work = (double)d->B * d->H * d->Lq * d->Lk * (d->dk + d->dv);
    int T = tg_threads_get();
    return work < 65536 || d->B < 2 ? 1 : T < d->B ? T : d->B;
}

/* Batches [B*i/pieces, B*(i+1)/pieces) with scratch i. */
static void fwd_piece(void *ctx, int i, int end)
{
    const sdpa_fwd *c = ctx;
    const sdpa_dims *d = &c->p->d;
    size_t plane = (size_t)d->Lq * d->Lk;
    for (; i < end; i++) {
        tg_real *sA = (tg_real *)(void *)(c->scr + (size_t)i * c->scr_bytes);
        tg_real *sP = sA + (c->A ? 0 : plane);
        uint8_t *vis = c->mask ? (uint8_t *)(sA + c->n_real) : NULL;
        int b0 = (int)((int64_t)d->B * i / c->pieces), b1 = (int)((int64_t)d->B * (i + 1) / c->pieces);
        for (int b = b0; b < b1; b++) {
            if (vis && (b == b0 || rules_per_batch(c->mask))) tg_mask_fill(c->mask, b, d->Lq, d->Lk, vis);
            for (int h = 0; h < d->H; h++) fwd_plane(c, b, h, vis, sA, sP);
        }
    }
}

/* *weights <- a copy of A when the node keeps A for backward, else A itself. */
static bool give_weights(tg_tape *t, const char *op, tg_tensor *A, bool saved, tg_tensor **weights)
{
    if (!weights) return true;
    if (saved) {
        tg_tensor *w = tg_new_like(t, op, A);
        if (!w) return false;
        memcpy(w->data, A->data, A->size * sizeof *w->data);
        A = w;
    }
    *weights = A;
    return true;
}

static void sdpa_backward(tg_tape *t, tg_node *n);

/* The shared forward: runs plan p (validated, layouts set) over the node
 * inputs in[3] (NULL where unused) into out, records the node, hands out the
 * weights. op names the op in messages. */
static tg_tensor *sdpa_run(tg_tape *t, const char *op, sdpa_plan *p, tg_tensor *const in[3],
                           tg_tensor *out, const tg_sdpa_opts *o, tg_tensor **weights)
{
    const sdpa_dims d = p->d;
    char what[64];
    bool drop = o->dropout > 0 && tg_tape_training(t);
    bool grad = tg_grad_needed(t, in[0], in[1], in[2], NULL), rules = has_rules(o->mask);
    size_t plane = (size_t)d.Lq * d.Lk, nbh = (size_t)d.B * d.H;
    /* A for every (b, h) when backward or the caller needs it, else one plane */
    snprintf(what, sizeof what, "%s weights", op);
    tg_tensor *A = grad || weights ? tg_new(t, what, 4, (int[]){d.B, d.H, d.Lq, d.Lk}) : NULL;
    if ((grad || weights) && !A) return NULL;
    snprintf(what, sizeof what, "%s dropout mask", op);
    uint8_t *keep = drop && grad ? tg_arena_alloc(t, nbh * plane, what) : NULL;
    if (drop && grad && !keep) return NULL;
    sdpa_fwd c = {.p = p, .q = in[p->q.in]->data, .k = in[p->k.in]->data, .v = in[p->v.in]->data,
                  .add = o->mask ? o->mask->additive : NULL, .out = out->data, .A = A ? A->data : NULL,
                  .keep = keep, .rng = drop ? o->rng : NULL, .mask = rules ? o->mask : NULL,
                  .thr = (uint32_t)(o->dropout * 4294967296.0), .inv = (tg_real)(1 / (1 - o->dropout))};
    /* batches are independent, except for the dropout stream: one piece then */
    c.pieces = drop ? 1 : pieces_for(&d);
    /* scratch per piece: [A plane][P plane][visibility bytes] */
    size_t n_real = (A ? 0 : plane) + (drop ? plane : 0);
    c.scr_bytes = (n_real * sizeof(tg_real) + (rules ? plane : 0) + 63) / 64 * 64;
    snprintf(what, sizeof what, "%s scratch", op);
    c.scr = tg_arena_alloc(t, (size_t)c.pieces * c.scr_bytes + 1, what);
    if (!c.scr) return NULL;
    c.n_real = n_real;
    tg_parallel_for(c.pieces, fwd_piece, &c);
    if (grad) {
        p->p = drop ? o->dropout : 0;
        p->keep = keep;
        snprintf(what, sizeof what, "%s plan", op);
        sdpa_plan *saved = tg_arena_alloc(t, sizeof *saved, what);
        if (!saved) return NULL;
        *saved = *p;
        tg_node *n = tg_node_push(t, op, sdpa_backward, out, in[0], in[1], in[2], NULL);
        if (!n) return NULL;
        n->saved[0] = A;
        n->aux = saved;
    }
    snprintf(what, sizeof what, "%s weights", op);
    if (!give_weights(t, what, A, grad, weights)) return NULL;
    return tg_op_done(t, op, out);
}

/* ---- backward ------------------------------------------------------------------------- */

/* sum(a * b) with 8 independent lanes (no loop-carried dependence). */
static inline tg_real row_dot(const tg_real *a, const tg_real *b, int n)
{
    tg_real s[8] = {0};
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) s[k] += a[j + k] * b[j + k];
    for (; j < n; j++) s[0] += a[j] * b[j];
    for (int k = 1; k < 8; k++) s[0] += s[k];
    return s[0];
}

/* In place over rows of n: g = a * (g - sum(g * a)), the softmax backward. */
static void softmax_grad_rows(const tg_real *a, tg_real *g, int rows, int n)
{
    for (int i = 0; i < rows; i++) {
        const tg_real *ar = a + (size_t)i * n;
        tg_real *gr = g + (size_t)i * n, dot = row_dot(gr, ar, n);
        for (int j = 0; j < n; j++) gr[j] = ar[j] * (gr[j] - dot);
    }
}

/* One backward call: data of q, k, v, dO and A; grads to accumulate into
 * (NULL: not wanted), all addressed through the plan's layouts. */
typedef struct sdpa_bwd {
    const sdpa_plan *p;
    const tg_real *q, *k, *v, *dO, *A;
    tg_real *dq, *dk, *dv;
    int pieces;                       /* as sdpa_fwd */
    tg_real *scr;                     /* pieces x 2 planes */
} sdpa_bwd;

/* The (b, h) plane; sP and sG are [Lq, Lk] scratch planes. */
static void bwd_plane(const sdpa_bwd *c, int b, int h, tg_real *sP, tg_real *sG)
{
    const sdpa_plan *p = c->p;
    const sdpa_dims *d = &p->d;
    size_t plane = (size_t)d->Lq * d->Lk, bh = (size_t)b * d->H + h;
    size_t oq = lay_at(&p->q, b, h), ok = lay_at(&p->k, b, h), ov = lay_at(&p->v, b, h);
    const tg_real *Ab = c->A + bh * plane, *dO = c->dO + lay_at(&p->o, b, h), *P = Ab;
    const uint8_t *kb = p->keep ? p->keep + bh * plane : NULL;
    tg_real inv = (tg_real)(1 / (1 - p->p)), scale = (tg_real)p->scale;
    if (kb) {
        for (size_t e = 0; e < plane; e++) sP[e] = kb[e] ? Ab[e] * inv : 0;
        P = sP;
    }
    if (c->dv) gemm_ld(1, 0, d->Lk, d->dv, d->Lq, 1, P, d->Lk, dO, p->o.ld, 1, c->dv + ov, p->v.ld);
    if (!c->dq && !c->dk) return;
    gemm_ld(0, 1, d->Lq, d->Lk, d->dv, 1, dO, p->o.ld, c->v + ov, p->v.ld, 0, sG, d->Lk);
    if (kb)
        for (size_t e = 0; e < plane; e++) sG[e] = kb[e] ? sG[e] * inv : 0;
    softmax_grad_rows(Ab, sG, d->Lq, d->Lk);
    if (c->dq) gemm_ld(0, 0, d->Lq, d->dk, d->Lk, scale, sG, d->Lk, c->k + ok, p->k.ld, 1, c->dq + oq, p->q.ld);
    if (c->dk) gemm_ld(1, 0, d->Lk, d->dk, d->Lq, scale, sG, d->Lk, c->q + oq, p->q.ld, 1, c->dk + ok, p->k.ld);
}

/* Batches [B*i/pieces, B*(i+1)/pieces) with scratch i (as fwd_piece). */
static void bwd_piece(void *ctx, int i, int end)
{
    const sdpa_bwd *c = ctx;
    const sdpa_dims *d = &c->p->d;
    size_t plane = (size_t)d->Lq * d->Lk;
    for (; i < end; i++) {
        tg_real *sP = c->scr + (size_t)i * 2 * plane;
        int b0 = (int)((int64_t)d->B * i / c->pieces), b1 = (int)((int64_t)d->B * (i + 1) / c->pieces);
        for (int b = b0; b < b1; b++)
            for (int h = 0; h < d->H; h++) bwd_plane(c, b, h, sP, sP + plane);
    }
}

/* n->in holds q, k, v (tg_sdpa) or xq, xkv (tg_sdpa_heads); aux = the plan,
 * saved[0] = A. Grads of inputs without requires_grad are left alone. */
static void sdpa_backward(tg_tape *t, tg_node *n)
{
    const sdpa_plan *p = n->aux;
    tg_tensor *q = n->in[p->q.in], *k = n->in[p->k.in], *v = n->in[p->v.in];
    sdpa_bwd c = {.p = p, .q = q->data, .k = k->data, .v = v->data, .dO = n->out->grad,
                  .A = n->saved[0]->data};
    c.dq = q->requires_grad ? tg_grad(t, q) : NULL;
    c.dk = k->requires_grad ? tg_grad(t, k) : NULL;
    c.dv = v->requires_grad ? tg_grad(t, v) : NULL;
    if ((q->requires_grad && !c.dq) || (k->requires_grad && !c.dk) || (v->requires_grad && !c.dv)) return;
    /* scratch per piece: P (with dropout) and dS, each [Lq, Lk] */
    c.pieces = pieces_for(&p->d);
    size_t plane = (size_t)p->d.Lq * p->d.Lk;
    c.scr = tg_arena_alloc(t, (size_t)c.pieces * 2 * plane * sizeof *c.scr + 1, "tg_sdpa backward");
    if (!c.scr) return;
    tg_parallel_for(c.pieces, bwd_piece, &c);
}

/* ---- tg_sdpa: q, k, v [B, H, L, d] ------------------------------------------------------ */

static bool sdpa_check(tg_tape *t, const tg_tensor *q, const tg_tensor *k, const tg_tensor *v,
                       const tg_sdpa_opts *o, sdpa_dims *d)
{
    char sq[TG_SHAPE_STR], sk[TG_SHAPE_STR], sv[TG_SHAPE_STR], what[3 * TG_SHAPE_STR + 16];
    snprintf(what, sizeof what, "q %s k %s v %s", tg_shape_str(q, sq), tg_shape_str(k, sk),
             tg_shape_str(v, sv));
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4) {
        tg_fail(t, "tg_sdpa: q, k and v must be 4-D [B,H,L,d]: %s", what);
        return false;
    }
    if (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0] || k->shape[1] != q->shape[1] ||
        v->shape[1] != q->shape[1]) {
        tg_fail(t, "tg_sdpa: batch or head dims differ: %s", what);
        return false;
    }
    if (k->shape[3] != q->shape[3]) {
        tg_fail(t, "tg_sdpa: q and k head sizes (dk) differ: %s", what);
        return false;
    }
    if (v->shape[2] != k->shape[2]) {
        tg_fail(t, "tg_sdpa: k and v lengths (Lk) differ: %s", what);
        return false;
    }
    if (!opts_check(t, "tg_sdpa", o, what)) return false;
    *d = (sdpa_dims){q->shape[0], q->shape[1], q->shape[2], k->shape[2], q->shape[3], v->shape[3]};
    return tg_mask_check(t, o->mask, d->B, d->Lq, d->Lk, "tg_sdpa", what);
}

/* [B, H, L, w] contiguous, held by node input `in`. */
static sdpa_lay lay_contig(const sdpa_dims *d, int L, int w, int in)
{
    return (sdpa_lay){.off = 0, .sb = (size_t)d->H * L * w, .sh = (size_t)L * w, .ld = w, .in = in};
}

tg_tensor *tg_sdpa(tg_tape *t, tg_tensor *q, tg_tensor *k, tg_tensor *v,
                   const tg_sdpa_opts *opts, tg_tensor **weights)
{
    static const tg_sdpa_opts defaults = {0};
    if (weights) *weights = NULL;
    if (!t) return NULL;
    if (!q || !k || !v) return tg_fail_null(t, "tg_sdpa");
    const tg_sdpa_opts *o = opts ? opts : &defaults;
    sdpa_plan p = {0};
    if (!sdpa_check(t, q, k, v, o, &p.d)) return NULL;
    const sdpa_dims *d = &p.d;
    p.scale = o->scale > 0 ? o->scale : d->dk > 0 ? 1 / sqrt((double)d->dk) : 1;
    p.q = lay_contig(d, d->Lq, d->dk, 0);
    p.k = lay_contig(d, d->Lk, d->dk, 1);
    p.v = lay_contig(d, d->Lk, d->dv, 2);
    p.o = lay_contig(d, d->Lq, d->dv, -1);
    tg_tensor *out = tg_new(t, "tg_sdpa", 4, (int[]){d->B, d->H, d->Lq, d->dv});
    if (!out) return NULL;
    return sdpa_run(t, "tg_sdpa", &p, (tg_tensor *const[3]){q, k, v}, out, o, weights);
}

/* ---- tg_sdpa_heads: heads in the columns of xq [B, Lq, Cq] and xkv [B, Lk, Ckv] ---------- */

/* false with "tg_sdpa_heads: <why>: <what>" when cols [col, col + H*w) do
 * not fit in the last dim C of x. */
static bool cols_check(tg_tape *t, const char *name, int col, int H, int w, int C, const char *what)
{
    long long end = (long long)col + (long long)H * w;
    if (col >= 0 && end <= C) return true;
    tg_fail(t, "tg_sdpa_heads: %s columns [%d, %lld) are outside [0, %d): %s", name, col, end, C, what);
    return false;
}

static bool heads_check(tg_tape *t, const tg_tensor *xq, const tg_tensor *xkv, const tg_sdpa_layout *l,
                        const tg_sdpa_opts *o, sdpa_dims *d)
{
    char sq[TG_SHAPE_STR], sk[TG_SHAPE_STR], what[2 * TG_SHAPE_STR + 128];
    snprintf(what, sizeof what, "xq %s xkv %s (n_heads %d, dk %d, dv %d, q_col %d, k_col %d, v_col %d)",
             tg_shape_str(xq, sq), tg_shape_str(xkv, sk), l->n_heads, l->dk, l->dv, l->q_col, l->k_col,
             l->v_col);
    if (xq->ndim != 3 || xkv->ndim != 3) {
        tg_fail(t, "tg_sdpa_heads: xq and xkv must be 3-D [B,L,C]: %s", what);
        return false;
    }
    if (xkv->shape[0] != xq->shape[0]) {
        tg_fail(t, "tg_sdpa_heads: batch dims differ: %s", what);
        return false;
    }
    if (l->n_heads < 1 || l->dk < 1 || l->dv < 1) {
        tg_fail(t, "tg_sdpa_heads: n_heads, dk and dv must be >= 1: %s", what);
        return false;
    }
    if ((long long)l->n_heads * l->dv > INT_MAX) {
        tg_fail(t, "tg_sdpa_heads: n_heads*dv overflows an int: %s", what);
        return false;
    }
    if (!cols_check(t, "q", l->q_col, l->n_heads, l->dk, xq->shape[2], what) ||
        !cols_check(t, "k", l->k_col, l->n_heads, l->dk, xkv->shape[2], what) ||
        !cols_check(t, "v", l->v_col, l->n_heads, l->dv, xkv->shape[2], what))
        return false;
    if (!opts_check(t, "tg_sdpa_heads", o, what)) return false;
    *d = (sdpa_dims){xq->shape[0], l->n_heads, xq->shape[1], xkv->shape[1], l->dk, l->dv};
    return tg_mask_check(t, o->mask, d->B, d->Lq, d->Lk, "tg_sdpa_heads", what);
}

/* Head blocks of width w from column col of [B, L, C], held by node input `in`. */
static sdpa_lay lay_packed(int L, int C, int col, int w, int in)
{
    return (sdpa_lay){.off = (size_t)col, .sb = (size_t)L * C, .sh = (size_t)w, .ld = C, .in = in};
}

tg_tensor *tg_sdpa_heads(tg_tape *t, tg_tensor *xq, tg_tensor *xkv, const tg_sdpa_layout *lay,
                         const tg_sdpa_opts *opts, tg_tensor **weights)
{
    static const tg_sdpa_opts defaults = {0};
    if (weights) *weights = NULL;
    if (!t) return NULL;
    if (!xq || !xkv || !lay) return tg_fail_null(t, "tg_sdpa_heads");
    const tg_sdpa_opts *o = opts ? opts : &defaults;
    sdpa_plan p = {0};
    if (!heads_check(t, xq, xkv, lay, o, &p.d)) return NULL;
    const sdpa_dims *d = &p.d;
    int Cq = xq->shape[2], Ckv = xkv->shape[2], E = d->H * d->dv;
    p.scale = o->scale > 0 ? o->scale : 1 / sqrt((double)d->dk);
    p.q = lay_packed(d->Lq, Cq, lay->q_col, d->dk, 0);
    p.k = lay_packed(d->Lk, Ckv, lay->k_col, d->dk, 1);
    p.v = lay_packed(d->Lk, Ckv, lay->v_col, d->dv, 1);
    p.o = lay_packed(d->Lq, E, 0, d->dv, -1);
    tg_tensor *out = tg_new(t, "tg_sdpa_heads", 3, (int[]){d->B, d->Lq, E});
    if (!out) return NULL;
    return sdpa_run(t, "tg_sdpa_heads", &p, (tg_tensor *const[3]){xq, xkv, NULL}, out, o, weights);
}
