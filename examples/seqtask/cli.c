/* seqtask: the flag table, parsing, --help, and configuration <-> metadata. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "task.h"

typedef enum { F_INT, F_REAL, F_CHOICE, F_STR, F_BOOL } ftype;

#define C_TRAIN (1u << SQ_CMD_TRAIN)
#define C_EVAL (1u << SQ_CMD_EVAL)
#define C_GEN (1u << SQ_CMD_GENERATE)
#define C_ATTN (1u << SQ_CMD_ATTN)
#define C_HEADS (1u << SQ_CMD_HEADS)
#define C_ALL ((1u << SQ_CMD_COUNT) - 1)
#define M_MODEL SQ_META_MODEL
#define M_TASK SQ_META_TASK
#define M_TRAIN SQ_META_TRAIN
#define M_LATER 0x100u  /* model metadata that older files lack: their value is the default */

typedef struct flag {
    const char *name;            /* without "--" */
    ftype type;
    size_t off, size;            /* field of sq_config; size for strings */
    double lo, hi;               /* F_INT / F_REAL range */
    bool lo_open, hi_open;       /* F_REAL: exclusive bounds */
    const char *const *choices;  /* F_CHOICE, NULL-terminated */
    const char *def;             /* default, parsed like a command-line value */
    unsigned cmds, meta;
    const char *group, *metavar, *help;
} flag;

static const char *const task_choices[] = {"copy", "reverse", "sort", NULL};
static const char *const mode_choices[] = {"fused", "per-head", NULL};
static const char *const pos_choices[] = {"learned", "rope", "none", NULL};
static const char *const norm_choices[] = {"layer", "rms", NULL};
static const char *const ffn_choices[] = {"gelu", "silu", "swiglu", "geglu", NULL};
static const char *const sched_choices[] = {"constant", "cosine", "linear", NULL};
static const char *const optim_choices[] = {"adam", "adamw", "sgd", NULL};

#define OFF(f) offsetof(sq_config, f)
#define INT(n, f, lo, hi, def, cmds, meta, grp, mv, help) \
    {n, F_INT, OFF(f), 0, lo, hi, false, false, NULL, def, cmds, meta, grp, mv, help}
#define REAL(n, f, lo, lo_open, hi, hi_open, def, cmds, meta, grp, mv, help) \
    {n, F_REAL, OFF(f), 0, lo, hi, lo_open, hi_open, NULL, def, cmds, meta, grp, mv, help}
#define CHOICE(n, f, ch, def, cmds, meta, grp, help) \
    {n, F_CHOICE, OFF(f), 0, 0, 0, false, false, ch, def, cmds, meta, grp, NULL, help}
#define STR(n, f, def, cmds, meta, grp, mv, help) \
    {n, F_STR, OFF(f), sizeof(((sq_config *)0)->f), 0, 0, false, false, NULL, def, cmds, meta, grp, mv, help}
#define BOOL(n, f, cmds, meta, grp, help) \
    {n, F_BOOL, OFF(f), 0, 0, 0, false, false, NULL, "false", cmds, meta, grp, NULL, help}

static const flag flags[] = {
    STR("model", model, "", C_EVAL | C_GEN | C_ATTN | C_HEADS, 0, "input", "FILE",
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
    STR("out", out, "", C_TRAIN, 0, "output", "DIR",
        "output directory [out/<task>, or the --resume file's directory]"),
    BOOL("overwrite", overwrite, C_TRAIN, 0, "output",
         "replace the run in --out (without it, a --out that holds log.csv or a model is refused)"),
    INT("save-every", save_every, 0, 1e9, "500", C_TRAIN, M_TRAIN, "output", "N",
        "rewrite checkpoint.safetensors every N steps (0: at the end)"),
    INT("log-every", log_every, 1, 1e9, "100", C_TRAIN, M_TRAIN, "output", "N",
        "progress line every N steps when stderr is not a terminal"),
    STR("init", init, "", C_TRAIN, 0, "starting point", "FILE",
        "start from the weights of a safetensors file"),
    STR("resume", resume, "", C_TRAIN, 0, "starting point", "FILE",
        "continue a checkpoint bit for bit (its flags unless given again)"),
    INT("threads", threads, 0, 256, "0", C_ALL, 0, "compute", "N",
        "threads for GEMMs and large loops (0: one per core)"),
};
#define N_FLAGS ((int)(sizeof flags / sizeof flags[0]))
_Static_assert(sizeof flags / sizeof flags[0] <= SQ_MAX_FLAGS, "raise SQ_MAX_FLAGS");

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

/* "an integer in [1, 64]" / "one of fused, per-head" ... into buf. */
static const char *allowed(const flag *fl, char *buf, size_t len)
{
    switch (fl->type) {
    case F_INT: snprintf(buf, len, "an integer in [%.0f, %.0f]", fl->lo, fl->hi); break;
    case F_REAL:
        snprintf(buf, len, "a number in %c%g, %g%c", fl->lo_open ? '(' : '[', fl->lo, fl->hi,
                 fl->hi_open ? ')' : ']');
        break;
    case F_CHOICE: {
        size_t n = (size_t)snprintf(buf, len, "one of ");
        for (int i = 0; fl->choices[i] && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", fl->choices[i]);
        break;
    }
    case F_STR: snprintf(buf, len, "a string of fewer than %zu bytes", fl->size); break;
    case F_BOOL: snprintf(buf, len, "true or false"); break;
    }
    return buf;
}

/* Stores value into c's field; -1 (nothing stored) when it is not allowed. */
static int set_value(const flag *fl, sq_config *c, const char *value)
{
    char *p = (char *)c + fl->off, *end;
    errno = 0;
    switch (fl->type) {
    case F_INT: {
        long long v = strtoll(value, &end, 10);
        if (end == value || *end || errno || (double)v < fl->lo || (double)v > fl->hi) return -1;
        *(long *)p = (long)v;
        return 0;
    }
    case F_REAL: {
        double v = strtod(value, &end);
        if (end == value || *end || errno || !isfinite(v)) return -1;
        if (v < fl->lo || v > fl->hi || (fl->lo_open && v == fl->lo) || (fl->hi_open && v == fl->hi))
            return -1;
        *(double *)p = v;
        return 0;
    }
    case F_CHOICE:
        for (int i = 0; fl->choices[i]; i++)
            if (strcmp(value, fl->choices[i]) == 0) {
                *(int *)p = i;
                return 0;
            }
        return -1;
    case F_STR:
        if (strlen(value) >= fl->size) return -1;
        strcpy(p, value);
        return 0;
    case F_BOOL:
        if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0) return -1;
        *(bool *)p = value[0] == 't';
        return 0;
    }
    return -1;
}

/* The value of c's field as text (the inverse of set_value). */
static void get_value(const flag *fl, const sq_config *c, char *buf, size_t len)
{
    const char *p = (const char *)c + fl->off;
    switch (fl->type) {
    case F_INT: snprintf(buf, len, "%ld", *(const long *)p); break;
    case F_REAL: /* the shortest text that reads back as the same double */
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, len, "%.*g", prec, *(const double *)p);
            if (strtod(buf, NULL) == *(const double *)p) break;
        }
        break;
    case F_CHOICE: snprintf(buf, len, "%s", fl->choices[*(const int *)p]); break;
    case F_STR: snprintf(buf, len, "%s", p); break;
    case F_BOOL: snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false"); break;
    }
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
};

static void flag_help(const flag *fl, sq_command cmd, const char **group, const char **help)
{
    *group = fl->group;
    *help = fl->help;
    for (size_t i = 0; i < sizeof model_help / sizeof model_help[0]; i++)
        if ((model_help[i].cmds & (1u << cmd)) && strcmp(model_help[i].name, fl->name) == 0) {
            *group = model_help[i].group;
            *help = model_help[i].help;
        }
}

#define HELP_COL 30    /* where a flag's text starts */
#define HELP_WIDTH 100 /* no help line is longer */

/* "  --name VALUE   text", the text word-wrapped at HELP_WIDTH and starting
 * on the next line when the flag reaches into its column. */
static void print_flag(FILE *f, const char *left, const char *text)
{
    int col = fprintf(f, "  %s", left);
    if (col >= HELP_COL) {
        fputc('\n', f);
        col = 0;
    }
    while (*text) {
        int w = (int)strcspn(text, " ");
        if (col > HELP_COL && col + 1 + w > HELP_WIDTH) {
            fputc('\n', f);
            col = 0;
        }
        col += col < HELP_COL ? fprintf(f, "%*s", HELP_COL - col, "") : fprintf(f, " ");
        col += fprintf(f, "%.*s", w, text);
        text += w;
        text += strspn(text, " ");
    }
    fputc('\n', f);
}

/* The command's flags group by group, groups in the order the table first
 * uses them. */
static void print_help(sq_command cmd, FILE *f)
{
    fprintf(f, "usage: seqtask %s [flags]\n\n%s\n", commands[cmd].name, commands[cmd].help);
    const char *groups[N_FLAGS];
    int n_groups = 0;
    for (int i = 0; i < N_FLAGS; i++) {
        const char *group, *help;
        if (!(flags[i].cmds & (1u << cmd))) continue;
        flag_help(&flags[i], cmd, &group, &help);
        int g = 0;
        while (g < n_groups && strcmp(groups[g], group) != 0) g++;
        if (g == n_groups) groups[n_groups++] = group;
    }
    char value[128], left[160], text[320];
    for (int g = 0; g < n_groups; g++) {
        fprintf(f, "\n%s:\n", groups[g]);
        for (int i = 0; i < N_FLAGS; i++) {
            const flag *fl = &flags[i];
            const char *group, *help;
            if (!(fl->cmds & (1u << cmd))) continue;
            flag_help(fl, cmd, &group, &help);
            if (strcmp(group, groups[g]) != 0) continue;
            if (fl->type == F_CHOICE) {
                size_t n = 0;
                for (int k = 0; fl->choices[k]; k++)
                    n += (size_t)snprintf(value + n, sizeof value - n, "%s%s", k ? "|" : "", fl->choices[k]);
            } else {
                snprintf(value, sizeof value, "%s", fl->metavar ? fl->metavar : "");
            }
            snprintf(left, sizeof left, "--%s %s", fl->name, value);
            if (cmd != SQ_CMD_TRAIN && (fl->meta & M_TASK)) snprintf(text, sizeof text, "%s [the model's]", help);
            else if (fl->type != F_BOOL && fl->def && fl->def[0]) snprintf(text, sizeof text, "%s [%s]", help, fl->def);
            else snprintf(text, sizeof text, "%s", help);
            print_flag(f, left, text);
        }
    }
    fputc('\n', f);
    print_flag(f, "--help", "this text");
}

static const flag *find_flag(const char *name, size_t len, int *index)
{
    for (int i = 0; i < N_FLAGS; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0) {
            *index = i;
            return &flags[i];
        }
    return NULL;
}

int sq_cli_parse(sq_command cmd, int argc, char **argv, sq_config *c, FILE *out)
{
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    for (int i = 0; i < N_FLAGS; i++)
        if (flags[i].def) set_value(&flags[i], c, flags[i].def);
    const char *cn = commands[cmd].name;
    char buf[160];
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(cmd, out);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            tg_error_set("seqtask %s: unexpected argument '%s' (flags start with --; "
                         "seqtask %s --help lists them)", cn, arg, cn);
            return -1;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        int idx;
        const flag *fl = find_flag(name, eq ? (size_t)(eq - name) : strlen(name), &idx);
        if (!fl || !(fl->cmds & (1u << cmd))) {
            tg_error_set("seqtask %s: unknown flag %.*s (seqtask %s --help lists the flags)",
                         cn, (int)(eq ? eq - arg : (long)strlen(arg)), arg, cn);
            return -1;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (fl->type == F_BOOL && !value) value = "true";
        if (!value) {
            if (a + 1 >= argc) {
                tg_error_set("seqtask %s: --%s needs a value: %s", cn, fl->name,
                             allowed(fl, buf, sizeof buf));
                return -1;
            }
            value = argv[++a];
        }
        if (set_value(fl, c, value) != 0) {
            tg_error_set("seqtask %s: --%s '%s' is not allowed: expected %s", cn, fl->name,
                         value, allowed(fl, buf, sizeof buf));
            return -1;
        }
        c->set[idx] = true;
    }
    return 0;
}

const char *sq_cli_choice(const sq_config *c, const char *name)
{
    int index;
    const flag *fl = find_flag(name, strlen(name), &index);
    return fl && fl->type == F_CHOICE ? fl->choices[*(const int *)((const char *)c + fl->off)] : NULL;
}

bool sq_cli_was_set(const sq_config *c, const char *name)
{
    int idx;
    return find_flag(name, strlen(name), &idx) && c->set[idx];
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
                        : c->cmd == SQ_CMD_ATTN && !c->png[0] ? "--png FILE" : NULL;
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

/* "d-model" -> "d_model" */
static void meta_key(const flag *fl, char *key, size_t len)
{
    snprintf(key, len, "%s", fl->name);
    for (char *s = key; *s; s++)
        if (*s == '-') *s = '_';
}

int sq_config_to_meta(const sq_config *c, unsigned mask, sq_meta_put put, void *ctx)
{
    char key[64], value[SQ_INPUT_MAX];
    for (int i = 0; i < N_FLAGS; i++) {
        if (!(flags[i].meta & mask)) continue;
        meta_key(&flags[i], key, sizeof key);
        get_value(&flags[i], c, value, sizeof value);
        if (put(ctx, key, value) != 0) return -1;
    }
    return 0;
}

int sq_config_from_meta(sq_config *c, unsigned mask, unsigned must_match, sq_meta_get get,
                        void *ctx, const char *what)
{
    char key[64], buf[160], mine[SQ_INPUT_MAX], theirs[SQ_INPUT_MAX];
    sq_config tmp = *c;
    for (int i = 0; i < N_FLAGS; i++) {
        const flag *fl = &flags[i];
        if (!(fl->meta & mask)) continue;
        meta_key(fl, key, sizeof key);
        const char *v = get(ctx, key);
        if (!v && (fl->meta & M_LATER)) v = fl->def;
        if (!v) {
            tg_error_set("%s: the metadata has no '%s' (not written by seqtask train?)", what,
                         key);
            return -1;
        }
        if (set_value(fl, &tmp, v) != 0) {
            tg_error_set("%s: metadata '%s' = '%.64s' is not allowed: expected %s", what, key,
                         v, allowed(fl, buf, sizeof buf));
            return -1;
        }
        if (!c->set[i]) continue;
        get_value(fl, c, mine, sizeof mine);
        get_value(fl, &tmp, theirs, sizeof theirs);
        if ((fl->meta & must_match) && strcmp(mine, theirs) != 0) {
            tg_error_set("--%s %s differs from %s's %s (a resumed run keeps the model and "
                         "task of its checkpoint)", fl->name, mine, what, theirs);
            return -1;
        }
        set_value(fl, &tmp, mine);  /* the command line wins */
    }
    *c = tmp;
    c->merged = true;
    return 0;
}
