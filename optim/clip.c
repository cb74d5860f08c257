/* tapegrad: gradient clipping by global L2 norm (see optim/clip.h). */
#include "clip.h"

#include <math.h>

double tg_grad_norm(const tg_params *p)
{
    TG_DISPATCH_ON(tg_grad_norm, p && tg_params_dtype(p) == TG_OTHER_DTYPE, (p));
    if (!p) return tg_error_set("tg_grad_norm: the parameter store is NULL");
    const tg_real *g = tg_params_grad(p);
    size_t n = tg_params_numel(p);
    /* 8 independent sums added at the end: one running sum is a chain of
     * dependent additions, 4 cycles an element (4 ms a step at 3.2 M) */
    double ss[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) ss[k] += (double)g[i + k] * (double)g[i + k];
    for (; i < n; i++) ss[0] += (double)g[i] * (double)g[i];
    for (int k = 1; k < 8; k++) ss[0] += ss[k];
    return sqrt(ss[0]);
}

double tg_clip_grad_norm(tg_params *p, double max_norm)
{
    TG_DISPATCH_ON(tg_clip_grad_norm, p && tg_params_dtype(p) == TG_OTHER_DTYPE, (p, max_norm));
    if (!p) return tg_error_set("tg_clip_grad_norm: the parameter store is NULL");
    if (!(max_norm >= 0)) return tg_error_set("tg_clip_grad_norm: max_norm = %g must be >= 0", max_norm);
    double norm = tg_grad_norm(p);
    if (!isfinite(norm)) return norm;
    double coef = max_norm / (norm + 1e-6);
    if (coef < 1) {
        tg_real c = (tg_real)coef, *g = tg_params_grad(p);
        size_t n = tg_params_numel(p);
        for (size_t i = 0; i < n; i++) g[i] *= c;
    }
    return norm;
}
