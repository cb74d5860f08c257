/* tapegrad: gradient clipping by global L2 norm (see optim/clip.h). */
#include "clip.h"

#include <math.h>

#include "../core/kernels/vmath.h"

/* the sum of squares in 8 independent lanes (tg_sum_squares): one running
 * sum is a chain of dependent additions, 4 cycles an element (4 ms a step
 * at 3.2 M parameters); compiled per SIMD level */
TG_SIMD_BODY void sum_squares_body(const tg_real *g, size_t n, double *out) { *out = tg_sum_squares(g, n); }
TG_SIMD_CLONES(static, sum_squares, (const tg_real *g, size_t n, double *out), (g, n, out))

double tg_grad_norm(const tg_params *p)
{
    TG_DISPATCH_ON(tg_grad_norm, p && tg_params_dtype(p) == TG_OTHER_DTYPE, (p));
    if (!p) return tg_error_set("tg_grad_norm: the parameter store is NULL");
    double ss;
    sum_squares(tg_params_grad(p), tg_params_numel(p), &ss);
    return sqrt(ss);
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
