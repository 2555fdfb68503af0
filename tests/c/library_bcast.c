/* An unmodified MPI program for tables that choose the MPI library's own
 * algorithms (`ompi_tuned` rules): MPI_Bcast of the sizes given, from every
 * root, on MPI_COMM_WORLD and on a split communicator, every byte checked;
 * then, through MPI_T, the forcing variables, which colltune must have put
 * back (so the application's own communicators keep Open MPI's decision).
 * Prints "library_bcast: all bytes correct" and
 * "cvars: algorithm=A segment=S" (rank 0). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char pattern(long seed, long i) {
    unsigned long z = (unsigned long)(seed * 2654435761UL + i * 40503UL + 911UL);
    z ^= z >> 13; z *= 0x5bd1e995UL; z ^= z >> 15;
    return (unsigned char)z;
}

static int check_comm(MPI_Comm comm, long n, const char *name) {
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    unsigned char *buf = malloc(n + 1);
    for (int root = 0; root < size; root++) {
        long seed = root * 31 + n;
        for (long i = 0; i < n; i++)
            buf[i] = rank == root ? pattern(seed, i) : (unsigned char)~pattern(seed, i);
        MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
        long wrong = 0;
        for (long i = 0; i < n; i++)
            if (buf[i] != pattern(seed, i)) {
                if (!wrong) fprintf(stderr, "%s rank %d: %ld B root %d: byte %ld wrong\n", name, rank, n, root, i);
                wrong++;
            }
        bad += wrong != 0;
    }
    free(buf);
    return bad;
}

static int read_cvar(const char *name) {
    int idx, n, value = -1;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) return -2;
    if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) != MPI_SUCCESS) return -3;
    MPI_T_cvar_read(h, &value);
    MPI_T_cvar_handle_free(&h);
    return value;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int rank, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    for (int a = 1; a < argc; a++) {
        long n = atol(argv[a]);
        bad += check_comm(MPI_COMM_WORLD, n, "world");
        bad += check_comm(half, n, "split");
    }
    /* Ints (4-byte elements: the byte count decides the rule). */
    int w[5000];
    for (int i = 0; i < 5000; i++) w[i] = rank == 0 ? i * 3 + 1 : 0;
    MPI_Bcast(w, 5000, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 5000; i++)
        if (w[i] != i * 3 + 1) { fprintf(stderr, "rank %d: int %d wrong\n", rank, i); bad++; break; }
    MPI_Comm_free(&half);
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(total ? "FAILED: %d wrong\n" : "library_bcast: all bytes correct\n", total);
        printf("cvars: algorithm=%d segment=%d\n", read_cvar("coll_tuned_bcast_algorithm"),
               read_cvar("coll_tuned_bcast_algorithm_segmentsize"));
    }
    MPI_T_finalize();
    MPI_Finalize();
    return total != 0;
}
