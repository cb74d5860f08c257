/* seqtask: under mpirun, every rank must train the same model on the same
 * data with the same optimizer, or the all-reduce sums grads of different
 * computations into a wrong model. Before step 1 each rank compares its
 * whole resolved configuration with rank 0's. */
#ifndef SEQTASK_RANKS_H
#define SEQTASK_RANKS_H

#include <tapegrad/core/engine/rng.h>
#include <tapegrad/optim/optim.h>
#include "config.h"

/* What the math of the run depends on besides the flags. */
typedef struct sq_run_state {
    long step;                     /* the step the run starts at (resume) */
    size_t numel;                  /* parameters */
    unsigned long long data_hash;  /* --data contents, 0 without */
    const tg_optim *opt;           /* its state is hashed */
    const tg_rng *drop;            /* the dropout RNG */
} sq_run_state;

/* Compares with rank 0: every flag of the model, task and training groups
 * (resolved: derived d_head, d_ff and warmup included), --accum, and the
 * state above; file paths are not compared, their contents are. A rank
 * that differs prints "rank R: --heads is 8 here but 4 on rank 0 ..." for
 * each difference. Returns SQ_EXIT_USAGE on such a rank, 0 on the others
 * (the caller's status agreement ends the job on every rank); a failed
 * collective ends the job. */
int sq_ranks_agree(const sq_config *c, const sq_run_state *st);

#endif
