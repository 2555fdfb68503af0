/* A broken drop-in, to prove that the conformance leg can fail
 * (jobs/conformance-ci.sh's self-check): preloaded before
 * libcolltune_preload.so, its MPI_Ibcast flips the first byte of the
 * root's buffer, then calls the next MPI_Ibcast in the lookup order
 * (colltune's), so every rank receives one wrong byte.
 *
 *   mpicc -shared -fPIC -o corrupt_ibcast.so tests/c/corrupt_ibcast.c -ldl
 *   LD_PRELOAD=corrupt_ibcast.so:libcolltune_preload.so ./program
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*ibcast_fn)(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);

int MPI_Ibcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request *request)
{
    static ibcast_fn next;
    if (!next) {
        next = (ibcast_fn) dlsym(RTLD_NEXT, "MPI_Ibcast");
        if (!next) {
            fprintf(stderr, "corrupt_ibcast: no next MPI_Ibcast\n");
            abort();
        }
    }
    /* Intracommunicators only: on an intercommunicator a root of
     * MPI_PROC_NULL (-1 in MPICH) names no rank. */
    int inter = 0, rank = 0, size = 0;
    MPI_Comm_test_inter(comm, &inter);
    MPI_Type_size(datatype, &size);
    if (!inter) {
        MPI_Comm_rank(comm, &rank);
    }
    if (!inter && rank == root && count > 0 && size > 0 && buf != MPI_BOTTOM) {
        ((unsigned char *) buf)[0] ^= 0x5a;
    }
    return next(buf, count, datatype, root, comm, request);
}
