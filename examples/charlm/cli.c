/* charlm: the flag table, parsing, --help, the model families, and the
 * configuration <-> metadata of a model file (a flag "--d-model" is the
 * key "d_model", its value written as on the command line). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../seqtask/flags.h"
#include "charlm.h"
#include <tapegrad/core/engine/error.h>

#define C_TRAIN (1u << CL_CMD_TRAIN)
#define C_SAMPLE (1u << CL_CMD_SAMPLE)
enum { M_MODEL = 1, M_TRAIN = 2 }; /* what a model file records */

static const char *const arch_choices[] = {"gpt2", "llama", NULL};
/* sq_precision's order (amp.h) */
static const char *const precision_choices[] = {"f32", "bf16", "f16", NULL};
/* "arch": the family's (cl_model_config); else tg_pos_kind + 1 */
static const char *const pos_choices[] = {"arch", "learned", "rope", "none",
                                          NULL};
static const char *const command_names[] = {"train", "sample"};

#define INT(n, f, lo, hi, def, cmds, meta, mv, help)                           \
  FL_INT_(cl_config, n, f, lo, hi, def, cmds, meta, NULL, mv, help)
#define REAL(n, f, lo, hi, def, cmds, meta, mv, help)                          \
  FL_REAL_(cl_config, n, f, lo, false, hi, false, def, cmds, meta, NULL, mv,   \
           help)
#define CHOICE(n, f, ch, def, cmds, meta, help)                                \
  FL_CHOICE_(cl_config, n, f, ch, def, cmds, meta, NULL, help)
#define STR(n, f, def, cmds, meta, mv, help)                                   \
  FL_STR_(cl_config, n, f, def, cmds, meta, NULL, mv, help)
#define BOOL(n, f, cmds, help) FL_BOOL_(cl_config, n, f, cmds, 0, NULL, help)

static const fl_flag flags[] = {
    STR("data", data, "", C_TRAIN, M_MODEL, "FILE",
        "any file, read as bytes; the last tenth is held out [the default "
        "corpus]"),
    CHOICE("arch", arch, arch_choices, "gpt2", C_TRAIN, M_MODEL,
           "GPT-2 (LayerNorm, GELU, learned positions, tied head) or "
           "LLaMA-style (RMSNorm, SwiGLU, RoPE, "
           "grouped-query attention, no biases)"),
    INT("layers", layers, 1, 64, "4", C_TRAIN, M_MODEL, "N",
        "transformer blocks"),
    INT("d-model", d_model, 1, 4096, "128", C_TRAIN, M_MODEL, "N",
        "width of the residual stream"),
    INT("heads", heads, 1, 64, "4", C_TRAIN, M_MODEL, "N",
        "attention heads (dividing --d-model)"),
    INT("kv-heads", kv_heads, 0, 64, "0", C_TRAIN, M_MODEL, "N",
        "key/value heads, dividing --heads (0: llama heads/2, gpt2 heads)"),
    INT("d-ff", d_ff, 0, 65536, "0", C_TRAIN, M_MODEL, "N",
        "feed-forward width (0: 4 * d-model)"),
    INT("context", context, 1, 4096, "64", C_TRAIN, M_MODEL, "T",
        "bytes the model reads at once"),
    CHOICE("pos", pos, pos_choices, "arch", C_TRAIN, M_MODEL,
           "positions: the family's (gpt2 learned, llama rope), a learned "
           "table, rotary, or none"),
    INT("batch", batch, 1, 65536, "32", C_TRAIN, M_TRAIN, "N",
        "windows of --context bytes per step"),
    INT("steps", steps, 0, 1e9, "600", C_TRAIN, M_TRAIN, "N",
        "optimizer steps (0: write the initial model)"),
    REAL("lr", lr, 0, 10, "0.003", C_TRAIN, M_TRAIN, "X",
         "peak learning rate (AdamW, betas 0.9, 0.95)"),
    INT("warmup", warmup, 0, 1e9, "30", C_TRAIN, M_TRAIN, "N",
        "linear warmup steps, then cosine to lr/10"),
    CHOICE("precision", precision, precision_choices, "f32", C_TRAIN, M_TRAIN | FL_META_LATER,
           "the products' operands: float32, or rounded to bfloat16 or float16 "
           "(autocast; weights and files stay float32; f16 adds dynamic loss "
           "scaling)"),
    REAL("weight-decay", weight_decay, 0, 10, "0.1", C_TRAIN, M_TRAIN, "X",
         "decoupled weight decay on matrices (not biases, norms)"),
    REAL("clip", clip, 0, 1e6, "1", C_TRAIN, M_TRAIN, "X",
         "clip the gradient norm (0: off)"),
    INT("seed", seed, 0, 4e18, "1", C_TRAIN | C_SAMPLE, M_TRAIN, "N",
        "seed of the initialisation and the batches (sample: of the sampler)"),
    INT("eval-every", eval_every, 0, 1e9, "100", C_TRAIN, M_TRAIN, "N",
        "held-out loss every N steps (0: at the end)"),
    INT("save-every", save_every, 0, 1e9, "200", C_TRAIN, M_TRAIN, "N",
        "rewrite the checkpoint every N steps"),
    INT("log-every", log_every, 1, 1e9, "50", C_TRAIN, M_TRAIN, "N",
        "progress line every N steps off a terminal"),
    STR("out", out, "out/charlm", C_TRAIN, 0, "DIR",
        "output directory [out/charlm, or --resume's]"),
    BOOL("overwrite", overwrite, C_TRAIN, "replace the run in --out"),
    STR("resume", resume, "", C_TRAIN, 0, "FILE",
        "continue a checkpoint bit for bit (--steps may extend it)"),
    STR("model", model, "", C_SAMPLE, 0, "FILE",
        "model.safetensors or checkpoint.safetensors (required)"),
    STR("prompt", prompt, "", C_SAMPLE, 0, "TEXT",
        "text to continue [empty: from a newline]"),
    INT("tokens", tokens, 1, 1e6, "200", C_SAMPLE, 0, "N",
        "bytes to generate (past the context, from the last half context)"),
    REAL("temperature", temperature, 0, 100, "0.8", C_SAMPLE, 0, "X",
         "divides the logits (0: greedy)"),
    INT("top-k", top_k, 0, 256, "0", C_SAMPLE, 0, "K",
        "keep the K most likely bytes (0: all)"),
    REAL("top-p", top_p, 0, 1, "1", C_SAMPLE, 0, "P",
         "keep the most likely bytes up to probability P (1: all)"),
    STR("png", png, "", C_SAMPLE, 0, "FILE",
        "write the attention heatmap of prompt + sample"),
    INT("threads", threads, 0, 256, "0", C_TRAIN | C_SAMPLE, 0, "N",
        "threads (0: one per core)"),
};
#define N_FLAGS ((int)(sizeof flags / sizeof flags[0]))
_Static_assert(sizeof flags / sizeof flags[0] <= CL_MAX_FLAGS,
               "raise CL_MAX_FLAGS");
static const fl_table table = {"charlm", flags, N_FLAGS};

/* The model families (nn/model.h). The sizes come from the flags; a row
 * says what kind of block the family uses. */
static const tg_model_config arch_config[CL_ARCH_COUNT] = {
    [CL_ARCH_GPT2] = {.pos = TG_POS_LEARNED, .tie_weights = true},
    [CL_ARCH_LLAMA] = {.pos = TG_POS_ROPE,
                       .norm = TG_NORM_RMS,
                       .ff_act = TG_FFN_SWIGLU,
                       .no_bias = true},
};

/* --kv-heads 0: LLaMA-style models share each key/value head between two
 * query heads (when --heads is even), GPT-2 has one per query head. */
static int kv_heads(const cl_config *c) {
  if (c->kv_heads)
    return (int)c->kv_heads;
  return c->arch == CL_ARCH_LLAMA && c->heads % 2 == 0 ? (int)c->heads / 2
                                                       : (int)c->heads;
}

tg_model_config cl_model_config(const cl_config *c) {
  tg_model_config m = arch_config[c->arch];
  m.vocab = CL_VOCAB;
  m.d_model = (int)c->d_model;
  m.n_layers = (int)c->layers;
  m.n_heads = (int)c->heads;
  m.n_kv_heads = kv_heads(c);
  m.d_ff = (int)c->d_ff;
  m.max_len = (int)c->context;
  m.mode = TG_MHA_FUSED;
  if (c->pos)
    m.pos = (tg_pos_kind)(c->pos - 1);
  return m;
}

int cl_command_parse(const char *name) {
  for (int i = 0; i < CL_CMD_COUNT; i++)
    if (strcmp(name, command_names[i]) == 0)
      return i;
  return -1;
}

void cl_usage(FILE *f) {
  fprintf(f, "usage: charlm train [--data FILE] [--out DIR] [flags]\n"
             "       charlm sample --model FILE [--prompt TEXT] [flags]\n"
             "A byte-level GPT on a text file. charlm <command> --help lists "
             "its flags.\n");
}

bool cl_cli_was_set(const cl_config *c, const char *name) {
  int i = fl_find(&table, name, strlen(name));
  return i >= 0 && c->set[i];
}

/* The rules between values. */
static int check(cl_config *c) {
  if (c->cmd == CL_CMD_SAMPLE && !c->model[0])
    return tg_error_set(
        "charlm sample: --model FILE is required (charlm sample --help)");
  if (c->cmd != CL_CMD_TRAIN)
    return 0;
  if (c->d_model % c->heads)
    return tg_error_set(
        "charlm train: --d-model %ld is not divisible by --heads %ld",
        c->d_model, c->heads);
  if (c->kv_heads && c->heads % c->kv_heads)
    return tg_error_set(
        "charlm train: --kv-heads %ld does not divide --heads %ld", c->kv_heads,
        c->heads);
  if (cl_model_config(c).pos == TG_POS_ROPE && (c->d_model / c->heads) % 2)
    return tg_error_set("charlm train: --pos rope needs an even head width "
                        "(d-model / heads = %ld)",
                        c->d_model / c->heads);
  if (c->steps && c->warmup >= c->steps)
    return tg_error_set(
        "charlm train: --warmup %ld must be less than --steps %ld", c->warmup,
        c->steps);
  return 0;
}

int cl_cli_parse(cl_command cmd, int argc, char **argv, cl_config *c,
                 FILE *out) {
  memset(c, 0, sizeof *c);
  c->cmd = cmd;
  int rc = fl_parse(&table, cmd, command_names[cmd], argc, argv, c, c->set);
  if (rc == 1) {
    fprintf(out, "usage: charlm %s [flags]\n", command_names[cmd]);
    fl_print_help(out, &table, cmd, 0, NULL);
  }
  return rc ? rc : check(c);
}

/* ---- metadata ----------------------------------------------------------- */

static int meta_put(void *s, const char *key, const char *value) {
  return tg_st_set_meta(s, key, value);
}
static const char *meta_get(void *s, const char *key) {
  return tg_st_meta(s, key);
}

int cl_config_to_meta(const cl_config *c, tg_safetensors *s) {
  return fl_to_meta(&table, c, M_MODEL | M_TRAIN, meta_put, s);
}

int cl_config_from_meta(cl_config *c, const tg_safetensors *s,
                        const char *path) {
  return fl_from_meta(&table, c, sizeof *c, c->set, M_MODEL | M_TRAIN, M_MODEL,
                      meta_get, (void *)s, path);
}
