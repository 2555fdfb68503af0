/* A minimal profiling tool (as mpiP or Score-P would be): it defines the
 * MPI_ entry points colltune used for its own traffic and set-up, counts
 * each call and forwards it to PMPI_. Loaded before the interposition
 * library (LD_PRELOAD=shim.so:libcolltune_preload.so), it must count only
 * what the application itself calls: colltune's internal messages and
 * communicators go through PMPI_ (drop-in defect 11). At exit each
 * process prints `pmpi_shim: N calls` and the names it saw. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int calls;
static char seen[1024];

static void count(const char *name) {
    calls++;
    if (!strstr(seen, name) && strlen(seen) + strlen(name) + 2 < sizeof seen) {
        strcat(seen, " ");
        strcat(seen, name);
    }
}

__attribute__((destructor)) static void report(void) {
    char line[1200];
    int n = snprintf(line, sizeof line, "pmpi_shim: %d calls%s\n", calls, seen);
    if (write(2, line, n) < 0) return;
}

#define BUF const void *b, int n, MPI_Datatype t
int MPI_Send(BUF, int d, int tag, MPI_Comm c) { count("MPI_Send"); return PMPI_Send(b, n, t, d, tag, c); }
int MPI_Rsend(BUF, int d, int tag, MPI_Comm c) { count("MPI_Rsend"); return PMPI_Rsend(b, n, t, d, tag, c); }
int MPI_Isend(BUF, int d, int tag, MPI_Comm c, MPI_Request *r) { count("MPI_Isend"); return PMPI_Isend(b, n, t, d, tag, c, r); }
int MPI_Irsend(BUF, int d, int tag, MPI_Comm c, MPI_Request *r) { count("MPI_Irsend"); return PMPI_Irsend(b, n, t, d, tag, c, r); }
int MPI_Recv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st) { count("MPI_Recv"); return PMPI_Recv(b, n, t, s, tag, c, st); }
int MPI_Irecv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *r) { count("MPI_Irecv"); return PMPI_Irecv(b, n, t, s, tag, c, r); }
int MPI_Sendrecv(BUF, int d, int stag, void *rb, int rn, MPI_Datatype rt, int s, int rtag, MPI_Comm c, MPI_Status *st) {
    count("MPI_Sendrecv");
    return PMPI_Sendrecv(b, n, t, d, stag, rb, rn, rt, s, rtag, c, st);
}
int MPI_Waitall(int n, MPI_Request *r, MPI_Status *st) { count("MPI_Waitall"); return PMPI_Waitall(n, r, st); }
int MPI_Waitany(int n, MPI_Request *r, int *i, MPI_Status *st) { count("MPI_Waitany"); return PMPI_Waitany(n, r, i, st); }
int MPI_Comm_dup(MPI_Comm c, MPI_Comm *o) { count("MPI_Comm_dup"); return PMPI_Comm_dup(c, o); }
int MPI_Comm_split(MPI_Comm c, int col, int key, MPI_Comm *o) { count("MPI_Comm_split"); return PMPI_Comm_split(c, col, key, o); }
int MPI_Comm_split_type(MPI_Comm c, int ty, int key, MPI_Info i, MPI_Comm *o) { count("MPI_Comm_split_type"); return PMPI_Comm_split_type(c, ty, key, i, o); }
int MPI_Comm_free(MPI_Comm *c) { count("MPI_Comm_free"); return PMPI_Comm_free(c); }
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) { count("MPI_Allreduce"); return PMPI_Allreduce(s, r, n, t, op, c); }
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c) { count("MPI_Allgather"); return PMPI_Allgather(s, sn, st, r, rn, rt, c); }
int MPI_Barrier(MPI_Comm c) { count("MPI_Barrier"); return PMPI_Barrier(c); }
int MPI_Pack(const void *in, int n, MPI_Datatype t, void *out, int os, int *pos, MPI_Comm c) { count("MPI_Pack"); return PMPI_Pack(in, n, t, out, os, pos, c); }
int MPI_Unpack(const void *in, int is, int *pos, void *out, int n, MPI_Datatype t, MPI_Comm c) { count("MPI_Unpack"); return PMPI_Unpack(in, is, pos, out, n, t, c); }
int MPI_Type_size(MPI_Datatype t, int *s) { count("MPI_Type_size"); return PMPI_Type_size(t, s); }
int MPI_Comm_set_attr(MPI_Comm c, int k, void *v) { count("MPI_Comm_set_attr"); return PMPI_Comm_set_attr(c, k, v); }
int MPI_Comm_get_attr(MPI_Comm c, int k, void *v, int *f) { count("MPI_Comm_get_attr"); return PMPI_Comm_get_attr(c, k, v, f); }
