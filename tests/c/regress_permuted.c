/* Regression (drop-in defect 2): datatypes whose size, extent and true
 * extent agree and whose lower bound is 0, but whose typemap does not run
 * through memory in order. Before the fix they passed colltune's
 * "contiguous" test and were moved as raw bytes: when another rank passes
 * plain elements of the same signature (MPI matches by type signature, not
 * by layout), the elements landed in the wrong places. Types:
 *
 *   indexed_swap     MPI_Type_indexed, displacements {1, 0} (ints)
 *   indexed_3double  MPI_Type_indexed, displacements {2, 0, 1} (doubles)
 *   struct_reversed  MPI_Type_create_struct, int at 4 then int at 0
 *
 * each at the root with plain elements elsewhere, the reverse, and the same
 * type everywhere; every root, counts 1, 70 and 4900. What each rank must
 * hold is computed with MPI_Pack/MPI_Unpack (the library's semantics).
 * Prints `regress_permuted: ok` (rank 0) when every byte is right. */
#include "regress_common.h"

typedef struct {
    MPI_Datatype t;    /* the permuted type */
    MPI_Datatype base; /* its elements */
    int per;           /* elements per permuted element */
    const char *name;
} ptype_t;

/* count elements of `mine` (`n` bytes) on this rank, `at_root` at the root. */
static void one(MPI_Comm comm, int root, MPI_Datatype mine, int mcount, MPI_Datatype at_root,
                int rcount, size_t n, long seed) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    unsigned char *buf = malloc(n), *want = malloc(n), *src = malloc(n), *packed = malloc(n + 64);
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)pat(seed, (long)i);
    if (rank == root) {
        memcpy(want, src, n);
    } else {
        /* the root's data as its datatype describes it, laid out by mine */
        int pos = 0, upos = 0;
        memset(want, 0, n);
        MPI_Pack(src, rcount, at_root, packed, (int)n + 64, &pos, MPI_COMM_SELF);
        MPI_Unpack(packed, pos, &upos, want, mcount, mine, MPI_COMM_SELF);
    }
    for (size_t i = 0; i < n; i++) buf[i] = rank == root ? src[i] : 0;
    int rc = MPI_Bcast(buf, mcount, mine, root, comm);
    if (rc != MPI_SUCCESS) r_fail("%s: error %ld (root %ld)", "MPI_Bcast", rc, root);
    for (size_t i = 0; i < n; i++)
        if (buf[i] != want[i]) {
            r_fail("%s: byte %ld wrong (root %ld)", "data", (long)i, root);
            break;
        }
    free(buf);
    free(want);
    free(src);
    free(packed);
}

static void cases(MPI_Comm comm, const ptype_t *p) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int sz;
    MPI_Type_size(p->t, &sz);
    for (int c = 1; c <= 4900; c *= 70)
        for (int root = 0; root < size; root++) {
            size_t n = (size_t)sz * c;
            long seed = 1000 * c + root;
            snprintf(r_case, sizeof r_case, "%s at the root (count %d, root %d)", p->name, c, root);
            one(comm, root, rank == root ? p->t : p->base, rank == root ? c : c * p->per,
                p->t, c, n, seed);
            snprintf(r_case, sizeof r_case, "%s at the receivers (count %d, root %d)", p->name, c, root);
            one(comm, root, rank == root ? p->base : p->t, rank == root ? c * p->per : c,
                p->base, c * p->per, n, seed + 1);
            snprintf(r_case, sizeof r_case, "%s everywhere (count %d, root %d)", p->name, c, root);
            one(comm, root, p->t, c, p->t, c, n, seed + 2);
        }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    r_start(argc > 1 ? atoi(argv[1]) : 60);
    ptype_t ts[3] = {{0, MPI_INT, 2, "indexed_swap"},
                     {0, MPI_DOUBLE, 3, "indexed_3double"},
                     {0, MPI_INT, 2, "struct_reversed"}};
    MPI_Type_indexed(2, (int[]){1, 1}, (int[]){1, 0}, MPI_INT, &ts[0].t);
    MPI_Type_indexed(3, (int[]){1, 1, 1}, (int[]){2, 0, 1}, MPI_DOUBLE, &ts[1].t);
    MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){4, 0},
                           (MPI_Datatype[]){MPI_INT, MPI_INT}, &ts[2].t);
    for (int i = 0; i < 3; i++) {
        MPI_Type_commit(&ts[i].t);
        /* what made them look contiguous: size == extent == true extent, lb 0 */
        int sz;
        MPI_Aint lb, ext, tlb, text;
        MPI_Type_size(ts[i].t, &sz);
        MPI_Type_get_extent(ts[i].t, &lb, &ext);
        MPI_Type_get_true_extent(ts[i].t, &tlb, &text);
        if (!(lb == 0 && tlb == 0 && ext == sz && text == sz))
            r_fail("%s: type %ld is not as intended (size %ld)", "setup", i, sz);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int i = 0; i < 3; i++) cases(comm, &ts[i]);
    MPI_Comm_free(&comm);
    for (int i = 0; i < 3; i++) MPI_Type_free(&ts[i].t);
    return r_finish("regress_permuted");
}
