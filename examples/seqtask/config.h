/* seqtask: the configuration of a run, filled by the command line (cli.c) and
 * by a model file's metadata (checkpoint.c). */
#ifndef SEQTASK_CONFIG_H
#define SEQTASK_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define SQ_PATH_MAX 1024
#define SQ_INPUT_MAX 4096
#define SQ_MAX_FLAGS 64

typedef enum sq_command { SQ_CMD_TRAIN, SQ_CMD_EVAL, SQ_CMD_GENERATE, SQ_CMD_ATTN, SQ_CMD_HEADS } sq_command;
typedef enum sq_mode { SQ_MODE_FUSED, SQ_MODE_PER_HEAD } sq_mode;
typedef enum sq_sched { SQ_SCHED_CONSTANT, SQ_SCHED_COSINE, SQ_SCHED_LINEAR } sq_sched;
typedef enum sq_optim { SQ_OPT_ADAM, SQ_OPT_ADAMW, SQ_OPT_SGD } sq_optim;

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
    int mode;                    /* sq_mode */
    double dropout;
    /* training */
    long batch, accum, steps, warmup;
    double lr, weight_decay, clip;
    int schedule, optimizer;     /* sq_sched, sq_optim */
    long seed, threads;
    long eval_every, eval_size, save_every, log_every;
    double target_acc;
    char out[SQ_PATH_MAX], init[SQ_PATH_MAX], resume[SQ_PATH_MAX];
    bool overwrite;              /* --out may hold another run: replace it */
    /* eval / generate / attn / heads */
    char model[SQ_PATH_MAX], input[SQ_INPUT_MAX], png[SQ_PATH_MAX];
    long show;
    bool merged;                 /* a checkpoint's flags are in (sq_config_from_meta) */
    /* which flags the command line gave (index into the flag table of cli.c) */
    bool set[SQ_MAX_FLAGS];
} sq_config;

#endif
