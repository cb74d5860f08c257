/* seqtask export: a trained model written again with its weights in another
 * float type (PyTorch's model.to(torch.bfloat16) before saving). Training
 * keeps float32 master weights; this is for shipping the result. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <tapegrad/core/io/io.h>
#include "checkpoint.h"
#include "cli.h"
#include "commands.h"
#include "run.h"

/* A checkpoint's training state: not part of a model. */
static bool training_state(const char *key)
{
    return strncmp(key, "optim.", 6) == 0 || strcmp(key, "rng_dropout") == 0;
}

/* out: p's tensors and every metadata entry of the file `in` but its
 * training state. 0, or -1 with a message. */
static int model_set(tg_safetensors *out, const tg_params *p, const tg_safetensors *in)
{
    if (tg_st_add_params(out, p)) return -1;
    for (int i = 0; i < tg_st_meta_count(in); i++) {
        const char *key = tg_st_meta_key(in, i);
        if (!training_state(key) && tg_st_set_meta(out, key, tg_st_meta(in, key))) return -1;
    }
    return 0;
}

int sq_cmd_export(sq_config *c)
{
    static const tg_dtype dtypes[] = {TG_BF16, TG_F16, TG_F32};
    sq_set_threads(c->threads);
    struct stat st;
    if (!c->overwrite && stat(c->to, &st) == 0) {
        fprintf(stderr, "seqtask export: --to %s exists (give --overwrite to replace it)\n", c->to);
        return SQ_EXIT_USAGE;
    }
    tg_params *p;
    tg_model m;
    tg_safetensors *in, *out = NULL;
    if (sq_open(c->model, c, false, &p, &m, &in)) {
        fprintf(stderr, "seqtask export: %s\n", tg_error());
        return SQ_EXIT_USAGE;
    }
    tg_dtype dt = dtypes[c->dtype];
    int status = 1;
    if ((out = tg_st_new()) && model_set(out, p, in) == 0 && tg_st_save(out, c->to, dt) == 0) {
        stat(c->to, &st);
        printf("%s -> %s: %d tensors as %s, %lld bytes\n", c->model, c->to, tg_params_count(p), tg_dtype_name(dt),
               (long long)st.st_size);
        status = 0;
    } else {
        fprintf(stderr, "seqtask export: %s: %s\n", c->to, tg_error());
    }
    tg_st_free(out);
    tg_st_free(in);
    sq_model_destroy(p, &m);
    return status;
}
