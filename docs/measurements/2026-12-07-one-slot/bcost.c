/* Instructions of MPI_Bcast calls (rank R under callgrind), sizes from argv. */
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
    for (int i = 0; i < 5; i++) { MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD); MPI_Barrier(MPI_COMM_WORLD); }
    CALLGRIND_ZERO_STATS;
    for (int i = 0; i < 200; i++) {
      CALLGRIND_TOGGLE_COLLECT;
      MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
      CALLGRIND_TOGGLE_COLLECT;
      MPI_Barrier(MPI_COMM_WORLD);
    }
    snprintf(name, sizeof name, "bcast-%d", n);
    CALLGRIND_DUMP_STATS_AT(name);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
