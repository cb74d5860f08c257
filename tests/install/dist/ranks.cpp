// The data-parallel layer from outside: join (alone: rank 0 of 1), sum a
// value over the ranks, and say whether this build has MPI.
#include <cstdio>

#include <tapegrad/dist/dist.h>
#include <tapegrad/tapegrad.h>

int main(int argc, char **argv)
{
    if (tg_dist_init(&argc, &argv)) return std::puts(tg_error()), 1;
    double v = 2.5;
    if (tg_dist_sum(&v, 1)) return std::puts(tg_error()), 1;
    std::printf("rank %d of %d, sum %g, mpi %s\n", tg_dist_rank(), tg_dist_size(), v,
                tg_dist_available() ? "yes" : "no");
    tg_dist_finalize();
    return 0;
}
