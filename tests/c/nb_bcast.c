/* MPI_Ibcast and the persistent broadcast (MPI_Bcast_init; Open MPI 4.1:
 * MPIX_Bcast_init) under the drop-in: every byte from every root at the
 * sizes given on the command line, on MPI_COMM_WORLD and on a split
 * communicator, mixed with blocking MPI_Bcast on the same communicator,
 * then the sizes in turn on one communicator (each call another count);
 * and, with `order`, which algorithm ran, told by who waits for whom:
 * rank 1 sleeps before completing its call, so a rank that receives
 * through rank 1 (a chain: rank 2; a binomial tree: rank 3) completes only
 * after it, one that receives from the root (linear) at once.
 * With `threads`, under MPI_THREAD_MULTIPLE, four threads post Ibcasts at
 * once, each on its own communicator: two of 100 B, two of 8000 B (a table
 * may force an algorithm for one size and leave the other to the library:
 * each call must build the schedule the other ranks build).
 *   nb_bcast check SIZE...     prints "case nb_check: ok"
 *   nb_bcast order ibcast|init prints "waited rank R: MS ms" per rank >= 2
 *   nb_bcast threads           prints "case nb_threads: ok" */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(OPEN_MPI) && MPI_VERSION < 4 && OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h>
#define BCAST_INIT MPIX_Bcast_init
#else
#define BCAST_INIT MPI_Bcast_init
#endif

static int fails = 0;

static unsigned char byte_at(long i, int root, int round) {
    return (unsigned char)(i * 131 + root * 17 + round * 7 + 1);
}

static void fill(unsigned char *b, long n, int root, int round, int me) {
    for (long i = 0; i < n; i++)
        b[i] = me == root ? byte_at(i, root, round) : 0xEE;
}

static void check(const unsigned char *b, long n, int root, int round, const char *what) {
    for (long i = 0; i < n; i++)
        if (b[i] != byte_at(i, root, round)) {
            fprintf(stderr, "%s: %ld B root %d round %d: byte %ld is %d, not %d\n", what, n,
                    root, round, i, b[i], byte_at(i, root, round));
            fails++;
            return;
        }
}

static void on(MPI_Comm comm, long n) {
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    unsigned char *b = malloc(n + 1);
    for (int root = 0; root < size; root++) {
        /* Ibcast, then a blocking broadcast on the same communicator, then
         * two Ibcasts in flight at once. */
        MPI_Request r[2];
        fill(b, n, root, 0, me);
        MPI_Ibcast(b, (int)n, MPI_BYTE, root, comm, &r[0]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        check(b, n, root, 0, "ibcast");
        fill(b, n, root, 1, me);
        MPI_Bcast(b, (int)n, MPI_BYTE, root, comm);
        check(b, n, root, 1, "bcast after ibcast");
        unsigned char *c = malloc(n + 1);
        fill(b, n, root, 2, me);
        fill(c, n, (root + 1) % size, 3, me);
        MPI_Ibcast(b, (int)n, MPI_BYTE, root, comm, &r[0]);
        MPI_Ibcast(c, (int)n, MPI_BYTE, (root + 1) % size, comm, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        check(b, n, root, 2, "first of two ibcasts");
        check(c, n, (root + 1) % size, 3, "second of two ibcasts");
        free(c);
        /* A persistent broadcast started three times, new data each time. */
        MPI_Request p;
        BCAST_INIT(b, (int)n, MPI_BYTE, root, comm, MPI_INFO_NULL, &p);
        for (int round = 4; round < 7; round++) {
            fill(b, n, root, round, me);
            MPI_Start(&p);
            MPI_Wait(&p, MPI_STATUS_IGNORE);
            check(b, n, root, round, "bcast_init");
        }
        MPI_Request_free(&p);
    }
    free(b);
}

static void order(const char *how) {
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char b[64];
    memset(b, me == 0 ? 'x' : 0, sizeof b);
    MPI_Request r;
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(how, "init") == 0) {
        BCAST_INIT(b, sizeof b, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Start(&r);
    } else {
        MPI_Ibcast(b, sizeof b, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
    }
    double t0 = MPI_Wtime();
    if (me == 1)
        usleep(1500 * 1000);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    double ms = (MPI_Wtime() - t0) * 1e3;
    if (strcmp(how, "init") == 0)
        MPI_Request_free(&r);
    for (size_t i = 0; i < sizeof b; i++)
        if (b[i] != 'x') {
            fprintf(stderr, "order: byte %zu wrong on rank %d\n", i, me);
            fails++;
            break;
        }
    if (me >= 2) {
        printf("waited rank %d: %.0f ms\n", me, ms);
        fflush(stdout);
    }
    /* What the program's own MPI_T reads of libnbc's variable afterwards. */
    int pv, idx, n, value = -1;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &pv);
    if (MPI_T_cvar_get_index("coll_libnbc_ibcast_algorithm", &idx) == MPI_SUCCESS) {
        MPI_T_cvar_handle h;
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &n);
        MPI_T_cvar_read(h, &value);
        MPI_T_cvar_handle_free(&h);
        printf("libnbc variable rank %d: %d\n", me, value);
        fflush(stdout);
    }
    MPI_T_finalize();
}

typedef struct {
    MPI_Comm comm;
    long n;
    int fails;
} tjob_t;

static void *posts(void *p) {
    tjob_t *j = p;
    int me, size;
    MPI_Comm_rank(j->comm, &me);
    MPI_Comm_size(j->comm, &size);
    unsigned char *b = malloc(j->n);
    for (int it = 0; it < 400; it++) {
        int root = it % size;
        MPI_Request r;
        for (long i = 0; i < j->n; i++)
            b[i] = me == root ? byte_at(i, root, it) : 0xEE;
        MPI_Ibcast(b, (int)j->n, MPI_BYTE, root, j->comm, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (long i = 0; i < j->n; i++)
            if (b[i] != byte_at(i, root, it)) {
                j->fails++;
                break;
            }
    }
    free(b);
    return NULL;
}

static void threads(void) {
    enum { T = 4 };
    tjob_t jobs[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[i].comm);
        jobs[i].n = i % 2 ? 8000 : 100;
        jobs[i].fails = 0;
    }
    for (int i = 0; i < T; i++) pthread_create(&th[i], NULL, posts, &jobs[i]);
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        fails += jobs[i].fails;
        MPI_Comm_free(&jobs[i].comm);
    }
}

int main(int argc, char **argv) {
    int provided = MPI_THREAD_SINGLE;
    if (argc > 1 && strcmp(argv[1], "threads") == 0)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        if (provided != MPI_THREAD_MULTIPLE) {
            if (me == 0) printf("case nb_threads: skipped (no MPI_THREAD_MULTIPLE)\n");
            MPI_Finalize();
            return 0;
        }
        threads();
    } else if (argc > 2 && strcmp(argv[1], "order") == 0) {
        order(argv[2]);
    } else {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
        for (int i = 2; i < argc; i++) {
            long n = atol(argv[i]);
            on(MPI_COMM_WORLD, n);
            on(half, n);
        }
        /* The sizes one after another on one communicator, twice: each call
         * differs from the one before only in its count. */
        for (int round = 0; round < 2; round++)
            for (int i = 2; i < argc; i++) {
                long n = atol(argv[i]);
                unsigned char *b = malloc(n + 1);
                MPI_Request r;
                fill(b, n, 0, 8 + round, me);
                MPI_Ibcast(b, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                check(b, n, 0, 8 + round, "ibcast of the next size");
                free(b);
            }
        MPI_Comm_free(&half);
    }
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0 && argc > 1 && strcmp(argv[1], "check") == 0)
        printf("case nb_check: %s\n", all == 0 ? "ok" : "FAILED");
    if (me == 0 && argc > 1 && strcmp(argv[1], "threads") == 0)
        printf("case nb_threads: %s\n", all == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
