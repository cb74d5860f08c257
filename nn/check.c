/* tapegrad: a layer's entry checks and its init undo (see nn/check.h). */
#include "check.h"

#include <string.h>

#include "names.h"

int tg_nn_check_init(const char *fn, const void *layer, const tg_params *p, const void *cfg)
{
    if (!layer) return tg_error_set("%s: the layer is NULL", fn);
    if (!p) return tg_error_set("%s: the parameter store is NULL", fn);
    if (!cfg) return tg_error_set("%s: the configuration is NULL", fn);
    return 0;
}

int tg_nn_check_forward(const char *fn, tg_tape *t, const void *layer, bool ready)
{
    if (!t) tg_fail(NULL, "%s: the tape is NULL", fn);
    else if (!layer) tg_fail(t, "%s: the layer is NULL", fn);
    else if (!ready) tg_fail(t, "%s: the layer is not initialised (its init failed or was not called)", fn);
    return t && layer && ready ? 0 : -1;
}

int tg_nn_init_undo(void *layer, size_t size, char *name, tg_params *p, int count)
{
    char keep[TG_NN_NAME_MAX] = "";
    if (name) memcpy(keep, name, sizeof keep);
    if (layer) memset(layer, 0, size);
    if (name) memcpy(name, keep, sizeof keep);
    if (p) tg_params_truncate(p, count);
    return -1;
}
