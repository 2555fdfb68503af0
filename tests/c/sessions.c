/* An unmodified MPI 4 program that never calls MPI_Init: two sessions, a
 * communicator made from each one's "mpi://WORLD" process set, one split
 * from it, and one made from a subgroup by its members only; MPI_Bcast of
 * many sizes from every root on each, a strided datatype too; checks every
 * byte. It knows nothing of colltune: under the interposition library its
 * broadcasts take the table's routes. Arguments: sizes. Prints
 * "sessions: all bytes correct", or "sessions: not in this MPI" (exit 0)
 * where the library has no sessions (before MPI 4; Open MPI 5 has them but
 * says MPI 3.1). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
int main(void) {
    printf("sessions: not in this MPI (MPI %d.%d)\n", MPI_VERSION, MPI_SUBVERSION);
    return 0;
}
#else
#include "bcast_bytes.h"

static int check_strided(MPI_Comm comm) {
    int rank, v[64], bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Datatype strided;
    MPI_Type_vector(32, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    for (int i = 0; i < 64; i++) v[i] = rank == 0 ? i : -1;
    MPI_Bcast(v, 1, strided, 0, comm);
    for (int i = 0; i < 64; i++)
        if (v[i] != (i % 2 == 0 ? i : (rank == 0 ? i : -1))) { fprintf(stderr, "rank %d: strided element %d wrong\n", rank, i); bad++; break; }
    MPI_Type_free(&strided);
    return bad;
}

static MPI_Comm world_of(MPI_Session s, const char *tag, MPI_Group *group) {
    MPI_Comm comm;
    if (MPI_Group_from_session_pset(s, "mpi://WORLD", group) != MPI_SUCCESS ||
        MPI_Comm_create_from_group(*group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm) != MPI_SUCCESS) {
        fprintf(stderr, "sessions: no communicator from mpi://WORLD\n");
        exit(2);
    }
    return comm;
}

int main(int argc, char **argv) {
    MPI_Session s1, s2;
    if (MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s1) != MPI_SUCCESS) {
        fprintf(stderr, "sessions: MPI_Session_init failed\n");
        return 2;
    }
    MPI_Group g1, g2;
    MPI_Comm world = world_of(s1, "org.colltune.test.world", &g1);
    int rank, size, bad = 0;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    MPI_Comm half;
    MPI_Comm_split(world, rank % 2, rank, &half);
    /* The even ranks' communicator, made by its members only. */
    MPI_Group evens;
    int n_even = (size + 1) / 2, ranks[1024];
    for (int i = 0; i < n_even && i < 1024; i++) ranks[i] = 2 * i;
    MPI_Group_incl(g1, n_even, ranks, &evens);
    MPI_Comm even = MPI_COMM_NULL;
    if (rank % 2 == 0)
        MPI_Comm_create_from_group(evens, "org.colltune.test.evens", MPI_INFO_NULL, MPI_ERRORS_RETURN, &even);
    /* A second session, finalised first: the first one's communicators
     * keep working after it. */
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2);
    MPI_Comm second = world_of(s2, "org.colltune.test.second", &g2);
    for (int a = 1; a < argc; a++) {
        long n = atol(argv[a]);
        bad += check_comm(world, n, "world");
        bad += check_comm(half, n, "split");
        if (even != MPI_COMM_NULL) bad += check_comm(even, n, "evens");
        bad += check_comm(second, n, "second session");
    }
    bad += check_strided(world);
    MPI_Comm_free(&second);
    MPI_Group_free(&g2);
    MPI_Session_finalize(&s2);
    for (int a = 1; a < argc; a++) bad += check_comm(world, atol(argv[a]), "world after the second session");
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, world);
    if (rank == 0) printf(total ? "FAILED: %d wrong\n" : "sessions: all bytes correct\n", total);
    if (even != MPI_COMM_NULL) MPI_Comm_free(&even);
    MPI_Group_free(&evens);
    MPI_Comm_free(&half);
    MPI_Comm_free(&world);
    MPI_Group_free(&g1);
    MPI_Session_finalize(&s1);
    return total != 0;
}
#endif
