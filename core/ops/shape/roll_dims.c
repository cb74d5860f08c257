/* tapegrad: torch.roll(a, shifts, dims) with several dims, as one tg_roll
 * per dim (each a map; its grad rolled back): rolls along distinct dims
 * commute, and a dim named twice rolls by the sum of its shifts, as PyTorch.
 */
#include <stdio.h>

#include "../internal.h"
#include "../ops.h"

TG_OP_NO_GRAD(roll_dims_op, "tg_roll_dims");  /* checks and errors only: the rolls record the nodes */

tg_tensor *tg_roll_dims(tg_tape *t, tg_tensor *a, const int *shifts, const int *dims, int n)
{
    TG_DISPATCH(tg_roll_dims, a, (t, a, shifts, dims, n));
    const char *op = roll_dims_op.name;
    if (!tg_inputs_check_dtype(t, &roll_dims_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    if (!shifts || !dims) return tg_fail(t, "%s: %s is NULL", op, shifts ? "dims" : "shifts");
    char sa[TG_SHAPE_STR];
    if (n < 1) return tg_fail(t, "%s: %d dims for a %s (at least 1; tg_roll with TG_ROLL_FLAT rolls the flattened a)",
                              op, n, tg_shape_str(a, sa));
    for (int i = 0; i < n; i++) {
        int d;
        if (!tg_dim_resolve(t, op, a, dims[i], a->ndim ? a->ndim : 1, &d)) return NULL;
    }
    tg_tensor *out = a;
    for (int i = 0; i < n && out; i++) out = tg_roll(t, out, shifts[i], dims[i]);
    return out;
}
