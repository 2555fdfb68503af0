/* An unmodified MPI program: MPI_Bcast of many sizes from every root, on
 * MPI_COMM_WORLD and on a split communicator, with contiguous and
 * non-contiguous datatypes; checks every byte. It knows nothing of colltune:
 * the interposition library routes its broadcasts. Arguments: sizes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "bcast_bytes.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    for (int a = 1; a < argc; a++) {
        long n = atol(argv[a]);
        bad += check_comm(MPI_COMM_WORLD, n, "world");
        bad += check_comm(half, n, "split");
    }
    /* A non-contiguous datatype (every other int): the library's own bcast. */
    int v[64];
    MPI_Datatype strided;
    MPI_Type_vector(32, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    for (int i = 0; i < 64; i++) v[i] = rank == 0 ? i : -1;
    MPI_Bcast(v, 1, strided, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 64; i++)
        if (v[i] != (i % 2 == 0 ? i : (rank == 0 ? i : -1))) { fprintf(stderr, "rank %d: strided element %d wrong\n", rank, i); bad++; break; }
    MPI_Type_free(&strided);
    /* Elements of 4 bytes, contiguous: counted in bytes by colltune. */
    int w[1000];
    for (int i = 0; i < 1000; i++) w[i] = rank == 1 % 2 ? 0 : 0, w[i] = rank == 0 ? i * 3 : 0;
    MPI_Bcast(w, 1000, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 1000; i++) if (w[i] != i * 3) { fprintf(stderr, "rank %d: int %d wrong\n", rank, i); bad++; break; }
    MPI_Comm_free(&half);
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d wrong\n" : "plain_bcast: all bytes correct\n", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
