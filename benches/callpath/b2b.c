/* Back-to-back MPI_Bcast timing, IMB-like: for each size 1 B .. max, on a
 * duplicate of MPI_COMM_WORLD (as IMB runs on a communicator of its own),
 * `trials` timed loops of `iters` calls with the root fixed at 0, after a
 * barrier and a warm-up; per call, the average over ranks of the loop time
 * (IMB's t_avg). Prints one line per size: bytes, the median over trials
 * and the spread (min, max), in microseconds.
 * Usage: b2b [max_bytes=4194304] [trials=5] [budget_bytes=67108864]
 * (iters per loop = budget / size, clamped to 20..2000). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long max = argc > 1 ? atol(argv[1]) : 4194304;
    int trials = argc > 2 ? atoi(argv[2]) : 5;
    long budget = argc > 3 ? atol(argv[3]) : 67108864;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char *buf = malloc(max > 0 ? max : 1);
    memset(buf, rank, max > 0 ? max : 1);
    double *t = malloc(sizeof(double) * trials);
    for (long n = 1; n <= max; n *= 2) {
        long iters = budget / n;
        if (iters > 2000) iters = 2000;
        if (iters < 20) iters = 20;
        for (int w = 0; w < 10; w++) MPI_Bcast(buf, (int)n, MPI_BYTE, 0, comm);
        for (int k = 0; k < trials; k++) {
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) MPI_Bcast(buf, (int)n, MPI_BYTE, 0, comm);
            double mine = (MPI_Wtime() - t0) / iters * 1e6, sum = 0;
            MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
            t[k] = sum / size;
        }
        qsort(t, trials, sizeof(double), cmp);
        if (rank == 0) printf("%ld %.4f %.4f %.4f\n", n, t[trials / 2], t[0], t[trials - 1]);
    }
    free(t);
    free(buf);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
