/* charlm: a byte-level GPT trained on a text file. It links seqtask_core
 * for what every training program needs (progress, log.csv and loss.png,
 * the --out directory, stopping on a signal, threads, the resume of the
 * optimizer's state, the attention heatmap) and adds the language model's
 * own parts: the corpus, its batches and held-out loss, and sampling.
 *
 *   charlm train  [--data FILE] [--out DIR] ...   model, checkpoint, log.csv,
 *                                                  loss.png, attention.png
 *   charlm sample --model FILE --prompt "..."     text; --png: its heatmap
 */
#ifndef CHARLM_H
#define CHARLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tapegrad/core/io/io.h>
#include <tapegrad/nn/model.h>

#define CL_PATH_MAX 1024
#define CL_PROMPT_MAX 4096
#define CL_MAX_FLAGS 48
#define CL_FORMAT "charlm-1"
#define CL_VOCAB 256             /* one token per byte */

typedef enum cl_command { CL_CMD_TRAIN, CL_CMD_SAMPLE, CL_CMD_COUNT } cl_command;
/* The model families, one row each of cl_arch_config (cli.c). */
typedef enum cl_arch { CL_ARCH_GPT2, CL_ARCH_LLAMA, CL_ARCH_COUNT } cl_arch;

typedef struct cl_config {
    cl_command cmd;
    /* data */
    char data[CL_PATH_MAX];      /* "" = the default corpus (corpus.c) */
    /* model */
    int arch;                    /* cl_arch */
    long layers, d_model, heads, kv_heads, d_ff, context;
    int pos;                     /* 0: the family's; else tg_pos_kind + 1 */
    /* training */
    long batch, steps, warmup, seed, threads;
    double lr, weight_decay, clip;
    int precision;               /* sq_precision: 0 float32, 1 bfloat16, 2 float16 (autocast's operand type) */
    long eval_every, save_every, log_every;
    char out[CL_PATH_MAX], resume[CL_PATH_MAX];
    bool overwrite;
    /* sample */
    char model[CL_PATH_MAX], prompt[CL_PROMPT_MAX], png[CL_PATH_MAX];
    long tokens, top_k;
    double temperature, top_p;
    bool set[CL_MAX_FLAGS];      /* which flags the command line gave */
} cl_config;

/* ---- cli.c ---- */
/* Parses argv (argv[0] is the command) into c, defaults first. 0; 1 when
 * --help was printed; -1 with a message in tg_error(). */
int cl_cli_parse(cl_command cmd, int argc, char **argv, cl_config *c, FILE *out);
int cl_command_parse(const char *name);
/* Was the flag (without "--") given on the command line? */
bool cl_cli_was_set(const cl_config *c, const char *flag);
void cl_usage(FILE *f);
/* The model of c: its cl_arch row and the sizes of the flags. */
tg_model_config cl_model_config(const cl_config *c);
/* Every model/data/training flag into s's metadata, and back: flags the
 * command line gave keep their values, except model flags, which must
 * agree with the file's. 0, or -1 with a message naming path. */
int cl_config_to_meta(const cl_config *c, tg_safetensors *s);
int cl_config_from_meta(cl_config *c, const tg_safetensors *s, const char *path);

/* ---- corpus.c ---- */
typedef struct cl_corpus {
    uint8_t *bytes;
    size_t n, n_train;           /* [0, n_train) train, [n_train, n) held out */
    unsigned long long hash;     /* FNV-1a of the bytes */
    char name[CL_PATH_MAX];      /* the file, or "default corpus" */
} cl_corpus;

/* --data, or the default corpus (every regular file of
 * /usr/share/common-licenses in name order). The last tenth is held out;
 * each part must hold T + 1 bytes. 0, or -1 with a message naming the file. */
int cl_corpus_load(cl_corpus *k, const char *path, int T);
void cl_corpus_free(cl_corpus *k);
/* The batch of step `step` (a function of seed and step alone): B windows
 * of T + 1 training bytes, ids [B, T] and targets [B, T] (shifted by one). */
void cl_corpus_batch(const cl_corpus *k, uint64_t seed, long step, int B, int T, int32_t *ids, int32_t *targets);
/* Mean cross-entropy (nats per byte) of m over the held-out part in
 * windows of T + 1 (the tail that does not fill one is left out). */
int cl_eval_loss(const tg_model *m, const cl_corpus *k, int B, int T, double *loss);

/* ---- files (train.c) ---- */
/* A new store and model for c (rng NULL: zeros, to load). */
int cl_model_build(const cl_config *c, tg_rng *rng, tg_params **p, tg_model *m);
/* Opens a file of cl_save: its flags into c, the model, the weights; *st
 * (may be NULL) keeps the file for sq_resume_state. */
int cl_open(const char *path, cl_config *c, tg_params **p, tg_model *m, tg_safetensors **st);

/* ---- sample.c (the text itself: tg_model_generate) ---- */
/* The heatmap of every layer and head over bytes[0..L) (at most the first 64). */
int cl_attention_png(const tg_model *m, const int32_t *bytes, int L, const char *path);

/* ---- commands ---- */
int cl_cmd_train(cl_config *c);   /* train.c */
/* cl_cmd_train, stopping after step stop_after as a signal would (the
 * schedule stays that of --steps): the first steps of a long run. */
int cl_train(cl_config *c, long stop_after);
int cl_cmd_sample(cl_config *c);  /* sample.c */

#endif
