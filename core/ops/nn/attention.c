/* tapegrad: scaled-dot-product attention, one core for every caller:
 * tg_sdpa, tg_sdpa_heads and tg_sdpa_decode (core/ops/nn/decode.h) only lay
 * out their tensors and checks; sdpa_run and its blocks do scores, the
 * additive terms (tg_attn_bias_rows: mask, bias, ALiBi), the mask's rules,
 * softmax, the weights, dropout and the product, and backward.
 *
 * For each (b, h), with q [Lq, dk], k [Lk, dk], v [Lk, dv]:
 *   S = scale * q k^T (+ additive)      one GEMM with k transposed in place
 *   A = masked softmax(S)               rows in place, exact zeros where masked
 *   P = A * keep / (1 - p)              attention dropout (training, p > 0)
 *   O = P v                             one GEMM
 * Backward (hand-written, per (b, h)):
 *   dV += P^T dO     dP = dO V^T     dA = dP * keep / (1 - p)
 *   dS = A * (dA - rowsum(dA * A))   dQ += scale dS K   dK += scale dS^T Q
 *
 * Memory O(L), not O(L^2): both passes walk each (b, h) plane in blocks of
 * query rows (plan.rows of them, a block of scores about 64K entries), so the
 * scratch is a few [rows, Lk] blocks per thread, handed back to the arena when
 * the pass ends (tg_arena_release). The forward keeps only each
 * row's max and 1 / sum of exps ([B, H, Lq, 2]); backward recomputes S for a
 * block with the same GEMM and rebuilds A from those stats (the same bits as
 * the forward's A), as FlashAttention does. Dropout keeps no mask either:
 * the plan holds the rng as the forward found it, and backward, walking the
 * blocks in the forward's (b, h, i) order, draws the same numbers again.
 * Under a causal, key_lens or window mask a block stops at the last key its
 * last row can see (tg_mask_keys_end), so causal attention costs half.
 *
 * Materialised mode: when the weights of the whole op are small (rule in
 * tg_sdpa_materialises(), measured in docs/PERF.md) the node also keeps A
 * [B, H, Lq, Lk] and backward copies a block's rows from it instead of the
 * QK^T GEMM and exps. Both modes give the same bits (tests/test_softmax.c).
 * Nothing is read from the caller's mask arrays after the forward returns:
 * the node keeps arena copies.
 *
 * Each of q, k, v and out is a layout, the (b, h) plane [L, d] starting at
 * off + b*sb + h*sh with rows ld apart, and every GEMM takes those leading
 * dimensions.
 *   tg_sdpa        [B, H, L, d] contiguous:   sb = H*L*d, sh = L*d, ld = d
 *   tg_sdpa_heads  [B, L, C] packed columns:  sb = L*C,   sh = d,   ld = C,
 *                                             off = col (q_col, k_col, v_col)
 *   tg_sdpa_decode the cache [B, cap, Hkv*(dk + dv)]: keys transposed
 *                  (trans, ld = cap), values ld = Hkv*dv; one query row
 *                  per batch at position pos[b], a key_lens mask pos + 1
 *       row i of xkv:  | ... | k h0 | k h1 | ... | v h0 | v h1 | ... |
 *                            ^k_col  ^k_col+dk      ^v_col  ^v_col+dv
 * The grads of the inputs use the same layouts, so backward accumulates
 * (+=, beta 1) straight into the column blocks of dxq and dxkv (one buffer
 * when xq == xkv).
 *
 * The optional *weights output is a plain arena tensor (requires_grad false,
 * valid until tg_tape_reset): gradients do NOT flow from it back to q and k;
 * it is the caller's to read or modify (backward never reads it).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"
#include "../../kernels/blas.h"
#include "../../kernels/gemm_half.h"
#include "../../kernels/threads.h"

typedef struct sdpa_dims {
    int B, H, Lq, Lk, dk, dv;
} sdpa_dims;

/* The [L, d] plane of (b, h) in its tensor: element (i, c) at
 * off + b*sb + (h / group)*sh + i*ld + c (trans: at ... + c*ld + i, the
 * cache's keys); `in` is the node input that holds it. group > 1:
 * grouped-query attention's keys and values, one plane shared by `group`
 * query heads. */
typedef struct sdpa_lay {
    size_t off, sb, sh;
    int ld, in, group;
    bool trans;
} sdpa_lay;

/* Everything both passes need besides the tensors. */
typedef struct sdpa_plan {
    sdpa_dims d;
    sdpa_lay q, k, v, o;
    double scale, p;          /* p: the dropout applied (0 when none) */
    int rows;                 /* query rows per block */
    bool rules;               /* a rule that needs a visibility array (not key_lens alone) */
    tg_rng rng;               /* with p > 0: the dropout stream at the forward's start */
    tg_attn_bias ab;          /* the mask (backward: arrays copied into the arena) and the additive
                                 terms (bias: the data of node input bias_in) */
    int bias_in;              /* -1: no bias tensor */
    const int32_t *qpos;      /* [B]: batch b's query row i is at position qpos[b] + i (NULL: i);
                                 a decode's, never recorded */
    double pairs;             /* query-key pairs per head for the thread rule (0: B*Lq*Lk) */
    tg_dtype half;            /* autocast's operand type for both passes' GEMMs (TG_F32: none) */
} sdpa_plan;

static inline size_t lay_at(const sdpa_lay *l, int b, int h)
{
    return l->off + (size_t)b * l->sb + (size_t)(h / l->group) * l->sh;
}

/* C [M,N] = alpha op(A) op(B) + beta C with leading dimensions, beta 0 or 1;
 * zero dims are handled here because BLAS rejects zero leading dimensions.
 * The arguments of blas.h's tg_gemm_ld, after the plan's autocast type: with
 * a half type the operands are rounded to it (core/kernels/gemm_half.h);
 * when that scratch cannot be allocated the product runs in float, more
 * exactly than asked. */
static void gemm_ld(tg_dtype half, bool ta, bool tb, int M, int N, int K, tg_real alpha, const tg_real *A, int lda,
                    const tg_real *B, int ldb, tg_real beta, tg_real *C, int ldc)
{
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (beta == 0)
            for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof *C);
        return;
    }
#ifndef TAPEGRAD_DOUBLE
    if (half != TG_F32 && tg_gemm_rounded(half, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
#else
    (void)half;
#endif
    tg_gemm_ld(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- blocks --------------------------------------------------------------------------- */

/* Test and benchmark overrides (core/ops/internal.h): 0 / -1 = the rules. */
static int force_rows, force_mat = -1;

void tg_sdpa_tune(int rows, int materialise)
{
    force_rows = rows > 0 ? rows : 0;
    force_mat = materialise;
}

/* Query rows per block: a block of scores about SDPA_BLOCK entries (256 KiB
 * of floats, it stays in L2 between the GEMMs that make and read it), but at
 * least 64 rows so the dK and dV GEMMs, whose inner size this is, run near
 * full speed. */
#define SDPA_BLOCK 65536
static int rows_for(const sdpa_dims *d)
{
    int r = force_rows ? force_rows : d->Lk > 0 ? SDPA_BLOCK / d->Lk : d->Lq;
    if (!force_rows && r < 64) r = 64;
    return r < d->Lq ? r : d->Lq > 0 ? d->Lq : 1;
}

/* Declared in core/ops/internal.h. Materialise A for backward when all of it
 * is at most SDPA_MAT_BYTES: there keeping it costs little memory and saves
 * backward the QK^T GEMM and exps (docs/PERF.md measures the rule). */
#define SDPA_MAT_BYTES (1 << 20)
bool tg_sdpa_materialises(int B, int H, int Lq, int Lk)
{
    if (force_mat >= 0) return force_mat;
    return (double)B * H * Lq * Lk * sizeof(tg_real) <= SDPA_MAT_BYTES;
}

/* Per-thread scratch of one pass, carved from one arena block:
 * S [rows, Lk] (scores, then A), P [rows, Lk] (dropout), G [rows, Lk]
 * (backward), Add [rows, Lk] (a sum of additive terms), vis and kb
 * [rows, Lk] bytes (visibility, dropout keeps). */
typedef struct sdpa_scr {
    tg_real *S, *P, *G, *Add;
    uint8_t *vis, *kb;
    int vis_b, vis_h, vis_i0; /* whose rows vis holds (-1: none) */
} sdpa_scr;

static size_t scr_bytes(const sdpa_plan *p)
{
    size_t blk = (size_t)p->rows * p->d.Lk;
    return (4 * blk * sizeof(tg_real) + 2 * blk + 64) / 64 * 64;
}

static sdpa_scr scr_at(const sdpa_plan *p, unsigned char *base, int i)
{
    size_t blk = (size_t)p->rows * p->d.Lk;
    tg_real *S = (tg_real *)(void *)(base + (size_t)i * scr_bytes(p));
    return (sdpa_scr){.S = S, .P = S + blk, .G = S + 2 * blk, .Add = S + 3 * blk, .vis = (uint8_t *)(S + 4 * blk),
                      .kb = (uint8_t *)(S + 4 * blk) + blk, .vis_b = -1, .vis_h = -1, .vis_i0 = -1};
}

/* The keys a block of rows [i0, i0 + nr) of plane (b, h) can see are among
 * the first n; vis (when the plan has rules) holds those rows' visibility. */
static int block_keys(const sdpa_plan *p, int b, int h, int i0, int nr, sdpa_scr *s)
{
    const tg_mask_rt *m = &p->ab.mask;
    int n = tg_mask_keys_end(m, b, i0 + nr - 1);
    if (p->rules && !(s->vis_i0 == i0 && (s->vis_b == b || !tg_mask_rt_per_b(m)) &&
                      (s->vis_h == h || !tg_mask_rt_per_h(m)))) {
        tg_mask_fill_rows(m, b, h, i0, nr, n, s->vis);
        s->vis_b = b, s->vis_h = h, s->vis_i0 = i0;
    }
    return n;
}

/* Dropout over a block of nr rows of A [nr, n]: P = A * keep / (1 - p) and
 * kb = keep. Each row draws Lk numbers, the keys past n included, so the
 * stream is one number per weight in (b, h, i, j) order whatever the mask. */
static void dropout_block(const tg_real *A, tg_real *P, uint8_t *kb, int nr, int n, int Lk, double p,
                          tg_rng *rng)
{
    uint32_t thr = (uint32_t)(p * 4294967296.0);
    tg_real inv = (tg_real)(1 / (1 - p));
    for (int r = 0; r < nr; r++) {
        size_t e = (size_t)r * n;
        for (int j = 0; j < n; j++) {
            kb[e + j] = tg_rng_u32(rng) >= thr;
            P[e + j] = A[e + j] * (kb[e + j] ? inv : 0);  /* a dropped NaN stays NaN, as PyTorch */
        }
        for (int j = n; j < Lk; j++) (void)tg_rng_u32(rng);
    }
}

/* Rows [i0, i0 + nr) of W [B, H, Lq, Lk] at plane bh <- A [nr, n], zeros past n. */
static void put_rows(tg_real *W, size_t bh, const sdpa_dims *d, int i0, int nr, int n, const tg_real *A)
{
    for (int r = 0; r < nr; r++) {
        tg_real *w = W + (bh * d->Lq + i0 + r) * d->Lk;
        memcpy(w, A + (size_t)r * n, (size_t)n * sizeof *w);
        memset(w + n, 0, (size_t)(d->Lk - n) * sizeof *w);
    }
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

/* A bias [B or 1, H, Lq, Lk] for scores of dims d; finite ALiBi slopes. */
static bool bias_check(tg_tape *t, const char *op, const tg_sdpa_opts *o, const sdpa_dims *d, const char *what)
{
    char sb[TG_SHAPE_STR];
    const tg_tensor *b = o->bias;
    if (b && (b->ndim != 4 || (b->shape[0] != 1 && b->shape[0] != d->B) || b->shape[1] != d->H ||
              b->shape[2] != d->Lq || b->shape[3] != d->Lk)) {
        tg_fail(t, "%s: bias %s must be [B or 1, H, Lq, Lk] = [%d or 1, %d, %d, %d]: %s", op, tg_shape_str(b, sb), d->B,
                d->H, d->Lq, d->Lk, what);
        return false;
    }
    for (int h = 0; o->alibi && h < d->H; h++)
        if (!isfinite(o->alibi[h])) {
            tg_fail(t, "%s: ALiBi slope %d is %g: %s", op, h, o->alibi[h], what);
            return false;
        }
    return true;
}

/* One forward call: the plan, the tensors' data and where things go. */
typedef struct sdpa_fwd {
    const sdpa_plan *p;
    const tg_real *q, *k, *v;
    tg_real *out;
    tg_real *stats;                   /* [B, H, Lq, 2] row (max, 1/sum), or NULL */
    tg_real *A, *W;                   /* A saved for backward, caller's weights; each [B, H, Lq, Lk] or NULL */
    tg_rng *rng;                      /* non-NULL: dropout on */
    int pieces;                       /* batches cut into this many pieces, one per thread */
    unsigned char *scr;               /* pieces x scr_bytes */
} sdpa_fwd;

/* Rows [i0, i0 + nr) of the (b, h) plane: S, A, P, O. */
static void fwd_block(const sdpa_fwd *c, int b, int h, int i0, int nr, sdpa_scr *s)
{
    const sdpa_plan *p = c->p;
    const sdpa_dims *d = &p->d;
    size_t bh = (size_t)b * d->H + h;
    int n = block_keys(p, b, h, i0, nr, s);
    const tg_real *P = s->S;
    gemm_ld(p->half, 0, !p->k.trans, nr, n, d->dk, (tg_real)p->scale, c->q + lay_at(&p->q, b, h) + (size_t)i0 * p->q.ld,
            p->q.ld, c->k + lay_at(&p->k, b, h), p->k.ld, 0, s->S, n);
    int ld_add;
    const tg_real *add = tg_attn_bias_rows(&p->ab, b, h, i0, nr, n, s->Add, &ld_add);
    tg_softmax_block(s->S, s->S, (size_t)nr, n, 1, p->rules ? s->vis : NULL, add, ld_add,
                     c->stats ? c->stats + (bh * d->Lq + i0) * 2 : NULL);
    if (c->A) put_rows(c->A, bh, d, i0, nr, n, s->S);
    if (c->W) put_rows(c->W, bh, d, i0, nr, n, s->S);
    if (c->rng) {
        dropout_block(s->S, s->P, s->kb, nr, n, d->Lk, p->p, c->rng);
        P = s->P;
    }
    gemm_ld(p->half, 0, 0, nr, d->dv, n, 1, P, n, c->v + lay_at(&p->v, b, h), p->v.ld, 0,
            c->out + lay_at(&p->o, b, h) + (size_t)i0 * p->o.ld, p->o.ld);
}

/* Pieces of the batch loop: as many as the pool cuts B into when the (b, h)
 * planes pay for it (tg_parallel_pays; one-thread time 0.1 ns per query-key
 * pair and head dim, bench/bench_threads), else 1. Batches write disjoint
 * rows of every output and grad, so the result does not depend on the cut. */
static int pieces_for(const sdpa_plan *p)
{
    const sdpa_dims *d = &p->d;
    double pairs = p->pairs > 0 ? p->pairs : (double)d->B * d->Lq * d->Lk, ns = 0.1 * pairs * d->H * (d->dk + d->dv);
    return d->B < 2 || !tg_parallel_pays(ns) ? 1 : tg_parallel_chunks(d->B);
}

/* Batches [B*i/pieces, B*(i+1)/pieces) with scratch i; the planes of a
 * batch in (h, i) order (the dropout stream's). */
static void fwd_piece(void *ctx, int i, int end)
{
    const sdpa_fwd *c = ctx;
    const sdpa_dims *d = &c->p->d;
    for (; i < end; i++) {
        sdpa_scr s = scr_at(c->p, c->scr, i);
        int b0 = (int)((int64_t)d->B * i / c->pieces), b1 = (int)((int64_t)d->B * (i + 1) / c->pieces);
        for (int b = b0; b < b1; b++)
            for (int h = 0; h < d->H; h++)
                for (int i0 = 0; i0 < d->Lq; i0 += c->p->rows)
                    fwd_block(c, b, h, i0, d->Lq - i0 < c->p->rows ? d->Lq - i0 : c->p->rows, &s);
    }
}

/* The op's context: the plan, the row stats [B, H, Lq, 2] and, when
 * materialised, A [B, H, Lq, Lk]. */
typedef struct sdpa_ctx {
    sdpa_plan plan;
    tg_tensor *stats, *A;
} sdpa_ctx;

static void sdpa_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx);

TG_OP(sdpa_op, "tg_sdpa", sdpa_backward, sdpa_ctx);
TG_OP(sdpa_heads_op, "tg_sdpa_heads", sdpa_backward, sdpa_ctx);

/* The shared forward: runs plan p (validated, layouts and mask set) over the op's
 * inputs in[n] into out, records the node, hands out the weights. */
static tg_tensor *sdpa_run(tg_tape *t, const tg_op *sop, sdpa_plan *p, tg_tensor *const *in, int n,
                           tg_tensor *out, const tg_sdpa_opts *o, tg_tensor **weights)
{
    const sdpa_dims d = p->d;
    const char *op = sop->name;
    char what[64];
    bool drop = o->dropout > 0 && tg_tape_training(t);
    bool grad = tg_needs_grad(t, in, n), mat = grad && tg_sdpa_materialises(d.B, d.H, d.Lq, d.Lk);
    int shape[4] = {d.B, d.H, d.Lq, d.Lk};
    p->rows = rows_for(&d);
    p->half = TG_REAL_DTYPE == TG_F32 ? tg_tape_autocast(t) : TG_F32;
    p->p = drop ? o->dropout : 0;
    /* key_lens alone needs no visibility array: a block stops at key_lens[b] */
    p->rules = tg_mask_rt_rules(&p->ab.mask);
    if (drop) p->rng = *o->rng;
    p->ab.alibi = o->alibi, p->ab.pos0 = p->qpos, p->ab.H = d.H, p->ab.Lq = d.Lq, p->ab.Lk = d.Lk;
    if (grad) snprintf(what, sizeof what, "%s mask", op);  /* names only what is allocated (a decode: scratch) */
    if (grad && o->alibi) {  /* the slopes, for backward */
        double *sl = tg_arena_alloc(t, (size_t)d.H * sizeof *sl, what);
        if (!sl) return NULL;
        memcpy(sl, o->alibi, (size_t)d.H * sizeof *sl);
        p->ab.alibi = sl;
    }
    p->bias_in = o->bias ? n - 1 : -1;  /* the bias is the last input */
    if (o->bias) p->ab.bias = o->bias->data, p->ab.bias_b = o->bias->shape[0];
    if (mat || weights) snprintf(what, sizeof what, "%s weights", op);
    tg_tensor *A = mat ? tg_new_named(t, what, 4, shape) : NULL, *W = weights ? tg_new_named(t, what, 4, shape) : NULL;
    if ((mat && !A) || (weights && !W)) return NULL;
    if (grad) snprintf(what, sizeof what, "%s row stats", op);
    tg_tensor *st = grad ? tg_new_named(t, what, 4, (int[]){d.B, d.H, d.Lq, 2}) : NULL;
    if (grad && !st) return NULL;
    sdpa_fwd c = {.p = p, .q = in[p->q.in]->data, .k = in[p->k.in]->data, .v = in[p->v.in]->data,
                  .out = out->data, .stats = st ? st->data : NULL, .A = A ? A->data : NULL,
                  .W = W ? W->data : NULL, .rng = drop ? o->rng : NULL};
    /* batches are independent, except for the dropout stream: one piece then */
    c.pieces = drop ? 1 : pieces_for(p);
    snprintf(what, sizeof what, "%s scratch", op);
    size_t scr = (size_t)c.pieces * scr_bytes(p);
    if (!(c.scr = tg_arena_scratch(t, scr, what))) return NULL;
    tg_parallel_for(c.pieces, fwd_piece, &c);
    tg_arena_release(t, c.scr, scr);
    if (grad && !tg_op_record(t, sop, out, in, n, &(sdpa_ctx){*p, st, A})) return NULL;
    if (weights) *weights = W;
    return tg_op_done(t, sop, out);
}

/* ---- backward ------------------------------------------------------------------------- */

/* In place over rows of n: g = a * (g - sum(g * a)), the softmax backward. */
static void softmax_grad_rows(const tg_real *a, tg_real *g, int rows, int n)
{
    for (int i = 0; i < rows; i++) {
        const tg_real *ar = a + (size_t)i * n;
        tg_real *gr = g + (size_t)i * n, dot = tg_row_dot(gr, ar, (size_t)n);
        for (int j = 0; j < n; j++) gr[j] = ar[j] * (gr[j] - dot);
    }
}

/* One backward call: data of q, k, v, dO, the row stats and A (materialised,
 * or NULL); grads to accumulate into (NULL: not wanted), all addressed
 * through the plan's layouts. */
typedef struct sdpa_bwd {
    const sdpa_plan *p;
    const tg_real *q, *k, *v, *dO, *stats, *A;
    tg_real *dq, *dk, *dv, *dbias;
    tg_rng rng;                       /* the dropout stream, replayed */
    int pieces;                       /* as sdpa_fwd */
    unsigned char *scr;
} sdpa_bwd;

/* Rows [i0, i0 + nr) of the (b, h) plane. */
static void bwd_block(sdpa_bwd *c, int b, int h, int i0, int nr, sdpa_scr *s)
{
    const sdpa_plan *p = c->p;
    const sdpa_dims *d = &p->d;
    size_t bh = (size_t)b * d->H + h, oq = lay_at(&p->q, b, h) + (size_t)i0 * p->q.ld;
    size_t ok = lay_at(&p->k, b, h), ov = lay_at(&p->v, b, h);
    const tg_real *dO = c->dO + lay_at(&p->o, b, h) + (size_t)i0 * p->o.ld, *P = s->S;
    tg_real inv = (tg_real)(1 / (1 - p->p)), scale = (tg_real)p->scale;
    int n = block_keys(p, b, h, i0, nr, s);
    if (c->A) { /* A's rows, as the forward wrote them */
        for (int r = 0; r < nr; r++)
            memcpy(s->S + (size_t)r * n, c->A + (bh * d->Lq + i0 + r) * d->Lk, (size_t)n * sizeof *s->S);
    } else {   /* the forward's S and A again, the same bits */
        gemm_ld(p->half, 0, 1, nr, n, d->dk, scale, c->q + oq, p->q.ld, c->k + ok, p->k.ld, 0, s->S, n);
        int ld_add;
        const tg_real *add = tg_attn_bias_rows(&p->ab, b, h, i0, nr, n, s->Add, &ld_add);
        tg_softmax_block_redo(s->S, s->S, (size_t)nr, n, 1, p->rules ? s->vis : NULL, add, ld_add,
                              c->stats + (bh * d->Lq + i0) * 2);
    }
    if (p->p > 0) {
        dropout_block(s->S, s->P, s->kb, nr, n, d->Lk, p->p, &c->rng);
        P = s->P;
    }
    if (c->dv) gemm_ld(p->half, 1, 0, n, d->dv, nr, 1, P, n, dO, p->o.ld, 1, c->dv + ov, p->v.ld);
    if (!c->dq && !c->dk && !c->dbias) return;
    gemm_ld(p->half, 0, 1, nr, n, d->dv, 1, dO, p->o.ld, c->v + ov, p->v.ld, 0, s->G, n);
    if (p->p > 0)
        for (size_t e = 0; e < (size_t)nr * n; e++) s->G[e] = s->kb[e] ? s->G[e] * inv : 0;
    softmax_grad_rows(s->S, s->G, nr, n);
    if (c->dbias) { /* the bias is added to S: it takes dS */
        tg_real *db = c->dbias + (((size_t)(p->ab.bias_b > 1 ? b : 0) * d->H + h) * d->Lq + i0) * d->Lk;
        for (int r = 0; r < nr; r++)
            for (int j = 0; j < n; j++) db[(size_t)r * d->Lk + j] += s->G[(size_t)r * n + j];
    }
    if (c->dq) gemm_ld(p->half, 0, 0, nr, d->dk, n, scale, s->G, n, c->k + ok, p->k.ld, 1, c->dq + oq, p->q.ld);
    if (c->dk) gemm_ld(p->half, 1, 0, n, d->dk, nr, scale, s->G, n, c->q + oq, p->q.ld, 1, c->dk + ok, p->k.ld);
}

/* Batches [B*i/pieces, B*(i+1)/pieces) with scratch i (as fwd_piece). */
static void bwd_piece(void *ctx, int i, int end)
{
    sdpa_bwd *c = ctx;
    const sdpa_dims *d = &c->p->d;
    int rows = c->p->rows;
    for (; i < end; i++) {
        sdpa_scr s = scr_at(c->p, c->scr, i);
        int b0 = (int)((int64_t)d->B * i / c->pieces), b1 = (int)((int64_t)d->B * (i + 1) / c->pieces);
        for (int b = b0; b < b1; b++)
            for (int h = 0; h < d->H; h++)
                for (int i0 = 0; i0 < d->Lq; i0 += rows)
                    bwd_block(c, b, h, i0, d->Lq - i0 < rows ? d->Lq - i0 : rows, &s);
    }
}

/* in holds q, k, v (tg_sdpa) or xq, xkv (tg_sdpa_heads); the plan says which
 * input holds which. Grads of inputs without requires_grad are left alone. */
TG_BACKWARD(sdpa_backward, sdpa_ctx)
{
    const sdpa_ctx *s = ctx;
    const sdpa_plan *p = &s->plan;
    tg_tensor *q = in[p->q.in], *k = in[p->k.in], *v = in[p->v.in];
    sdpa_bwd c = {.p = p, .q = q->data, .k = k->data, .v = v->data, .dO = out->grad,
                  .stats = s->stats->data, .A = s->A ? s->A->data : NULL, .rng = p->rng};
    c.dq = q->requires_grad ? tg_grad(t, q) : NULL;
    c.dk = k->requires_grad ? tg_grad(t, k) : NULL;
    c.dv = v->requires_grad ? tg_grad(t, v) : NULL;
    if ((q->requires_grad && !c.dq) || (k->requires_grad && !c.dk) || (v->requires_grad && !c.dv)) return;
    tg_tensor *bias = p->bias_in >= 0 ? in[p->bias_in] : NULL;
    if (bias && bias->requires_grad && !(c.dbias = tg_grad(t, bias))) return;
    /* dropout: the forward's one stream; a bias shared by the batch: one writer */
    c.pieces = p->p > 0 || (c.dbias && p->ab.bias_b == 1) ? 1 : pieces_for(p);
    size_t scr = (size_t)c.pieces * scr_bytes(p);
    if (!(c.scr = tg_arena_scratch(t, scr, "tg_sdpa backward scratch"))) return;
    tg_parallel_for(c.pieces, bwd_piece, &c);
    tg_arena_release(t, c.scr, scr);
}

/* ---- tg_sdpa: q, k, v [B, H, L, d] ------------------------------------------------------ */

static bool sdpa_check(tg_tape *t, const tg_tensor *q, const tg_tensor *k, const tg_tensor *v,
                       const tg_sdpa_opts *o, bool grad, sdpa_plan *p)
{
    sdpa_dims *d = &p->d;
    char sq[TG_SHAPE_STR], sk[TG_SHAPE_STR], sv[TG_SHAPE_STR], what[3 * TG_SHAPE_STR + 16];
    snprintf(what, sizeof what, "q %s k %s v %s", tg_shape_str(q, sq), tg_shape_str(k, sk),
             tg_shape_str(v, sv));
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4) {
        tg_op_fail(t, &sdpa_op, "q, k and v must be 4-D [B,H,L,d]: %s", what);
        return false;
    }
    if (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0] || v->shape[1] != k->shape[1]) {
        tg_op_fail(t, &sdpa_op, "batch dims, or k's and v's head dims, differ: %s", what);
        return false;
    }
    if (k->shape[1] != q->shape[1] && (k->shape[1] < 1 || q->shape[1] % k->shape[1])) {
        tg_op_fail(t, &sdpa_op, "k's and v's heads must divide q's (grouped-query attention): %s", what);
        return false;
    }
    if (k->shape[3] != q->shape[3]) {
        tg_op_fail(t, &sdpa_op, "q and k head sizes (dk) differ: %s", what);
        return false;
    }
    if (v->shape[2] != k->shape[2]) {
        tg_op_fail(t, &sdpa_op, "k and v lengths (Lk) differ: %s", what);
        return false;
    }
    if (!opts_check(t, sdpa_op.name, o, what)) return false;
    *d = (sdpa_dims){q->shape[0], q->shape[1], q->shape[2], k->shape[2], q->shape[3], v->shape[3]};
    return bias_check(t, sdpa_op.name, o, d, what) &&
           tg_mask_read(t, o->mask, d->B, d->H, d->Lq, d->Lk, grad, sdpa_op.name, what, &p->ab.mask);
}

/* [B, H / group, L, w] contiguous, held by node input `in`. */
static sdpa_lay lay_contig(const sdpa_dims *d, int L, int w, int in, int group)
{
    return (sdpa_lay){.off = 0, .sb = (size_t)d->H / group * L * w, .sh = (size_t)L * w, .ld = w, .in = in,
                      .group = group};
}

tg_tensor *tg_sdpa(tg_tape *t, tg_tensor *q, tg_tensor *k, tg_tensor *v,
                   const tg_sdpa_opts *opts, tg_tensor **weights)
{
    TG_DISPATCH_SAME(tg_sdpa, (t, q, k, v, opts, weights), q, k, v);
    static const tg_sdpa_opts defaults = {0};
    const tg_sdpa_opts *o = opts ? opts : &defaults;
    tg_tensor *in[4] = {q, k, v, o->bias};
    int n = o->bias ? 4 : 3;
    if (weights) *weights = NULL;
    if (!tg_inputs_check(t, &sdpa_op, in, n, n)) return NULL;
    sdpa_plan p = {0};
    if (!sdpa_check(t, q, k, v, o, tg_needs_grad(t, in, n), &p)) return NULL;
    const sdpa_dims *d = &p.d;
    p.scale = o->scale > 0 ? o->scale : d->dk > 0 ? 1 / sqrt((double)d->dk) : 1;
    int group = k->shape[1] ? d->H / k->shape[1] : 1;
    p.q = lay_contig(d, d->Lq, d->dk, 0, 1);
    p.k = lay_contig(d, d->Lk, d->dk, 1, group);
    p.v = lay_contig(d, d->Lk, d->dv, 2, group);
    p.o = lay_contig(d, d->Lq, d->dv, -1, 1);
    tg_tensor *out = tg_new(t, &sdpa_op, 4, (int[]){d->B, d->H, d->Lq, d->dv});
    if (!out) return NULL;
    return sdpa_run(t, &sdpa_op, &p, in, n, out, o, weights);
}

/* ---- tg_sdpa_heads: heads in the columns of xq [B, Lq, Cq] and xkv [B, Lk, Ckv] ---------- */

/* false with "tg_sdpa_heads: <why>: <what>" when cols [col, col + H*w) do
 * not fit in the last dim C of x. */
static bool cols_check(tg_tape *t, const char *name, int col, int H, int w, int C, const char *what)
{
    long long end = (long long)col + (long long)H * w;
    if (col >= 0 && end <= C) return true;
    tg_op_fail(t, &sdpa_heads_op, "%s columns [%d, %lld) are outside [0, %d): %s", name, col, end, C, what);
    return false;
}

static bool heads_check(tg_tape *t, const tg_tensor *xq, const tg_tensor *xkv, const tg_sdpa_layout *l,
                        const tg_sdpa_opts *o, bool grad, sdpa_plan *p)
{
    sdpa_dims *d = &p->d;
    char sq[TG_SHAPE_STR], sk[TG_SHAPE_STR], what[2 * TG_SHAPE_STR + 160];
    snprintf(what, sizeof what, "xq %s xkv %s (n_heads %d, n_kv_heads %d, dk %d, dv %d, q_col %d, k_col %d, "
             "v_col %d)", tg_shape_str(xq, sq), tg_shape_str(xkv, sk), l->n_heads, l->n_kv_heads, l->dk, l->dv,
             l->q_col, l->k_col, l->v_col);
    if (xq->ndim != 3 || xkv->ndim != 3) {
        tg_op_fail(t, &sdpa_heads_op, "xq and xkv must be 3-D [B,L,C]: %s", what);
        return false;
    }
    if (xkv->shape[0] != xq->shape[0]) {
        tg_op_fail(t, &sdpa_heads_op, "batch dims differ: %s", what);
        return false;
    }
    if (l->n_heads < 1 || l->dk < 1 || l->dv < 1) {
        tg_op_fail(t, &sdpa_heads_op, "n_heads, dk and dv must be >= 1: %s", what);
        return false;
    }
    if (l->n_kv_heads < 0 || (l->n_kv_heads && l->n_heads % l->n_kv_heads)) {
        tg_op_fail(t, &sdpa_heads_op, "n_kv_heads must divide n_heads (0: n_heads): %s", what);
        return false;
    }
    int hkv = l->n_kv_heads ? l->n_kv_heads : l->n_heads;
    if ((long long)l->n_heads * l->dv > INT_MAX) {
        tg_op_fail(t, &sdpa_heads_op, "n_heads*dv overflows an int: %s", what);
        return false;
    }
    if (!cols_check(t, "q", l->q_col, l->n_heads, l->dk, xq->shape[2], what) ||
        !cols_check(t, "k", l->k_col, hkv, l->dk, xkv->shape[2], what) ||
        !cols_check(t, "v", l->v_col, hkv, l->dv, xkv->shape[2], what))
        return false;
    if (!opts_check(t, sdpa_heads_op.name, o, what)) return false;
    *d = (sdpa_dims){xq->shape[0], l->n_heads, xq->shape[1], xkv->shape[1], l->dk, l->dv};
    return bias_check(t, sdpa_heads_op.name, o, d, what) &&
           tg_mask_read(t, o->mask, d->B, d->H, d->Lq, d->Lk, grad, sdpa_heads_op.name, what, &p->ab.mask);
}

/* Head blocks of width w from column col of [B, L, C], held by node input
 * `in`, each shared by `group` query heads. */
static sdpa_lay lay_packed(int L, int C, int col, int w, int in, int group)
{
    return (sdpa_lay){.off = (size_t)col, .sb = (size_t)L * C, .sh = (size_t)w, .ld = C, .in = in,
                      .group = group};
}

tg_tensor *tg_sdpa_heads(tg_tape *t, tg_tensor *xq, tg_tensor *xkv, const tg_sdpa_layout *lay,
                         const tg_sdpa_opts *opts, tg_tensor **weights)
{
    TG_DISPATCH_SAME(tg_sdpa_heads, (t, xq, xkv, lay, opts, weights), xq, xkv);
    static const tg_sdpa_opts defaults = {0};
    const tg_sdpa_opts *o = opts ? opts : &defaults;
    tg_tensor *in[3] = {xq, xkv, o->bias};
    int n = o->bias ? 3 : 2;
    if (weights) *weights = NULL;
    if (!tg_inputs_check(t, &sdpa_heads_op, in, n, n)) return NULL;
    if (!lay) return tg_fail_null(t, sdpa_heads_op.name);
    sdpa_plan p = {0};
    if (!heads_check(t, xq, xkv, lay, o, tg_needs_grad(t, in, n), &p)) return NULL;
    const sdpa_dims *d = &p.d;
    int Cq = xq->shape[2], Ckv = xkv->shape[2], E = d->H * d->dv;
    p.scale = o->scale > 0 ? o->scale : 1 / sqrt((double)d->dk);
    int group = d->H / (lay->n_kv_heads ? lay->n_kv_heads : d->H);
    p.q = lay_packed(d->Lq, Cq, lay->q_col, d->dk, 0, 1);
    p.k = lay_packed(d->Lk, Ckv, lay->k_col, d->dk, 1, group);
    p.v = lay_packed(d->Lk, Ckv, lay->v_col, d->dv, 1, group);
    p.o = lay_packed(d->Lq, E, 0, d->dv, -1, 1);
    tg_tensor *out = tg_new(t, &sdpa_heads_op, 3, (int[]){d->B, d->Lq, E});
    if (!out) return NULL;
    return sdpa_run(t, &sdpa_heads_op, &p, in, n, out, o, weights);
}

/* ---- tg_sdpa_decode: one query row per batch against the cache (core/ops/nn/decode.h) -------- */

TG_OP_NO_GRAD(sdpa_decode_op, "tg_sdpa_decode");

/* Batch b's query, at position pos[b], sees the keys [0, pos[b]] of cache row
 * b: a key_lens mask of pos + 1 and ALiBi's query positions pos. The keys
 * are read transposed in place ([Hkv*dk, cap]), the values as [cap, Hkv*dv]. */
tg_tensor *tg_sdpa_decode(tg_tape *t, tg_tensor *xq, tg_tensor *cache, const tg_sdpa_layout *lay,
                          const tg_tensor *pos, const tg_sdpa_opts *opts)
{
    TG_DISPATCH(tg_sdpa_decode, xq, (t, xq, cache, lay, pos, opts));
    char sx[TG_SHAPE_STR];
    int Hkv;
    if (!tg_inputs_check(t, &sdpa_decode_op, (tg_tensor *const[]){xq, cache}, 2, 2)) return NULL;
    if (tg_tape_recording(t)) return tg_op_fail(t, &sdpa_decode_op, "decoding only: the tape must not record");
    if (opts && (opts->mask || opts->bias || opts->dropout != 0 || !isfinite(opts->scale)))
        return tg_op_fail(t, &sdpa_decode_op, "takes a finite scale and ALiBi slopes only (no mask, bias or dropout)");
    if (xq->ndim != 3 || xq->shape[1] != 1) return tg_op_fail(t, &sdpa_decode_op, "xq must be [B, 1, C], got %s",
                                                           tg_shape_str(xq, sx));
    int B = xq->shape[0];
    if (!tg_kv_check(t, &sdpa_decode_op, cache, lay, B, &Hkv)) return NULL;
    int H = lay->n_heads, dk = lay->dk, dv = lay->dv, cap = cache->shape[1];
    if (lay->q_col < 0 || lay->q_col + H * dk > xq->shape[2])
        return tg_op_fail(t, &sdpa_decode_op, "query columns [%d, %d) are outside xq %s", lay->q_col, lay->q_col + H * dk,
                       tg_shape_str(xq, sx));
    if (!tg_index_rows_check(t, &sdpa_decode_op, pos, "pos", B)) return NULL;
    for (int b = 0; b < B; b++) {
        int64_t v = tg_index_at(pos, (size_t)b);
        if (v < 0 || v >= cap)
            return tg_op_fail(t, &sdpa_decode_op, "pos[%d] = %lld is outside the cache [0, %d)", b, (long long)v, cap);
    }
    int32_t *qpos = tg_arena_alloc(t, (size_t)B * 2 * sizeof *qpos, "tg_sdpa_decode positions");
    if (!qpos) return NULL;
    int32_t *lens = qpos + B;
    sdpa_plan p = {.d = {B, H, 1, cap, dk, dv}, .qpos = qpos};
    for (int b = 0; b < B; b++) {
        qpos[b] = (int32_t)tg_index_at(pos, (size_t)b), lens[b] = qpos[b] + 1;
        p.pairs += qpos[b] + 1;
    }
    p.ab.mask = (tg_mask_rt){.Lq = 1, .Lk = cap, .lens = lens};
    tg_sdpa_opts o = {.alibi = opts ? opts->alibi : NULL};
    if (!bias_check(t, sdpa_decode_op.name, &o, &p.d, "the decode's ALiBi slopes")) return NULL;
    p.scale = opts && opts->scale > 0 ? opts->scale : 1 / sqrt((double)dk);
    size_t row = (size_t)cap * Hkv * (dk + dv);  /* cache row b: keys [Hkv*dk, cap], values [cap, Hkv*dv] */
    p.q = lay_packed(1, xq->shape[2], lay->q_col, dk, 0, 1);
    p.k = (sdpa_lay){.sb = row, .sh = (size_t)dk * cap, .ld = cap, .in = 1, .group = H / Hkv, .trans = true};
    p.v = (sdpa_lay){.off = (size_t)Hkv * dk * cap, .sb = row, .sh = (size_t)dv, .ld = Hkv * dv, .in = 1,
                     .group = H / Hkv};
    p.o = lay_packed(1, H * dv, 0, dv, -1, 1);
    tg_tensor *out = tg_new(t, &sdpa_decode_op, 3, (int[]){B, 1, H * dv});
    if (!out) return NULL;
    return sdpa_run(t, &sdpa_decode_op, &p, (tg_tensor *[]){xq, cache}, 2, out, &o, NULL);
}
