/* seqtask: the flag table, parsing, --help, and configuration <-> metadata. */
#include "cli.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "task.h"

#define C_TRAIN (1u << SQ_CMD_TRAIN)
#define C_EVAL (1u << SQ_CMD_EVAL)
#define C_GEN (1u << SQ_CMD_GENERATE)
#define C_ATTN (1u << SQ_CMD_ATTN)
#define C_HEADS (1u << SQ_CMD_HEADS)
#define C_EXPORT (1u << SQ_CMD_EXPORT)
#define C_ALL ((1u << SQ_CMD_COUNT) - 1)
#define M_MODEL SQ_META_MODEL
#define M_TASK SQ_META_TASK
#define M_TRAIN SQ_META_TRAIN
#define M_LATER FL_META_LATER  /* model metadata that older files lack: their value is the default */

static const char *const task_choices[] = {"copy", "reverse", "sort", NULL};
static const char *const mode_choices[] = {"fused", "per-head", NULL};
static const char *const pos_choices[] = {"learned", "rope", "none", NULL};
static const char *const norm_choices[] = {"layer", "rms", NULL};
static const char *const ffn_choices[] = {"gelu", "silu", "swiglu", "geglu", NULL};
static const char *const sched_choices[] = {"constant", "cosine", "linear", NULL};
static const char *const optim_choices[] = {"adam", "adamw", "sgd", NULL};
static const char *const precision_choices[] = {"f32", "bf16", "f16", NULL};
static const char *const dtype_choices[] = {"bf16", "f16", "f32", NULL};

#define INT(...) FL_INT_(sq_config, __VA_ARGS__)
#define REAL(...) FL_REAL_(sq_config, __VA_ARGS__)
#define CHOICE(...) FL_CHOICE_(sq_config, __VA_ARGS__)
#define STR(...) FL_STR_(sq_config, __VA_ARGS__)
#define BOOL(...) FL_BOOL_(sq_config, __VA_ARGS__)

static const fl_flag flags[] = {
    STR("model", model, "", C_EVAL | C_GEN | C_ATTN | C_HEADS | C_EXPORT, 0, "input", "FILE",
        "model.safetensors or checkpoint.safetensors (required)"),
    STR("input", input, "", C_GEN | C_ATTN, 0, "input", "\"S S ..\"",
        "source: symbols in [0, symbols) separated by spaces (required)"),
    CHOICE("task", task, task_choices, "reverse", C_TRAIN, M_TASK, "task",
           "generated task: y = x, x reversed or x sorted"),
    STR("data", data, "", C_TRAIN | C_EVAL | C_HEADS, M_TASK, "task", "FILE",
        "examples from a file: per line, source symbols, a tab, target symbols"),
    STR("eval-data", eval_data, "", C_TRAIN, M_TASK, "task", "FILE",
        "held-out examples for --data [its first --eval-size lines]"),
    BOOL("no-shuffle", no_shuffle, C_TRAIN, M_TASK, "task",
         "with --data: batch k holds lines k*B .. k*B+B-1, wrapping around"),
    INT("symbols", symbols, 1, 65536, "16", C_TRAIN, M_MODEL | M_TASK, "task", "N",
        "number of symbols (vocabulary = symbols + 4: PAD BOS SEP EOS)"),
    INT("min-len", min_len, 1, 2048, "4", C_TRAIN, M_TASK, "task", "N", "shortest generated source"),
    INT("max-len", max_len, 1, 2048, "12", C_TRAIN, M_MODEL | M_TASK, "task", "N",
        "longest source; positions Tmax = 2 * max-len + 3"),
    INT("layers", layers, 1, 64, "2", C_TRAIN, M_MODEL, "model", "N", "transformer blocks"),
    INT("d-model", d_model, 1, 4096, "64", C_TRAIN, M_MODEL, "model", "N", "width of the residual stream"),
    INT("heads", heads, 1, 64, "4", C_TRAIN, M_MODEL, "model", "N", "attention heads per block"),
    INT("d-head", d_head, 0, 4096, "0", C_TRAIN, M_MODEL, "model", "N",
        "width of one head (0: d-model / heads)"),
    INT("kv-heads", kv_heads, 0, 64, "0", C_TRAIN, M_MODEL | M_LATER, "model", "N",
        "key/value heads, dividing --heads (grouped-query attention; 1: multi-query; 0: --heads)"),
    CHOICE("pos", pos, pos_choices, "learned", C_TRAIN, M_MODEL | M_LATER, "model",
           "positions: a learned table, rotary embeddings on q and k, or none (the causal mask only)"),
    BOOL("alibi", alibi, C_TRAIN, M_MODEL | M_LATER, "model",
         "ALiBi: each head adds a slope times (key - query position) to its scores (e.g. with --pos none)"),
    CHOICE("norm", norm, norm_choices, "layer", C_TRAIN, M_MODEL | M_LATER, "model",
           "the blocks' and the final norm: LayerNorm or RMSNorm"),
    CHOICE("ffn", ffn, ffn_choices, "gelu", C_TRAIN, M_MODEL | M_LATER, "model",
           "feed-forward activation; swiglu and geglu are gated (a third projection)"),
    BOOL("no-bias", no_bias, C_TRAIN, M_MODEL | M_LATER, "model",
         "no bias in attention, feed-forward or head (LLaMA's; LayerNorm keeps its own)"),
    BOOL("tie", tie, C_TRAIN, M_MODEL | M_LATER, "model",
         "the head's weight is the token embedding's (GPT-2's weight tying; no head bias)"),
    INT("d-ff", d_ff, 0, 65536, "0", C_TRAIN, M_MODEL, "model", "N",
        "hidden width of the feed-forward layer (0: 4 * d-model)"),
    CHOICE("mode", mode, mode_choices, "fused", C_TRAIN, M_MODEL, "model",
           "attention: one packed projection for all heads or one per head"),
    REAL("dropout", dropout, 0, false, 1, true, "0", C_TRAIN, M_MODEL, "model", "P",
         "dropout on attention weights and residual branches"),
    INT("batch", batch, 1, 65536, "64", C_TRAIN, M_TRAIN, "training", "N", "sequences per step"),
    INT("accum", accum, 1, 65536, "1", C_TRAIN, 0, "training", "N",
        "gradient accumulation: each step's batch in N micro-batches, one loss over all of it"),
    INT("steps", steps, 1, 1e9, "1000", C_TRAIN, M_TRAIN, "training", "N", "optimizer steps at most"),
    REAL("lr", lr, 0, true, 10, false, "0.001", C_TRAIN, M_TRAIN, "training", "X", "peak learning rate"),
    /* no default value: sq_cli_check_values derives it from --steps */
    INT("warmup", warmup, 0, 1e9, NULL, C_TRAIN, M_TRAIN, "training", "N",
        "linear warmup steps [min(50, steps / 10)]"),
    CHOICE("schedule", schedule, sched_choices, "cosine", C_TRAIN, M_TRAIN, "training",
           "learning rate after warmup (decays reach lr/10 at --steps)"),
    CHOICE("optimizer", optimizer, optim_choices, "adamw", C_TRAIN, M_TRAIN, "training",
           "Adam, AdamW (betas 0.9, 0.98) or SGD (momentum 0.9)"),
    CHOICE("precision", precision, precision_choices, "f32", C_TRAIN, M_TRAIN | M_LATER, "training",
           "the products' operands: float32, or rounded to bfloat16 or float16 (autocast; weights, "
           "optimizer and checkpoints stay float32; f16 adds dynamic loss scaling)"),
    REAL("weight-decay", weight_decay, 0, false, 10, false, "0.01", C_TRAIN, M_TRAIN, "training", "X",
         "weight decay (AdamW: decoupled, not on biases and LayerNorm)"),
    REAL("clip", clip, 0, false, 1e6, false, "1", C_TRAIN, M_TRAIN, "training", "X",
         "clip the global gradient norm to X (0: off)"),
    INT("seed", seed, 0, 4e18, "1", C_TRAIN | C_EVAL | C_HEADS, M_TASK, "training", "N",
        "seed of the initialisation, the data stream and the held-out set"),
    INT("eval-every", eval_every, 0, 1e9, "50", C_TRAIN, M_TRAIN, "evaluation", "N",
        "evaluate every N steps (0: only at the end)"),
    INT("eval-size", eval_size, 1, 1e6, "500", C_TRAIN | C_EVAL | C_HEADS, M_TRAIN, "evaluation", "N",
        "held-out examples per evaluation"),
    REAL("target-acc", target_acc, 0, false, 1, false, "0.99", C_TRAIN, M_TRAIN, "evaluation", "X",
         "stop at this held-out exact-sequence accuracy (0: never)"),
    INT("show", show, 0, 1000, "5", C_EVAL, 0, "evaluation", "N", "failures to print"),
    STR("png", png, "", C_ATTN | C_HEADS, 0, "output", "FILE", "PNG to write (required)"),
    STR("to", to, "", C_EXPORT, 0, "output", "FILE", "the model file to write (required)"),
    CHOICE("dtype", dtype, dtype_choices, "bf16", C_EXPORT, 0, "output", "the weights' type in the file"),
    STR("out", out, "", C_TRAIN, 0, "output", "DIR",
        "output directory [out/<task>, or the --resume file's directory]"),
    BOOL("overwrite", overwrite, C_TRAIN | C_EXPORT, 0, "output",
         "replace the run in --out (without it, a --out that holds log.csv or a model is refused)"),
    INT("save-every", save_every, 0, 1e9, "500", C_TRAIN, M_TRAIN, "output", "N",
        "rewrite checkpoint.safetensors every N steps (0: at the end)"),
    INT("log-every", log_every, 1, 1e9, "100", C_TRAIN, M_TRAIN, "output", "N",
        "progress line every N steps when stderr is not a terminal"),
    STR("init", init, "", C_TRAIN, 0, "starting point", "FILE",
        "start from the weights of a safetensors file"),
    STR("resume", resume, "", C_TRAIN, 0, "starting point", "FILE",
        "continue a checkpoint bit for bit (its flags unless given again)"),
    BOOL("no-verify", no_verify, C_ALL, 0, "starting point",
         "read --init or --resume without verifying its checksums (at your risk)"),
    INT("threads", threads, 0, 256, "0", C_ALL, 0, "compute", "N",
        "threads for GEMMs and large loops (0: one per core)"),
    REAL("collective-timeout", collective_timeout, 0, false, 1e9, false, NULL, C_TRAIN, 0, "compute", "X",
         "under mpirun: end the job when a rank is not heard from for X seconds (0: wait forever) "
         "[300 until a step with an evaluation is timed, then max(60, 20 x the slowest step)]"),
};
#define N_FLAGS ((int)(sizeof flags / sizeof flags[0]))
_Static_assert(sizeof flags / sizeof flags[0] <= SQ_MAX_FLAGS, "raise SQ_MAX_FLAGS");
static const fl_table table = {"seqtask", flags, N_FLAGS};

#define CMD_ROW_(id, nm, run, sum, hlp) [id] = {nm, sum, hlp},
static const struct {
    const char *name, *summary, *help;
} commands[SQ_CMD_COUNT] = {SQ_COMMANDS(CMD_ROW_)};
#undef CMD_ROW_

int sq_command_parse(const char *name)
{
    for (int i = 0; i < SQ_CMD_COUNT; i++)
        if (strcmp(name, commands[i].name) == 0) return i;
    return -1;
}

const char *sq_command_name(sq_command cmd) { return (unsigned)cmd < SQ_CMD_COUNT ? commands[cmd].name : NULL; }

void sq_usage(FILE *f)
{
    fprintf(f, "usage: seqtask COMMAND [flags]     (seqtask COMMAND --help for its flags)\n\n");
    for (int i = 0; i < SQ_CMD_COUNT; i++) fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nexample: seqtask train --task reverse --out out/reverse\n");
}

/* The flags that read differently for the commands that open a trained
 * model: the group and help line they have there. */
static const struct {
    const char *name;
    unsigned cmds;
    const char *group, *help;
} model_help[] = {
    {"data", C_EVAL | C_HEADS, "input", "held-out examples from a file (as train --data)"},
    {"seed", C_EVAL | C_HEADS, "evaluation", "seed of the held-out set of a generated task"},
    {"eval-size", C_EVAL | C_HEADS, "evaluation", "held-out examples"},
    {"png", C_HEADS, "output", "PNG bar chart to write (default: heads.png beside the model)"},
    {"overwrite", C_EXPORT, "output", "replace an existing --to"},
    {"no-verify", C_EVAL | C_GEN | C_ATTN | C_HEADS | C_EXPORT, "input",
     "read --model without verifying its checksums (at your risk)"},
};

static void flag_help(const fl_flag *fl, unsigned cmd, const char **group, const char **help)
{
    for (size_t i = 0; i < sizeof model_help / sizeof model_help[0]; i++)
        if ((model_help[i].cmds & (1u << cmd)) && strcmp(model_help[i].name, fl->name) == 0) {
            *group = model_help[i].group;
            *help = model_help[i].help;
        }
}

int sq_cli_parse(sq_command cmd, int argc, char **argv, sq_config *c, FILE *out)
{
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    int rc = fl_parse(&table, cmd, commands[cmd].name, argc, argv, c, c->set);
    if (rc == 1) {
        fprintf(out, "usage: seqtask %s [flags]\n\n%s\n", commands[cmd].name, commands[cmd].help);
        fl_print_help(out, &table, cmd, cmd != SQ_CMD_TRAIN ? M_TASK : 0, flag_help);
    }
    return rc;
}

const char *sq_cli_choice(const sq_config *c, const char *name)
{
    int i = fl_find(&table, name, strlen(name));
    return i >= 0 && flags[i].type == FL_CHOICE ? flags[i].choices[*(const int *)((const char *)c + flags[i].off)] : NULL;
}

bool sq_cli_was_set(const sq_config *c, const char *name)
{
    int i = fl_find(&table, name, strlen(name));
    return i >= 0 && c->set[i];
}

static int check_train(const sq_config *c)
{
    if (c->resume[0] && c->init[0]) {
        tg_error_set("seqtask train: --resume and --init exclude each other");
        return -1;
    }
    /* the rest of a resumed run is checked once its checkpoint's flags are in */
    if (c->resume[0] && !c->merged) return 0;
    if (c->data[0] && sq_cli_was_set(c, "task")) {
        tg_error_set("seqtask train: --task and --data exclude each other (a data file "
                     "is its own task)");
        return -1;
    }
    if (!c->data[0] && (c->no_shuffle || c->eval_data[0])) {
        tg_error_set("seqtask train: --%s needs --data FILE",
                     c->no_shuffle ? "no-shuffle" : "eval-data");
        return -1;
    }
    return 0;
}

int sq_cli_check(sq_config *c)
{
    const char *cn = commands[c->cmd].name;
    c->kind = c->data[0] ? SQ_TASK_DATA : c->task;
    if (c->cmd == SQ_CMD_TRAIN) return check_train(c);
    const char *missing = !c->model[0] ? "--model FILE"
                        : (c->cmd == SQ_CMD_GENERATE || c->cmd == SQ_CMD_ATTN) && !c->input[0]
                            ? "--input \"S S ..\""
                        : c->cmd == SQ_CMD_ATTN && !c->png[0] ? "--png FILE"
                        : c->cmd == SQ_CMD_EXPORT && !c->to[0] ? "--to FILE" : NULL;
    if (missing) {
        tg_error_set("seqtask %s: %s is required (seqtask %s --help)", cn, missing, cn);
        return -1;
    }
    return 0;
}

int sq_cli_check_values(sq_config *c)
{
    if (c->cmd != SQ_CMD_TRAIN) return 0;
    if (c->min_len > c->max_len) {
        tg_error_set("--min-len %ld is more than --max-len %ld", c->min_len, c->max_len);
        return -1;
    }
    if (c->d_head == 0 && c->d_model % c->heads != 0) {
        tg_error_set("--d-model %ld is not divisible by --heads %ld (give --d-head N)",
                     c->d_model, c->heads);
        return -1;
    }
    if (c->kv_heads && c->heads % c->kv_heads != 0) {
        tg_error_set("--kv-heads %ld does not divide --heads %ld", c->kv_heads, c->heads);
        return -1;
    }
    /* a resumed run keeps its checkpoint's warmup */
    if (!sq_cli_was_set(c, "warmup") && !c->merged) c->warmup = c->steps / 10 < 50 ? c->steps / 10 : 50;
    if (c->schedule != SQ_SCHED_CONSTANT && c->warmup >= c->steps) {
        tg_error_set("--warmup %ld must be less than --steps %ld with --schedule %s",
                     c->warmup, c->steps, sched_choices[c->schedule]);
        return -1;
    }
    if (c->d_head == 0) c->d_head = c->d_model / c->heads;
    if (c->d_ff == 0) c->d_ff = 4 * c->d_model;
    return 0;
}

int sq_config_to_meta(const sq_config *c, unsigned mask, sq_meta_put put, void *ctx)
{
    return fl_to_meta(&table, c, mask, put, ctx);
}

int sq_config_from_meta(sq_config *c, unsigned mask, unsigned must_match, sq_meta_get get,
                        void *ctx, const char *what)
{
    if (fl_from_meta(&table, c, sizeof *c, c->set, mask, must_match, get, ctx, what)) return -1;
    c->merged = true;
    return 0;
}
