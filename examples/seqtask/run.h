/* seqtask: what every command needs before it runs: BLAS threads, the data
 * file, the task's example stream and the held-out set. */
#ifndef SEQTASK_RUN_H
#define SEQTASK_RUN_H

#include <stddef.h>

#include <tapegrad/nn/model.h>
#include "config.h"
#include "eval.h"
#include "task.h"

typedef struct sq_run {
    sq_dataset *data;            /* --data FILE, or NULL */
    sq_task task;
    sq_dataset *eval;            /* held-out examples */
} sq_run;

/* Reads the data files, then checks the values of c (sq_cli_check_values:
 * a bad file is reported before a conflict between flags). Held-out set:
 * --eval-size examples from the held-out part of a generated task; with
 * --data, the first --eval-size lines of --eval-data, or of --data itself
 * when there is no --eval-data (then they are not held out: a note says
 * so). 0, or -1 with a message naming the file and line, or the flags. */
int sq_run_init(sq_run *r, sq_config *c);
void sq_run_free(sq_run *r);

/* What the commands that read a trained model (eval, generate, attn,
 * heads) open: --model, a decoder for it and, with_set, the held-out set. */
typedef struct sq_session {
    tg_params *p;
    tg_model m;
    sq_decoder d;
    sq_run run;                  /* with_set only */
    bool with_set;
} sq_session;

/* Sets --threads, then opens c->model (sq_open), the held-out set
 * (sq_run_init) when with_set, and the decoder. 0; else, after printing
 * "seqtask <command>: <why>", the exit status: SQ_EXIT_USAGE for a file or
 * flag refused, 1 for a failure (out of memory), nothing left open. */
int sq_session_open(sq_session *s, sq_config *c, bool with_set);
void sq_session_close(sq_session *s);
/* --input parsed into src and decoded greedily into out (each [max_len]):
 * *n symbols, *n_out tokens, 0. Else, after printing "seqtask <command>:
 * <why>", the exit status: SQ_EXIT_USAGE for an --input that is not the
 * task's symbols or is too long for the model, 1 when decoding fails (out of
 * memory). */
int sq_session_generate(sq_session *s, const sq_config *c, int32_t *src, int *n, int32_t *out, int *n_out);

/* tapegrad's threads (tg_threads_set; OpenBLAS's follow): n, or one per core
 * when n is 0. Returns the number set. */
int sq_set_threads(long n);
/* The directory part of path ("." when there is none) into buf. */
void sq_dirname(const char *path, char *buf, size_t len);
/* mkdir -p; 0, or -1 with a message. */
int sq_mkdirs(const char *dir);
/* Removes the temporaries (<file>.tmp.XXXXXX) a killed run left while saving
 * model.safetensors or checkpoint.safetensors in dir. Assumes one training
 * run writes into a directory at a time. */
void sq_remove_stale_temps(const char *dir);

#endif
