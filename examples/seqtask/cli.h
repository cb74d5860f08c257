/* seqtask: the command line.
 *
 * One table lists every flag: its name, type, allowed values, default, help
 * line and the commands that take it. The same table turns a configuration
 * into safetensors metadata and back (a flag "--d-model" is the key
 * "d_model"), so a model file records exactly what the command line would
 * have said, and reading it validates every value as the command line does.
 *
 * Errors name the command, the flag, the value and what is allowed; the
 * caller prints them and exits with status 2.
 */
#ifndef SEQTASK_CLI_H
#define SEQTASK_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <tapegrad/core/engine/error.h>
#include "config.h"

/* Exit status of a usage error. */
#define SQ_EXIT_USAGE 2

/* Which part of the configuration a flag belongs to, for the metadata. */
enum { SQ_META_NONE = 0, SQ_META_MODEL = 1, SQ_META_TASK = 2, SQ_META_TRAIN = 4 };

/* Parses argv (argv[0] is the command name, e.g. "train") into c, defaults
 * first. Returns 0; 1 when --help was printed (to out); -1 with a message
 * in tg_error() for a usage error. Rules between flags are checked by
 * sq_cli_check, then (once the files the flags name are read, so that a bad
 * file is reported before a conflict between values) sq_cli_check_values. */
int sq_cli_parse(sq_command cmd, int argc, char **argv, sq_config *c, FILE *out);
/* The flags a command needs and those that exclude each other (--model,
 * --task or --data, --resume or --init, ...); sets c->kind. 0, or -1 with a
 * message. */
int sq_cli_check(sq_config *c);
/* train: the rules between values (min-len <= max-len, d-model divisible by
 * heads, warmup < steps) and the derived values (d_head, d_ff, and warmup
 * min(50, steps / 10) when not given). 0, or -1 with a message that names
 * the flags (the caller names the command). */
int sq_cli_check_values(sq_config *c);

/* -1 when name is not a command. */
int sq_command_parse(const char *name);
const char *sq_command_name(sq_command cmd);
void sq_usage(FILE *f);

/* The value of a choice flag (without "--", e.g. "optimizer") as written
 * on the command line ("adamw"); NULL when name is not a choice flag. */
const char *sq_cli_choice(const sq_config *c, const char *flag);
/* Was the flag (without "--", e.g. "layers") given on the command line? */
bool sq_cli_was_set(const sq_config *c, const char *flag);

/* Metadata: calls put(ctx, key, value) for every flag of the groups in mask. */
typedef int (*sq_meta_put)(void *ctx, const char *key, const char *value);
int sq_config_to_meta(const sq_config *c, unsigned mask, sq_meta_put put, void *ctx);
/* Reads the flags of the groups in mask through get(ctx, key) (NULL when
 * absent: a missing key is an error naming the file `what`). Flags given on
 * the command line keep their values, except that for a flag of a group in
 * `must_match` the two values must agree. 0, or -1 with a message. */
typedef const char *(*sq_meta_get)(void *ctx, const char *key);
int sq_config_from_meta(sq_config *c, unsigned mask, unsigned must_match, sq_meta_get get,
                        void *ctx, const char *what);

#endif
