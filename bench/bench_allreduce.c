/* The all-reduce of a parameter store's flat grad buffer (tg_dist_allreduce_grads)
 * for grad buffers of the toy model's size up to the larger model's.
 *
 *   mpirun -np P bench_allreduce [--reps 50]
 *
 * Prints, on rank 0, one ROW per size: the median time of one all-reduce
 * and the bus bandwidth 2 (P-1)/P * bytes / time, the bytes each rank sends
 * in a ring all-reduce per second (docs/DISTRIBUTED.md's cost model).
 * Alone (no mpirun) every all-reduce is a no-op and nothing is printed.
 */
#include <stdio.h>
#include <string.h>
#include <tapegrad/core/engine/params.h>
#include <tapegrad/dist/dist.h>
#include "bench_util.h"

int main(int argc, char **argv)
{
    if (tg_dist_init(&argc, &argv)) return fprintf(stderr, "%s\n", tg_error()), 1;
    int reps = 50, P = tg_dist_size();
    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    if (reps < 1 || reps > 10000) tg_dist_abort(2, "bench_allreduce: --reps must be in [1, 10000]");
    const int sizes[] = {1 << 14, 1 << 17, 1 << 20, 1 << 22, 1 << 24};  /* scalars */
    double t[10000];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        tg_params *p = tg_params_new();
        if (!p || !tg_params_add(p, "g", 1, &sizes[s])) tg_dist_abort(1, "bench_allreduce: out of memory");
        tg_real *g = tg_params_grad(p);
        for (int i = 0; i < sizes[s]; i++) g[i] = (tg_real)1e-3;
        for (int r = -3; r < reps; r++) {
            if (tg_dist_barrier()) tg_dist_abort(1, tg_error());
            double t0 = bu_now();
            if (tg_dist_allreduce_grads(p)) tg_dist_abort(1, tg_error());
            if (r >= 0) t[r] = bu_now() - t0;
        }
        double med = bu_median(t, reps), bytes = (double)sizes[s] * sizeof(tg_real);
        if (tg_dist_rank() == 0 && P > 1)
            printf("ROW bench=allreduce ranks=%d bytes=%.0f ms=%.4f bus_gbps=%.3f\n", P, bytes, 1e3 * med,
                   8e-9 * 2 * (P - 1) / P * bytes / med);
        tg_params_free(p);
    }
    tg_dist_finalize();
    return 0;
}
