/* MPI_Init to first broadcast: the time from just before MPI_Init to the
 * return of the first MPI_Bcast (4 KiB from rank 0), the slowest rank's,
 * printed by rank 0 in microseconds. Used by benches/startup.sh to compare
 * runs with and without the interposition library. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    double t0 = now_us();
    MPI_Init(&argc, &argv);
    char buf[4096] = {0};
    MPI_Bcast(buf, sizeof buf, MPI_BYTE, 0, MPI_COMM_WORLD);
    double dt = now_us() - t0, worst = 0;
    MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("init_to_first_bcast_us %.1f\n", worst);
    MPI_Finalize();
    return 0;
}
