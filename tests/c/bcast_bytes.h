/* Broadcasts of n bytes from every root of a communicator, every byte
 * checked: shared by the test programs (plain_bcast.c, sessions.c).
 * Include after <mpi.h>, <stdio.h> and <stdlib.h>. */
#ifndef COLLTUNE_TEST_BCAST_BYTES_H
#define COLLTUNE_TEST_BCAST_BYTES_H

static unsigned char pattern(long seed, long i) {
    unsigned long z = (unsigned long)(seed * 2654435761UL + i * 40503UL + 777UL);
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
        for (long i = 0; i < n; i++) buf[i] = rank == root ? pattern(seed, i) : (unsigned char)~pattern(seed, i);
        if (MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm) != MPI_SUCCESS) {
            fprintf(stderr, "%s rank %d: %ld B root %d: MPI_Bcast failed\n", name, rank, n, root);
            bad++;
            continue;
        }
        for (long i = 0; i < n; i++)
            if (buf[i] != pattern(seed, i)) { fprintf(stderr, "%s rank %d: %ld B root %d: byte %ld wrong\n", name, rank, n, root, i); bad++; break; }
    }
    free(buf);
    return bad;
}

#endif
