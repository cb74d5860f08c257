/* Every error message path of the public API has a test that triggers it.
 * These are the paths no other suite reached (docs/RELIABILITY.md
 * has the whole table and how it was measured): each test triggers the path
 * and checks that the message names the function and the problem, including
 * out of memory in tg_gradcheck's set-up. At the end, two for every op: NULL
 * inputs, and out of memory naming the op. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad/viz/canvas.h>
#include <tapegrad/viz/plot.h>
#include "test_util.h"

static void assert_has(const char *msg, const char *part)
{
    cr_assert(msg && strstr(msg, part), "expected \"%s\" in: %s", part, msg ? msg : "(none)");
}

/* ---- a user-written op whose backward misbehaves (core/engine/tape.h's op-author API) ------------- */

static void refusing_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx)
{
    (void)out, (void)in, (void)ctx;
    tg_fail(t, "my_op: backward refused");
}

static void nan_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx)
{
    (void)out, (void)ctx;
    tg_real *g = tg_grad(t, in[0]);
    if (g) g[0] = (tg_real)NAN;
}

/* identity forward, backward as given */
static tg_tensor *my_op(tg_tape *t, tg_tensor *x, tg_backward_fn bw)
{
    const tg_op op = {"my_op", bw, 0};
    if (!tg_inputs_check(t, op.name, &x, 1, 1)) return NULL;
    tg_tensor *out = tg_new_like(t, op.name, x);
    if (!out) return NULL;
    memcpy(out->data, x->data, x->size * sizeof(tg_real));
    if (!tg_op_record(t, &op, out, &x, 1, NULL)) return NULL;
    return tg_op_done(t, op.name, out);
}

/* ---- core: gradcheck -------------------------------------------------------------------------- */

typedef struct gc_ctx {
    int calls, fail_from;  /* f fails from call fail_from on (0: never) */
    tg_backward_fn bw;     /* NULL: tg_tanh */
} gc_ctx;

static tg_tensor *gc_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    gc_ctx *c = ctx;
    if (c->fail_from && ++c->calls >= c->fail_from) return tg_fail(t, "gc_fn: refused on call %d", c->calls);
    return c->bw ? my_op(t, in[0], c->bw) : tg_tanh(t, in[0]);
}

static tg_gradcheck_result gc(tg_tensor **in, int n, gc_ctx c) { return tg_gradcheck(gc_fn, &c, in, n, NULL); }

Test(errors, gradcheck_reports_why_it_could_not_check)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -1, 1, 1, (int[]){3}), *in[2] = {x, NULL};
    tg_gradcheck_result r = tg_gradcheck(NULL, NULL, in, 1, NULL);
    cr_assert(!r.ok);
    assert_has(tg_error(), "no function or no inputs");
    r = gc(in, 2, (gc_ctx){0});
    assert_has(tg_error(), "an input is NULL");
    r = gc(in, 1, (gc_ctx){.fail_from = 1});
    assert_has(tg_error(), "the forward pass failed: gc_fn: refused on call 1");
    r = gc(in, 1, (gc_ctx){.fail_from = 2});
    assert_has(tg_error(), "a perturbed forward failed: gc_fn: refused on call");
    r = gc(in, 1, (gc_ctx){.bw = refusing_backward});
    assert_has(tg_error(), "backward failed: my_op: backward refused");
    cr_assert(gc(in, 1, (gc_ctx){0}).ok);
    tg_tensor_free(x);
}

/* Every allocation of tg_gradcheck's set-up fails in turn: input grad, tape,
 * the forward's arena, the weighting; each is named. */
Test(errors, gradcheck_out_of_memory)
{
    tg_rng rng;
    tg_rng_seed(&rng, 2);
    const char *want[] = {"out of memory for an input's grad", "out of memory for the tape",
                          "the forward pass failed: out of memory", "out of memory for the weighting"};
    bool seen[4] = {false};
    bool ok = false;
    for (uint64_t n = 1; n < 20 && !ok; n++) {
        tg_tensor *x = tu_rand(&rng, -1, 1, 1, (int[]){3});  /* no grad yet */
        tg_alloc_fail_at(n);
        tg_gradcheck_result r = gc(&x, 1, (gc_ctx){0});
        tg_alloc_fail_at(0);
        ok = r.ok;
        int k = 0;
        while (!ok && k < 4 && !strstr(tg_error(), want[k])) k++;
        cr_assert(ok || k < 4, "allocation %d: %s", (int)n, tg_error());
        if (!ok) seen[k] = true;
        tg_tensor_free(x);
    }
    cr_assert(ok);
    for (int k = 0; k < 4; k++) cr_assert(seen[k], "never saw: %s", want[k]);
}

/* ---- core: tape, ops, params ------------------------------------------------------------------ */

Test(errors, backward_seed_null_and_anomaly_in_a_backward)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){3});
    x->requires_grad = true;
    tg_tensor *y = my_op(t, x, nan_backward);
    cr_assert_eq(tg_backward_seed(t, y, NULL), -1);
    cr_assert_str_eq(tg_tape_error(t), "tg_backward: seed is NULL");
    tg_tape_reset(t);
    tg_tape_set_anomaly(t, true);
    y = tg_sum(t, my_op(t, x, nan_backward));
    cr_assert_eq(tg_backward(t, y), -1);
    assert_has(tg_tape_error(t), "anomaly: backward of my_op produced NaN/Inf in the grad of input 0 [3]");
    cr_assert_eq(tg_backward_seed(NULL, y, (tg_real[]){1}), -1);
    cr_assert_str_eq(tg_error(), "tg_backward: the tape is NULL");
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(errors, null_inputs_of_matmul_and_tensor_from)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = tg_tensor_zeros(t, 2, (int[]){2, 2});
    cr_assert_null(tg_matmul(t, NULL, a, NULL, 0));
    cr_assert_str_eq(tg_tape_error(t), "tg_matmul: input is NULL");
    tg_tape_reset(t);
    cr_assert_null(tg_tensor_from(t, NULL, 1, (int[]){2}));
    cr_assert_str_eq(tg_tape_error(t), "tg_tensor_from: input is NULL");
    tg_tape_free(t);
}

/* Shapes whose products overflow an int are refused before any data is
 * read, so a one-element heap tensor with a forged shape is enough. */
Test(errors, shape_overflows)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *h = tg_tensor_alloc(0, NULL);
    *h = (tg_tensor){.ndim = 4, .shape = {1, 1 << 16, 1, 1 << 16}, .size = (size_t)1 << 32,
                     .data = h->data, .owns_data = true, .magic = TG_TENSOR_LIVE};
    cr_assert_null(tg_merge_heads(t, h));
    assert_has(tg_tape_error(t), "tg_merge_heads: H*dk overflows an int for x [1,65536,1,65536]");
    tg_tape_reset(t);
    *h = (tg_tensor){.ndim = 2, .shape = {1, 1 << 30, 1, 1}, .size = (size_t)1 << 30, .data = h->data,
                     .owns_data = true, .magic = TG_TENSOR_LIVE};
    cr_assert_null(tg_concat(t, (tg_tensor *[]){h, h}, 2));
    assert_has(tg_tape_error(t), "tg_concat: the joined dim (2147483648) overflows an int");
    tg_tensor_free(h);
    tg_tape_free(t);
}

Test(errors, params_add_refusals)
{
    tg_params *p = tg_params_new();
    cr_assert_null(tg_params_add(p, "", 1, (int[]){2}));
    cr_assert_str_eq(tg_error(), "tg_params_add: empty name");
    cr_assert_null(tg_params_add(p, NULL, 1, (int[]){2}));
    cr_assert_str_eq(tg_error(), "tg_params_add: empty name");
    cr_assert_null(tg_params_add(p, "w", 9, (int[]){1, 1, 1, 1, 1, 1, 1, 1, 1}));
    cr_assert_str_eq(tg_error(), "tg_params_add: 'w' has an invalid shape");
    cr_assert_null(tg_params_add(p, "w", 1, (int[]){-3}));
    cr_assert_str_eq(tg_error(), "tg_params_add: 'w' has an invalid shape");
    tg_error_clear();
    cr_assert_not_null(tg_params_add(p, "w", 1, (int[]){2}));
    cr_assert_null(tg_error());  /* a success leaves no message */
    tg_params_free(p);
}

/* ---- nn ----------------------------------------------------------------------------------------- */

Test(errors, layer_init_refusals)
{
    tg_params *p = tg_params_new();
    tg_embedding_layer e;
    cr_assert_eq(tg_embedding_init(&e, p, "emb", 0, 4, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_embedding 'emb': num_embeddings 0 and dim 4 must be > 0");
    tg_ffn f;
    cr_assert_eq(tg_ffn_init(&f, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8, .dropout = 1.0}, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_ffn 'ff': dropout 1 must be in [0, 1)");
    tg_layernorm_layer ln;
    cr_assert_eq(tg_layernorm_init(&ln, p, "ln", 4, 0), -1);
    cr_assert_str_eq(tg_error(), "tg_layernorm 'ln': dim 4 and eps 0 must be > 0");
    tg_linear l;
    cr_assert_eq(tg_linear_init(&l, p, "fc", &(tg_linear_config){.in = 0, .out = 3, .bias = true}, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_linear 'fc': in_features 0 and out_features 3 must be > 0");
    char longp[TG_NN_NAME_MAX + 8];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    cr_assert_eq(tg_linear_init(&l, p, longp, &(tg_linear_config){.in = 2, .out = 3, .bias = true}, NULL), -1);
    assert_has(tg_error(), "weight' is longer than 127 bytes");
    cr_assert_eq(tg_params_count(p), 0);
    tg_params_free(p);
}

Test(errors, mha_config_refusals)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    const tg_mha_config base = {.n_heads = 2, .d_model = 4};
    const struct { tg_mha_config c; const char *why; } bad[] = {
        {{.n_heads = 2, .d_model = 0}, "d_model must be > 0"},
        {{.n_heads = 2, .d_model = 4, .d_head = -1}, "d_head must be >= 0"},
        {{.n_heads = 2, .d_model = 4, .dropout = 1.0}, "dropout must be in [0, 1)"},
        {{.n_heads = 2, .d_model = 4, .dropout = NAN}, "dropout must be in [0, 1)"},
        {{.n_heads = 2, .d_model = 4, .mode = (tg_mha_mode)7}, "mode must be TG_MHA_FUSED or TG_MHA_PER_HEAD"},
        {{.n_heads = 65, .d_model = 4, .d_head = 1}, "n_heads must be in [1, 64]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(tg_mha_init(&m, p, "attn", &bad[i].c, NULL), -1);
        assert_has(tg_error(), "tg_mha 'attn': ");
        assert_has(tg_error(), bad[i].why);
    }
    cr_assert_eq(tg_mha_init(&m, p, "attn", &base, NULL), 0, "%s", tg_error());
    tg_params_free(p);
}

Test(errors, model_forward_null_ids)
{
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = 5, .d_model = 4, .n_layers = 1, .n_heads = 1, .max_len = 4};
    cr_assert_eq(tg_model_init(&m, p, &cfg, NULL), 0);
    tg_tape *t = tg_tape_new();
    cr_assert_null(tg_model_forward(t, &m, NULL, 1, 2, NULL, NULL));
    cr_assert_str_eq(tg_tape_error(t), "tg_model: ids is NULL");
    cr_assert_null(tg_model_forward(NULL, &m, (int32_t[]){1, 2}, 1, 2, NULL, NULL));
    cr_assert_str_eq(tg_error(), "tg_model_forward: the tape is NULL");
    cr_assert_null(tg_matmul(NULL, NULL, NULL, NULL, 0));
    cr_assert_str_eq(tg_error(), "tg_matmul: the tape is NULL");
    cr_assert_null(tg_add(NULL, NULL, NULL));
    cr_assert_str_eq(tg_error(), "tg_add: the tape is NULL");
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}

/* ---- nn: images ----------------------------------------------------------------------------------- */

Test(errors, png_writers)
{
    tg_canvas *c = tg_canvas_new(4, 4, (tg_rgb){0, 0, 0});
    cr_assert_eq(tg_canvas_save_png(c, NULL), -1);
    cr_assert_str_eq(tg_error(), "cannot write PNG '(null)': path is NULL");
    cr_assert_eq(tg_canvas_save_png(NULL, "x.png"), -1);
    cr_assert_str_eq(tg_error(), "cannot write PNG 'x.png': canvas is NULL");
    cr_assert_eq(tg_canvas_save_png(c, "/dev/full"), -1);  /* every write fails */
    cr_assert_str_eq(tg_error(), "cannot write PNG '/dev/full': No space left on device");
    tg_canvas_free(c);
    /* out of memory for the image, in each writer */
    char dir[] = "/tmp/tg_err_XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/p.png", dir);
    const double ys[3] = {1, 2, 3};
    const tg_plot_series s = {.name = "loss", .y = ys, .n = 3};
    const tg_real w[4] = {0.5, 0.5, 0, 1};
    for (uint64_t n = 1; n <= 2; n++) {
        tg_alloc_fail_at(n);
        cr_assert_eq(tg_plot_lines_png(path, "t", "step", &s, 1), -1);
        tg_alloc_fail_at(0);
        assert_has(tg_error(), "tg_plot_lines_png: out of memory");
        tg_alloc_fail_at(n);
        cr_assert_eq(tg_plot_bars_png(path, "t", NULL, ys, 3), -1);
        tg_alloc_fail_at(0);
        assert_has(tg_error(), "tg_plot_bars_png: out of memory");
        tg_alloc_fail_at(n);
        cr_assert_eq(tg_heatmap_png(path, w, 1, 1, 2, 2, NULL, NULL), -1);
        tg_alloc_fail_at(0);
        assert_has(tg_error(), "tg_heatmap_png: out of memory for a");
    }
    cr_assert_eq(access(path, F_OK), -1, "no file is written when the image could not be made");
    cr_assert_eq(tg_heatmap_png(path, w, 1, 1, 2, 2, NULL, NULL), 0, "%s", tg_error());
    unlink(path);
    rmdir(dir);
}

/* ---- optim -------------------------------------------------------------------------------------- */

Test(errors, optimizer_null_arguments)
{
    cr_assert_eq(tg_optim_check(NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_optim: options are NULL");
    cr_assert_eq(tg_schedule_check(NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_schedule: the schedule is NULL");
    tg_schedule bad = tg_schedule_constant(0.1, 0);
    bad.kind = (tg_schedule_kind)9;
    cr_assert_eq(tg_schedule_check(&bad), -1);
    cr_assert_str_eq(tg_error(), "tg_schedule: unknown kind 9");
    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_optim_state_save(NULL, s), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_state_save: NULL argument");
    cr_assert_eq(tg_optim_state_load(NULL, s), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_state_load: NULL argument");
    cr_assert_eq(tg_optim_step(NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_step: the optimizer is NULL");
    cr_assert_eq(tg_optim_set_lr(NULL, 0.1), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_set_lr: the optimizer is NULL");
    cr_assert_eq(tg_grad_norm(NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_grad_norm: the parameter store is NULL");
    cr_assert_eq(tg_clip_grad_norm(NULL, 1.0), -1);
    cr_assert_str_eq(tg_error(), "tg_clip_grad_norm: the parameter store is NULL");
    tg_st_free(s);
}

/* A store that gained a parameter after the optimizer was made: loading
 * state is refused with a message, a step with -1, and nothing changes. */
Test(errors, optimizer_store_changed)
{
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 1, (int[]){3});
    tg_optim *a = tg_optim_new(p, &(tg_optim_opts){.kind = TG_ADAM, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999,
                                                   .eps = 1e-8});
    tg_optim *g = tg_optim_new(p, &(tg_optim_opts){.kind = TG_SGD, .lr = 0.1, .momentum = 0.9});
    cr_assert(a && g, "%s", tg_error());
    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_optim_state_save(a, s), 0, "%s", tg_error());
    cr_assert_eq(tg_optim_state_save(g, s), 0, "%s", tg_error());
    tg_params_add(p, "b", 1, (int[]){2});
    cr_assert_eq(tg_optim_state_load(a, s), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_state_load: the parameter store has 5 values, 3 when tg_optim_new "
                                 "made the optimizer: make a new one after adding parameters");
    cr_assert_eq(tg_optim_state_load(g, s), -1);
    assert_has(tg_error(), "tg_optim_state_load: the parameter store has 5 values");
    cr_assert_eq(tg_optim_step(a), -1);
    cr_assert_str_eq(tg_error(), "tg_optim_step: the parameter store has 5 values, 3 when tg_optim_new made the "
                                 "optimizer: make a new one after adding parameters");
    cr_assert_eq(tg_optim_step(g), -1);
    assert_has(tg_error(), "tg_optim_step: the parameter store has 5 values, 3 when tg_optim_new made");
    cr_assert_eq(tg_optim_steps(a), 0);
    cr_assert_eq(tg_optim_steps(g), 0);
    tg_st_free(s);
    tg_optim_free(g);
    tg_optim_free(a);
    tg_params_free(p);
}

/* "optim.adam.m." + a 505-byte parameter name does not fit a state key (512 bytes). */
Test(errors, optimizer_state_name_too_long)
{
    char name[506];
    memset(name, 'w', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    tg_params *p = tg_params_new();
    cr_assert_not_null(tg_params_add(p, name, 1, (int[]){2}));
    tg_optim_opts adam = tg_optim_defaults(TG_ADAM);
    tg_optim *a = tg_optim_new(p, &adam);
    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_optim_state_save(a, s), -1);
    assert_has(tg_error(), "tg_optim_state_save: state name for parameter 'wwww");
    assert_has(tg_error(), "' is too long");
    cr_assert_eq(tg_st_set_meta(s, "optim.adam.step", "1"), 0);
    cr_assert_eq(tg_optim_state_load(a, s), -1);
    assert_has(tg_error(), "tg_optim_state_load: state name for parameter 'wwww");
    assert_has(tg_error(), "' is too long");
    tg_st_free(s);
    tg_optim_free(a);
    tg_params_free(p);
}

/* ---- safetensors: argument checks of the public functions ---------------------------------------- */

Test(errors, safetensors_null_arguments)
{
    tg_safetensors *s = tg_st_new();
    tg_params *p = tg_params_new();
    const tg_real v[2] = {1, 2};
    cr_assert_eq(tg_st_add_data(NULL, "x", v, 1, (int[]){2}), -1);
    cr_assert_str_eq(tg_error(), "tg_st_add: set is NULL");
    cr_assert_eq(tg_st_add_data(s, NULL, v, 1, (int[]){2}), -1);
    cr_assert_str_eq(tg_error(), "tg_st_add: name is NULL");
    cr_assert_eq(tg_st_set_meta(s, "k", NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_st_set_meta: NULL argument");
    tg_safetensors *out;
    cr_assert_eq(tg_st_parse((const uint8_t *)"x", 1, "mem", NULL), -1);
    cr_assert_str_eq(tg_error(), "mem: tg_st_parse: out is NULL");
    cr_assert_eq(tg_st_parse(NULL, 8, "mem", &out), -1);
    cr_assert_str_eq(tg_error(), "mem: tg_st_parse: buffer is NULL");
    cr_assert_null(out);
    cr_assert_eq(tg_st_load(NULL, &out), -1);
    cr_assert_str_eq(tg_error(), "tg_st_load: NULL argument");
    cr_assert_eq(tg_st_save(NULL, "x.safetensors", TG_F32), -1);
    cr_assert_str_eq(tg_error(), "tg_st_save: NULL argument");
    cr_assert_eq(tg_st_save(s, "x.safetensors", (tg_dtype)5), -1);
    cr_assert_str_eq(tg_error(), "tg_st_save: unknown dtype 5");
    uint8_t *buf;
    size_t len;
    cr_assert_eq(tg_st_to_bytes(s, TG_F32, NULL, &len), -1);
    cr_assert_str_eq(tg_error(), "tg_st_save: NULL argument");
    cr_assert_eq(tg_st_to_bytes(s, TG_F32, &buf, NULL), -1);
    cr_assert_eq(tg_st_add_params(NULL, p), -1);
    cr_assert_str_eq(tg_error(), "tg_st_add_params: NULL argument");
    cr_assert_eq(tg_st_load_params(p, NULL, true, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_st_load_params: NULL argument");
    cr_assert_eq(access("x.safetensors", F_OK), -1);
    tg_params_free(p);
    tg_st_free(s);
}

/* A file whose size changes under the reader (procfs reports 0 bytes and
 * then delivers more) is refused, naming the file. */
Test(errors, safetensors_file_changed_while_reading)
{
    tg_safetensors *out;
    cr_assert_eq(tg_st_load("/proc/self/status", &out), -1);
    cr_assert_str_eq(tg_error(), "/proc/self/status: read error or the file changed while reading: unexpected length");
    cr_assert_null(out);
}

/* ---- ops: bad arguments, NULL inputs, out of memory ---------------------------- */

/* Every op given a NULL input returns NULL and keeps an earlier message; with
 * no earlier message it names itself. */
Test(errors, null_inputs_keep_the_first_message)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 3, (int[]){2, 3, 4});
    int32_t ids[2] = {0, 0};
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    for (int round = 0; round < 2; round++) {
        const char *names[] = {"tg_reshape", "tg_permute", "tg_transpose", "tg_split_heads", "tg_merge_heads",
                               "tg_concat", "tg_concat", "tg_slice", "tg_layernorm", "tg_embedding",
                               "tg_embedding", "tg_cross_entropy", "tg_cross_entropy", "tg_dropout"};
        for (int k = 0; k < 14; k++) {
            tg_tape_clear_error(t);
            if (round == 0) tg_fail(t, "an earlier error");
            tg_tensor *r = NULL;
            switch (k) {
            case 0: r = tg_reshape(t, NULL, 1, (int[]){-1}); break;
            case 1: r = tg_permute(t, NULL, (int[]){0}); break;
            case 2: r = tg_transpose(t, NULL, 0, 1); break;
            case 3: r = tg_split_heads(t, NULL, 2); break;
            case 4: r = tg_merge_heads(t, NULL); break;
            case 5: r = tg_concat(t, (tg_tensor *[]){x, NULL}, 2); break;
            case 6: r = tg_concat(t, NULL, 2); break;
            case 7: r = tg_slice(t, NULL, 0, 1); break;
            case 8: r = tg_layernorm(t, NULL, NULL, NULL, 1e-5); break;
            case 9: r = tg_embedding(t, NULL, ids, 1, 2); break;
            case 10: r = tg_embedding(t, x, NULL, 1, 2); break;
            case 11: r = tg_cross_entropy(t, NULL, ids, TG_IGNORE); break;
            case 12: r = tg_cross_entropy(t, x, NULL, TG_IGNORE); break;
            case 13: r = tg_dropout(t, NULL, 0.5, &rng); break;
            }
            cr_assert_null(r, "case %d", k);
            const char *msg = tg_tape_error(t);
            cr_assert_not_null(msg);
            if (round == 0)
                cr_assert_str_eq(msg, "an earlier error");
            else
                cr_assert(strstr(msg, names[k]) && strstr(msg, "NULL"), "case %d: %s", k, msg);
        }
    }
    /* no tape: NULL, nothing to report to */
    cr_assert_null(tg_permute(NULL, x, (int[]){0, 1, 2}));
    cr_assert_null(tg_dropout(NULL, x, 0.5, &rng));
    tg_tape_free(t);
}

/* Out of memory in the arena (first allocation) or in the node array (second)
 * gives NULL and a message naming the op; ASan checks nothing leaks. */
Test(errors, out_of_memory_names_the_op)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 4});
    int32_t ids[6] = {0, 1, 2, 3, 0, 1};
    const char *names[] = {"tg_permute", "tg_split_heads", "tg_concat", "tg_slice", "tg_layernorm",
                           "tg_embedding", "tg_cross_entropy", "tg_dropout", "tg_reshape"};
    for (uint64_t at = 1; at <= 2; at++)
        for (int k = 0; k < 9; k++) {
            tg_tape *t = tg_tape_new();
            cr_assert_not_null(t);
            tg_alloc_fail_at(at);
            tg_tensor *r = NULL;
            switch (k) {
            case 0: r = tg_permute(t, x, (int[]){1, 0, 2}); break;
            case 1: r = tg_split_heads(t, x, 2); break;
            case 2: r = tg_concat(t, (tg_tensor *[]){x, x}, 2); break;
            case 3: r = tg_slice(t, x, 1, 2); break;
            case 4: r = tg_layernorm(t, x, NULL, NULL, 1e-5); break;
            case 5: r = tg_embedding(t, x, ids, 2, 3); break;  /* x as [V, D]: see below */
            case 6: r = tg_cross_entropy(t, x, ids, TG_IGNORE); break;
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
            if (k == 8 && at == 2) {  /* a view records no node: nothing else to fail */
                cr_assert_not_null(r);
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
}
