/* The floor of interposition: an LD_PRELOAD library whose MPI_Bcast (and
 * Fortran mpi_bcast_) and MPI_Ibcast only call the library's profiling
 * entries. Whatever colltune's preload costs beyond this, colltune adds
 * (benches/callcost.sh, jobs/imb-compare.sh build it with the MPI's own
 * mpicc; its --bench nbc times MPI_Ibcast through it). */
#include <mpi.h>

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  return PMPI_Bcast(buf, count, dt, root, comm);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req) {
  return PMPI_Ibcast(buf, count, dt, root, comm, req);
}

extern void pmpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
                        MPI_Fint *ierr) __attribute__((weak));

void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
                MPI_Fint *ierr) {
  pmpi_bcast_(buf, count, type, root, comm, ierr);
}
