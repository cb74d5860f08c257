/* seqtask: stopping on SIGINT / SIGUSR1 (see stop.h). */
#include "stop.h"

#include <signal.h>
#include <stddef.h>

static volatile sig_atomic_t requested;

static void on_stop(int sig)
{
    (void)sig;
    requested = 1;
}

void sq_stop_install(void)
{
    struct sigaction sa = {.sa_handler = on_stop, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGUSR1);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

bool sq_stop_requested(void) { return requested != 0; }
