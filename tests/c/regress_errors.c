/* Regression (drop-in defects 4 and 11): errors as the library reports
 * them.
 *
 *   regress_errors classes    erroneous calls on every rank under
 *                             MPI_ERRORS_RETURN return the library's error
 *                             class (before the fix an uncommitted contiguous
 *                             type was broadcast anyway, and MPI_IN_PLACE was
 *                             taken for a buffer at address 1), then a
 *                             correct call on the same communicator works.
 *                             Prints `regress_errors: ok`.
 *   regress_errors finalize   MPI_Bcast after MPI_Finalize: the library's
 *                             report must name MPI_Bcast (before the fix it
 *                             named MPI_Type_size, which colltune called
 *                             first). */
#include "regress_common.h"

static const char *class_name(int code) {
    int c = code;
    if (code != MPI_SUCCESS) MPI_Error_class(code, &c);
    switch (c) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_ROOT: return "MPI_ERR_ROOT";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    default: return "another class";
    }
}

static void expect(const char *name, int rc, int want) {
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    if (c != want && r_bad++ < 5)
        fprintf(stderr, "rank %d: %s: returned %s, the library returns %s\n", r_rank, name,
                class_name(rc), class_name(want));
}

static void then_ok(MPI_Comm comm, const char *after) {
    int v[1000];
    for (int root = 0; root < r_size; root++) {
        snprintf(r_case, sizeof r_case, "correct call after %s (root %d)", after, root);
        for (int i = 0; i < 1000; i++) v[i] = r_rank == root ? i * 3 + root : -1;
        expect(r_case, MPI_Bcast(v, 1000, MPI_INT, root, comm), MPI_SUCCESS);
        for (int i = 0; i < 1000; i++)
            if (v[i] != i * 3 + root) {
                r_fail("%s: int %ld wrong (root %ld)", "data", i, root);
                break;
            }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    r_start(60);
    if (argc > 1 && !strcmp(argv[1], "finalize")) {
        MPI_Finalize();
        int v[4] = {0};
        MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD);
        printf("regress_errors: MPI_Bcast after MPI_Finalize returned\n");
        return 0;
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int v[16] = {0};
    then_ok(comm, "nothing");

    strcpy(r_case, "uncommitted contiguous type");
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t); /* never committed */
    expect(r_case, MPI_Bcast(v, 2, t, 0, comm), MPI_ERR_TYPE);
    MPI_Type_free(&t);
    then_ok(comm, "an uncommitted type");

    strcpy(r_case, "MPI_IN_PLACE");
    expect(r_case, MPI_Bcast(MPI_IN_PLACE, 4, MPI_INT, 0, comm), MPI_ERR_ARG);
    then_ok(comm, "MPI_IN_PLACE");

    strcpy(r_case, "root == size");
    expect(r_case, MPI_Bcast(v, 4, MPI_INT, r_size, comm), MPI_ERR_ROOT);
    strcpy(r_case, "count -1");
    expect(r_case, MPI_Bcast(v, -1, MPI_INT, 0, comm), MPI_ERR_COUNT);
    strcpy(r_case, "MPI_DATATYPE_NULL");
    expect(r_case, MPI_Bcast(v, 4, MPI_DATATYPE_NULL, 0, comm), MPI_ERR_TYPE);
    then_ok(comm, "bad arguments");
    MPI_Comm_free(&comm);
    return r_finish("regress_errors");
}
