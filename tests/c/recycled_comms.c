/* Communicators made and freed over and over, of changing sizes, so that a
 * freed communicator's handle comes back for one of another size (Open
 * MPI's handles are addresses, and its allocator reuses them): a drop-in
 * that remembered something of a handle past its free (its size, which
 * rules apply) would run, on that rank, another path than the others: a
 * hang (the alarm ends it) or wrong bytes. Every byte is checked, of
 * MPI_BYTE, MPI_INT and MPI_DOUBLE broadcasts (several datatypes per
 * communicator), at the sizes given, from every root.
 * Prints "recycled_comms: all bytes correct" and, on rank 0,
 * "recycled handles: N of M" (communicators whose handle an earlier one of
 * another size had on this rank). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 120
#define SEEN 64

static unsigned char pattern(long seed, long i) {
    unsigned long z = (unsigned long)(seed * 2654435761UL + i * 40503UL + 911UL);
    z ^= z >> 13; z *= 0x5bd1e995UL; z ^= z >> 15;
    return (unsigned char)z;
}

static int check_bytes(MPI_Comm comm, long n, long salt) {
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    unsigned char *buf = malloc(n + 1);
    for (int root = 0; root < size; root++) {
        long seed = salt * 7 + root * 31 + n;
        for (long i = 0; i < n; i++)
            buf[i] = rank == root ? pattern(seed, i) : (unsigned char)~pattern(seed, i);
        MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
        for (long i = 0; i < n; i++)
            if (buf[i] != pattern(seed, i)) {
                fprintf(stderr, "rank %d: %ld B root %d of %d: byte %ld wrong\n", rank, n, root, size, i);
                bad++;
                break;
            }
    }
    free(buf);
    return bad;
}

static int check_typed(MPI_Comm comm, long n, long salt) {
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long ni = n / 4 + 1, nd = n / 8 + 1;
    int *w = malloc(ni * sizeof *w);
    double *d = malloc(nd * sizeof *d);
    int root = (int)(salt % size);
    for (long i = 0; i < ni; i++) w[i] = rank == root ? (int)(i * 3 + salt) : -1;
    for (long i = 0; i < nd; i++) d[i] = rank == root ? (double)i * 0.5 + salt : -1.0;
    MPI_Bcast(w, (int)ni, MPI_INT, root, comm);
    MPI_Bcast(d, (int)nd, MPI_DOUBLE, root, comm);
    for (long i = 0; i < ni; i++)
        if (w[i] != (int)(i * 3 + salt)) { fprintf(stderr, "rank %d: int %ld wrong\n", rank, i); bad++; break; }
    for (long i = 0; i < nd; i++)
        if (d[i] != (double)i * 0.5 + salt) { fprintf(stderr, "rank %d: double %ld wrong\n", rank, i); bad++; break; }
    free(w);
    free(d);
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    alarm(90); /* a hang ends the job instead of the test's time */
    int rank, nranks, bad = 0, recycled = 0, made = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    uintptr_t handle[SEEN];
    int sizes[SEEN], nseen = 0;
    for (int r = 0; r < ROUNDS; r++) {
        /* Groups of changing sizes: ranks below the cut together, the
         * others together; the cut moves every round. */
        int cut = 1 + (r * 7 + 3) % nranks;
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, rank < cut, (rank * 5 + r) % nranks, &c);
        int size;
        MPI_Comm_size(c, &size);
        uintptr_t h = (uintptr_t)c;
        for (int i = 0; i < nseen; i++)
            if (handle[i] == h && sizes[i] != size) { recycled++; break; }
        if (nseen < SEEN) { handle[nseen] = h; sizes[nseen] = size; nseen++; }
        made++;
        for (int a = 1; a < argc; a++) {
            long n = atol(argv[a]);
            bad += check_bytes(c, n, r);
            bad += check_typed(c, n, r);
        }
        MPI_Comm_free(&c);
    }
    int total = 0, recycled_max = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&recycled, &recycled_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(total ? "FAILED: %d wrong\n" : "recycled_comms: all bytes correct\n", total);
        printf("recycled handles: %d of %d\n", recycled_max, made);
    }
    MPI_Finalize();
    return total != 0;
}
