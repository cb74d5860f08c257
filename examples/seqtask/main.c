/* seqtask: train, evaluate and inspect small transformers on copy / reverse /
 * sort (DESIGN.md sections 9 and 10). This file only dispatches:
 *   cli.c         flags, --help, configuration <-> metadata
 *   task.c        tasks, held-out split, batches;  data.c  the --data format
 *   train.c       the train command;  eval.c  greedy decoding and accuracy
 *   commands.c    eval, generate;  inspect.c  attn, heads and heatmaps
 *   checkpoint.c  model construction, optimizer, model/checkpoint files
 *   progress.c    progress line, log.csv, loss.png;  run.c  shared setup
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        sq_usage(stderr);
        return SQ_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        sq_usage(stdout);
        return 0;
    }
    int cmd = sq_command_parse(argv[1]);
    if (cmd < 0) {
        fprintf(stderr, "seqtask: unknown command '%s' (train, eval, generate, attn, heads; seqtask "
                "--help)\n", argv[1]);
        return SQ_EXIT_USAGE;
    }
    static sq_config c;
    char err[1024];
    int rc = sq_cli_parse((sq_command)cmd, argc - 1, argv + 1, &c, stdout, err, sizeof err);
    if (rc == 1) return 0;
    if (rc == 0) rc = sq_cli_check(&c, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return SQ_EXIT_USAGE;
    }
    switch (cmd) {
    case SQ_CMD_TRAIN: return sq_cmd_train(&c);
    case SQ_CMD_EVAL: return sq_cmd_eval(&c);
    case SQ_CMD_GENERATE: return sq_cmd_generate(&c);
    case SQ_CMD_ATTN: return sq_cmd_attn(&c);
    default: return sq_cmd_heads(&c);
    }
}
