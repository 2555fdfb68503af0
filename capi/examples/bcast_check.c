/* Example C program using colltune's C ABI: broadcasts and swaps at the
 * sizes given on the command line, from every root, and checks every byte.
 * Build: mpicc -O2 -I capi/include bcast_check.c -L target/release -lcolltune
 * Run:   COLLTUNE_TABLE=table.yaml mpirun -n 4 ./bcast_check 1 4096 1048576 */
#include <colltune.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(long seed, long i) {
    unsigned long z = (unsigned long)(seed * 2654435761UL + i * 40503UL + 12345UL);
    z ^= z >> 13; z *= 0x5bd1e995UL; z ^= z >> 15;
    return (unsigned char)z;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (colltune_init() != MPI_SUCCESS) { fprintf(stderr, "colltune_init failed\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int a = 1; a < argc; a++) {
        long n = atol(argv[a]);
        unsigned char *buf = malloc(n + 1), *out = malloc(n + 1), *in = malloc(n + 1);
        for (int root = 0; root < size; root++) {
            for (long i = 0; i < n; i++) buf[i] = rank == root ? pattern(root + 7 * n, i) : (unsigned char)~pattern(root + 7 * n, i);
            if (colltune_bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS) bad++;
            for (long i = 0; i < n; i++)
                if (buf[i] != pattern(root + 7 * n, i)) { fprintf(stderr, "rank %d: bcast %ld B root %d: byte %ld wrong\n", rank, n, root, i); bad++; break; }
        }
        for (int pairing = 0; pairing <= 1; pairing++) {
            int partner = -1, h = size / 2;
            if (pairing == 0) partner = (rank ^ 1) < size ? (rank ^ 1) : -1;
            else partner = rank < h ? rank + h : (rank < 2 * h ? rank - h : -1);
            for (long i = 0; i < n; i++) { out[i] = pattern(100 + rank, i); in[i] = 0; }
            if (colltune_swap(out, in, (int)n, MPI_BYTE, pairing, MPI_COMM_WORLD) != MPI_SUCCESS) bad++;
            for (long i = 0; partner >= 0 && i < n; i++)
                if (in[i] != pattern(100 + partner, i)) { fprintf(stderr, "rank %d: swap %ld B: byte %ld wrong\n", rank, n, i); bad++; break; }
        }
        free(buf); free(out); free(in);
    }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "FAILED: %d wrong\n" : "colltune C ABI: all bytes correct%.0d\n", total);
    colltune_finalize();
    MPI_Finalize();
    return total ? 1 : 0;
}
