/* One-sided puts into windows of several sizes (MPI_Win_allocate, fence,
 * MPI_Put of the whole window to the next rank, fence, every byte checked).
 * Debian's MPICH 4.0.2 (ch4:ucx) loses puts into windows of 1, 7, 8 and
 * 65537 bytes (64 and 4096 work), which is why colltune allocates its
 * windows in whole pages (mpi/src/transport/mpi/ffi.rs, win_allocate).
 * Run: mpicc.mpich -o w tests/c/win_sizes.c && mpiexec.mpich -n 2 ./w */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, sizes[] = {1, 7, 8, 64, 4096, 65537}, failed = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 0; k < 6; k++) {
        int len = sizes[k], bad = 0, any = 0;
        unsigned char *base, *src = malloc(len);
        MPI_Win win;
        MPI_Win_allocate(len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        memset(src, rank * 16 + k + 1, len);
        memset(base, 0xEE, len);
        MPI_Win_fence(0, win);
        MPI_Put(src, len, MPI_BYTE, (rank + 1) % size, 0, len, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        int from = (rank + size - 1) % size;
        for (int i = 0; i < len; i++) if (base[i] != (unsigned char)(from * 16 + k + 1)) { bad = 1; break; }
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0) printf("window of %d bytes: %s\n", len, any ? "puts LOST" : "ok");
        failed |= any;
        MPI_Win_free(&win);
        free(src);
    }
    MPI_Finalize();
    return failed;
}
