/* Does forcing an Open MPI coll/adapt broadcast algorithm through the MPI
 * tool interface take effect, as colltune's `bench --baseline ompi-adapt`
 * does it? Arguments: the algorithm id (coll_adapt_bcast_algorithm), or -1
 * to write nothing (the environment forced it at MPI_Init), and the segment
 * in bytes (coll_adapt_bcast_segment_size; default 0).
 *
 * With an id: coll_adapt_priority is raised to 100 through MPI_T_cvar_write,
 * MPI_COMM_WORLD duplicated (Open MPI picks a communicator's components when
 * it is made), the priority put back; then the algorithm and segment are
 * written (adapt reads them per call) and read back. A second duplicate,
 * made after the priority was put back, must not get adapt: run with
 * --mca coll_base_verbose 10 and the first duplicate's selection says
 * "adapt, priority 100", the second's "adapt, priority   0".
 *
 * Broadcasts 1 MiB ten times from rank 0 on the first duplicate and checks
 * every byte. jobs/check-ompi-forcing.sh runs it under Open MPI's pml
 * monitoring and compares the messages with those of the same algorithm
 * forced by the environment at MPI_Init (OMPI_MCA_coll_adapt_priority=100,
 * OMPI_MCA_coll_adapt_bcast_algorithm=N), as Open MPI documents. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cvar(const char *name, int *value, int write) {
    int idx, n, rc;
    MPI_T_cvar_handle h;
    if ((rc = MPI_T_cvar_get_index(name, &idx)) != MPI_SUCCESS) {
        fprintf(stderr, "force_adapt: MPI_T_cvar_get_index(%s): %d\n", name, rc);
        return rc;
    }
    if ((rc = MPI_T_cvar_handle_alloc(idx, NULL, &h, &n)) != MPI_SUCCESS) {
        fprintf(stderr, "force_adapt: MPI_T_cvar_handle_alloc(%s): %d\n", name, rc);
        return rc;
    }
    rc = write ? MPI_T_cvar_write(h, value) : MPI_T_cvar_read(h, value);
    if (rc != MPI_SUCCESS)
        fprintf(stderr, "force_adapt: MPI_T_cvar_%s(%s): %d\n", write ? "write" : "read", name, rc);
    MPI_T_cvar_handle_free(&h);
    return rc;
}

int main(int argc, char **argv) {
    int provided, rank, bad = 0, total = 0;
    int alg = argc > 1 ? atoi(argv[1]) : -1;
    int seg = argc > 2 ? atoi(argv[2]) : 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm c, after;
    if (alg >= 0) {
        int old, high = 100, back_alg = -1, back_seg = -1;
        if (cvar("coll_adapt_priority", &old, 0) || cvar("coll_adapt_priority", &high, 1))
            MPI_Abort(MPI_COMM_WORLD, 2);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        if (cvar("coll_adapt_priority", &old, 1)) MPI_Abort(MPI_COMM_WORLD, 2);
        if (cvar("coll_adapt_bcast_algorithm", &alg, 1) || cvar("coll_adapt_bcast_segment_size", &seg, 1) ||
            cvar("coll_adapt_bcast_algorithm", &back_alg, 0) || cvar("coll_adapt_bcast_segment_size", &back_seg, 0))
            MPI_Abort(MPI_COMM_WORLD, 2);
        if (back_alg != alg || back_seg != seg) {
            fprintf(stderr, "force_adapt: wrote algorithm %d segment %d, read back %d %d\n", alg, seg, back_alg,
                    back_seg);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &after);
    const int n = 1 << 20;
    unsigned char *buf = malloc(n);
    for (int it = 0; it < 10; it++) {
        for (int i = 0; i < n; i++) buf[i] = rank == 0 ? (unsigned char)(i * 7 + it) : 0;
        MPI_Bcast(buf, n, MPI_BYTE, 0, c);
        for (int i = 0; i < n; i++)
            if (buf[i] != (unsigned char)(i * 7 + it)) { bad++; break; }
    }
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, c);
    if (rank == 0) printf(total ? "force_adapt: FAILED: %d wrong\n" : "force_adapt: all bytes correct\n", total);
    MPI_Comm_free(&after);
    MPI_Comm_free(&c);
    free(buf);
    MPI_Finalize();
    MPI_T_finalize();
    return total ? 1 : 0;
}
