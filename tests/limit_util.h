/* Helpers shared by the GEMM suites (test_gemm.c, test_gemm_half.c) for
 * running under an address-space limit: this process's size, and a limit
 * that leaves the thread pool's worker without pack buffers of its own.
 * The tests that use them skip under AddressSanitizer (which reserves
 * terabytes of address space) and qemu-user, hence `unused`. */
#ifndef TAPEGRAD_TESTS_LIMIT_UTIL_H
#define TAPEGRAD_TESTS_LIMIT_UTIL_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <tapegrad/core/kernels/threads.h>
#include "../core/kernels/gemm.h"

/* This process's address space in bytes (VmSize), 0 if unknown. */
__attribute__((unused)) static long vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &kib) == 1) break;
    if (f) fclose(f);
    return kib * 1024;
}

/* Per chunk: whether the thread that ran it has pack buffers of its own
 * (1, 0), or -1 for the caller's chunks. */
static int g_has_buffers[64];
static pthread_t g_caller;
__attribute__((unused)) static void probe_buffers(void *ctx, int begin, int end)
{
    (void)ctx;
    void *a, *b;
    for (int i = begin; i < end; i++) {
        g_has_buffers[i] = pthread_equal(pthread_self(), g_caller) ? -1 : tg_gemm_pack_buffers(&a, &b);
        usleep(2000); /* long enough for a sleeping worker to wake and claim a chunk */
    }
}
__attribute__((unused)) static void nothing(void *ctx, int begin, int end) { (void)ctx, (void)begin, (void)end; }

/* Two threads, and an address-space limit 1 MiB above this process's size
 * once the pool's worker exists (made below no limit), so that the worker
 * cannot allocate pack buffers while the caller keeps the ones it has.
 * Fails if the worker turns out to have room for them; on a busy machine
 * the worker may share the caller's CPU and claim no chunk of the probe
 * (core/kernels/threads.c), which is logged. Only the soft limit is set:
 * limit_lift() restores it before the test ends, so that nothing after the
 * test's body (Criterion's report, OpenBLAS's exit handler, which joins a
 * thread of its own that may be retrying a buffer the limit refused, as
 * docs/RELIABILITY.md tells) runs under it. Call tg_threads_set(2) once at
 * the test's start: OpenBLAS starts that thread then, long before. */
static struct rlimit g_old_limit;
static bool g_worker_ran;
__attribute__((unused)) static void limit_worker_buffers(void)
{
    tg_threads_set(2);
    g_caller = pthread_self();
    for (int i = 0; i < 8; i++) tg_parallel_for(8, nothing, NULL);
    long vm = vm_size();
    cr_assert_gt(vm, 0);
    cr_assert_eq(getrlimit(RLIMIT_AS, &g_old_limit), 0);
    struct rlimit lim = {(rlim_t)vm + (1 << 20), g_old_limit.rlim_max};
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
    int without = 0, with = 0;
    for (int tries = 0; tries < 50 && !without && !with; tries++) {
        memset(g_has_buffers, 0xff, sizeof g_has_buffers);
        tg_parallel_for(8, probe_buffers, NULL);
        for (int i = 0; i < 8; i++) without += g_has_buffers[i] == 0, with += g_has_buffers[i] == 1;
    }
    g_worker_ran = without > 0;
    if (with) setrlimit(RLIMIT_AS, &g_old_limit);
    cr_assert_eq(with, 0, "the limit left the worker room for its buffers: nothing to test");
}

/* The limit limit_worker_buffers set, lifted; says whether the probe's
 * chunks reached the worker. */
__attribute__((unused)) static void limit_lift(void)
{
    cr_assert_eq(setrlimit(RLIMIT_AS, &g_old_limit), 0);
    printf("a worker without pack buffers %s\n", g_worker_ran ? "ran chunks" : "claimed no chunk in 50 tries");
}

#endif
