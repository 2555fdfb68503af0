/* Broadcasts of "device" memory (the stand-in GPU runtime, tests/c/gpu/
 * fake_cuda.c, loaded after MPI_Init by path, as programs load their GPU
 * runtime once they know their node-local rank): from every root, of the
 * sizes given, as MPI_BYTE and as a derived datatype (a vector of every
 * other int), on MPI_COMM_WORLD and on a split communicator. Any host access
 * to the memory faults; every byte is checked through the runtime's copies.
 * Usage: device_bcast RUNTIME.so SIZE... Prints "device_bcast: all bytes
 * correct" (rank 0). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*dev_alloc)(size_t);
static void (*dev_write)(void *, const void *, size_t);
static void (*dev_read)(void *, const void *, size_t);

static unsigned char pattern(long seed, long i) {
    unsigned long z = (unsigned long)(seed * 2654435761UL + i * 40503UL + 911UL);
    z ^= z >> 13; z *= 0x5bd1e995UL; z ^= z >> 15;
    return (unsigned char)z;
}

/* n bytes as MPI_BYTE, or n/8 pairs of ints of which the vector moves the
 * first: the second of each pair must stay as it was. */
static int check(MPI_Comm comm, long n, int derived, const char *name) {
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    unsigned char *dev = dev_alloc(n + 1);
    unsigned char *host = malloc(n + 1), *want = malloc(n + 1);
    MPI_Datatype vec = MPI_BYTE;
    int count = (int)n;
    if (derived) {
        count = (int)(n / 8);
        MPI_Type_vector(count, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        count = count > 0 ? 1 : 0;
    }
    for (int root = 0; root < size; root++) {
        long seed = root * 31 + n + derived;
        for (long i = 0; i < n; i++) {
            want[i] = pattern(seed, i);
            host[i] = rank == root ? want[i] : (unsigned char)~want[i];
        }
        if (derived) /* the gaps keep each rank's own bytes */
            for (long i = 0; i < n; i++)
                if ((i / 4) % 2 == 1 || i >= (n / 8) * 8) want[i] = host[i];
        dev_write(dev, host, n);
        MPI_Bcast(dev, count, vec, root, comm);
        dev_read(host, dev, n);
        for (long i = 0; i < n; i++)
            if (host[i] != want[i]) {
                fprintf(stderr, "%s rank %d: %ld B%s root %d: byte %ld wrong\n", name, rank, n,
                        derived ? " (vector)" : "", root, i);
                bad++;
                break;
            }
    }
    if (derived) MPI_Type_free(&vec);
    free(host);
    free(want);
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    /* A host broadcast first: colltune looks for a GPU runtime then and
     * finds none; the one loaded next must be seen at the next call. */
    int rank0, early[1024];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank0);
    for (int i = 0; i < 1024; i++) early[i] = rank0 == 0 ? i * 7 : -1;
    MPI_Bcast(early, 1024, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 1024; i++)
        if (early[i] != i * 7) { fprintf(stderr, "device_bcast: host int %d wrong\n", i); MPI_Abort(MPI_COMM_WORLD, 3); }
    void *rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!rt) { fprintf(stderr, "device_bcast: %s\n", dlerror()); MPI_Abort(MPI_COMM_WORLD, 2); }
    dev_alloc = (void *(*)(size_t))dlsym(rt, "fake_device_alloc");
    dev_write = (void (*)(void *, const void *, size_t))dlsym(rt, "fake_device_write");
    dev_read = (void (*)(void *, const void *, size_t))dlsym(rt, "fake_device_read");
    int rank, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    for (int a = 2; a < argc; a++) {
        long n = atol(argv[a]);
        for (int derived = 0; derived < 2; derived++) {
            bad += check(MPI_COMM_WORLD, n, derived, "world");
            bad += check(half, n, derived, "half");
        }
    }
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "device_bcast: %d wrong\n" : "device_bcast: all bytes correct\n", all);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return all != 0;
}
