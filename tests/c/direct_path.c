/* The direct path (issue 16): every byte of a broadcast through a tree
 * that fits one segment, from every root, counts 0, 1, odd and larger, in
 * MPI_BYTE, MPI_INT and a strided vector (packed around the same path),
 * on MPI_COMM_WORLD, a duplicate and a reversed split. Root buffers hold a
 * pattern of (root, count, comm), the others its complement, with guard
 * bytes after the data that must stay untouched. Prints
 * "direct_path: all bytes correct" on rank 0, or the first wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad = 0;

static unsigned char pat(int root, int n, int c, long i) {
    return (unsigned char)(i * 131 + root * 17 + n * 7 + c * 3 + 1);
}

static void check_bytes(const char *what, MPI_Comm comm, int c, int n) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int root = 0; root < size; root++) {
        unsigned char *b = malloc(n + 16);
        for (long i = 0; i < n + 16; i++)
            b[i] = rank == root ? pat(root, n, c, i) : (unsigned char)~pat(root, n, c, i);
        MPI_Bcast(b, n, MPI_BYTE, root, comm);
        for (long i = 0; i < n + 16 && !bad; i++) {
            unsigned char want = i < n || rank == root ? pat(root, n, c, i) : (unsigned char)~pat(root, n, c, i);
            if (b[i] != want) {
                printf("direct_path: %s comm %d rank %d root %d count %d: byte %ld is %u, want %u\n",
                       what, c, rank, root, n, i, b[i], want);
                bad = 1;
            }
        }
        free(b);
    }
}

static void check_ints(MPI_Comm comm, int c, int n) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int root = 0; root < size; root++) {
        int *b = malloc(sizeof(int) * (n + 1));
        for (int i = 0; i <= n; i++) b[i] = rank == root ? i * 7 + root : -1;
        MPI_Bcast(b, n, MPI_INT, root, comm);
        for (int i = 0; i <= n && !bad; i++) {
            int want = i < n || rank == root ? i * 7 + root : -1;
            if (b[i] != want) {
                printf("direct_path: ints comm %d rank %d root %d count %d: int %d is %d, want %d\n",
                       c, rank, root, n, i, b[i], want);
                bad = 1;
            }
        }
        free(b);
    }
}

/* Every other int (a vector) at the root, plain ints elsewhere: one
 * signature, so one path; packed at the root. */
static void check_vector(MPI_Comm comm, int c, int n) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int root = 0; root < size; root++) {
        int *b = malloc(sizeof(int) * (2 * n + 1));
        for (int i = 0; i < 2 * n + 1; i++) b[i] = rank == root ? (i % 2 ? -5 : i / 2 + root) : -1;
        if (rank == root)
            MPI_Bcast(b, 1, vec, root, comm);
        else
            MPI_Bcast(b, n, MPI_INT, root, comm);
        for (int i = 0; i < n && rank != root && !bad; i++) {
            if (b[i] != i + root) {
                printf("direct_path: vector comm %d rank %d root %d count %d: int %d is %d\n",
                       c, rank, root, n, i, b[i]);
                bad = 1;
            }
        }
        free(b);
    }
    MPI_Type_free(&vec);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comms[3];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    const int counts[] = {0, 1, 2, 3, 7, 64, 255, 1001, 4097, 65535, 65537, 300001};
    for (int c = 0; c < 3; c++) {
        for (unsigned k = 0; k < sizeof counts / sizeof *counts; k++) {
            check_bytes("bytes", comms[c], c, counts[k]);
            if (counts[k] < 70000) {
                check_ints(comms[c], c, counts[k]);
                check_vector(comms[c], c, counts[k] ? counts[k] : 1);
            }
        }
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any) printf("direct_path: all bytes correct\n");
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    MPI_Finalize();
    return any;
}
