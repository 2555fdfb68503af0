/* Regression (drop-in defect 11): run under tests/c/regress_pmpi_shim.c, a
 * profiling tool that counts MPI_ calls. This program calls nothing the
 * tool counts (only MPI_Init, MPI_Comm_rank/size, datatype constructors,
 * MPI_Bcast, MPI_Finalize), so the tool must report 0 calls on every rank:
 * colltune's own set-up and messages must go through PMPI_. Each rank
 * checks its data and prints `regress_pmpi: rank R ok`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static int b[200000];
    MPI_Datatype v;
    MPI_Type_vector(1000, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    int sizes[] = {1, 1000, 100000};
    for (int k = 0; k < 3; k++)
        for (int root = 0; root < size; root++) {
            int n = sizes[k];
            for (int i = 0; i < n; i++) b[i] = rank == root ? i + root : -1;
            MPI_Bcast(b, n, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++)
                if (b[i] != i + root) {
                    bad++;
                    break;
                }
            for (int i = 0; i < 2000; i++) b[i] = rank == root ? i * 5 : -1;
            MPI_Bcast(b, 1, v, root, MPI_COMM_WORLD);
            for (int i = 0; i < 2000; i += 2)
                if (b[i] != i * 5) {
                    bad++;
                    break;
                }
        }
    MPI_Type_free(&v);
    printf("regress_pmpi: rank %d %s\n", rank, bad ? "WRONG DATA" : "ok");
    MPI_Finalize();
    return bad ? 1 : 0;
}
