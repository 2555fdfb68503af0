/* Drop-in transparency, part two: what an application can see of the
 * interposition library besides its broadcasts (tests/dropin.rs runs each
 * mode plain and preloaded and compares the lines rank 0 prints).
 *
 *   unseen attrs       attribute copy/delete callbacks that count, a copy
 *                      callback that refuses (under MPI_ERRORS_ARE_FATAL and
 *                      under an error handler of the program's that counts)
 *   unseen comms N     N duplicates of MPI_COMM_WORLD and N of half of it,
 *                      each broadcast on and kept alive: the Fortran handle
 *                      of the last one tells how many communicators exist
 *   unseen mpit        what MPI_T reads after MPI_Init, an MPI_Allreduce of
 *                      doubles whose sum depends on the order of additions,
 *                      and the program's own MPI_T_init_thread /
 *                      MPI_T_finalize pairing
 *   unseen early one|all  MPI_T initialised before MPI_Init on world rank 0
 *                      only (OMPI_COMM_WORLD_RANK) or on every rank, then
 *                      broadcasts
 *
 * Every mode broadcasts SIZES bytes from rotating roots and checks every
 * byte; a rank not done after 20 s prints `hang` and ends the job. */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

static void on_alarm(int sig) {
    (void)sig;
    const char msg[] = "hang\n";
    (void)!write(1, msg, sizeof msg - 1);
    _exit(9);
}

static const int SIZES[] = {1, 100, 1000, 1024, 3000, 5000, 70000};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

/* Broadcasts every size from rotating roots on `comm`; the number of wrong
 * bytes (0: every byte right). */
static long bcasts_of(MPI_Comm comm, const int *sizes, int nsizes) {
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long bad = 0;
    unsigned char *buf = malloc(70000);
    for (int i = 0; i < nsizes; i++) {
        int root = i % n, len = sizes[i];
        for (int k = 0; k < len; k++)
            buf[k] = r == root ? (unsigned char)(k * 7 + i) : (unsigned char)~(k * 7 + i);
        MPI_Bcast(buf, len, MPI_BYTE, root, comm);
        for (int k = 0; k < len; k++)
            bad += buf[k] != (unsigned char)(k * 7 + i);
    }
    free(buf);
    return bad;
}

static long bcasts(MPI_Comm comm) { return bcasts_of(comm, SIZES, NSIZES); }

/* A few sizes on both sides of the library table's rules. */
static long few_bcasts(MPI_Comm comm) {
    static const int few[] = {100, 3000, 5000};
    return bcasts_of(comm, few, 3);
}

/* Prints `name: line` on rank 0 when every rank has the same line, else
 * each rank's. */
static void say(const char *name, const char *line) {
    char mine[200] = {0}, *all = NULL;
    snprintf(mine, sizeof mine, "%s", line);
    if (rank == 0) all = calloc(size, sizeof mine);
    MPI_Gather(mine, sizeof mine, MPI_CHAR, all, sizeof mine, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank != 0) return;
    int same = 1;
    for (int i = 1; i < size; i++) same &= !strcmp(all, all + i * sizeof mine);
    if (same) {
        printf("%s: %s\n", name, all);
    } else {
        printf("%s:", name);
        for (int i = 0; i < size; i++) printf(" r%d=%s;", i, all + i * sizeof mine);
        printf("\n");
    }
    fflush(stdout);
    free(all);
}

/* ---------- attrs ---------- */

static int copies, deletes, refusals, handled;

static int copy_count(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c, (void)k, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_count(MPI_Comm c, int k, void *v, void *extra) {
    (void)c, (void)k, (void)v, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static int copy_refuse(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c, (void)k, (void)extra, (void)in, (void)out;
    refusals++;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static void count_errors(MPI_Comm *c, int *code, ...) {
    (void)c, (void)code;
    handled++;
}

static void attrs(void) {
    int counting, refusing;
    MPI_Comm_create_keyval(copy_count, delete_count, &counting, NULL);
    MPI_Comm_create_keyval(copy_refuse, MPI_COMM_NULL_DELETE_FN, &refusing, NULL);
    long bad = 0;
    /* A counted reference: one copy (the program's own duplicate), two
     * deletes. */
    MPI_Comm c1, c1b;
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    MPI_Comm_set_attr(c1, counting, &counting);
    bad += bcasts(c1);
    bad += bcasts(c1);
    MPI_Comm_dup(c1, &c1b);
    bad += bcasts(c1b);
    MPI_Comm_free(&c1b);
    MPI_Comm_free(&c1);
    /* A communicator that refuses to be duplicated, with the program's own
     * error handler: never called. */
    MPI_Comm c2;
    MPI_Errhandler eh;
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    MPI_Comm_create_errhandler(count_errors, &eh);
    MPI_Comm_set_errhandler(c2, eh);
    MPI_Comm_set_attr(c2, refusing, NULL);
    bad += bcasts(c2);
    /* The same under MPI_ERRORS_ARE_FATAL, on half of the ranks (a group
     * of its own). */
    MPI_Comm c3;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c3);
    MPI_Comm_set_attr(c3, refusing, NULL);
    bad += bcasts(c3);
    MPI_Comm_set_attr(c3, counting, &counting);
    bad += bcasts(c3);
    MPI_Comm_free(&c3);
    MPI_Comm_free(&c2);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free_keyval(&counting);
    MPI_Comm_free_keyval(&refusing);
    char line[160];
    snprintf(line, sizeof line, "copies %d, deletes %d, refusals %d, handler calls %d, %s", copies,
             deletes, refusals, handled, bad ? "wrong data" : "every byte right");
    say("attrs", line);
}

/* ---------- comms ---------- */

static void comms(int n) {
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm *c = malloc(2 * n * sizeof *c);
    long bad = 0;
    int made = 0, rc = MPI_SUCCESS;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        rc = MPI_Comm_dup(MPI_COMM_WORLD, &c[made]);
        if (rc != MPI_SUCCESS) break;
        bad += few_bcasts(c[made++]);
        rc = MPI_Comm_dup(half, &c[made]);
        if (rc != MPI_SUCCESS) break;
        bad += few_bcasts(c[made++]);
    }
    char line[160];
    snprintf(line, sizeof line, "%d made (%s), %s", made,
             rc == MPI_SUCCESS ? "all" : "MPI_Comm_dup failed", bad ? "wrong data" : "every byte right");
    say("comms", line);
    /* How many communicators exist: the Fortran handle of a new one. */
    MPI_Comm probe;
    MPI_Comm_dup(MPI_COMM_WORLD, &probe);
    if (rank == 0) printf("handle index: %d\n", (int)MPI_Comm_c2f(probe));
    MPI_Comm_free(&probe);
    for (int i = 0; i < made; i++) MPI_Comm_free(&c[i]);
    MPI_Comm_free(&half);
    free(c);
}

/* ---------- mpit ---------- */

/* `name = value` of a control variable, through the program's own MPI_T
 * session. */
static void cvar(const char *name) {
    int idx, n, pv, rc;
    char line[300] = {0};
    MPI_T_init_thread(MPI_THREAD_SINGLE, &pv);
    rc = MPI_T_cvar_get_index(name, &idx);
    if (rc != MPI_SUCCESS) {
        snprintf(line, sizeof line, "no such variable");
    } else {
        char nm[256], buf[4096] = {0};
        int nl = sizeof nm, dl = 0, verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_cvar_handle h;
        MPI_T_cvar_get_info(idx, nm, &nl, &verb, &dt, &en, NULL, &dl, &bind, &scope);
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &n);
        MPI_T_cvar_read(h, buf);
        MPI_T_cvar_handle_free(&h);
        if (dt == MPI_CHAR)
            snprintf(line, sizeof line, "'%s'", buf);
        else
            snprintf(line, sizeof line, "%d", *(int *)buf);
    }
    MPI_T_finalize();
    say(name, line);
}

static void mpit(void) {
    cvar("coll_tuned_use_dynamic_rules");
    cvar("coll_tuned_dynamic_rules_filename");
    cvar("coll_tuned_allreduce_algorithm");
    cvar("coll_tuned_bcast_algorithm");
    /* Broadcasts on the world and on a communicator of the program's. */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    long bad = bcasts(MPI_COMM_WORLD) + bcasts(c) + bcasts(c);
    say("bcast", bad ? "wrong data" : "every byte right");
    /* A sum of doubles whose result depends on the order of additions. */
    enum { N = 4096 };
    double *v = malloc(N * sizeof *v), *s = malloc(N * sizeof *s);
    for (int i = 0; i < N; i++) {
        double big = (i % 3 == 0) ? 1e16 : 3.0e15;
        v[i] = (rank % 2 ? -big : big) + (double)(rank + 1) * (1.0 + i % 7) / 3.0;
    }
    MPI_Allreduce(v, s, N, MPI_DOUBLE, MPI_SUM, c);
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < N; i++) {
        uint64_t bits;
        memcpy(&bits, &s[i], 8);
        h = (h ^ bits) * 1099511628211ull;
    }
    char line[64];
    snprintf(line, sizeof line, "%016llx", (unsigned long long)h);
    say("allreduce", line);
    free(v);
    free(s);
    MPI_Comm_free(&c);
    /* The program's MPI_T sessions are over: MPI_T is not initialised. */
    int num;
    int rc = MPI_T_cvar_get_num(&num);
    say("MPI_T after the program's last MPI_T_finalize",
        rc == MPI_SUCCESS ? "still initialised" : "not initialised");
    cvar("coll_tuned_bcast_algorithm");
}

/* ---------- early ---------- */

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: unseen attrs | comms N | mpit | early one|all\n");
        return 2;
    }
    const char *mode = argv[1];
    int early = 0, pv;
    if (!strcmp(mode, "early")) {
        const char *wr = getenv("OMPI_COMM_WORLD_RANK");
        early = argc > 2 && (!strcmp(argv[2], "all") || (wr && !strcmp(wr, "0")));
        if (early) MPI_T_init_thread(MPI_THREAD_SINGLE, &pv);
    }
    MPI_Init(&argc, &argv);
    signal(SIGALRM, on_alarm);
    alarm(20);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(mode, "attrs")) {
        attrs();
    } else if (!strcmp(mode, "comms")) {
        comms(argc > 2 ? atoi(argv[2]) : 100);
    } else if (!strcmp(mode, "mpit")) {
        mpit();
    } else if (!strcmp(mode, "early")) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        long bad = bcasts(MPI_COMM_WORLD) + bcasts(c);
        MPI_Comm_free(&c);
        say("early bcast", bad ? "wrong data" : "every byte right");
    }
    if (early) MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
