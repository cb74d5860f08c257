/* charlm: a byte-level GPT on a text file. This file only dispatches:
 *   cli.c     flags, --help, model families, configuration <-> metadata
 *   corpus.c  the text, the batch of a step, the held-out loss
 *   train.c   the train command, model and checkpoint files
 *   sample.c  the sample command and the attention heatmap
 * What seqtask already has (progress, log.csv, loss.png, --out, signals,
 * threads, resuming the optimizer) comes from seqtask_core. */
#include <stdio.h>
#include <string.h>

#include "../seqtask/cli.h"
#include "../seqtask/stop.h"
#include "charlm.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        cl_usage(stderr);
        return SQ_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        cl_usage(stdout);
        return 0;
    }
    int cmd = cl_command_parse(argv[1]);
    if (cmd < 0) {
        fprintf(stderr, "charlm: unknown command '%s' (train, sample; charlm --help)\n", argv[1]);
        return SQ_EXIT_USAGE;
    }
    if (cmd == CL_CMD_TRAIN) sq_stop_install();  /* before anything that takes time */
    static cl_config c;
    int rc = cl_cli_parse((cl_command)cmd, argc - 1, argv + 1, &c, stdout);
    if (rc == 1) return 0;
    if (rc) {
        fprintf(stderr, "%s\n", tg_error());
        return SQ_EXIT_USAGE;
    }
    return cmd == CL_CMD_TRAIN ? cl_cmd_train(&c) : cl_cmd_sample(&c);
}
