/* Allocation-failure injection (docs/RELIABILITY.md): the n-th
 * allocation fails (tg_alloc_fail_at), for every n over
 *   - a whole training step of the toy model, from a fresh tape: forward,
 *     cross-entropy, backward, clip, AdamW, and a checkpoint save (params +
 *     optimizer state + metadata, atomic tg_st_save);
 *   - model and optimizer construction (tg_params_new, tg_model_init,
 *     tg_optim_new for AdamW and SGD);
 *   - loading a checkpoint back (tg_st_load, tg_st_load_params,
 *     tg_optim_state_load);
 *   - a long tape: the node array's and the arena's growth and the grads of
 *     heap tensors (long_tape).
 * Each failing run must return NULL/-1 with tg_error() saying "out of memory",
 * leak nothing (LeakSanitizer / valgrind check the whole process), leave the
 * old checkpoint file byte for byte and no temporary beside it, and leave the
 * model usable: with allocation restored, the retried (or next) step succeeds
 * with exactly the loss, parameters and optimizer state of a twin that never
 * saw a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static const tg_dtype DT = sizeof(tg_real) == 8 ? TG_F64 : TG_F32;

/* ---- a model, its optimizer and its data -------------------------------------------------- */

typedef struct setup {
    tg_model_config cfg;
    int B, T;
    int32_t *ids, *targets, *lens;  /* [B*T], [B*T], [B] (plain malloc: not counted) */
} setup;

typedef struct rig {
    tg_params *p;
    tg_model m;
    tg_optim *opt;
    tg_rng rng;  /* the dropout stream */
} rig;

static const tg_optim_opts OPTS = {.kind = TG_ADAMW, .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8,
                                   .weight_decay = 0.01};

static void setup_data(setup *s)
{
    size_t n = (size_t)s->B * s->T;
    s->ids = malloc(n * sizeof *s->ids);
    s->targets = malloc(n * sizeof *s->targets);
    s->lens = malloc((size_t)s->B * sizeof *s->lens);
    cr_assert(s->ids && s->targets && s->lens);
    for (int b = 0; b < s->B; b++) {
        s->lens[b] = s->T - b % 3;  /* some key padding */
        for (int i = 0; i < s->T; i++) {
            size_t k = (size_t)b * s->T + i;
            s->ids[k] = (int32_t)((7 * b + 3 * i + 1) % s->cfg.vocab);
            s->targets[k] = i < s->lens[b] && i % 4 ? (int32_t)((5 * b + i) % s->cfg.vocab) : TG_IGNORE;
        }
    }
}

static void setup_free(setup *s)
{
    free(s->ids);
    free(s->targets);
    free(s->lens);
}

static void rig_init(rig *r, const setup *s)
{
    tg_rng init;
    tg_rng_seed(&init, 7);
    r->p = tg_params_new();
    cr_assert_not_null(r->p);
    cr_assert_eq(tg_model_init(&r->m, r->p, &s->cfg, &init), 0, "%s", tg_error());
    r->opt = tg_optim_new(r->p, &OPTS);
    cr_assert_not_null(r->opt, "%s", tg_error());
    tg_rng_seed(&r->rng, 11);
}

static void rig_free(rig *r)
{
    tg_optim_free(r->opt);
    tg_model_free(&r->m);
    tg_params_free(r->p);
}

/* ---- one training step and its checkpoint -------------------------------------------------- */

enum { PH_FORWARD, PH_BACKWARD, PH_UPDATE, PH_SAVE, PH_DONE };
static const char *const PHASE[] = {"forward", "backward", "clip/update", "save", "done"};

/* Model params, AdamW state and a "step" metadata entry, saved atomically. */
static int save(const rig *r, const char *path)
{
    tg_safetensors *s = tg_st_new();
    if (!s) return -1;
    char step[32];
    snprintf(step, sizeof step, "%ld", tg_optim_steps(r->opt));
    int rc = tg_st_add_params(s, r->p);
    if (!rc) rc = tg_optim_state_save(r->opt, s);
    if (!rc) rc = tg_st_set_meta(s, "step", step);
    if (!rc) rc = tg_st_save(s, path, DT);
    tg_st_free(s);
    return rc;
}

/* DESIGN.md's loop; returns the phase that failed (tg_error() says why) or PH_DONE. */
static int step(rig *r, tg_tape *t, const setup *s, const char *path, tg_real *loss_out)
{
    tg_error_clear();  /* a stale message must not excuse a silent failure */
    tg_tape_reset(t);
    tg_tensor *ids = tg_tensor_from_dtype(t, TG_I32, s->ids, 2, (int[]){s->B, s->T});
    tg_tensor *lens = tg_tensor_from_dtype(t, TG_I32, s->lens, 1, (int[]){s->B});
    tg_tensor *logits = tg_model_forward(t, &r->m, ids, &(tg_model_opts){.lens = lens, .rng = &r->rng}, NULL);
    tg_tensor *y = tg_tensor_from_dtype(t, TG_I32, s->targets, 2, (int[]){s->B, s->T});
    tg_tensor *loss = tg_cross_entropy(t, logits, y, TG_IGNORE);
    if (!loss) return PH_FORWARD;
    *loss_out = loss->data[0];
    tg_params_zero_grad(r->p);
    if (tg_backward(t, loss)) return PH_BACKWARD;
    if (!(tg_clip_grad_norm(r->p, 0.5) >= 0) || tg_optim_step(r->opt)) return PH_UPDATE;
    return save(r, path) ? PH_SAVE : PH_DONE;
}

/* ---- snapshots of the trainable state --------------------------------------------------------- */

typedef struct snap {
    tg_real *params;
    size_t n;
    long steps;
    tg_safetensors *opt;  /* m and v as exported */
} snap;

static snap snap_take(const rig *r)
{
    snap s = {.n = tg_params_numel(r->p), .steps = tg_optim_steps(r->opt), .opt = tg_st_new()};
    s.params = malloc(s.n * sizeof *s.params);
    cr_assert(s.params && s.opt);
    memcpy(s.params, tg_params_data(r->p), s.n * sizeof *s.params);
    cr_assert_eq(tg_optim_state_save(r->opt, s.opt), 0);
    return s;
}

static void snap_free(snap *s)
{
    free(s->params);
    tg_st_free(s->opt);
}

static bool same_tensors(const tg_safetensors *a, const tg_safetensors *b, const char *prefix)
{
    for (int i = 0; i < tg_st_count(a); i++) {
        const tg_tensor *x = tg_st_at(a, i);
        if (prefix && strncmp(x->name, prefix, strlen(prefix)) != 0) continue;
        const tg_tensor *y = tg_st_get(b, x->name);
        if (!y || !tg_shape_equal(x, y) || memcmp(x->data, y->data, x->size * sizeof(tg_real))) return false;
    }
    return true;
}

/* Bit-identical params, step count and moments. */
static bool snap_matches(const snap *want, const rig *r)
{
    snap now = snap_take(r);
    bool ok = now.n == want->n && now.steps == want->steps &&
              memcmp(now.params, want->params, now.n * sizeof(tg_real)) == 0 &&
              tg_st_count(now.opt) == tg_st_count(want->opt) && same_tensors(want->opt, now.opt, NULL);
    snap_free(&now);
    return ok;
}

/* The checkpoint at path holds exactly r's params and optimizer state. */
static bool file_matches(const char *path, const rig *r)
{
    tg_safetensors *f = NULL;
    if (tg_st_load(path, &f)) return false;
    snap now = snap_take(r);
    bool ok = same_tensors(now.opt, f, NULL);
    for (int i = 0; ok && i < tg_params_count(r->p); i++) {
        const tg_tensor *x = tg_params_at(r->p, i), *y = tg_st_get(f, x->name);
        ok = y && tg_shape_equal(x, y) && memcmp(x->data, y->data, x->size * sizeof(tg_real)) == 0;
    }
    char want[32];
    snprintf(want, sizeof want, "%ld", tg_optim_steps(r->opt));
    ok = ok && tg_st_meta(f, "step") && strcmp(tg_st_meta(f, "step"), want) == 0;
    snap_free(&now);
    tg_st_free(f);
    return ok;
}

/* ---- files ------------------------------------------------------------------------------------ */

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *b = malloc(*len + 1);
    cr_assert(b && fread(b, 1, *len, f) == *len);
    fclose(f);
    return b;
}

static void spill(const char *path, const uint8_t *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f && fwrite(b, 1, len, f) == len);
    fclose(f);
}

static bool file_is(const char *path, const uint8_t *b, size_t len)
{
    size_t n;
    uint8_t *now = slurp(path, &n);
    bool same = n == len && memcmp(now, b, len) == 0;
    free(now);
    return same;
}

static bool acceptable(const char *msg) { return msg && strstr(msg, "out of memory"); }

/* ---- the training-step walk ---------------------------------------------------------------------- */

typedef struct walk_stats {
    unsigned long long allocs, failed, absorbed, by_phase[PH_DONE];
} walk_stats;

static walk_stats walk_training_step(setup *s)
{
    char dir[256], path[300];
    tu_tmpdir(dir, sizeof dir, "tg_oom");
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    setup_data(s);

    /* the twin: states s0 -> s1 -> s2, losses L0, L1; allocations of step 1 */
    rig ref;
    rig_init(&ref, s);
    tg_tape *t = tg_tape_new();
    tg_real L0, L1;
    snap s0 = snap_take(&ref);
    tg_rng rng0 = ref.rng;
    uint64_t before = tg_alloc_count();
    cr_assert_eq(step(&ref, t, s, path, &L0), PH_DONE, "%s", tg_error());
    walk_stats st = {.allocs = tg_alloc_count() - before};
    snap s1 = snap_take(&ref);
    cr_assert_eq(step(&ref, t, s, path, &L1), PH_DONE, "%s", tg_error());
    snap s2 = snap_take(&ref);
    size_t old_len;
    uint8_t *old = slurp(path, &old_len);  /* "the previous checkpoint" each run must not harm */
    tg_tape_free(t);
    rig_free(&ref);

    for (unsigned long long n = 1; n <= st.allocs + 1; n++) {
        rig r;
        rig_init(&r, s);
        spill(path, old, old_len);
        t = tg_tape_new();
        cr_assert_not_null(t);
        tg_real loss;
        tg_alloc_fail_at(n);
        int ph = step(&r, t, s, path, &loss);
        tg_alloc_fail_at(0);
        if (n > st.allocs) {
            cr_assert_eq(ph, PH_DONE, "allocation %llu is past the end, yet: %s", n, tg_error());
        } else if (ph == PH_DONE) {
            /* absorbed by design: the last allocation is the directory name for
             * tg_st_save's best-effort fsync of the directory */
            st.absorbed++;
            cr_assert_eq(n, st.allocs, "allocation %llu: a failure other than the last was absorbed", n);
            cr_assert(file_matches(path, &r), "allocation %llu: absorbed failure but a wrong checkpoint", n);
        } else {
            st.failed++;
            st.by_phase[ph]++;
            cr_assert(acceptable(tg_error()), "allocation %llu of %llu failed in %s without saying so: %s",
                      n, st.allocs, PHASE[ph], tg_error());
            /* no half-update: before the update nothing moved, a failed save moved nothing either */
            cr_assert(ph != PH_UPDATE, "allocation %llu: clip/update failed", n);
            cr_assert(snap_matches(ph < PH_SAVE ? &s0 : &s1, &r),
                      "allocation %llu (%s): parameters or optimizer state half-updated", n, PHASE[ph]);
            cr_assert(file_is(path, old, old_len), "allocation %llu (%s): the old checkpoint changed", n,
                      PHASE[ph]);
            cr_assert_eq(tu_dir_entries(dir), 1, "allocation %llu (%s): a temporary file was left", n,
                         PHASE[ph]);
            if (ph < PH_SAVE) r.rng = rng0;  /* retrying the step replays its dropout draws */
        }
        /* with allocation restored, the retried (or next) step on the same tape is the twin's */
        bool retry = ph < PH_SAVE;
        int ph2 = step(&r, t, s, path, &loss);
        cr_assert_eq(ph2, PH_DONE, "allocation %llu (%s): the next step failed: %s", n, PHASE[ph], tg_error());
        cr_assert(loss == (retry ? L0 : L1), "allocation %llu (%s): loss %.9g, the twin's %.9g", n,
                  PHASE[ph], (double)loss, (double)(retry ? L0 : L1));
        cr_assert(snap_matches(retry ? &s1 : &s2, &r), "allocation %llu (%s): state differs from the twin's",
                  n, PHASE[ph]);
        cr_assert(file_matches(path, &r), "allocation %llu (%s): checkpoint after recovery is wrong", n,
                  PHASE[ph]);
        tg_tape_free(t);
        rig_free(&r);
    }
    snap_free(&s0);
    snap_free(&s1);
    snap_free(&s2);
    free(old);
    tu_tmpdir_remove(dir);
    setup_free(s);
    return st;
}

static void report(const char *what, const walk_stats *st)
{
    fprintf(stderr, "alloc_fail %s: %llu allocations walked, %llu failed (forward %llu, backward %llu, "
            "save %llu), %llu absorbed by design\n", what, st->allocs, st->failed,
            st->by_phase[PH_FORWARD], st->by_phase[PH_BACKWARD], st->by_phase[PH_SAVE], st->absorbed);
}

/* Fused attention, two layers, dropout on (the retry replays the rng). */
Test(alloc_fail, training_step_fused)
{
    setup s = {.cfg = {.vocab = 11, .d_model = 16, .n_layers = 2, .n_heads = 2, .d_ff = 32,
                       .max_len = 12, .dropout = 0.1, .mode = TG_MHA_FUSED},
               .B = 3, .T = 12};
    walk_stats st = walk_training_step(&s);
    report("training step (fused)", &st);
    cr_assert_leq(st.absorbed, 1);
}

/* Per-head attention, one layer, no dropout; a batch of 128 (float) so that the
 * forward fits the first 1 MiB arena chunk and backward needs a second. */
Test(alloc_fail, training_step_per_head)
{
    setup s = {.cfg = {.vocab = 7, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = 6,
                       .mode = TG_MHA_PER_HEAD},
               .B = 512 / (int)sizeof(tg_real), .T = 6};
    walk_stats st = walk_training_step(&s);
    report("training step (per-head)", &st);
    cr_assert_leq(st.absorbed, 1);
}

/* ---- construction: params store, model, Adam, SGD --------------------------------------------- */

/* Builds everything; 0, or -1 with tg_error(). Leaves nothing allocated on failure. */
static int build(const tg_model_config *cfg, rig *r, tg_optim **sgd)
{
    static const tg_optim_opts sgd_opts = {.kind = TG_SGD, .lr = 0.1, .momentum = 0.9};
    tg_rng init;
    tg_rng_seed(&init, 7);
    tg_error_clear();
    *r = (rig){.p = tg_params_new()};
    *sgd = NULL;
    if (!r->p) return -1;
    if (tg_model_init(&r->m, r->p, cfg, &init)) {  /* holds nothing on failure */
        tg_params_free(r->p);
        return -1;
    }
    r->opt = tg_optim_new(r->p, &OPTS);
    if (r->opt) *sgd = tg_optim_new(r->p, &sgd_opts);
    if (!*sgd) {
        rig_free(r);
        return -1;
    }
    tg_rng_seed(&r->rng, 11);
    return 0;
}

static void walk_construction(tg_mha_mode mode)
{
    setup s = {.cfg = {.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .max_len = 6, .mode = mode},
               .B = 2, .T = 6};
    rig ref, r;
    tg_optim *sgd;
    uint64_t before = tg_alloc_count();
    cr_assert_eq(build(&s.cfg, &ref, &sgd), 0, "%s", tg_error());
    walk_stats st = {.allocs = tg_alloc_count() - before};
    tg_optim_free(sgd);
    snap s0 = snap_take(&ref);
    for (unsigned long long n = 1; n <= st.allocs + 1; n++) {
        tg_alloc_fail_at(n);
        int rc = build(&s.cfg, &r, &sgd);
        tg_alloc_fail_at(0);
        if (n <= st.allocs) {
            cr_assert_eq(rc, -1, "allocation %llu of %llu failed silently", n, st.allocs);
            cr_assert(acceptable(tg_error()), "allocation %llu of %llu: %s", n, st.allocs, tg_error());
            st.failed++;
            continue;
        }
        cr_assert_eq(rc, 0, "%s", tg_error());
        cr_assert(snap_matches(&s0, &r), "a model built after failures differs");
        tg_optim_free(sgd);
        rig_free(&r);
    }
    /* the twin trains: construction left nothing half-done */
    setup_data(&s);
    char dir[256], path[300];
    tu_tmpdir(dir, sizeof dir, "tg_oom");
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    tg_tape *t = tg_tape_new();
    tg_real loss;
    cr_assert_eq(step(&ref, t, &s, path, &loss), PH_DONE, "%s", tg_error());
    cr_assert(isfinite(loss));
    tg_tape_free(t);
    tu_tmpdir_remove(dir);
    setup_free(&s);
    snap_free(&s0);
    rig_free(&ref);
    fprintf(stderr, "alloc_fail construction (%s): %llu allocations walked, %llu failed\n",
            mode == TG_MHA_FUSED ? "fused" : "per-head", st.allocs, st.failed);
}

Test(alloc_fail, construction_fused) { walk_construction(TG_MHA_FUSED); }
Test(alloc_fail, construction_per_head) { walk_construction(TG_MHA_PER_HEAD); }

/* ---- loading a checkpoint ------------------------------------------------------------------------- */

/* tg_st_load + tg_st_load_params + tg_optim_state_load, as a resume does. */
static int load(rig *r, const char *path, bool *parsed)
{
    tg_safetensors *f = NULL;
    tg_error_clear();
    int rc = tg_st_load(path, &f);
    *parsed = f != NULL;
    cr_assert(rc == 0 || !f, "tg_st_load failed but gave a set");
    if (!rc) rc = tg_st_load_params(r->p, f, true, "optim.");
    if (!rc) rc = tg_optim_state_load(r->opt, f);
    tg_st_free(f);
    return rc;
}

Test(alloc_fail, checkpoint_load)
{
    setup s = {.cfg = {.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .max_len = 6,
                       .dropout = 0.1, .mode = TG_MHA_FUSED},
               .B = 2, .T = 6};
    setup_data(&s);
    char dir[256], path[300];
    tu_tmpdir(dir, sizeof dir, "tg_oom");
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    rig ref, r;
    rig_init(&ref, &s);
    tg_tape *t = tg_tape_new();
    tg_real L0, L1, loss;
    cr_assert_eq(step(&ref, t, &s, path, &L0), PH_DONE, "%s", tg_error());
    snap s1 = snap_take(&ref);
    tg_rng rng1 = ref.rng;
    /* the twin's next loss L1; saving to an impossible path keeps the checkpoint at step 1 */
    cr_assert_eq(step(&ref, t, &s, "/dev/null/x", &L1), PH_SAVE);
    rig_init(&r, &s);
    snap s0 = snap_take(&r);
    bool parsed;
    uint64_t before = tg_alloc_count();
    cr_assert_eq(load(&ref, path, &parsed), 0, "%s", tg_error());
    walk_stats st = {.allocs = tg_alloc_count() - before};
    for (unsigned long long n = 1; n <= st.allocs + 1; n++) {
        tg_alloc_fail_at(n);
        int rc = load(&r, path, &parsed);
        tg_alloc_fail_at(0);
        if (n > st.allocs) {
            cr_assert_eq(rc, 0, "%s", tg_error());
            break;
        }
        cr_assert_eq(rc, -1, "allocation %llu of %llu failed silently", n, st.allocs);
        cr_assert(!parsed, "allocation %llu: failed after parsing (load_params and state_load allocate nothing)", n);
        st.failed++;
        cr_assert(acceptable(tg_error()), "allocation %llu of %llu: %s", n, st.allocs, tg_error());
        cr_assert(snap_matches(&s0, &r), "allocation %llu: a failed load changed the model", n);
    }
    /* the loaded model resumes as the twin: same state, same next loss */
    cr_assert(snap_matches(&s1, &r));
    r.rng = rng1;
    cr_assert_eq(step(&r, t, &s, path, &loss), PH_DONE, "%s", tg_error());
    cr_assert(loss == L1, "resumed loss %.9g, twin %.9g", (double)loss, (double)L1);
    fprintf(stderr, "alloc_fail checkpoint load: %llu allocations walked, %llu failed\n", st.allocs,
            st.failed);
    tg_tape_free(t);
    snap_free(&s0);
    snap_free(&s1);
    rig_free(&r);
    rig_free(&ref);
    tu_tmpdir_remove(dir);
    setup_free(&s);
}

/* 1200 small nodes (the node array grows 256 -> 2048) and a 1M-element
 * product (a second arena chunk; its grad a third); heap inputs get their
 * grads on the first backward. L = sum(y) + sum(big * big). */
static int chain(tg_tape *t, tg_tensor *x, tg_tensor *big, tg_real *L)
{
    tg_tape_reset(t);
    tg_tensor *y = x;
    for (int i = 0; i < 600; i++) y = tg_scale(t, tg_add(t, y, x), 0.5);
    tg_tensor *loss = tg_add(t, tg_sum(t, y), tg_sum(t, tg_mul(t, big, big)));
    int rc = loss ? tg_backward(t, loss) : -1;
    if (!rc) *L = loss->data[0];
    return rc;
}

Test(alloc_fail, long_tape)
{
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_tensor *x = tu_rand(&rng, -1, 1, 1, (int[]){64}), *big = tu_rand(&rng, -1, 1, 2, (int[]){1024, 1024});
    tg_tape *t = tg_tape_new();
    tg_real L, L_ref;
    uint64_t before = tg_alloc_count();
    cr_assert_eq(chain(t, x, big, &L_ref), 0, "%s", tg_error());
    uint64_t allocs = tg_alloc_count() - before;
    tg_real gx = x->grad[3], gb = big->grad[12345];
    tg_tape_free(t);
    for (uint64_t n = 1; n <= allocs; n++) {
        tg_tensor *x2 = tu_rand(&rng, 0, 0, 1, (int[]){64}), *b2 = tu_rand(&rng, 0, 0, 2, (int[]){1024, 1024});
        memcpy(x2->data, x->data, x->size * sizeof(tg_real));
        memcpy(b2->data, big->data, big->size * sizeof(tg_real));
        t = tg_tape_new();
        tg_alloc_fail_at(n);
        int rc = chain(t, x2, b2, &L);
        tg_alloc_fail_at(0);
        cr_assert_eq(rc, -1, "allocation %d of %d failed silently", (int)n, (int)allocs);
        cr_assert(tg_error() && strstr(tg_error(), "out of memory"), "allocation %d: %s", (int)n, tg_error());
        /* the same tape, reset, runs the whole thing (grads restart from zero) */
        if (x2->grad) memset(x2->grad, 0, x2->size * sizeof(tg_real));
        if (b2->grad) memset(b2->grad, 0, b2->size * sizeof(tg_real));
        cr_assert_eq(chain(t, x2, b2, &L), 0, "allocation %d: %s", (int)n, tg_error());
        cr_assert(L == L_ref && x2->grad[3] == gx && b2->grad[12345] == gb, "allocation %d: wrong result", (int)n);
        tg_tape_free(t);
        tg_tensor_free(x2);
        tg_tensor_free(b2);
    }
    cr_assert_geq(allocs, 8, "chunks, node array growth and heap grads: %d allocations", (int)allocs);
    tg_tensor_free(x);
    tg_tensor_free(big);
}

/* Out of memory at either of a new tape's first two allocations (the header
 * store's bookkeeping and block come first, then the arena and the node
 * array) gives NULL and a message naming the op, a view's included; ASan
 * checks nothing leaks. */
Test(alloc_fail, out_of_memory_names_the_op)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 4});
    int32_t ids[6] = {0, 1, 2, 3, 0, 1};
    tg_tensor *ix = tg_tensor_alloc_dtype(TG_I32, 2, (int[]){2, 3});  /* a heap index: no tape allocation */
    cr_assert_not_null(ix);
    memcpy(tg_data(ix, TG_I32), ids, sizeof ids);
    const char *names[] = {"tg_permute", "tg_split_heads", "tg_concat", "tg_slice", "tg_layernorm",
                           "tg_embedding", "tg_cross_entropy", "tg_dropout", "tg_reshape"};
    for (uint64_t at = 1; at <= 2; at++)
        for (int k = 0; k < 9; k++) {
            tg_tape *t = tg_tape_new();
            cr_assert_not_null(t);
            tg_alloc_fail_at(at);
            tg_tensor *r = NULL;
            switch (k) {
            case 0: r = tg_permute(t, x, (int[]){1, 0, 2}, 3); break;
            case 1: r = tg_split_heads(t, x, 2); break;
            case 2: r = tg_concat(t, (tg_tensor *[]){x, x}, 2); break;
            case 3: r = tg_slice(t, x, 1, 2); break;
            case 4: r = tg_layernorm(t, x, NULL, NULL, 1e-5); break;
            case 5: r = tg_embedding(t, x, ix); break;  /* x as [V, D]: see below */
            case 6: r = tg_cross_entropy(t, x, ix, TG_IGNORE); break;
            case 7: r = tg_dropout(t, x, 0.5, &rng); break;
            case 8:  /* without requires_grad: only the view itself is allocated */
                x->requires_grad = false;
                r = tg_reshape(t, x, 1, (int[]){-1});
                x->requires_grad = true;
                break;
            }
            tg_alloc_fail_at(0);
            if (k == 5) {  /* a 3-D weight is refused before any allocation */
                cr_assert_null(r);
                tg_tape_free(t);
                continue;
            }
            cr_assert_null(r, "%s, allocation %d", names[k], (int)at);
            const char *msg = tg_tape_error(t);
            cr_assert(msg && strstr(msg, "out of memory") && strstr(msg, names[k]), "%s: %s", names[k],
                      msg ? msg : "(none)");
            tg_tape_free(t);
        }
    tg_tensor_free(x);
    tg_tensor_free(ix);
}
