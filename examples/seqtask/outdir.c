/* seqtask: the --out directory (see outdir.h). */
#include "outdir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "run.h"

/* The files a run writes; the first three make a directory "hold a run". */
static const char *const run_files[] = {"log.csv", "checkpoint.safetensors", "model.safetensors", "loss.png",
                                        "attention.png"};
enum { N_MARKS = 3, N_FILES = 5 };

bool sq_out_is_resume_dir(const sq_config *c)
{
    char dir[SQ_PATH_MAX];
    struct stat a, b;
    if (!c->resume[0]) return false;
    sq_dirname(c->resume, dir, sizeof dir);
    return stat(dir, &a) == 0 && stat(c->out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int sq_out_prepare(const sq_config *c, bool resumed_here)
{
    char path[SQ_PATH_MAX + 32];
    if (sq_mkdirs(c->out)) return SQ_EXIT_USAGE;
    for (int i = 0; i < N_MARKS && !resumed_here && !c->overwrite; i++) {
        snprintf(path, sizeof path, "%s/%s", c->out, run_files[i]);
        if (access(path, F_OK) == 0) {
            tg_error_set("--out %s holds another run (%s): give --overwrite to replace it, --resume "
                         "%s/checkpoint.safetensors to continue it, or another --out", c->out, run_files[i],
                         c->out);
            return SQ_EXIT_USAGE;
        }
    }
    for (int i = 0; i < N_FILES && !resumed_here && c->overwrite; i++) {
        snprintf(path, sizeof path, "%s/%s", c->out, run_files[i]);
        if (unlink(path) != 0 && errno != ENOENT) {
            tg_error_set("%s: cannot remove the old run's file: %s", path, strerror(errno));
            return 1;
        }
    }
    sq_remove_stale_temps(c->out);
    return 0;
}
