/* tapegrad: fused scaled-dot-product attention.
 *
 * For each (b, h), with q [Lq, dk], k [Lk, dk], v [Lk, dv]:
 *   S = scale * q k^T (+ additive)      one GEMM with k transposed in place
 *   A = masked softmax(S)               rows in place, exact zeros where masked
 *   P = A * keep / (1 - p)              attention dropout (training, p > 0)
 *   O = P v                             one GEMM
 * Backward (hand-written, per (b, h)):
 *   dV += P^T dO     dP = dO V^T     dA = dP * keep / (1 - p)
 *   dS = A * (dA - rowsum(dA * A))   dQ += scale dS K   dK += scale dS^T Q
 * The node saves A [B, H, Lq, Lk] and the dropout keep mask (bytes); P is
 * rebuilt from them. Nothing is read from the caller's mask arrays after the
 * forward returns: masked weights are 0 in A, which is all backward needs.
 *
 * The optional *weights output is a plain arena tensor (requires_grad false,
 * valid until tg_tape_reset): gradients do NOT flow from it back to q and k;
 * it is the caller's to read or modify (a copy when backward keeps its own A).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/blas.h"
#include "core/ops.h"
#include "core/ops_internal.h"

typedef struct sdpa_dims {
    int B, H, Lq, Lk, dk, dv;
} sdpa_dims;

/* C [M,N] = alpha op(A) op(B) + beta C, beta 0 or 1; zero dims are handled
 * here because BLAS rejects zero leading dimensions. */
static void gemm0(bool ta, bool tb, int M, int N, int K, tg_real alpha, const tg_real *A,
                  const tg_real *B, tg_real beta, tg_real *C)
{
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (beta == 0) memset(C, 0, (size_t)M * N * sizeof *C);
        return;
    }
    tg_gemm(ta, tb, M, N, K, alpha, A, B, beta, C);
}

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
    if (!(o->dropout >= 0 && o->dropout < 1)) {
        tg_fail(t, "tg_sdpa: dropout %g is outside [0, 1): %s", o->dropout, what);
        return false;
    }
    if (o->dropout > 0 && tg_tape_training(t) && !o->rng) {  /* as tg_dropout: only while dropping */
        tg_fail(t, "tg_sdpa: dropout %g needs an rng while training (opts->rng is NULL): %s",
                o->dropout, what);
        return false;
    }
    if (!isfinite(o->scale)) {
        tg_fail(t, "tg_sdpa: scale %g is not finite: %s", o->scale, what);
        return false;
    }
    *d = (sdpa_dims){q->shape[0], q->shape[1], q->shape[2], k->shape[2], q->shape[3], v->shape[3]};
    return tg_mask_check(t, o->mask, d->B, d->Lq, d->Lk, "tg_sdpa", what);
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

/* q, k, v, dO as in the file comment; saved[0] = A, aux = keep mask or NULL,
 * f[0] = scale, f[1] = p. */
static void sdpa_backward(tg_tape *t, tg_node *n)
{
    tg_tensor *q = n->in[0], *k = n->in[1], *v = n->in[2], *A = n->saved[0];
    const uint8_t *keep = n->aux;
    sdpa_dims d = {q->shape[0], q->shape[1], q->shape[2], k->shape[2], q->shape[3], v->shape[3]};
    tg_real scale = (tg_real)n->f[0], inv = (tg_real)(1 / (1 - n->f[1]));
    tg_real *dq = q->requires_grad ? tg_grad(t, q) : NULL;
    tg_real *dk = k->requires_grad ? tg_grad(t, k) : NULL;
    tg_real *dv = v->requires_grad ? tg_grad(t, v) : NULL;
    if ((q->requires_grad && !dq) || (k->requires_grad && !dk) || (v->requires_grad && !dv)) return;
    size_t plane = (size_t)d.Lq * d.Lk, sq = (size_t)d.Lq * d.dk, sk = (size_t)d.Lk * d.dk;
    size_t so = (size_t)d.Lq * d.dv, sv = (size_t)d.Lk * d.dv;
    bool need_s = dq || dk;
    /* one scratch: P (with dropout) and dS, each [Lq, Lk] */
    tg_real *scr = tg_arena_alloc(t, 2 * plane * sizeof *scr, "tg_sdpa backward");
    if (!scr) return;
    tg_real *sP = scr, *sG = scr + plane;
    for (size_t bh = 0; bh < (size_t)d.B * d.H; bh++) {
        const tg_real *Ab = A->data + bh * plane, *dO = n->out->grad + bh * so, *P = Ab;
        const uint8_t *kb = keep ? keep + bh * plane : NULL;
        if (kb) {
            for (size_t e = 0; e < plane; e++) sP[e] = kb[e] ? Ab[e] * inv : 0;
            P = sP;
        }
        if (dv) gemm0(1, 0, d.Lk, d.dv, d.Lq, 1, P, dO, 1, dv + bh * sv);
        if (!need_s) continue;
        gemm0(0, 1, d.Lq, d.Lk, d.dv, 1, dO, v->data + bh * sv, 0, sG);
        if (kb)
            for (size_t e = 0; e < plane; e++) sG[e] = kb[e] ? sG[e] * inv : 0;
        softmax_grad_rows(Ab, sG, d.Lq, d.Lk);
        if (dq) gemm0(0, 0, d.Lq, d.dk, d.Lk, scale, sG, k->data + bh * sk, 1, dq + bh * sq);
        if (dk) gemm0(1, 0, d.Lk, d.dk, d.Lq, scale, sG, q->data + bh * sq, 1, dk + bh * sk);
    }
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

/* *weights <- a copy of A when the node keeps A for backward, else A itself. */
static bool give_weights(tg_tape *t, tg_tensor *A, bool saved, tg_tensor **weights)
{
    if (!weights) return true;
    if (saved) {
        tg_tensor *w = tg_new_like(t, "tg_sdpa weights", A);
        if (!w) return false;
        memcpy(w->data, A->data, A->size * sizeof *w->data);
        A = w;
    }
    *weights = A;
    return true;
}

tg_tensor *tg_sdpa(tg_tape *t, tg_tensor *q, tg_tensor *k, tg_tensor *v,
                   const tg_sdpa_opts *opts, tg_tensor **weights)
{
    static const tg_sdpa_opts defaults = {0};
    if (weights) *weights = NULL;
    if (!t) return NULL;
    if (!q || !k || !v) return tg_fail_null(t, "tg_sdpa");
    const tg_sdpa_opts *o = opts ? opts : &defaults;
    sdpa_dims d;
    if (!sdpa_check(t, q, k, v, o, &d)) return NULL;
    double scale = o->scale > 0 ? o->scale : d.dk > 0 ? 1 / sqrt((double)d.dk) : 1;
    bool drop = o->dropout > 0 && tg_tape_training(t);
    bool grad = tg_grad_needed(t, q, k, v, NULL), rules = has_rules(o->mask);
    const tg_real *add = o->mask ? o->mask->additive : NULL;
    size_t plane = (size_t)d.Lq * d.Lk, sq = (size_t)d.Lq * d.dk, sk = (size_t)d.Lk * d.dk;
    size_t so = (size_t)d.Lq * d.dv, sv = (size_t)d.Lk * d.dv, nbh = (size_t)d.B * d.H;

    tg_tensor *out = tg_new(t, "tg_sdpa", 4, (int[]){d.B, d.H, d.Lq, d.dv});
    if (!out) return NULL;
    /* A for every (b, h) when backward or the caller needs it, else one plane */
    tg_tensor *A = grad || weights ? tg_new(t, "tg_sdpa weights", 4, (int[]){d.B, d.H, d.Lq, d.Lk}) : NULL;
    if ((grad || weights) && !A) return NULL;
    uint8_t *keep = drop && grad ? tg_arena_alloc(t, nbh * plane, "tg_sdpa dropout mask") : NULL;
    if (drop && grad && !keep) return NULL;
    /* one scratch: [A plane][P plane][visibility bytes] */
    size_t n_real = (A ? 0 : plane) + (drop ? plane : 0);
    tg_real *scr = tg_arena_alloc(t, n_real * sizeof(tg_real) + (rules ? plane : 0), "tg_sdpa scratch");
    if (!scr) return NULL;
    tg_real *sA = scr, *sP = scr + (A ? 0 : plane);
    uint8_t *vis = rules ? (uint8_t *)(scr + n_real) : NULL;
    uint32_t thr = (uint32_t)(o->dropout * 4294967296.0);
    tg_real inv = (tg_real)(1 / (1 - o->dropout));

    for (int b = 0; b < d.B; b++) {
        if (rules && (b == 0 || rules_per_batch(o->mask))) tg_mask_fill(o->mask, b, d.Lq, d.Lk, vis);
        for (size_t bh = (size_t)b * d.H; bh < (size_t)(b + 1) * d.H; bh++) {
            tg_real *Ab = A ? A->data + bh * plane : sA;
            const tg_real *P = Ab;
            gemm0(0, 1, d.Lq, d.Lk, d.dk, (tg_real)scale, q->data + bh * sq, k->data + bh * sk, 0, Ab);
            tg_softmax_block(Ab, Ab, (size_t)d.Lq, d.Lk, 1, vis, add);
            if (drop) {
                dropout_plane(Ab, sP, keep ? keep + bh * plane : NULL, plane, thr, inv, o->rng);
                P = sP;
            }
            gemm0(0, 0, d.Lq, d.dv, d.Lk, 1, P, v->data + bh * sv, 0, out->data + bh * so);
        }
    }
    if (grad) {
        tg_node *n = tg_node_push(t, "tg_sdpa", sdpa_backward, out, q, k, v, NULL);
        if (!n) return NULL;
        n->saved[0] = A;
        n->aux = keep;
        n->f[0] = scale;
        n->f[1] = drop ? o->dropout : 0;
    }
    if (!give_weights(t, A, grad, weights)) return NULL;
    return tg_op_done(t, "tg_sdpa", out);
}
