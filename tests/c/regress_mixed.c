/* Regression (drop-in defect 1): ranks may pass different datatypes with
 * the same type signature to one MPI_Bcast. Before the fix each rank chose
 * its path from its own datatype (contiguous: colltune on the private
 * duplicate; anything else: PMPI_Bcast on the user's communicator), so
 * these calls hung. Cases, each from every root and for several counts:
 *
 *   vector_at_root       the root a strided MPI_Type_vector, others MPI_INT
 *   vector_at_receivers  the reverse
 *   bottom_one_rank      the last rank MPI_BOTTOM with absolute addresses
 *   resized_tight        the last rank a resized MPI_INT with lb -4 (its
 *                        bytes contiguous, lb != 0)
 *   resized_gaps         the last rank a resized MPI_INT with lb 4, extent 8
 *   dtpools_like         what MPICH's coll/bcast test does: every rank draws
 *                        its datatypes from one seeded generator, but a
 *                        communicator only half the ranks belong to advances
 *                        their generators alone, so afterwards the ranks draw
 *                        different datatypes (same signature) for one call
 *
 * Prints `regress_mixed: ok` (rank 0) when every rank got the root's data.
 * Usage: regress_mixed [WATCHDOG_SECONDS [CASE...]] (default: every case). */
#include "regress_common.h"

static const int COUNTS[] = {1, 7, 1000, 70001};

/* One broadcast of n ints' worth of signature. `kind` is this rank's
 * representation: 0 plain ints, 1 vector (every other int), 2 MPI_BOTTOM,
 * 3 resized lb -4, 4 resized lb 4 extent 8. The root's values are
 * pat(seed, i) for signature element i; checks what lands here. */
static void one(MPI_Comm comm, int root, int n, int kind, long seed) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    int stride = (kind == 1 || kind == 4) ? 2 : 1;
    int *buf = malloc(sizeof(int) * (size_t)n * stride + 16);
    for (int i = 0; i < n * stride; i++) buf[i] = -1;
    for (int i = 0; i < n; i++)
        if (rank == root) buf[i * stride] = pat(seed, i);
    MPI_Datatype t = MPI_INT;
    int count = n;
    void *addr = buf;
    if (kind == 1) {
        MPI_Type_vector(n, 1, 2, MPI_INT, &t);
        count = 1;
    } else if (kind == 2) {
        MPI_Aint a;
        MPI_Get_address(buf, &a);
        MPI_Type_create_struct(1, &n, &a, (MPI_Datatype[]){MPI_INT}, &t);
        count = 1;
        addr = MPI_BOTTOM;
    } else if (kind == 3) {
        MPI_Type_create_resized(MPI_INT, -4, 4, &t);
    } else if (kind == 4) {
        MPI_Type_create_resized(MPI_INT, 4, 8, &t);
    }
    if (t != MPI_INT) MPI_Type_commit(&t);
    int rc = MPI_Bcast(addr, count, t, root, comm);
    if (rc != MPI_SUCCESS) r_fail("%s: error %ld (root %ld)", "MPI_Bcast", rc, root);
    for (int i = 0; i < n * stride; i++) {
        int want = (i % stride) ? -1 : pat(seed, i / stride);
        if (buf[i] != want) {
            r_fail("%s: int %ld wrong (root %ld)", "data", i, root);
            break;
        }
    }
    if (t != MPI_INT) MPI_Type_free(&t);
    free(buf);
}

/* Every root, every count; `mine(rank, root)` picks this rank's kind. */
static void sweep(MPI_Comm comm, const char *name, int (*mine)(int rank, int root, int size)) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < 4; k++)
        for (int root = 0; root < size; root++) {
            snprintf(r_case, sizeof r_case, "%s (count %d, root %d)", name, COUNTS[k], root);
            one(comm, root, COUNTS[k], mine(rank, root, size), 100 * k + root + 1);
        }
}

static int vector_at_root(int rank, int root, int size) { (void)size; return rank == root ? 1 : 0; }
static int vector_at_receivers(int rank, int root, int size) { (void)size; return rank == root ? 0 : 1; }
static int bottom_last(int rank, int root, int size) { (void)root; return rank == size - 1 ? 2 : 0; }
static int tight_last(int rank, int root, int size) { (void)root; return rank == size - 1 ? 3 : 0; }
static int gaps_last(int rank, int root, int size) { (void)root; return rank == size - 1 ? 4 : 0; }

/* A seeded generator per process, as DTPools keeps one per pool. */
static unsigned long gen_state = 12345;
static int draw(void) {
    gen_state = gen_state * 6364136223846793005UL + 1442695040888963407UL;
    return (int)(gen_state >> 33) & 1; /* 0: plain ints, 1: vector */
}

static void dtpools_like(void) {
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    /* Communicator 1: the whole world; every rank draws alike. */
    for (int i = 0; i < 8; i++) {
        snprintf(r_case, sizeof r_case, "dtpools_like world call %d", i);
        one(MPI_COMM_WORLD, i % wsize, 1000, draw(), 7000 + i);
    }
    /* Communicator 2: the lower half only; their generators advance. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank < wsize / 2 ? 1 : MPI_UNDEFINED, wrank, &half);
    if (half != MPI_COMM_NULL) {
        for (int i = 0; i < 3; i++) {
            snprintf(r_case, sizeof r_case, "dtpools_like half call %d", i);
            one(half, 0, 1000, draw(), 8000 + i);
        }
        MPI_Comm_free(&half);
    }
    /* Communicator 3: a duplicate of the world; the ranks' draws now differ. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int i = 0; i < 16; i++) {
        snprintf(r_case, sizeof r_case, "dtpools_like dup call %d", i);
        one(dup, i % wsize, 1000, draw(), 9000 + i);
    }
    MPI_Comm_free(&dup);
}

static int argc_, wanted_from = 2;
static char **argv_;

/* Whether the command line asks for case `name` (none named: all). */
static int wanted(const char *name) {
    if (argc_ <= wanted_from) return 1;
    for (int i = wanted_from; i < argc_; i++)
        if (!strcmp(argv_[i], name)) return 1;
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    argc_ = argc;
    argv_ = argv;
    r_start(argc > 1 ? atoi(argv[1]) : 60);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (wanted("vector_at_root")) sweep(comm, "vector_at_root", vector_at_root);
    if (wanted("vector_at_receivers")) sweep(comm, "vector_at_receivers", vector_at_receivers);
    if (wanted("bottom_one_rank")) sweep(comm, "bottom_one_rank", bottom_last);
    if (wanted("resized_tight")) sweep(comm, "resized_tight", tight_last);
    if (wanted("resized_gaps")) sweep(comm, "resized_gaps", gaps_last);
    MPI_Comm_free(&comm);
    if (wanted("dtpools_like")) dtpools_like();
    return r_finish("regress_mixed");
}
