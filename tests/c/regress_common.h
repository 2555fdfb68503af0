/* Helpers shared by the drop-in regression programs (tests/c/regress_*.c,
 * run by tests/dropin_regressions.rs): a seeded byte pattern, a watchdog
 * that names the case a rank is stuck in, and the one result line rank 0
 * prints. No case uses MPI_Bcast to collect results. */
#ifndef REGRESS_COMMON_H
#define REGRESS_COMMON_H

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int r_rank, r_size, r_bad;
static char r_case[96] = "start";

static inline int pat(long seed, long i) { return (int)((seed * 1000003L + i * 7919L) % 2147483L); }

static void r_on_alarm(int sig) {
    (void)sig;
    char line[160];
    int n = snprintf(line, sizeof line, "rank %d: hang in case %s\n", r_rank, r_case);
    if (write(2, line, n) < 0) _exit(5);
    _exit(4);
}

/* Arms the watchdog: a rank still inside a case after `secs` says which. */
static void r_start(int secs) {
    MPI_Comm_rank(MPI_COMM_WORLD, &r_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r_size);
    signal(SIGALRM, r_on_alarm);
    alarm(secs);
}

static void r_fail(const char *fmt, const char *what, long a, long b) {
    if (r_bad++ < 5) {
        fprintf(stderr, "rank %d: case %s: ", r_rank, r_case);
        fprintf(stderr, fmt, what, a, b);
        fputc('\n', stderr);
    }
}

/* Rank 0 prints `NAME: ok` or `NAME: FAILED (n problems)`; exit code 0 or 1. */
static int r_finish(const char *name) {
    int total = 0;
    strcpy(r_case, "result");
    MPI_Allreduce(&r_bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r_rank == 0) {
        if (total) printf("%s: FAILED (%d problems)\n", name, total);
        else printf("%s: ok\n", name);
        fflush(stdout);
    }
    alarm(0);
    MPI_Finalize();
    return total ? 1 : 0;
}

#endif
