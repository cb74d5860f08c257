/* tapegrad: a layer's parameter names (see nn/names.h). */
#include "names.h"

#include <stdio.h>

int tg_nn_name(char *dst, const char *prefix, const char *suffix)
{
    TG_REFUSE_NULL(dst && suffix, "dst or suffix", -1);
    int n = prefix && *prefix ? snprintf(dst, TG_NN_NAME_MAX, "%s.%s", prefix, suffix)
                              : snprintf(dst, TG_NN_NAME_MAX, "%s", suffix);
    if (n >= 0 && n < TG_NN_NAME_MAX) return 0;
    return tg_error_set("name '%s.%s' is longer than %d bytes", prefix ? prefix : "", suffix,
                        TG_NN_NAME_MAX - 1);
}

tg_tensor *tg_nn_param(tg_params *p, const char *prefix, const char *suffix, int ndim,
                       const int *shape)
{
    char name[TG_NN_NAME_MAX];
    if (tg_nn_name(name, prefix, suffix)) return NULL;
    return tg_params_add(p, name, ndim, shape);
}
