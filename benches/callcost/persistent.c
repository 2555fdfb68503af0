/* The cost of a persistent broadcast's calls (MPI_Start + MPI_Wait of a
 * request made once by MPI_Bcast_init; Open MPI 4.1: MPIX_Bcast_init), in
 * nanoseconds per call: ITER calls of BYTES from root 0, timed on rank 0
 * after a warm-up, printed as "persistent: NS ns/call". Run plain and under
 * the drop-in by benches/persistent.sh. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(OPEN_MPI) && MPI_VERSION < 4 && OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h>
#define BCAST_INIT MPIX_Bcast_init
#else
#define BCAST_INIT MPI_Bcast_init
#endif

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int bytes = argc > 1 ? atoi(argv[1]) : 1;
    long iter = argc > 2 ? atol(argv[2]) : 100000;
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    char *b = calloc(bytes + 1, 1);
    MPI_Request r;
    BCAST_INIT(b, bytes, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    for (long i = 0; i < iter / 10; i++) {
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iter; i++) {
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    double t = MPI_Wtime() - t0;
    MPI_Request_free(&r);
    if (me == 0)
        printf("persistent: %.1f ns/call\n", t / iter * 1e9);
    free(b);
    MPI_Finalize();
    return 0;
}
