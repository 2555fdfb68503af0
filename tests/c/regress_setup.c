/* Regression (drop-in defect 4, and the per-rank inputs of defect 1): a
 * communicator whose colltune set-up fails (here: a COLLTUNE_NODES layout
 * that does not fit it) must still broadcast, through the library, on
 * every rank alike. Before the fix the failing ranks returned MPI_ERR_OTHER
 * without broadcasting and without calling the error handler, retrying the
 * set-up at every call, while ranks whose set-up succeeded ran colltune:
 * wrong data, or a hang when only some ranks failed.
 *
 * Broadcasts (every root, 4000 ints) on MPI_COMM_WORLD, on halves
 * (MPI_Comm_split by rank parity) and on the first three ranks, each with
 * an error handler that counts its calls; 20 calls on the halves must not
 * leave communicators behind (the Fortran handle of a new communicator is
 * the same before and after). Prints `regress_setup: ok` (rank 0). */
#include "regress_common.h"

static int handler_calls;

static void counting_handler(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    handler_calls++;
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(*code, msg, &len);
    fprintf(stderr, "rank %d: error handler called: %s\n", r_rank, msg);
}

static void bcasts(MPI_Comm comm, const char *name, int calls) {
    if (comm == MPI_COMM_NULL) return;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(counting_handler, &eh);
    MPI_Comm_set_errhandler(comm, eh);
    MPI_Errhandler_free(&eh);
    int n = 4000, *b = malloc(sizeof(int) * n);
    for (int c = 0; c < calls; c++) {
        int root = c % size;
        snprintf(r_case, sizeof r_case, "%s call %d (root %d)", name, c, root);
        for (int i = 0; i < n; i++) b[i] = rank == root ? pat(c, i) : -1;
        int rc = MPI_Bcast(b, n, MPI_INT, root, comm);
        if (rc != MPI_SUCCESS) r_fail("%s: returned %ld (root %ld)", "MPI_Bcast", rc, root);
        for (int i = 0; i < n; i++)
            if (b[i] != pat(c, i)) {
                r_fail("%s: int %ld wrong (root %ld)", "data", i, root);
                break;
            }
    }
    free(b);
}

/* The Fortran index of a new communicator: it grows when communicators
 * are left behind. */
static int next_handle(void) {
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    int f = (int)MPI_Comm_c2f(d);
    MPI_Comm_free(&d);
    return f;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    r_start(argc > 1 ? atoi(argv[1]) : 60);
    MPI_Comm world, half, three;
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    bcasts(world, "world", r_size);
    MPI_Comm_split(MPI_COMM_WORLD, r_rank % 2, r_rank, &half);
    bcasts(half, "halves", 2);
    int before = next_handle();
    bcasts(half, "halves again", 20);
    int after = next_handle();
    if (after != before) r_fail("%s: a new communicator's handle moved from %ld to %ld", "leak", before, after);
    MPI_Comm_split(MPI_COMM_WORLD, r_rank < 3 ? 0 : MPI_UNDEFINED, r_rank, &three);
    bcasts(three, "first three", 6);
    if (three != MPI_COMM_NULL) MPI_Comm_free(&three);
    MPI_Comm_free(&half);
    MPI_Comm_free(&world);
    strcpy(r_case, "handler");
    if (handler_calls) r_fail("%s: called %ld times", "error handler", handler_calls, 0);
    return r_finish("regress_setup");
}
