/* charlm: the flag table, parsing, --help, the model families, and the
 * configuration <-> metadata of a model file (a flag "--d-model" is the
 * key "d_model", its value written as on the command line). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/error.h>
#include "charlm.h"

typedef enum { F_INT, F_REAL, F_CHOICE, F_STR, F_BOOL } ftype;

#define C_TRAIN (1u << CL_CMD_TRAIN)
#define C_SAMPLE (1u << CL_CMD_SAMPLE)
enum { M_MODEL = 1, M_TRAIN = 2 };  /* what a model file records */

typedef struct flag {
    const char *name;
    ftype type;
    size_t off, size;
    double lo, hi;
    const char *const *choices;
    const char *def;
    unsigned cmds, meta;
    const char *metavar, *help;
} flag;

static const char *const arch_choices[] = {"gpt2", "llama", NULL};
/* "arch": the family's (cl_model_config); else tg_pos_kind + 1 */
static const char *const pos_choices[] = {"arch", "learned", "rope", "none", NULL};
static const char *const command_names[] = {"train", "sample"};

#define OFF(f) offsetof(cl_config, f)
#define INT(n, f, lo, hi, def, cmds, meta, mv, help) {n, F_INT, OFF(f), 0, lo, hi, NULL, def, cmds, meta, mv, help}
#define REAL(n, f, lo, hi, def, cmds, meta, mv, help) {n, F_REAL, OFF(f), 0, lo, hi, NULL, def, cmds, meta, mv, help}
#define CHOICE(n, f, ch, def, cmds, meta, help) {n, F_CHOICE, OFF(f), 0, 0, 0, ch, def, cmds, meta, NULL, help}
#define STR(n, f, def, cmds, meta, mv, help) \
    {n, F_STR, OFF(f), sizeof(((cl_config *)0)->f), 0, 0, NULL, def, cmds, meta, mv, help}
#define BOOL(n, f, cmds, help) {n, F_BOOL, OFF(f), 0, 0, 0, NULL, "false", cmds, 0, NULL, help}

static const flag flags[] = {
    STR("data", data, "", C_TRAIN, M_MODEL, "FILE",
        "any file, read as bytes; the last tenth is held out [the default corpus]"),
    CHOICE("arch", arch, arch_choices, "gpt2", C_TRAIN, M_MODEL,
           "GPT-2 (LayerNorm, GELU, learned positions, tied head) or LLaMA-style (RMSNorm, SwiGLU, RoPE, "
           "grouped-query attention, no biases)"),
    INT("layers", layers, 1, 64, "4", C_TRAIN, M_MODEL, "N", "transformer blocks"),
    INT("d-model", d_model, 1, 4096, "128", C_TRAIN, M_MODEL, "N", "width of the residual stream"),
    INT("heads", heads, 1, 64, "4", C_TRAIN, M_MODEL, "N", "attention heads (dividing --d-model)"),
    INT("kv-heads", kv_heads, 0, 64, "0", C_TRAIN, M_MODEL, "N", "key/value heads, dividing --heads (0: llama heads/2, gpt2 heads)"),
    INT("d-ff", d_ff, 0, 65536, "0", C_TRAIN, M_MODEL, "N", "feed-forward width (0: 4 * d-model)"),
    INT("context", context, 1, 4096, "64", C_TRAIN, M_MODEL, "T", "bytes the model reads at once"),
    CHOICE("pos", pos, pos_choices, "arch", C_TRAIN, M_MODEL,
           "positions: the family's (gpt2 learned, llama rope), a learned table, rotary, or none"),
    INT("batch", batch, 1, 65536, "32", C_TRAIN, M_TRAIN, "N", "windows of --context bytes per step"),
    INT("steps", steps, 0, 1e9, "600", C_TRAIN, M_TRAIN, "N", "optimizer steps (0: write the initial model)"),
    REAL("lr", lr, 0, 10, "0.003", C_TRAIN, M_TRAIN, "X", "peak learning rate (AdamW, betas 0.9, 0.95)"),
    INT("warmup", warmup, 0, 1e9, "30", C_TRAIN, M_TRAIN, "N", "linear warmup steps, then cosine to lr/10"),
    REAL("weight-decay", weight_decay, 0, 10, "0.1", C_TRAIN, M_TRAIN, "X",
         "decoupled weight decay on matrices (not biases, norms)"),
    REAL("clip", clip, 0, 1e6, "1", C_TRAIN, M_TRAIN, "X", "clip the gradient norm (0: off)"),
    INT("seed", seed, 0, 4e18, "1", C_TRAIN | C_SAMPLE, M_TRAIN, "N",
        "seed of the initialisation and the batches (sample: of the sampler)"),
    INT("eval-every", eval_every, 0, 1e9, "100", C_TRAIN, M_TRAIN, "N", "held-out loss every N steps (0: at the end)"),
    INT("save-every", save_every, 0, 1e9, "200", C_TRAIN, M_TRAIN, "N", "rewrite the checkpoint every N steps"),
    INT("log-every", log_every, 1, 1e9, "50", C_TRAIN, M_TRAIN, "N", "progress line every N steps off a terminal"),
    STR("out", out, "out/charlm", C_TRAIN, 0, "DIR", "output directory [out/charlm, or --resume's]"),
    BOOL("overwrite", overwrite, C_TRAIN, "replace the run in --out"),
    STR("resume", resume, "", C_TRAIN, 0, "FILE", "continue a checkpoint bit for bit (--steps may extend it)"),
    STR("model", model, "", C_SAMPLE, 0, "FILE", "model.safetensors or checkpoint.safetensors (required)"),
    STR("prompt", prompt, "", C_SAMPLE, 0, "TEXT", "text to continue [empty: from a newline]"),
    INT("tokens", tokens, 1, 1e6, "200", C_SAMPLE, 0, "N", "bytes to generate (past the context, from the last half context)"),
    REAL("temperature", temperature, 0, 100, "0.8", C_SAMPLE, 0, "X", "divides the logits (0: greedy)"),
    INT("top-k", top_k, 0, 256, "0", C_SAMPLE, 0, "K", "keep the K most likely bytes (0: all)"),
    REAL("top-p", top_p, 0, 1, "1", C_SAMPLE, 0, "P", "keep the most likely bytes up to probability P (1: all)"),
    STR("png", png, "", C_SAMPLE, 0, "FILE", "write the attention heatmap of prompt + sample"),
    INT("threads", threads, 0, 256, "0", C_TRAIN | C_SAMPLE, 0, "N", "threads (0: one per core)"),
};
#define N_FLAGS ((int)(sizeof flags / sizeof flags[0]))
_Static_assert(sizeof flags / sizeof flags[0] <= CL_MAX_FLAGS, "raise CL_MAX_FLAGS");

/* The model families (nn/model.h). The sizes come from the flags; a row
 * says what kind of block the family uses. */
static const tg_model_config arch_config[CL_ARCH_COUNT] = {
    [CL_ARCH_GPT2] = {.pos = TG_POS_LEARNED, .tie_weights = true},
    [CL_ARCH_LLAMA] = {.pos = TG_POS_ROPE, .norm = TG_NORM_RMS, .ff_act = TG_FFN_SWIGLU, .no_bias = true},
};

/* --kv-heads 0: LLaMA-style models share each key/value head between two
 * query heads (when --heads is even), GPT-2 has one per query head. */
static int kv_heads(const cl_config *c)
{
    if (c->kv_heads) return (int)c->kv_heads;
    return c->arch == CL_ARCH_LLAMA && c->heads % 2 == 0 ? (int)c->heads / 2 : (int)c->heads;
}

tg_model_config cl_model_config(const cl_config *c)
{
    tg_model_config m = arch_config[c->arch];
    m.vocab = CL_VOCAB;
    m.d_model = (int)c->d_model;
    m.n_layers = (int)c->layers;
    m.n_heads = (int)c->heads;
    m.n_kv_heads = kv_heads(c);
    m.d_ff = (int)c->d_ff;
    m.max_len = (int)c->context;
    m.mode = TG_MHA_FUSED;
    if (c->pos) m.pos = (tg_pos_kind)(c->pos - 1);
    return m;
}

int cl_command_parse(const char *name)
{
    for (int i = 0; i < CL_CMD_COUNT; i++)
        if (strcmp(name, command_names[i]) == 0) return i;
    return -1;
}

void cl_usage(FILE *f)
{
    fprintf(f, "usage: charlm train [--data FILE] [--out DIR] [flags]\n"
               "       charlm sample --model FILE [--prompt TEXT] [flags]\n"
               "A byte-level GPT on a text file. charlm <command> --help lists its flags.\n");
}

static void help(cl_command cmd, FILE *out)
{
    fprintf(out, "usage: charlm %s [flags]\n", command_names[cmd]);
    for (int i = 0; i < N_FLAGS; i++) {
        const flag *f = &flags[i];
        if (!(f->cmds & (1u << cmd))) continue;
        char name[64];
        if (f->type == F_CHOICE) {
            size_t n = 0;
            n += (size_t)snprintf(name + n, sizeof name - n, "--%s ", f->name);
            for (int k = 0; f->choices[k]; k++)
                n += (size_t)snprintf(name + n, sizeof name - n, "%s%s", k ? "|" : "", f->choices[k]);
        } else {
            snprintf(name, sizeof name, "--%s%s%s", f->name, f->metavar ? " " : "", f->metavar ? f->metavar : "");
        }
        fprintf(out, "  %-26s %s", name, f->help);
        if (f->type != F_BOOL && f->def[0]) fprintf(out, " (default %s)", f->def);
        fputc('\n', out);
    }
}

/* One value into its field of c; -1 with a message naming the flag. */
static int set_value(cl_config *c, const flag *f, const char *v)
{
    char *p = (char *)c + f->off, *end;
    errno = 0;
    switch (f->type) {
    case F_INT: {
        double d = strtod(v, &end);
        if (!*v || *end || errno || d != floor(d) || d < f->lo || d > f->hi)
            return tg_error_set("--%s %s: expected a whole number in [%.0f, %.0f]", f->name, v, f->lo, f->hi);
        *(long *)(void *)p = (long)d;
        return 0;
    }
    case F_REAL: {
        double d = strtod(v, &end);
        if (!*v || *end || errno || !(d >= f->lo && d <= f->hi))
            return tg_error_set("--%s %s: expected a number in [%g, %g]", f->name, v, f->lo, f->hi);
        *(double *)(void *)p = d;
        return 0;
    }
    case F_CHOICE:
        for (int k = 0; f->choices[k]; k++)
            if (strcmp(v, f->choices[k]) == 0) {
                *(int *)(void *)p = k;
                return 0;
            }
        return tg_error_set("--%s %s: not one of the choices (charlm %s --help)", f->name, v,
                            command_names[c->cmd]);
    case F_STR:
        if (strlen(v) >= f->size) return tg_error_set("--%s: longer than %zu bytes", f->name, f->size - 1);
        memcpy(p, v, strlen(v) + 1);
        return 0;
    case F_BOOL:
        if (strcmp(v, "true") && strcmp(v, "false")) return tg_error_set("--%s: %s is not true or false", f->name, v);
        *(bool *)(void *)p = v[0] == 't';
        return 0;
    }
    return -1;
}

static const flag *find(const char *name)
{
    for (int i = 0; i < N_FLAGS; i++)
        if (strcmp(flags[i].name, name) == 0) return &flags[i];
    return NULL;
}

bool cl_cli_was_set(const cl_config *c, const char *name)
{
    const flag *f = find(name);
    return f && c->set[f - flags];
}

/* The rules between values. */
static int check(cl_config *c)
{
    if (c->cmd == CL_CMD_SAMPLE && !c->model[0]) return tg_error_set("sample needs --model FILE");
    if (c->cmd != CL_CMD_TRAIN) return 0;
    if (c->d_model % c->heads)
        return tg_error_set("--d-model %ld is not divisible by --heads %ld", c->d_model, c->heads);
    if (c->kv_heads && c->heads % c->kv_heads)
        return tg_error_set("--kv-heads %ld does not divide --heads %ld", c->kv_heads, c->heads);
    if (cl_model_config(c).pos == TG_POS_ROPE && (c->d_model / c->heads) % 2)
        return tg_error_set("--pos rope needs an even head width (d-model / heads = %ld)", c->d_model / c->heads);
    if (c->steps && c->warmup >= c->steps)
        return tg_error_set("--warmup %ld must be less than --steps %ld", c->warmup, c->steps);
    return 0;
}

int cl_cli_parse(cl_command cmd, int argc, char **argv, cl_config *c, FILE *out)
{
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    for (int i = 0; i < N_FLAGS; i++)
        if (set_value(c, &flags[i], flags[i].def)) return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help(cmd, out);
            return 1;
        }
        const flag *f = strncmp(a, "--", 2) == 0 ? find(a + 2) : NULL;
        if (!f || !(f->cmds & (1u << cmd)))
            return tg_error_set("unknown flag %s for %s (charlm %s --help)", a, command_names[cmd],
                                command_names[cmd]);
        const char *v = "true";
        if (f->type != F_BOOL) {
            if (i + 1 >= argc) return tg_error_set("--%s needs a value", f->name);
            v = argv[++i];
        }
        if (set_value(c, f, v)) return -1;
        c->set[f - flags] = true;
    }
    return check(c);
}

/* ---- metadata ----------------------------------------------------------- */

static void value_str(const cl_config *c, const flag *f, char *buf, size_t len)
{
    const char *p = (const char *)c + f->off;
    switch (f->type) {
    case F_INT: snprintf(buf, len, "%ld", *(const long *)(const void *)p); break;
    case F_REAL: snprintf(buf, len, "%.17g", *(const double *)(const void *)p); break;
    case F_CHOICE: snprintf(buf, len, "%s", f->choices[*(const int *)(const void *)p]); break;
    case F_STR: snprintf(buf, len, "%s", p); break;
    case F_BOOL: snprintf(buf, len, "%s", *(const bool *)(const void *)p ? "true" : "false"); break;
    }
}

int cl_config_to_meta(const cl_config *c, tg_safetensors *s)
{
    char key[64], val[CL_PATH_MAX + 32];
    for (int i = 0; i < N_FLAGS; i++) {
        if (!flags[i].meta) continue;
        snprintf(key, sizeof key, "%s", flags[i].name);
        for (char *q = key; *q; q++)
            if (*q == '-') *q = '_';
        value_str(c, &flags[i], val, sizeof val);
        if (tg_st_set_meta(s, key, val)) return -1;
    }
    return 0;
}

int cl_config_from_meta(cl_config *c, const tg_safetensors *s, const char *path)
{
    cl_config file = *c;
    char key[64], mine[CL_PATH_MAX + 32], theirs[CL_PATH_MAX + 32];
    for (int i = 0; i < N_FLAGS; i++) {
        const flag *f = &flags[i];
        if (!f->meta) continue;
        snprintf(key, sizeof key, "%s", f->name);
        for (char *q = key; *q; q++)
            if (*q == '-') *q = '_';
        const char *v = tg_st_meta(s, key);
        if (!v) return tg_error_set("%s: metadata \"%s\" is missing: not a charlm model", path, key);
        if (set_value(&file, f, v)) return tg_error_set("%s: metadata \"%s\": %s", path, key, tg_error());
        if (!c->set[i] || !(f->cmds & (1u << c->cmd))) {
            value_str(&file, f, mine, sizeof mine);
            set_value(c, f, mine);
            continue;
        }
        value_str(c, f, mine, sizeof mine);
        value_str(&file, f, theirs, sizeof theirs);
        if ((f->meta & M_MODEL) && strcmp(mine, theirs) != 0)
            return tg_error_set("--%s %s differs from %s's %s (a model's shape and data cannot change)", f->name,
                                mine, path, theirs);
    }
    return 0;
}
