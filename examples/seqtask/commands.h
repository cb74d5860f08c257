/* seqtask: the subcommands. Each takes a checked configuration and returns
 * the process exit status (0 ok, 1 failure, 2 usage error, 130 interrupted). */
#ifndef SEQTASK_COMMANDS_H
#define SEQTASK_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include <tapegrad/nn/model.h>
#include "config.h"

typedef int (*sq_command_fn)(sq_config *c);
/* The handler of cmd (the SQ_COMMANDS row of config.h); NULL when it is not a command. */
sq_command_fn sq_command_handler(sq_command cmd);

int sq_cmd_train(sq_config *c);     /* train.c */
int sq_cmd_eval(sq_config *c);      /* commands.c */
int sq_cmd_generate(sq_config *c);  /* commands.c */
int sq_cmd_attn(sq_config *c);      /* inspect.c */
int sq_cmd_heads(sq_config *c);     /* inspect.c */
int sq_cmd_export(sq_config *c);    /* export.c */

/* The heatmap of every layer and head of m for one token sequence
 * (tokens[0..L), L <= Tmax), tokens on both axes (inspect.c). */
int sq_attention_png(const tg_model *m, const int32_t *tokens, int L, const char *path);
/* The same with labels[i] naming token i (charlm's bytes). */
int sq_attention_png_labelled(const tg_model *m, const int32_t *tokens, const char *const *labels, int L,
                              const char *path);

#endif
