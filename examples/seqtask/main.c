/* seqtask: train, evaluate and inspect small transformers on copy / reverse /
 * sort. This file only dispatches:
 *   cli.c         flags, --help, configuration <-> metadata
 *   task.c        tasks, held-out split, batches;  data.c  the --data format
 *   train.c       the train command;  eval.c  greedy decoding and accuracy
 *   config.h      the command table (SQ_COMMANDS);  commands.c  its handlers,
 *                 eval, generate;  inspect.c  attn, heads and heatmaps;
 *                 export.c  export (weights as bfloat16 / float16)
 *   checkpoint.c  model construction, optimizer, model/checkpoint files
 *   progress.c    progress line, log.csv, loss.png;  run.c  shared setup and
 *                 the model commands' session
 * Errors follow the library's model: a function that fails returns -1 (or
 * NULL) with its message in tg_error(), and each command prints it once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <tapegrad/dist/dist.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "cli.h"
#include "commands.h"
#include "stop.h"

/* Reads the command line into c. 0: run the command; else the exit status
 * (a refused command line, or --help: -1 for 0 after printing help). */
static int parse(int argc, char **argv, sq_config *c)
{
    if (argc < 2) {
        sq_usage(stderr);
        return SQ_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        if (tg_dist_rank() == 0) sq_usage(stdout);
        return -1;
    }
    int cmd = sq_command_parse(argv[1]);
    if (cmd < 0) {
        char names[256];
        size_t n = 0;
        for (int i = 0; i < SQ_CMD_COUNT && n < sizeof names; i++)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", sq_command_name((sq_command)i));
        fprintf(stderr, "seqtask: unknown command '%s' (%s; seqtask --help)\n", argv[1], names);
        return SQ_EXIT_USAGE;
    }
    int rc = sq_cli_parse((sq_command)cmd, argc - 1, argv + 1, c, stdout);
    if (rc == 1) return -1;
    if (rc == 0) rc = sq_cli_check(c);
    if (rc != 0) {
        /* one write, so that it stays one line in mpirun's mix of the ranks' output */
        if (tg_dist_size() > 1) fprintf(stderr, "rank %d: %s\n", tg_dist_rank(), tg_error());
        else fprintf(stderr, "%s\n", tg_error());
        return SQ_EXIT_USAGE;
    }
    if (cmd != SQ_CMD_TRAIN && tg_dist_size() > 1) {
        fprintf(stderr, "seqtask %s: runs in one process; only train splits across mpirun's ranks\n", argv[1]);
        return SQ_EXIT_USAGE;
    }
    return 0;
}

/* Ends the process with status rc once stdout is written out (a failed
 * write to it is an error too). Through _exit, not exit: OpenBLAS starts a
 * thread per core when it is loaded, each of which allocates a 128 MiB
 * buffer and, in Debian 12's 0.3.21, retries forever when the address space
 * cannot hold it (ulimit -v); exit() runs OpenBLAS's handler, which joins
 * those threads and never returns. Every file seqtask writes is closed (and
 * fsynced) before this. */
static _Noreturn void end_process(int rc)
{
    int e = fflush(stdout) != 0 ? errno : ferror(stdout) ? EIO : 0;
    if (e) {
        fprintf(stderr, "seqtask: cannot write to stdout: %s\n", strerror(e));
        if (rc == 0) rc = 1;
    }
    fflush(stderr);
#ifdef __SANITIZE_ADDRESS__
    __lsan_do_leak_check();  /* _exit skips LeakSanitizer's own check at exit */
#endif
    _exit(rc);
}

/* Under mpirun every rank runs the same command line. A rank whose command
 * line fails says why, and every rank learns it before anything else
 * collective: a rank that left while the others wait would hang them. */
int main(int argc, char **argv)
{
    bool train = argc > 1 && strcmp(argv[1], "train") == 0;
    if (train) sq_stop_install();  /* before anything that takes time */
    if (tg_dist_init(&argc, &argv)) {
        fprintf(stderr, "seqtask: %s\n", tg_error());
        end_process(1);
    }
    if (train) sq_stop_install();
    static sq_config c;
    int rc = parse(argc, argv, &c);
    tg_dist_set_timeout(SQ_TIMEOUT_START, "at the start");
    double v[2] = {rc != 0, rc > 0 ? rc : 0};  /* ranks that stop, and their worst status */
    if (tg_dist_sum(v, 2)) tg_dist_abort(1, tg_error());
    if (v[0] == 0) {
        rc = sq_command_handler(c.cmd)(&c);  /* test_seqtask_cli: every command has one */
    } else if (rc == 0) {
        rc = SQ_EXIT_USAGE;
        if (tg_dist_rank() == 0) fprintf(stderr, "seqtask: stopping: another rank refused its command line\n");
    } else if (rc < 0) {
        rc = 0;
    }
    tg_dist_finalize();
    end_process(rc);
}
