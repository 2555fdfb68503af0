/* Does forcing an Open MPI 5.0 coll/han broadcast choice through the MPI
 * tool interface take effect, as colltune's `bench --baseline ompi-han`
 * does it? Arguments: `before` or `after`, then han variables to write as
 * NAME=VALUE (coll_han_use_bcast_algorithm=2, coll_han_bcast_segsize=8192,
 * coll_han_bcast_low_module=1, ...; int or string, as MPI_T says the
 * variable is), or none at all: nothing written (the environment forced
 * them at MPI_Init).
 *
 * With variables: coll_han_priority is raised to 100 through
 * MPI_T_cvar_write while MPI_COMM_WORLD is duplicated (Open MPI picks a
 * communicator's components when it is made), then put back; the variables
 * are written before that duplicate (`before`: what han reads when it sets
 * a communicator up) or after it (`after`: what han reads at every call;
 * bench's way), and each is read back. A second duplicate is made after
 * the priority was put back: run with --mca coll_base_verbose 10 and the
 * first duplicate's selection says "han, priority 100", the second's
 * "han, priority  35" (Open MPI's default).
 *
 * Broadcasts 1 MiB ten times from rank 0 on the first duplicate and checks
 * every byte. jobs/check-ompi-forcing.sh runs it on the emulated cluster
 * (han serves only communicators spanning several nodes) under Open MPI's
 * pml monitoring and compares rank 0's messages with those of the same
 * choice forced by the environment at MPI_Init (OMPI_MCA_coll_han_...). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int handle(const char *name, MPI_T_cvar_handle *h, MPI_Datatype *type) {
    int idx, n, rc, verbosity, bind, scope, nlen = 0, dlen = 0;
    MPI_T_enum e;
    if ((rc = MPI_T_cvar_get_index(name, &idx)) != MPI_SUCCESS) {
        fprintf(stderr, "force_han: MPI_T_cvar_get_index(%s): %d\n", name, rc);
        return rc;
    }
    if ((rc = MPI_T_cvar_get_info(idx, NULL, &nlen, &verbosity, type, &e, NULL, &dlen, &bind, &scope)) !=
        MPI_SUCCESS) {
        fprintf(stderr, "force_han: MPI_T_cvar_get_info(%s): %d\n", name, rc);
        return rc;
    }
    if ((rc = MPI_T_cvar_handle_alloc(idx, NULL, h, &n)) != MPI_SUCCESS)
        fprintf(stderr, "force_han: MPI_T_cvar_handle_alloc(%s): %d\n", name, rc);
    return rc;
}

/* Writes an int or a string variable and reads it back. */
static int write_var(const char *name, const char *value) {
    MPI_T_cvar_handle h;
    MPI_Datatype type;
    int rc;
    char back[256] = "";
    if ((rc = handle(name, &h, &type)) != MPI_SUCCESS) return rc;
    if (type == MPI_INT) {
        int v = atoi(value), r = -1;
        rc = MPI_T_cvar_write(h, &v);
        if (rc == MPI_SUCCESS) rc = MPI_T_cvar_read(h, &r);
        snprintf(back, sizeof back, "%d", r);
    } else if (type == MPI_CHAR) {
        rc = MPI_T_cvar_write(h, (void *)value);
        if (rc == MPI_SUCCESS) rc = MPI_T_cvar_read(h, back);
    } else {
        fprintf(stderr, "force_han: %s is neither an int nor a string\n", name);
        rc = MPI_ERR_OTHER;
    }
    MPI_T_cvar_handle_free(&h);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "force_han: writing %s=%s through MPI_T: error %d\n", name, value, rc);
        return rc;
    }
    if (strcmp(back, value) != 0) {
        fprintf(stderr, "force_han: wrote %s=%s, read back %s\n", name, value, back);
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static int write_all(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        char name[128];
        const char *eq = strchr(argv[i], '=');
        if (!eq || eq - argv[i] >= (int)sizeof name) {
            fprintf(stderr, "force_han: `%s` is not NAME=VALUE\n", argv[i]);
            return MPI_ERR_ARG;
        }
        memcpy(name, argv[i], eq - argv[i]);
        name[eq - argv[i]] = 0;
        if (write_var(name, eq + 1) != MPI_SUCCESS) return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int provided, rank, bad = 0, total = 0;
    int forced = argc > 2, before = argc > 1 && strcmp(argv[1], "before") == 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm c, after;
    if (forced) {
        MPI_T_cvar_handle h;
        MPI_Datatype type;
        int old, high = 100;
        if (before && write_all(argc, argv)) MPI_Abort(MPI_COMM_WORLD, 2);
        if (handle("coll_han_priority", &h, &type) || MPI_T_cvar_read(h, &old) || MPI_T_cvar_write(h, &high))
            MPI_Abort(MPI_COMM_WORLD, 2);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        if (MPI_T_cvar_write(h, &old)) MPI_Abort(MPI_COMM_WORLD, 2);
        MPI_T_cvar_handle_free(&h);
        if (!before && write_all(argc, argv)) MPI_Abort(MPI_COMM_WORLD, 2);
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
    if (rank == 0) printf(total ? "force_han: FAILED: %d wrong\n" : "force_han: all bytes correct\n", total);
    MPI_Comm_free(&after);
    MPI_Comm_free(&c);
    free(buf);
    MPI_Finalize();
    MPI_T_finalize();
    return total ? 1 : 0;
}
