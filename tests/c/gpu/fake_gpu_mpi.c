/* A stand-in for a GPU-aware MPI library's broadcast: MPI_Bcast and
 * PMPI_Bcast that, where the buffer is the stand-in runtime's "device"
 * memory (fake_cuda.c, found in the process at the call), open it for the
 * host around the MPI library's own PMPI_Bcast, as a GPU-aware library
 * stages device memory. Preloaded after colltune's interposition library
 * (which calls PMPI_Bcast) and before the MPI library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stddef.h>

typedef int (*bcast_fn)(void *, int, MPI_Datatype, int, MPI_Comm);
typedef int (*open_fn)(const void *);
typedef void (*close_fn)(const void *);

static int staged(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    static bcast_fn real;
    if (!real) real = (bcast_fn)dlsym(RTLD_NEXT, "PMPI_Bcast");
    void *rt = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    open_fn op = rt ? (open_fn)dlsym(rt, "fake_device_open") : NULL;
    close_fn cl = rt ? (close_fn)dlsym(rt, "fake_device_close") : NULL;
    int dev = op ? op(buf) : 0;
    int rc = real(buf, count, dt, root, comm);
    if (dev) cl(buf);
    if (rt) dlclose(rt);
    return rc;
}

int PMPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    return staged(buf, count, dt, root, comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    return staged(buf, count, dt, root, comm);
}
