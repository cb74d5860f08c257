/* tapegrad: nn.Embedding (see nn/embedding.h). */
#include "embedding.h"

#include <stdio.h>
#include <string.h>

int tg_embedding_init(tg_embedding_layer *e, tg_params *p, const char *prefix, int num, int dim,
                      tg_rng *rng)
{
    if (tg_nn_check_init("tg_embedding_init", e, p, e)) return -1;
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", prefix ? prefix : "");
    int n0 = tg_params_count(p);
    if (num <= 0 || dim <= 0) {
        tg_error_set("tg_embedding '%s': num_embeddings %d and dim %d must be > 0",
                     e->name, num, dim);
        return tg_nn_init_undo(e, sizeof *e, e->name, p, n0);
    }
    e->num = num;
    e->dim = dim;
    e->weight = tg_nn_param(p, prefix, "weight", 2, (int[]){num, dim});
    if (!e->weight) return tg_nn_init_undo(e, sizeof *e, e->name, p, n0);
    if (rng) tg_init_normal(e->weight, 0.0, 1.0, rng);
    return 0;
}

/* ids [...] -> [..., dim]; the core op checks every id against num */
tg_tensor *tg_embedding_forward(tg_tape *t, const tg_embedding_layer *e, const tg_tensor *ids)
{
    if (tg_nn_check_forward("tg_embedding_forward", t, e, e && e->weight)) return NULL;
    if (!ids) return tg_fail(t, "tg_embedding '%s': ids is NULL", e->name);
    return tg_embedding(t, e->weight, ids);
}
