/* Deterministic cost of one MPI_Bcast entry (benches/callcost.sh): run under
 * callgrind with --collect-atstart=no; each phase collects only inside its
 * calls (CALLGRIND_TOGGLE_COLLECT around each) and is dumped under its own
 * name. Phases: {C MPI_Bcast, Fortran mpi_bcast_} x {MPI_BYTE, a derived
 * contiguous type of 1 byte} x {warm: back to back, cold: caches flushed
 * before each call}. The Fortran entry is called as gfortran's code calls
 * it (every argument by reference, Fortran handles).
 *
 * Usage: driver [bytes=1] [warm calls=1000] [cold calls=50]
 * Every rank runs the same calls (a real broadcast, root 0). Built with
 * -DCALLCOST_NO_FORTRAN for a library without the Fortran binding
 * (libmpi_mpifh: Open MPI 5.0 from pip): the C phases only. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#ifndef CALLCOST_NO_FORTRAN
extern void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
                       MPI_Fint *ierr);
#else
static void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
                       MPI_Fint *ierr) {
  (void)buf, (void)count, (void)type, (void)root, (void)comm;
  *ierr = MPI_ERR_OTHER; /* never called: main runs no Fortran phase */
}
#endif

/* Flushes the (simulated) caches: 8 MiB of data written and 64 KiB of
 * straight-line code run, more than the D1, LL and I1 callgrind is given. */
static volatile char *junk;
#define EVICT_DATA (8u << 20)
static void __attribute__((noinline)) evict(void) {
  for (size_t i = 0; i < EVICT_DATA; i += 64) junk[i] = (char)i;
  __asm__ volatile(".rept 65536\n\tnop\n\t.endr" ::: "memory");
}

static void phase(const char *name, int fortran, MPI_Datatype dt, int count, char *buf, int calls,
                  int cold) {
  MPI_Fint fcount = count, ftype = MPI_Type_c2f(dt), froot = 0, fcomm = MPI_Comm_c2f(MPI_COMM_WORLD),
           ierr = 0;
  /* first calls (set-up, the caches' fills) outside the measurement */
  for (int i = 0; i < 3; i++) {
    if (fortran)
      mpi_bcast_(buf, &fcount, &ftype, &froot, &fcomm, &ierr);
    else
      MPI_Bcast(buf, count, dt, 0, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CALLGRIND_ZERO_STATS;
  for (int i = 0; i < calls; i++) {
    if (cold) evict();
    if (fortran) {
      CALLGRIND_TOGGLE_COLLECT;
      mpi_bcast_(buf, &fcount, &ftype, &froot, &fcomm, &ierr);
      CALLGRIND_TOGGLE_COLLECT;
    } else {
      CALLGRIND_TOGGLE_COLLECT;
      MPI_Bcast(buf, count, dt, 0, MPI_COMM_WORLD);
      CALLGRIND_TOGGLE_COLLECT;
    }
  }
  CALLGRIND_DUMP_STATS_AT(name);
  if (ierr != MPI_SUCCESS) {
    fprintf(stderr, "callcost: %s: ierror %d\n", name, (int)ierr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int bytes = argc > 1 ? atoi(argv[1]) : 1, warm = argc > 2 ? atoi(argv[2]) : 1000,
      cold = argc > 3 ? atoi(argv[3]) : 50;
  junk = malloc(EVICT_DATA);
  char *buf = calloc((size_t)bytes + 64, 1);
  MPI_Datatype derived;
  MPI_Type_contiguous(1, MPI_BYTE, &derived);
  MPI_Type_commit(&derived);
  struct {
    const char *entry;
    int fortran;
  } entries[] = {{"C", 0}, {"Fortran", 1}};
#ifdef CALLCOST_NO_FORTRAN
  const int n_entries = 1;
#else
  const int n_entries = 2;
#endif
  struct {
    const char *name;
    MPI_Datatype dt;
  } types[] = {{"MPI_BYTE", MPI_BYTE}, {"derived", derived}};
  char name[96];
  for (int e = 0; e < n_entries; e++)
    for (int t = 0; t < 2; t++)
      for (int c = 0; c < 2; c++) {
        snprintf(name, sizeof name, "%s|%s|%s", entries[e].entry, types[t].name, c ? "cold" : "warm");
        phase(name, entries[e].fortran, types[t].dt, bytes, buf, c ? cold : warm, c);
      }
  MPI_Type_free(&derived);
  MPI_Finalize();
  return 0;
}
