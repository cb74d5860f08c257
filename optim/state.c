/* tapegrad: optimizer state as named tensors, shared by the optimizers (see optim/optim.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim.h"
#include "../core/engine/error.h"

/* "<prefix><name>" into key; false when it does not fit. */
static bool state_key(char *key, const char *prefix, const char *name)
{
    int n = snprintf(key, TG_OPTIM_KEY_MAX, "%s%s", prefix, name);
    return n >= 0 && n < TG_OPTIM_KEY_MAX;
}

int tg_optim_save_bufs(tg_safetensors *s, const tg_params *p, const char *prefix, const tg_real *buf,
                       const char *what)
{
    char key[TG_OPTIM_KEY_MAX];
    size_t off = 0;
    for (int k = 0; k < tg_params_count(p); k++) {
        const tg_tensor *x = tg_params_at(p, k);
        if (!state_key(key, prefix, x->name))
            return tg_error_set("%s: state name for parameter '%s' is too long", what, x->name);
        if (tg_st_add_data(s, key, buf + off, x->ndim, x->shape))
            return tg_error_set("%s: %s", what, tg_error());
        off += x->size;
    }
    return 0;
}

int tg_optim_check_bufs(const tg_safetensors *s, const tg_params *p, const char *prefix,
                        const char *what)
{
    char key[TG_OPTIM_KEY_MAX], have[TG_SHAPE_STR], want[TG_SHAPE_STR];
    for (int k = 0; k < tg_params_count(p); k++) {
        const tg_tensor *x = tg_params_at(p, k);
        if (!state_key(key, prefix, x->name))
            return tg_error_set("%s: state name for parameter '%s' is too long", what, x->name);
        const tg_tensor *y = tg_st_get(s, key);
        if (!y) return tg_error_set("%s: missing tensor '%s'", what, key);
        if (!tg_shape_equal(x, y))
            return tg_error_set("%s: '%s' is %s but parameter '%s' is %s", what, key,
                                tg_shape_str(y, have), x->name, tg_shape_str(x, want));
    }
    return 0;
}

void tg_optim_load_bufs(const tg_safetensors *s, const tg_params *p, const char *prefix, tg_real *buf)
{
    char key[TG_OPTIM_KEY_MAX];
    size_t off = 0;
    for (int k = 0; k < tg_params_count(p); k++) {
        const tg_tensor *x = tg_params_at(p, k);
        const tg_tensor *y = state_key(key, prefix, x->name) ? tg_st_get(s, key) : NULL;
        if (y && x->size) memcpy(buf + off, y->data, x->size * sizeof(tg_real));
        off += x->size;
    }
}

int tg_optim_save_step(tg_safetensors *s, const char *key, long step, const char *what)
{
    char val[32];
    snprintf(val, sizeof val, "%ld", step);
    if (tg_st_set_meta(s, key, val)) return tg_error_set("%s: %s", what, tg_error());
    return 0;
}

int tg_optim_load_step(const tg_safetensors *s, const char *key, long *step, const char *what)
{
    const char *val = tg_st_meta(s, key);
    if (!val) return tg_error_set("%s: missing metadata '%s'", what, key);
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (end == val || *end || errno || v < 0 || !(*val >= '0' && *val <= '9'))
        return tg_error_set("%s: metadata '%s' = \"%s\" is not a step count", what, key, val);
    *step = v;
    return 0;
}
