/* Does forcing an Open MPI coll/tuned broadcast algorithm through the MPI
 * tool interface take effect, as colltune's `bench --baseline ompi-tuned`
 * does it (MPI_T_cvar_write of coll_tuned_bcast_algorithm, then
 * MPI_Comm_dup)? Argument: the algorithm id, or -1 to write nothing.
 * Broadcasts 1 MiB ten times from rank 0 on the duplicate and checks every
 * byte. jobs/check-ompi-forcing.sh runs it under Open MPI's pml monitoring
 * and compares the messages with those of the same algorithm forced by the
 * environment at MPI_Init, which Open MPI documents. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cvar_write(const char *name, int value) {
    int idx, n, rc;
    MPI_T_cvar_handle h;
    if ((rc = MPI_T_cvar_get_index(name, &idx)) != MPI_SUCCESS) {
        fprintf(stderr, "force_tuned: MPI_T_cvar_get_index(%s): %d\n", name, rc);
        return rc;
    }
    if ((rc = MPI_T_cvar_handle_alloc(idx, NULL, &h, &n)) != MPI_SUCCESS) {
        fprintf(stderr, "force_tuned: MPI_T_cvar_handle_alloc(%s): %d\n", name, rc);
        return rc;
    }
    rc = MPI_T_cvar_write(h, &value);
    if (rc != MPI_SUCCESS) fprintf(stderr, "force_tuned: MPI_T_cvar_write(%s): %d\n", name, rc);
    MPI_T_cvar_handle_free(&h);
    return rc;
}

int main(int argc, char **argv) {
    int provided, rank, bad = 0, total = 0;
    int alg = argc > 1 ? atoi(argv[1]) : -1;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (alg >= 0 && cvar_write("coll_tuned_bcast_algorithm", alg) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    const int n = 1 << 20;
    unsigned char *buf = malloc(n);
    for (int it = 0; it < 10; it++) {
        for (int i = 0; i < n; i++) buf[i] = rank == 0 ? (unsigned char)(i * 7 + it) : 0;
        MPI_Bcast(buf, n, MPI_BYTE, 0, c);
        for (int i = 0; i < n; i++)
            if (buf[i] != (unsigned char)(i * 7 + it)) { bad++; break; }
    }
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, c);
    if (rank == 0) printf(total ? "force_tuned: FAILED: %d wrong\n" : "force_tuned: all bytes correct\n", total);
    MPI_Comm_free(&c);
    free(buf);
    /* MPI_T is finalized first: Open MPI 4.1.4 crashes in MPI_T_finalize
     * called after MPI_Finalize (mca_base_components_close). */
    MPI_T_finalize();
    MPI_Finalize();
    return total ? 1 : 0;
}
