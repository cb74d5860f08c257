/* seqtask: the configuration of a run, filled by the command line (cli.c) and
 * by a model file's metadata (checkpoint.c). */
#ifndef SEQTASK_CONFIG_H
#define SEQTASK_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define SQ_PATH_MAX 1024
#define SQ_INPUT_MAX 4096
#define SQ_MAX_FLAGS 64
/* --collective-timeout's default (seconds): the setup's collectives and
 * the steps until one with an evaluation has been timed wait up to START;
 * then max(MIN, STEPS x the slowest step so far) */
#define SQ_TIMEOUT_START 300.0
#define SQ_TIMEOUT_MIN 60.0
#define SQ_TIMEOUT_STEPS 20.0

/* The commands, one row each: X(id, name, handler, summary, help). cli.c
 * takes the names and texts (it links no handler: the fuzz target and the
 * tests use it alone), commands.c the handlers (declared in commands.h),
 * each indexed by id. docs/DESIGN.md "How to add a seqtask command". */
#define SQ_COMMANDS(X)                                                                                \
    X(SQ_CMD_TRAIN, "train", sq_cmd_train, "train a transformer on copy / reverse / sort or a data file",\
      "Trains a small decoder-only transformer on a sequence task and writes model.safetensors,\n"     \
      "checkpoint.safetensors, log.csv, loss.png and attention.png into --out. A --out that\n"         \
      "holds another run is refused (nothing in it is touched) unless --overwrite is given,\n"         \
      "which removes that run's files first; --resume carries on the run it names.")                  \
    X(SQ_CMD_EVAL, "eval", sq_cmd_eval, "held-out accuracy of a trained model, with its first failures",\
      "Exact-sequence and per-token accuracy of a trained model on held-out examples\n"                \
      "of its task (or --data), with the first failures as input / expected / got.")                  \
    X(SQ_CMD_GENERATE, "generate", sq_cmd_generate, "greedy decoding of one input",                    \
      "Greedy decoding of one input by a trained model.")                                               \
    X(SQ_CMD_ATTN, "attn", sq_cmd_attn, "attention heatmap of every layer and head for one input (PNG)",\
      "The attention heatmap (every layer and head) of a trained model for one input.")                 \
    X(SQ_CMD_HEADS, "heads", sq_cmd_heads, "per head: attention entropy and the accuracy lost without it",\
      "Per head: mean attention entropy and the drop in exact-sequence accuracy when that\n"           \
      "head alone is silenced, as a table and a PNG bar chart.")                                      \
    X(SQ_CMD_EXPORT, "export", sq_cmd_export, "a trained model written again with bfloat16 or float16 weights", \
      "Writes a trained model (or a checkpoint's weights) to --to with its weights as --dtype:\n"     \
      "bfloat16 or float16 halve the file; eval, generate, attn and heads read it as they read\n"      \
      "the original (the weights widen exactly). An existing --to is refused unless --overwrite.")

#define SQ_CMD_ENUM_(id, name, run, summary, help) id,
typedef enum sq_command { SQ_COMMANDS(SQ_CMD_ENUM_) SQ_CMD_COUNT } sq_command;
#undef SQ_CMD_ENUM_
typedef enum sq_mode { SQ_MODE_FUSED, SQ_MODE_PER_HEAD } sq_mode;
typedef enum sq_precision { SQ_PRECISION_F32, SQ_PRECISION_BF16, SQ_PRECISION_F16 } sq_precision;
typedef enum sq_sched { SQ_SCHED_CONSTANT, SQ_SCHED_COSINE, SQ_SCHED_LINEAR } sq_sched;

typedef struct sq_config {
    sq_command cmd;
    /* task */
    int task;                    /* --task: copy, reverse or sort */
    int kind;                    /* the task run: --task, or SQ_TASK_DATA with --data */
    char data[SQ_PATH_MAX];      /* "" = generated task */
    char eval_data[SQ_PATH_MAX];
    long symbols, min_len, max_len;
    bool no_shuffle;
    /* model */
    long layers, d_model, heads, d_head, d_ff;  /* d_head, d_ff: 0 = derived */
    long kv_heads;               /* key/value heads: 0 = heads */
    int pos;                     /* positions: 0 learned, 1 rope, 2 none (tg_pos_kind's order) */
    bool alibi;                  /* ALiBi biases in attention */
    int norm;                    /* 0 LayerNorm, 1 RMSNorm (tg_norm_kind's order) */
    int ffn;                     /* 0 gelu, 1 silu, 2 swiglu, 3 geglu (tg_ffn_act's order) */
    bool no_bias, tie;           /* no biases; head tied to the token embedding */
    int mode;                    /* sq_mode */
    double dropout;
    /* training */
    long batch, accum, steps, warmup;
    double lr, weight_decay, clip;
    int schedule, optimizer;     /* sq_sched; an index into --optimizer's choices */
    int precision;               /* 0 float32, 1 bfloat16, 2 float16 (autocast's operand type) */
    int dtype;                   /* export: 0 bf16, 1 f16, 2 f32 */
    long seed, threads;
    double collective_timeout;   /* seconds; 0: forever; used only when given (else the default above) */
    long eval_every, eval_size, save_every, log_every;
    double target_acc;
    char out[SQ_PATH_MAX], init[SQ_PATH_MAX], resume[SQ_PATH_MAX];
    bool overwrite;              /* --out may hold another run: replace it */
    /* eval / generate / attn / heads */
    char model[SQ_PATH_MAX], input[SQ_INPUT_MAX], png[SQ_PATH_MAX], to[SQ_PATH_MAX];
    long show;
    bool merged;                 /* a checkpoint's flags are in (sq_config_from_meta) */
    bool no_verify;              /* files load without their checksums checked */
    /* which flags the command line gave (index into the flag table of cli.c) */
    bool set[SQ_MAX_FLAGS];
} sq_config;

#endif
