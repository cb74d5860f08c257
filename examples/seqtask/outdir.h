/* seqtask: the --out directory of a training run. A directory that holds
 * another run's files (log.csv, model.safetensors, checkpoint.safetensors)
 * is refused, so a new run never destroys them by accident; --overwrite
 * removes them first, and a run resumed from a checkpoint in --out carries
 * on its own files. */
#ifndef SEQTASK_OUTDIR_H
#define SEQTASK_OUTDIR_H

#include <stdbool.h>

#include "config.h"

/* Whether c resumes from a checkpoint inside c->out (the same directory). */
bool sq_out_is_resume_dir(const sq_config *c);
/* Makes c->out (mkdir -p), refuses a directory holding a run unless
 * resumed_here or --overwrite (which removes that run's files), and removes
 * temporaries a killed run left. 0, or an exit status with a message. */
int sq_out_prepare(const sq_config *c, bool resumed_here);

#endif
