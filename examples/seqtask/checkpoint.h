/* seqtask: building the model from a configuration, the optimizer chosen by
 * --optimizer, and the two files a run writes (docs/FORMATS.md).
 *
 *   model.safetensors       the weights (tapegrad's state_dict names) and,
 *                           in __metadata__, every flag of the run that made
 *                           them ("layers", "d_model", "task", "symbols",
 *                           "max_len", "mode", "lr", ...: the flag names with
 *                           '_' for '-'), plus "format", "step", "vocab",
 *                           "tmax" and the last held-out accuracy.
 *   checkpoint.safetensors  the same, plus the optimizer state
 *                           (optim.adam.{m,v}.<name> or
 *                           optim.sgd.momentum.<name>, and its step) and the
 *                           dropout RNG ("rng_dropout" = "state inc").
 *                           The data stream needs no state: the batch of a
 *                           step is a function of (seed, step).
 * Both are written in the build's precision (F32, or F64 in a double build,
 * so a resumed double run is bit for bit too), atomically.
 */
#ifndef SEQTASK_CHECKPOINT_H
#define SEQTASK_CHECKPOINT_H

#include <stddef.h>

#include <tapegrad/core/io/io.h>
#include <tapegrad/nn/model.h>
#include <tapegrad/optim/optim.h>
#include <tapegrad/optim/scaler.h>
#include "config.h"

#define SQ_FORMAT "seqtask-1"

/* The optimizer options of c (Adam/AdamW betas 0.9, 0.98; SGD momentum 0.9). */
tg_optim_opts sq_optim_opts(const sq_config *c);

tg_model_config sq_model_config(const sq_config *c);
/* A new store and model for c, initialised from rng (NULL: zeros, to load). */
int sq_model_build(const sq_config *c, tg_rng *rng, tg_params **p, tg_model *m);
void sq_model_destroy(tg_params *p, tg_model *m);

/* model.safetensors (o NULL, rng NULL) or checkpoint.safetensors (with the
 * loss scaler's state when sc is not NULL, and the steps it skipped). acc < 0:
 * not evaluated. data_hash: the --data file's, or 0. */
int sq_save(const char *path, const sq_config *c, const tg_params *p, const tg_optim *o,
            const tg_grad_scaler *sc, const tg_rng *rng, long step, double acc, unsigned long long data_hash);

/* A checkpoint's loss scaler state (tg_grad_scaler_state_save) and
 * "skipped_steps", the steps of `step` the optimizer did not take, into s
 * (sq_save's, charlm's); nothing when sc is NULL. 0, or -1 with a message. */
int sq_scaler_state_save(tg_safetensors *s, const tg_grad_scaler *sc, const tg_optim *o, long step);

/* The end of every save (sq_save, charlm's): "data_hash" (unless 0) and
 * "rng_dropout" (unless rng is NULL) into s's metadata, then s written to
 * path atomically in the build's precision. 0, or -1 with a message. */
int sq_save_finish(tg_safetensors *s, const char *path, const tg_rng *rng, unsigned long long data_hash);

/* Opens a file written by sq_save: reads the model and task flags from its
 * metadata into c (flags c's command line set keep their values; for a
 * resume the model and task flags must agree), builds the model and loads
 * the weights. *st (may be NULL) receives the file's contents for
 * sq_resume_state. The file must carry its checksums (TG_ST_VERIFY_REQUIRED)
 * unless --no-verify. */
int sq_open(const char *path, sq_config *c, bool resume, tg_params **p, tg_model *m,
            tg_safetensors **st);
/* A checkpoint's optimizer state, step and dropout RNG, and the loss
 * scaler's state into sc (not NULL) when the checkpoint has one. */
int sq_resume_state(const tg_safetensors *st, const char *path, tg_optim *o, tg_grad_scaler *sc, long *step,
                    tg_rng *rng);
/* --init: weights only, every parameter by name and shape (optim.* ignored).
 * A file of the other attention mode (fused in_proj_weight vs per-head
 * heads.<h>.{q,k,v}_proj) is converted exactly (tg_mha_convert). A file
 * with checksums is verified; one without loads unless its metadata says
 * tapegrad or seqtask wrote it (PyTorch's load), or with --no-verify. */
int sq_load_weights(const char *path, const sq_config *c, tg_params *p);

#endif
