/* Derived datatypes made and freed over and over, of changing sizes, so
 * that a freed type's handle comes back for one of another size (Open
 * MPI's handles are addresses, and its allocator reuses them). The root
 * describes its data with the new type, the other ranks with MPI_BYTE (the
 * same type signature's bytes): a drop-in that remembered something of a
 * freed type's handle (its size, so whether the call is handed to Open
 * MPI's rules) would send the root's call down another path than the
 * others': a hang (the alarm ends it) or wrong bytes. With a table that
 * hands small sizes to Open MPI and runs colltune's algorithm above, the
 * sizes alternate across the boundary: COUNT elements of 4 B (handed off)
 * and of ELEM_BIG B (colltune's).
 * Usage: recycled_types [count=100] [big=64]
 * Prints "recycled_types: all bytes correct" and, on rank 0,
 * "recycled handles: N of M" (types whose handle an earlier one of another
 * size had). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 40

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    alarm(60);
    int count = argc > 1 ? atoi(argv[1]) : 100, big = argc > 2 ? atoi(argv[2]) : 64;
    int rank, nranks, bad = 0, recycled = 0, made = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    uintptr_t last_handle[2] = {0, 0};
    unsigned char *buf = malloc((size_t)count * big + 1);
    for (int r = 0; r < ROUNDS; r++) {
        int elem = r % 2 ? big : 4, root = r % nranks;
        long n = (long)count * elem;
        MPI_Datatype t;
        MPI_Type_contiguous(elem, MPI_BYTE, &t);
        MPI_Type_commit(&t);
        uintptr_t h = (uintptr_t)t;
        if (h == last_handle[!(r % 2)]) recycled++;
        last_handle[r % 2] = h;
        made++;
        for (long i = 0; i < n; i++)
            buf[i] = rank == root ? (unsigned char)(i * 13 + r) : 0xee;
        if (rank == root)
            MPI_Bcast(buf, count, t, root, MPI_COMM_WORLD);
        else
            MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        /* and once more from every rank's own type (the line of a type
         * that is about to be freed) */
        MPI_Bcast(buf, count, t, root, MPI_COMM_WORLD);
        for (long i = 0; i < n; i++)
            if (buf[i] != (unsigned char)(i * 13 + r)) {
                fprintf(stderr, "rank %d: round %d (%ld B): byte %ld wrong\n", rank, r, n, i);
                bad++;
                break;
            }
        MPI_Type_free(&t);
    }
    free(buf);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0) printf("recycled_types: all bytes correct\n");
        printf("recycled handles: %d of %d\n", recycled, made);
    }
    MPI_Finalize();
    return all != 0;
}
