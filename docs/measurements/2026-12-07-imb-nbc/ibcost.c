/* Instructions of one MPI_Ibcast post (rank 0, the root), sizes from argv,
 * under callgrind --collect-atstart=no: plain, shim or drop-in. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char *buf = calloc(1 << 20, 1);
  char name[64];
  for (int a = 1; a < argc; a++) {
    int n = atoi(argv[a]);
    MPI_Request r;
    for (int i = 0; i < 5; i++) { MPI_Ibcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); }
    MPI_Barrier(MPI_COMM_WORLD);
    CALLGRIND_ZERO_STATS;
    for (int i = 0; i < 200; i++) {
      CALLGRIND_TOGGLE_COLLECT;
      MPI_Ibcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
      CALLGRIND_TOGGLE_COLLECT;
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    snprintf(name, sizeof name, "ibcast-%d", n);
    CALLGRIND_DUMP_STATS_AT(name);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
