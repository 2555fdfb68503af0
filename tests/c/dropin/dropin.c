/* Drop-in conformance cases for the interposition library.
 *
 * An ordinary MPI program knowing nothing of colltune. Each case broadcasts
 * something, checks every byte on every rank (seeded patterns, receivers
 * start with the complement, guard bytes around every buffer) and rank 0
 * prints exactly one line per case:
 *
 *     case NAME: RESULT
 *
 * RESULT is `ok`, an MPI error class name, `wrong data (...)`, `skipped
 * (...)`, or, where ranks differ, `r0=...; r1=...`. The line depends only
 * on MPI semantics, so a run under LD_PRELOAD=libcolltune_preload.so must
 * print the same lines as a plain run (tests/dropin.rs compares them).
 *
 * Usage:
 *   dropin --list                 every case and its group, one a line
 *   dropin CASE...                run the cases one after another (MPI_Init)
 *   dropin --alarm SECS CASE...   the same; a case not finished after SECS
 *                                 seconds (15 x SECS for big_*) prints
 *                                 `hang` and ends the job
 *   dropin --guard SECS CASE...   run the cases at once, each in its own
 *                                 thread on its own communicator
 *                                 (MPI_Init_thread MULTIPLE); a case not
 *                                 finished on some rank after SECS seconds
 *                                 reports `hang` there and the program
 *                                 exits without MPI_Finalize.
 *
 * Groups (--list): `direct` cases run together in one job; `guarded` cases
 * may hang under a defective library and run together with --guard;
 * `guarded_alone` ones run with --guard in a job of their own; `alone` cases
 * end the job (fatal error handlers, MPI_Bcast after MPI_Finalize, crashes)
 * or are large, and run one per job.
 *
 * Every case runs on a fresh duplicate of MPI_COMM_WORLD. Results are
 * collected with MPI_Gather/MPI_Allreduce, never MPI_Bcast. */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RES 160
#define GUARD 32

static int world_rank, world_size, thread_provided = -1;

/* ---------- results ---------- */

static void res_set(char *out, const char *fmt, ...) {
    if (out[0]) return; /* the first problem wins */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, RES, fmt, ap);
    va_end(ap);
}

static const char *class_name(int code) {
    int c = code;
    if (code != MPI_SUCCESS && MPI_Error_class(code, &c) != MPI_SUCCESS) c = code;
    static __thread char other[32];
    switch (c) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_TAG: return "MPI_ERR_TAG";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_REQUEST: return "MPI_ERR_REQUEST";
    case MPI_ERR_ROOT: return "MPI_ERR_ROOT";
    case MPI_ERR_GROUP: return "MPI_ERR_GROUP";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_TOPOLOGY: return "MPI_ERR_TOPOLOGY";
    case MPI_ERR_DIMS: return "MPI_ERR_DIMS";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_UNKNOWN: return "MPI_ERR_UNKNOWN";
    case MPI_ERR_TRUNCATE: return "MPI_ERR_TRUNCATE";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
    case MPI_ERR_IN_STATUS: return "MPI_ERR_IN_STATUS";
    case MPI_ERR_PENDING: return "MPI_ERR_PENDING";
    case MPI_ERR_NO_MEM: return "MPI_ERR_NO_MEM";
    default:
        snprintf(other, sizeof other, "error class %d", c);
        return other;
    }
}

/* ---------- patterns ---------- */

static unsigned char pat(long seed, long i) {
    unsigned long z = (unsigned long)(seed * 2654435761UL + i * 40503UL + 777UL);
    z ^= z >> 13;
    z *= 0x5bd1e995UL;
    z ^= z >> 15;
    return (unsigned char)z;
}

/* ---------- datatypes ---------- */

/* A derived type with the predefined type its signature is made of: `per`
 * elements of `base` per element of `dt`. `twin`, when set, is another
 * type with the same signature (used where the base type cannot be). */
typedef struct {
    const char *name;
    MPI_Datatype dt, base, twin;
    int per;
} dtype_t;

#define MAXT 64
static dtype_t predef[MAXT], derived[MAXT];
static int n_predef, n_derived;

static void add_predef(const char *name, MPI_Datatype dt) {
    predef[n_predef++] = (dtype_t){name, dt, dt, MPI_DATATYPE_NULL, 1};
}

static void add_derived(const char *name, MPI_Datatype dt, MPI_Datatype base, int per,
                        MPI_Datatype twin) {
    MPI_Type_commit(&dt);
    if (twin != MPI_DATATYPE_NULL) MPI_Type_commit(&twin);
    derived[n_derived++] = (dtype_t){name, dt, base, twin, per};
}

static void make_types(void) {
    add_predef("char", MPI_CHAR);
    add_predef("signed_char", MPI_SIGNED_CHAR);
    add_predef("unsigned_char", MPI_UNSIGNED_CHAR);
    add_predef("byte", MPI_BYTE);
    add_predef("short", MPI_SHORT);
    add_predef("unsigned_short", MPI_UNSIGNED_SHORT);
    add_predef("int", MPI_INT);
    add_predef("unsigned", MPI_UNSIGNED);
    add_predef("long", MPI_LONG);
    add_predef("unsigned_long", MPI_UNSIGNED_LONG);
    add_predef("long_long", MPI_LONG_LONG);
    add_predef("float", MPI_FLOAT);
    add_predef("double", MPI_DOUBLE);
    add_predef("long_double", MPI_LONG_DOUBLE);
    add_predef("wchar", MPI_WCHAR);
    add_predef("c_bool", MPI_C_BOOL);
    add_predef("int8_t", MPI_INT8_T);
    add_predef("int16_t", MPI_INT16_T);
    add_predef("int32_t", MPI_INT32_T);
    add_predef("int64_t", MPI_INT64_T);
    add_predef("uint64_t", MPI_UINT64_T);
    add_predef("c_float_complex", MPI_C_FLOAT_COMPLEX);
    add_predef("c_double_complex", MPI_C_DOUBLE_COMPLEX);
    add_predef("c_long_double_complex", MPI_C_LONG_DOUBLE_COMPLEX);
    add_predef("aint", MPI_AINT);
    add_predef("offset", MPI_OFFSET);
    add_predef("count", MPI_COUNT);
    add_predef("packed", MPI_PACKED);
    add_predef("2int", MPI_2INT);
    add_predef("float_int", MPI_FLOAT_INT);
    add_predef("double_int", MPI_DOUBLE_INT); /* size 12, extent 16: a gap */
    add_predef("long_int", MPI_LONG_INT);
    add_predef("short_int", MPI_SHORT_INT); /* size 6, extent 8 */
    add_predef("long_double_int", MPI_LONG_DOUBLE_INT);

    MPI_Datatype t, u;
    MPI_Type_contiguous(5, MPI_INT, &t);
    add_derived("contiguous", t, MPI_INT, 5, MPI_DATATYPE_NULL);
    MPI_Type_vector(7, 2, 3, MPI_INT, &t);
    add_derived("vector", t, MPI_INT, 14, MPI_DATATYPE_NULL);
    MPI_Type_create_hvector(4, 3, 20, MPI_INT, &t);
    add_derived("hvector", t, MPI_INT, 12, MPI_DATATYPE_NULL);
    {
        int bl[3] = {2, 1, 3}, d[3] = {0, 3, 7};
        MPI_Type_indexed(3, bl, d, MPI_INT, &t);
        add_derived("indexed", t, MPI_INT, 6, MPI_DATATYPE_NULL);
    }
    {
        int d[3] = {5, 0, 9};
        MPI_Type_create_indexed_block(3, 2, d, MPI_INT, &t);
        add_derived("indexed_block", t, MPI_INT, 6, MPI_DATATYPE_NULL);
    }
    {
        int bl[2] = {2, 1};
        MPI_Aint d[2] = {16, 0};
        MPI_Type_create_hindexed(2, bl, d, MPI_INT, &t);
        add_derived("hindexed", t, MPI_INT, 3, MPI_DATATYPE_NULL);
    }
    {
        /* Defect (2): size == extent == true extent, lb 0, but the second
         * int comes first in memory. */
        int bl[2] = {1, 1}, d[2] = {1, 0};
        MPI_Type_indexed(2, bl, d, MPI_INT, &t);
        add_derived("permuted", t, MPI_INT, 2, MPI_DATATYPE_NULL);
    }
    {
        int bl[3] = {1, 1, 1}, d[3] = {2, 0, 1};
        MPI_Type_indexed(3, bl, d, MPI_DOUBLE, &t);
        add_derived("permuted3_double", t, MPI_DOUBLE, 3, MPI_DATATYPE_NULL);
    }
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
        MPI_Type_create_struct(2, bl, d, ty, &t);
        add_derived("struct_gap", t, MPI_INT, 2, MPI_DATATYPE_NULL);
    }
    {
        /* char, double, int with alignment gaps; its twin has the same
         * signature packed without gaps (size == extent: "contiguous"). */
        int bl[3] = {1, 1, 1};
        MPI_Aint d[3] = {0, 8, 16}, dp[3] = {0, 1, 9};
        MPI_Datatype ty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
        MPI_Type_create_struct(3, bl, d, ty, &t);
        MPI_Datatype v;
        MPI_Type_create_struct(3, bl, dp, ty, &v);
        MPI_Type_create_resized(v, 0, 13, &u); /* no alignment padding */
        MPI_Type_free(&v);
        add_derived("struct_mixed", t, MPI_DATATYPE_NULL, 1, u);
    }
    MPI_Type_create_resized(MPI_INT, 4, 8, &t); /* lb > 0 */
    add_derived("resized_lb_pos", t, MPI_INT, 1, MPI_DATATYPE_NULL);
    MPI_Type_create_resized(MPI_INT, -8, 16, &t); /* lb < 0, gaps */
    add_derived("resized_lb_neg", t, MPI_INT, 1, MPI_DATATYPE_NULL);
    MPI_Type_create_resized(MPI_INT, -4, 4, &t); /* lb < 0, data contiguous */
    add_derived("resized_lb_neg_tight", t, MPI_INT, 1, MPI_DATATYPE_NULL);
    {
        int sz[2] = {6, 5}, sub[2] = {3, 2}, st[2] = {1, 2};
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t);
        add_derived("subarray", t, MPI_INT, 6, MPI_DATATYPE_NULL);
    }
    MPI_Type_dup(MPI_INT, &t);
    add_derived("dup_int", t, MPI_INT, 1, MPI_DATATYPE_NULL);
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
        MPI_Type_create_struct(2, bl, d, ty, &u);
        MPI_Type_commit(&u);
        MPI_Type_vector(3, 1, 2, u, &t);
        add_derived("nested", t, MPI_INT, 6, MPI_DATATYPE_NULL);
    }
    MPI_Type_contiguous(0, MPI_INT, &t);
    add_derived("zero_size", t, MPI_INT, 0, MPI_DATATYPE_NULL);
}

static const dtype_t *find_type(const char *name) {
    for (int i = 0; i < n_predef; i++)
        if (!strcmp(predef[i].name, name)) return &predef[i];
    for (int i = 0; i < n_derived; i++)
        if (!strcmp(derived[i].name, name)) return &derived[i];
    return NULL;
}

/* ---------- one typed broadcast, checked byte by byte ---------- */

typedef struct {
    MPI_Datatype dt;
    int count;
    int bottom; /* pass MPI_BOTTOM and a struct type with absolute addresses */
} use_t;

/* Bytes [lo, hi) relative to the buffer pointer that `count` elements touch. */
static void span(MPI_Datatype dt, int count, MPI_Aint *lo, MPI_Aint *hi) {
    MPI_Aint tlb, text, lb, ext;
    MPI_Type_get_true_extent(dt, &tlb, &text);
    MPI_Type_get_extent(dt, &lb, &ext);
    if (count <= 0 || text <= 0) {
        *lo = *hi = 0;
        return;
    }
    MPI_Aint last = (MPI_Aint)(count - 1) * ext;
    *lo = tlb + (last < 0 ? last : 0);
    *hi = tlb + text + (last > 0 ? last : 0);
}

typedef struct {
    unsigned char *region;
    size_t len;
    char *buf; /* region + GUARD - lo */
} area_t;

static void area_alloc(area_t *a, const use_t *u) {
    MPI_Aint lo, hi;
    span(u->dt, u->count, &lo, &hi);
    a->len = (size_t)(hi - lo) + 2 * GUARD;
    a->region = malloc(a->len);
    a->buf = (char *)a->region + GUARD - lo;
}

/* Broadcasts with per-rank datatypes (`mine` on this rank, `at_root` the
 * root's) from `root`; checks the whole area (gaps and guards included)
 * against what MPI_Unpack of the root's packed data gives. Returns the MPI
 * return code; writes a problem into out. */
static int typed_bcast(MPI_Comm comm, int root, const use_t *mine, const use_t *at_root,
                       long seed, char *out, const char *what) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    area_t a;
    area_alloc(&a, mine);
    int is_root = rank == root;
    for (size_t i = 0; i < a.len; i++)
        a.region[i] = is_root ? pat(seed, (long)i) : (unsigned char)~pat(seed, (long)i);
    unsigned char *expect = malloc(a.len);
    memcpy(expect, a.region, a.len);
    if (!is_root) {
        /* What MPI semantics put here: the root's typed data, unpacked
         * with this rank's type. */
        area_t r;
        area_alloc(&r, at_root);
        for (size_t i = 0; i < r.len; i++) r.region[i] = pat(seed, (long)i);
        int psize = 0, pos = 0;
        MPI_Pack_size(at_root->count, at_root->dt, MPI_COMM_SELF, &psize);
        char *packed = malloc(psize + 1);
        MPI_Pack(r.buf, at_root->count, at_root->dt, packed, psize, &pos, MPI_COMM_SELF);
        int upos = 0;
        char *ebuf = (char *)expect + (a.buf - (char *)a.region);
        MPI_Unpack(packed, pos, &upos, ebuf, mine->count, mine->dt, MPI_COMM_SELF);
        free(packed);
        free(r.region);
    }
    int rc;
    if (mine->bottom) {
        MPI_Aint addr;
        MPI_Get_address(a.buf, &addr);
        MPI_Datatype abs_t;
        int bl = mine->count;
        MPI_Type_create_struct(1, &bl, &addr, (MPI_Datatype *)&mine->dt, &abs_t);
        MPI_Type_commit(&abs_t);
        rc = MPI_Bcast(MPI_BOTTOM, 1, abs_t, root, comm);
        MPI_Type_free(&abs_t);
    } else {
        rc = MPI_Bcast(a.buf, mine->count, mine->dt, root, comm);
    }
    if (rc != MPI_SUCCESS) {
        res_set(out, "%s (%s, root %d)", class_name(rc), what, root);
    } else {
        for (size_t i = 0; i < a.len; i++)
            if (a.region[i] != expect[i]) {
                long off = (long)i - (long)(a.buf - (char *)a.region);
                if (i < GUARD || i >= a.len - GUARD)
                    res_set(out, "wrote outside the buffer (%s, root %d, byte %ld)", what, root, off);
                else
                    res_set(out, "wrong data (%s, root %d, byte %ld)", what, root, off);
                break;
            }
    }
    free(expect);
    free(a.region);
    return rc;
}

static const int COUNTS[] = {1, 5, 1203};
#define NCOUNTS 3

/* Same datatype on every rank, every root, a few counts. */
static void same_type_case(MPI_Comm comm, const dtype_t *t, char *out, int bottom) {
    int size;
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < NCOUNTS; k++)
        for (int root = 0; root < size; root++) {
            use_t u = {t->dt, COUNTS[k], bottom};
            char what[64];
            snprintf(what, sizeof what, "count %d", COUNTS[k]);
            typed_bcast(comm, root, &u, &u, 1000 * k + 17 * root + 3, out, what);
        }
}

/* ---------- the cases ---------- */

typedef void (*case_fn)(MPI_Comm comm, const char *arg, char *out);

static void c_type(MPI_Comm comm, const char *arg, char *out) {
    same_type_case(comm, find_type(arg), out, 0);
}

static void c_type_bottom(MPI_Comm comm, const char *arg, char *out) {
    same_type_case(comm, find_type(arg), out, 1);
}

/* Mixed datatypes, one signature: the root (each rank in turn) uses the
 * derived type, the others its base type (or twin), or the reverse. */
static void mixed(MPI_Comm comm, const char *arg, char *out, int reverse) {
    const dtype_t *t = find_type(arg);
    int size, rank;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    for (int k = 0; k < NCOUNTS; k++)
        for (int root = 0; root < size; root++) {
            use_t d = {t->dt, COUNTS[k], 0};
            use_t b = t->twin != MPI_DATATYPE_NULL ? (use_t){t->twin, COUNTS[k], 0}
                                                   : (use_t){t->base, COUNTS[k] * t->per, 0};
            const use_t *at_root = reverse ? &b : &d, *other = reverse ? &d : &b;
            char what[64];
            snprintf(what, sizeof what, "count %d", COUNTS[k]);
            typed_bcast(comm, root, rank == root ? at_root : other, at_root,
                        1000 * k + 17 * root + 5, out, what);
        }
}
static void c_mixed(MPI_Comm comm, const char *arg, char *out) { mixed(comm, arg, out, 0); }
static void c_mixed_rev(MPI_Comm comm, const char *arg, char *out) { mixed(comm, arg, out, 1); }

/* Only the last rank uses another type (or MPI_BOTTOM); every root. */
static void c_one_rank_differs(MPI_Comm comm, const char *arg, char *out) {
    int size, rank;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    int bottom = !strcmp(arg, "bottom");
    const dtype_t *t = bottom ? find_type("int") : find_type(arg);
    for (int k = 0; k < NCOUNTS; k++)
        for (int root = 0; root < size; root++) {
            use_t plain = {MPI_INT, COUNTS[k] * t->per, 0};
            use_t odd = bottom ? (use_t){MPI_INT, COUNTS[k], 1} : (use_t){t->dt, COUNTS[k], 0};
            const use_t *mine = rank == size - 1 ? &odd : &plain;
            const use_t *at_root = root == size - 1 ? &odd : &plain;
            char what[64];
            snprintf(what, sizeof what, "count %d", COUNTS[k]);
            typed_bcast(comm, root, mine, at_root, 1000 * k + 17 * root + 9, out, what);
        }
}

/* Byte buffers of n bytes from every root (n from the argument). */
static void bytes_bcast(MPI_Comm comm, long n, char *out, int all_roots) {
    int size;
    MPI_Comm_size(comm, &size);
    for (int root = 0; root < (all_roots ? size : 1); root++) {
        use_t u = {MPI_BYTE, (int)n, 0};
        char what[64];
        snprintf(what, sizeof what, "%ld bytes", n);
        typed_bcast(comm, root, &u, &u, n + root, out, what);
    }
}

static void c_bytes(MPI_Comm comm, const char *arg, char *out) {
    bytes_bcast(comm, atol(arg), out, 1);
}

/* Count 0: with a buffer, with NULL, with a derived type; and a zero-size
 * type with count > 0. Nothing may be written. */
static void c_count0(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    int size, rank;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    for (int root = 0; root < size; root++) {
        int v[4] = {7, 7, 7, 7};
        int rc = MPI_Bcast(v, 0, MPI_INT, root, comm);
        if (rc) res_set(out, "%s (buffer)", class_name(rc));
        rc = MPI_Bcast(NULL, 0, MPI_INT, root, comm);
        if (rc) res_set(out, "%s (NULL)", class_name(rc));
        rc = MPI_Bcast(v, 0, find_type("vector")->dt, root, comm);
        if (rc) res_set(out, "%s (vector)", class_name(rc));
        rc = MPI_Bcast(v, 3, find_type("zero_size")->dt, root, comm);
        if (rc) res_set(out, "%s (zero-size type)", class_name(rc));
        for (int i = 0; i < 4; i++)
            if (v[i] != 7) res_set(out, "wrote into the buffer (root %d)", root);
    }
}

/* Several calls in a row on one communicator, alternating contiguous and
 * non-contiguous types, sizes and roots: no state may leak between calls. */
static void c_sequence(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    int size;
    MPI_Comm_size(comm, &size);
    const char *types[] = {"vector", "int", "struct_gap", "double", "resized_lb_neg", "byte"};
    for (int it = 0; it < 24; it++) {
        const dtype_t *t = find_type(types[it % 6]);
        int count = (int[]){1, 1000, 3, 20000, 7, 65537}[it % 6];
        use_t u = {t->dt, count, 0};
        char what[64];
        snprintf(what, sizeof what, "call %d (%s x %d)", it, t->name, count);
        typed_bcast(comm, (it * 7) % size, &u, &u, it, out, what);
    }
}

/* ---- communicators ---- */

static void on_comm(MPI_Comm c, char *out, const char *what) {
    if (c == MPI_COMM_NULL) return;
    char o[RES] = "";
    same_type_case(c, find_type("int"), o, 0);
    same_type_case(c, find_type("vector"), o, 0);
    bytes_bcast(c, 70001, o, 1);
    if (o[0]) res_set(out, "%s: %s", what, o);
}

static void c_comm_world(MPI_Comm comm, const char *arg, char *out) {
    (void)comm, (void)arg;
    on_comm(MPI_COMM_WORLD, out, "world");
}

static void c_comm_dup(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    MPI_Comm d, dd;
    MPI_Comm_dup(comm, &d);
    on_comm(d, out, "dup");
    MPI_Comm_dup(d, &dd); /* a duplicate of a communicator already used */
    on_comm(dd, out, "dup of dup");
    MPI_Comm_free(&dd);
    MPI_Comm_free(&d);
    /* a freed handle is recycled by the next communicator */
    MPI_Comm_dup(comm, &d);
    on_comm(d, out, "dup after free");
    MPI_Comm_free(&d);
}

static void c_comm_split(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm s;
    MPI_Comm_split(comm, rank % 2, rank, &s);
    on_comm(s, out, "halves");
    MPI_Comm_free(&s);
    MPI_Comm_split(comm, 0, size - rank, &s); /* reversed order */
    on_comm(s, out, "reversed");
    MPI_Comm_free(&s);
    MPI_Comm_split(comm, rank, 0, &s); /* every rank alone */
    on_comm(s, out, "singletons");
    MPI_Comm_free(&s);
}

static void c_comm_undefined(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm s;
    MPI_Comm_split(comm, rank == 0 ? MPI_UNDEFINED : 1, rank, &s);
    if (rank == 0 && s != MPI_COMM_NULL) res_set(out, "MPI_UNDEFINED gave a communicator");
    on_comm(s, out, "without rank 0");
    if (s != MPI_COMM_NULL) MPI_Comm_free(&s);
}

static void c_comm_create_group(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Group g, sub;
    MPI_Comm_group(comm, &g);
    int ranks[64], n = 0;
    for (int r = size - 1; r >= 0; r -= 2) ranks[n++] = r; /* reversed, every other */
    MPI_Group_incl(g, n, ranks, &sub);
    int member = 0;
    for (int i = 0; i < n; i++) member |= ranks[i] == rank;
    if (member) {
        MPI_Comm c;
        MPI_Comm_create_group(comm, sub, 42, &c);
        on_comm(c, out, "create_group");
        MPI_Comm_free(&c);
    }
    MPI_Comm c;
    MPI_Comm_create(comm, sub, &c);
    on_comm(c, out, "create");
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    MPI_Group_free(&sub);
    MPI_Group_free(&g);
}

static void c_comm_self(MPI_Comm comm, const char *arg, char *out) {
    (void)comm, (void)arg;
    on_comm(MPI_COMM_SELF, out, "self");
    int v[3] = {1, 2, 3};
    int rc = MPI_Bcast(v, 3, MPI_INT, 0, MPI_COMM_SELF);
    if (rc || v[0] != 1 || v[1] != 2 || v[2] != 3) res_set(out, "self changed the buffer");
}

static void c_comm_cart(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    int size;
    MPI_Comm_size(comm, &size);
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm c;
    MPI_Cart_create(comm, 1, dims, periods, 0, &c);
    on_comm(c, out, "cart");
    MPI_Comm_free(&c);
}

/* Intercommunicator of the low and the high ranks: each side's rank 0
 * broadcasts to the other side (MPI_ROOT / MPI_PROC_NULL / remote root);
 * then the merged intracommunicator. */
static void c_intercomm(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int low = rank < size / 2 ? 1 : 0;
    if (size < 2) {
        res_set(out, "skipped (1 rank)");
        return;
    }
    MPI_Comm local, inter, merged;
    MPI_Comm_split(comm, low, rank, &local);
    int lrank;
    MPI_Comm_rank(local, &lrank);
    MPI_Intercomm_create(local, 0, comm, low ? size / 2 : 0, 7, &inter);
    for (int sender = 0; sender < 2; sender++) { /* 1: low group sends */
        for (int n = 1; n <= 70001; n += 70000) {
            unsigned char *b = malloc(n);
            long seed = 31 * sender + n;
            int mine_sends = (sender == low);
            for (int i = 0; i < n; i++)
                b[i] = mine_sends && lrank == 0 ? pat(seed, i) : (unsigned char)~pat(seed, i);
            int root = mine_sends ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            int rc = MPI_Bcast(b, n, MPI_BYTE, root, inter);
            if (rc) res_set(out, "%s (inter, %d bytes)", class_name(rc), n);
            for (int i = 0; i < n; i++) {
                unsigned char want = (mine_sends && lrank != 0) ? (unsigned char)~pat(seed, i)
                                                                : pat(seed, i);
                if (b[i] != want) {
                    res_set(out, "wrong data (inter, %d bytes, byte %d)", n, i);
                    break;
                }
            }
            free(b);
        }
        /* a derived type over the intercommunicator */
        int v[2 * 14];
        for (int i = 0; i < 28; i++) v[i] = sender == low && lrank == 0 ? i : -1;
        int root = sender == low ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Bcast(v, 1, find_type("vector")->dt, root, inter);
        if (sender != low)
            for (int i = 0; i < 20; i++)
                if ((i % 3 < 2) && v[i] != i) res_set(out, "wrong data (inter, vector)");
    }
    MPI_Intercomm_merge(inter, low, &merged);
    on_comm(merged, out, "merged");
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

/* ---- nonblocking and persistent broadcasts mixed with blocking ones on
 * one communicator: the program's order of collective calls is the only
 * order, and colltune's private traffic (for its MPI_Bcast) must never
 * match the library's nonblocking traffic (which it does not route) ---- */

static void fill(unsigned char *b, int n, long seed, int mine) {
    for (int i = 0; i < n; i++) b[i] = mine ? pat(seed, i) : (unsigned char)~pat(seed, i);
}

static void expect(const unsigned char *b, int n, long seed, const char *what, char *out) {
    for (int i = 0; i < n; i++)
        if (b[i] != pat(seed, i)) {
            res_set(out, "wrong data (%s, %d bytes, byte %d)", what, n, i);
            return;
        }
}

/* Two Ibcasts outstanding (of a size colltune would run itself, and a
 * small one), blocking broadcasts of every size class between posting and
 * completing them, completed in the reverse order. */
static void c_nonblocking(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int sizes[] = {1, 4096, 70001};
    for (int k = 0; k < 3; k++) {
        int n = sizes[k], r1 = k % size, r2 = (k + 1) % size, r3 = (k + 2) % size;
        unsigned char *a = malloc(n), *b = malloc(3), *c = malloc(65536 + 7);
        fill(a, n, 11 + n, rank == r1);
        fill(b, 3, 12 + n, rank == r2);
        MPI_Request req[2];
        int rc = MPI_Ibcast(a, n, MPI_BYTE, r1, comm, &req[0]);
        rc |= MPI_Ibcast(b, 3, MPI_BYTE, r2, comm, &req[1]);
        for (int m = 1; m <= 65536 + 7; m = m * 64 + 7) {
            fill(c, m, 13 + m, rank == r3);
            rc |= MPI_Bcast(c, m, MPI_BYTE, r3, comm);
            expect(c, m, 13 + m, "blocking between", out);
        }
        rc |= MPI_Wait(&req[1], MPI_STATUS_IGNORE);
        rc |= MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        if (rc) res_set(out, "an MPI call failed (%d bytes)", n);
        expect(a, n, 11 + n, "ibcast", out);
        expect(b, 3, 12 + n, "ibcast small", out);
        free(a);
        free(b);
        free(c);
    }
}

/* MPI 4's persistent broadcast: made once, started three times, a blocking
 * broadcast between each start and its wait. */
static void c_persistent(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
#if MPI_VERSION >= 4
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int n = 5000, root = size - 1;
    unsigned char *a = malloc(n), *c = malloc(70001);
    MPI_Request req;
    int rc = MPI_Bcast_init(a, n, MPI_BYTE, root, comm, MPI_INFO_NULL, &req);
    for (int round = 0; round < 3 && !rc; round++) {
        fill(a, n, 21 + round, rank == root);
        rc |= MPI_Start(&req);
        fill(c, 70001, 22 + round, rank == 0);
        rc |= MPI_Bcast(c, 70001, MPI_BYTE, 0, comm);
        expect(c, 70001, 22 + round, "blocking between", out);
        rc |= MPI_Wait(&req, MPI_STATUS_IGNORE);
        expect(a, n, 21 + round, "persistent", out);
    }
    if (!rc) rc = MPI_Request_free(&req);
    if (rc) res_set(out, "an MPI call failed");
    free(a);
    free(c);
#else
    (void)comm;
    res_set(out, "skipped (MPI %d.%d has no MPI_Bcast_init)", MPI_VERSION, MPI_SUBVERSION);
#endif
}

/* ---- erroneous calls under MPI_ERRORS_RETURN: the error class, then a
 * correct call on the same communicator must still work ---- */

static void then_ok(MPI_Comm comm, char *out) {
    char o[RES] = "";
    bytes_bcast(comm, 5000, o, 1);
    same_type_case(comm, find_type("int"), o, 0);
    if (o[0]) res_set(out, "then %s", o);
}

static void err_case(MPI_Comm comm, const char *arg, char *out) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int v[16] = {0};
    int rc;
    if (!strcmp(arg, "root_size")) rc = MPI_Bcast(v, 4, MPI_INT, size, comm);
    else if (!strcmp(arg, "root_negative")) rc = MPI_Bcast(v, 4, MPI_INT, -7, comm);
    else if (!strcmp(arg, "root_mpi_root")) rc = MPI_Bcast(v, 4, MPI_INT, MPI_ROOT, comm);
    else if (!strcmp(arg, "root_proc_null")) rc = MPI_Bcast(v, 4, MPI_INT, MPI_PROC_NULL, comm);
    else if (!strcmp(arg, "count_negative")) rc = MPI_Bcast(v, -1, MPI_INT, 0, comm);
    else if (!strcmp(arg, "type_null")) rc = MPI_Bcast(v, 4, MPI_DATATYPE_NULL, 0, comm);
    else if (!strcmp(arg, "type_uncommitted")) {
        MPI_Datatype t;
        MPI_Type_contiguous(2, MPI_INT, &t); /* never committed */
        rc = MPI_Bcast(v, 2, t, 0, comm);
        MPI_Type_free(&t);
    } else if (!strcmp(arg, "comm_null")) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        rc = MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_NULL);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    } else if (!strcmp(arg, "in_place")) rc = MPI_Bcast(MPI_IN_PLACE, 4, MPI_INT, 0, comm);
    else if (!strcmp(arg, "inter_root")) {
        if (size < 2) {
            res_set(out, "skipped (1 rank)");
            return;
        }
        MPI_Comm local, inter;
        int low = rank < size / 2;
        MPI_Comm_split(comm, low, rank, &local);
        MPI_Intercomm_create(local, 0, comm, low ? size / 2 : 0, 8, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        rc = MPI_Bcast(v, 4, MPI_INT, size + 3, inter); /* beyond the remote group */
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    } else {
        res_set(out, "unknown error case");
        return;
    }
    snprintf(out, RES, "%s", class_name(rc));
    char o[RES] = "";
    then_ok(comm, o);
    if (o[0]) snprintf(out + strlen(out), RES - strlen(out), ", %s", o);
    else snprintf(out + strlen(out), RES - strlen(out), ", then ok");
}

/* Erroneous: the last rank passes fewer (or more) elements than the root.
 * The error class each rank gets, then whether the next correct calls on
 * the same communicator deliver the right data (defect 6). */
static void c_err_count(MPI_Comm comm, const char *arg, char *out) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int n = 4096; /* ints: 16 KiB at the root */
    if (!strncmp(arg, "short_small", 11) || !strncmp(arg, "long_small", 10)) n = 256;
    int mine = n;
    if (rank == size - 1) mine = !strncmp(arg, "short", 5) ? n / 2 : 2 * n;
    int *b = malloc(sizeof(int) * 2 * n);
    for (int i = 0; i < 2 * n; i++) b[i] = rank == 0 ? i : -1;
    int rc = MPI_Bcast(b, mine, MPI_INT, 0, comm);
    snprintf(out, RES, "%s", class_name(rc));
    free(b);
    char o[RES] = "";
    then_ok(comm, o);
    if (o[0]) snprintf(out + strlen(out), RES - strlen(out), ", %s", o);
    else snprintf(out + strlen(out), RES - strlen(out), ", then ok");
}

/* ---- fatal error handlers (the job ends; alone) ---- */

static void c_fatal(MPI_Comm comm, const char *arg, char *out) {
    int size;
    MPI_Comm_size(comm, &size);
    int v[4] = {0};
    int rc;
    if (!strcmp(arg, "root")) rc = MPI_Bcast(v, 4, MPI_INT, size, comm);
    else if (!strcmp(arg, "count")) rc = MPI_Bcast(v, -1, MPI_INT, 0, comm);
    else if (!strcmp(arg, "type_uncommitted")) {
        MPI_Datatype t;
        MPI_Type_contiguous(2, MPI_INT, &t);
        rc = MPI_Bcast(v, 2, t, 0, comm);
    } else if (!strcmp(arg, "comm_null")) rc = MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_NULL);
    else {
        res_set(out, "unknown fatal case");
        return;
    }
    /* Still here: the error handler did not end the job. */
    snprintf(out, RES, "returned %s", class_name(rc));
}

/* ---- threads: concurrent broadcasts on several communicators ---- */

typedef struct {
    MPI_Comm comm;
    int id;
    char out[RES];
} tjob_t;

static void *thread_body(void *p) {
    tjob_t *j = p;
    int size;
    MPI_Comm_size(j->comm, &size);
    for (int it = 0; it < 30; it++) {
        long n = (long[]){1, 4000, 100003, 17}[(it + j->id) % 4];
        use_t u = {MPI_BYTE, (int)n, 0};
        const dtype_t *v = find_type("vector");
        use_t w = {v->dt, 3, 0};
        char what[64];
        snprintf(what, sizeof what, "thread %d call %d", j->id, it);
        typed_bcast(j->comm, (it + j->id) % size, it % 5 == 4 ? &w : &u, it % 5 == 4 ? &w : &u,
                    it * 11 + j->id, j->out, what);
    }
    return NULL;
}

static void c_threads(MPI_Comm comm, const char *arg, char *out) {
    (void)arg;
    if (thread_provided != MPI_THREAD_MULTIPLE) {
        res_set(out, "skipped (MPI_THREAD_MULTIPLE not provided)");
        return;
    }
    enum { T = 4 };
    tjob_t jobs[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        MPI_Comm_dup(comm, &jobs[i].comm);
        jobs[i].id = i;
        jobs[i].out[0] = 0;
    }
    for (int i = 0; i < T; i++) pthread_create(&th[i], NULL, thread_body, &jobs[i]);
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++) {
        if (jobs[i].out[0]) res_set(out, "%s", jobs[i].out);
        MPI_Comm_free(&jobs[i].comm);
    }
}

/* ---- at least 2 GiB in one call (defect 3); alone, memory permitting ---- */

static int enough_memory(double need_per_rank) {
    long avail_kb = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %ld kB", &avail_kb) == 1) break;
    if (f) fclose(f);
    int ok = (double)avail_kb * 1024.0 > need_per_rank * world_size * 1.15 + 1e9;
    int all = 0;
    /* ranks share one machine here; rank 0's view decides for all */
    if (world_rank != 0) ok = 1;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

static uint64_t word(uint64_t seed, uint64_t i) {
    uint64_t z = (i + seed) * 0x9E3779B97F4A7C15ULL;
    return z ^ (z >> 29);
}

static void c_big(MPI_Comm comm, const char *arg, char *out) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* "double": MPI_Bcast(buf, 1 << 28, MPI_DOUBLE): 2 GiB exactly.
     * "type": 257 elements of a contiguous type of 2^20 doubles. */
    int by_type = !strcmp(arg, "type");
    size_t words = by_type ? (size_t)257 << 20 : (size_t)1 << 28;
    if (!enough_memory((double)words * 8)) {
        res_set(out, "skipped (memory)");
        return;
    }
    /* pages populated at once: half the time of faulting them in one by one */
    uint64_t *b = mmap(NULL, words * 8, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (b == MAP_FAILED) {
        res_set(out, "skipped (memory)");
        return;
    }
    int root = size - 1;
    for (size_t i = 0; i < words; i++) b[i] = rank == root ? word(7, i) : ~word(7, i);
    int rc;
    if (by_type) {
        MPI_Datatype t;
        MPI_Type_contiguous(1 << 20, MPI_DOUBLE, &t);
        MPI_Type_commit(&t);
        rc = MPI_Bcast(b, 257, t, root, comm);
        MPI_Type_free(&t);
    } else {
        rc = MPI_Bcast(b, 1 << 28, MPI_DOUBLE, root, comm);
    }
    if (rc) res_set(out, "%s", class_name(rc));
    else
        for (size_t i = 0; i < words; i++)
            if (b[i] != word(7, i)) {
                res_set(out, "wrong data (word %zu)", i);
                break;
            }
    munmap(b, words * 8);
}

/* ---- MPI_Bcast after MPI_Finalize (defect 11); alone ---- */

static void c_after_finalize(MPI_Comm comm, const char *arg, char *out) {
    (void)arg, (void)out;
    MPI_Comm_free(&comm);
    MPI_Finalize();
    int v[4] = {0};
    int rc = MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD);
    if (world_rank == 0) printf("case after_finalize: returned %d\n", rc);
    fflush(stdout);
    exit(0);
}

/* ---------- the case table ---------- */

typedef struct {
    char name[64];
    const char *group;
    case_fn fn;
    char arg[48];
} case_t;

static case_t cases[400];
static int n_cases;

static void add(const char *group, case_fn fn, const char *arg, const char *fmt, ...) {
    case_t *c = &cases[n_cases++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->name, sizeof c->name, fmt, ap);
    va_end(ap);
    c->group = group;
    c->fn = fn;
    snprintf(c->arg, sizeof c->arg, "%s", arg);
}

static void make_cases(void) {
    /* datatype matrix: the same type on every rank */
    for (int i = 0; i < n_predef; i++) add("direct", c_type, predef[i].name, "type_%s", predef[i].name);
    for (int i = 0; i < n_derived; i++)
        add("direct", c_type, derived[i].name, "type_%s", derived[i].name);
    add("direct", c_type_bottom, "int", "bottom_int");
    add("direct", c_type_bottom, "vector", "bottom_vector");
    add("direct", c_type_bottom, "resized_lb_neg", "bottom_resized_lb_neg");
    /* counts */
    add("direct", c_count0, "", "count_0");
    add("direct", c_bytes, "1", "bytes_1");
    add("direct", c_bytes, "12345", "bytes_12345");
    add("direct", c_bytes, "1048579", "bytes_1048579");
    add("direct", c_sequence, "", "sequence_mixed_calls");
    /* communicators */
    add("direct", c_comm_world, "", "comm_world");
    add("direct", c_comm_dup, "", "comm_dup");
    add("direct", c_comm_split, "", "comm_split");
    add("direct", c_comm_undefined, "", "comm_split_undefined");
    add("direct", c_comm_create_group, "", "comm_create_group");
    add("direct", c_comm_self, "", "comm_self");
    add("direct", c_comm_cart, "", "comm_cart");
    add("direct", c_intercomm, "", "comm_intercomm");
    add("direct", c_nonblocking, "", "nonblocking_mixed");
    add("direct", c_persistent, "", "persistent_mixed");
    /* erroneous arguments, MPI_ERRORS_RETURN */
    const char *errs[] = {"root_size", "root_negative", "root_mpi_root", "root_proc_null",
                          "count_negative", "type_null", "type_uncommitted", "comm_null",
                          "inter_root"};
    for (int i = 0; i < 9; i++) add("direct", err_case, errs[i], "err_%s", errs[i]);
    add("alone", err_case, "in_place", "err_in_place");
    /* mixed datatypes with one signature (defects 1, 2): may hang */
    const char *mix[] = {"contiguous", "vector", "hvector", "indexed", "indexed_block",
                         "hindexed", "permuted", "permuted3_double", "struct_gap",
                         "struct_mixed", "resized_lb_pos", "resized_lb_neg",
                         "resized_lb_neg_tight", "subarray", "nested", "dup_int"};
    for (int i = 0; i < 16; i++) add("guarded", c_mixed, mix[i], "mixed_%s", mix[i]);
    const char *rev[] = {"vector", "permuted", "struct_mixed", "resized_lb_neg_tight"};
    for (int i = 0; i < 4; i++) add("guarded", c_mixed_rev, rev[i], "mixed_rev_%s", rev[i]);
    add("guarded", c_one_rank_differs, "bottom", "one_rank_bottom");
    add("guarded", c_one_rank_differs, "resized_lb_neg_tight", "one_rank_resized_lb_neg_tight");
    add("guarded", c_one_rank_differs, "resized_lb_pos", "one_rank_resized_lb_pos");
    /* erroneous counts, then correct calls (defect 6): may hang */
    add("guarded", c_err_count, "short_small", "err_count_short_small");
    add("guarded", c_err_count, "short", "err_count_short");
    add("guarded", c_err_count, "long_small", "err_count_long_small");
    add("guarded", c_err_count, "long", "err_count_long");
    /* the first call on a communicator with mixed types (every other
     * guarded case makes one contiguous call first, see main) */
    add("guarded", c_mixed, "vector", "first_call_mixed_vector");
    add("guarded", c_one_rank_differs, "bottom", "first_call_one_rank_bottom");
    /* creates communicators in its threads: a job of its own */
    add("guarded_alone", c_threads, "", "thread_multiple");
    /* fatal handlers, after finalize, large */
    /* (No fatal truncation case: Open MPI 4.1's own outcome varies from
     * run to run there: abort, crash while aborting, or hang.) */
    const char *fat[] = {"root", "count", "type_uncommitted", "comm_null"};
    for (int i = 0; i < 4; i++) add("alone", c_fatal, fat[i], "fatal_%s", fat[i]);
    add("alone", c_after_finalize, "", "after_finalize");
    add("alone", c_big, "double", "big_2gib_double");
    add("alone", c_big, "type", "big_2gib_type");
}

/* ---------- drivers ---------- */

/* Rank 0 prints one line from every rank's result. */
static void report(const char *name, const char *mine) {
    char *all = world_rank == 0 ? malloc((size_t)RES * world_size) : NULL;
    MPI_Gather((void *)mine, RES, MPI_CHAR, all, RES, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        int same = 1;
        for (int r = 1; r < world_size; r++) same &= !strcmp(all, all + (size_t)r * RES);
        printf("case %s: ", name);
        if (same) printf("%s\n", all);
        else
            for (int r = 0; r < world_size; r++)
                printf("r%d=%s%s", r, all + (size_t)r * RES, r + 1 < world_size ? "; " : "\n");
        fflush(stdout);
        free(all);
    }
}

static const case_t *find_case(const char *name) {
    for (int i = 0; i < n_cases; i++)
        if (!strcmp(cases[i].name, name)) return &cases[i];
    return NULL;
}

typedef struct {
    const case_t *c;
    MPI_Comm comm;
    char out[RES];
    volatile int done;
} gjob_t;

static void *guarded_body(void *p) {
    gjob_t *j = p;
    char first[RES];
    memcpy(first, j->out, RES);
    j->out[0] = 0;
    j->c->fn(j->comm, j->c->arg, j->out);
    if (first[0]) memcpy(j->out, first, RES);
    if (!j->out[0]) snprintf(j->out, RES, "ok");
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* --alarm: a case not finished after the alarm reports `hang` (rank 0,
 * which then waits in MPI_Gather if another rank hangs) and ends the job. */
static unsigned alarm_s;
static char hang_line[128];
static int hang_len;

static void on_alarm(int sig) {
    (void)sig;
    if (world_rank == 0 && write(1, hang_line, hang_len) < 0) _exit(3);
    _exit(0);
}

int main(int argc, char **argv) {
    int a = 1;
    double guard = 0;
    if (argc > 1 && !strcmp(argv[1], "--list")) {
        MPI_Init(&argc, &argv); /* the types are built with MPI */
        make_types();
        make_cases();
        MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
        if (world_rank == 0)
            for (int i = 0; i < n_cases; i++) printf("%s %s\n", cases[i].name, cases[i].group);
        MPI_Finalize();
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "--alarm")) {
        alarm_s = atoi(argv[2]);
        a = 3;
        MPI_Init(&argc, &argv);
    } else if (argc > 2 && !strcmp(argv[1], "--guard")) {
        guard = atof(argv[2]);
        a = 3;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &thread_provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    make_types();
    make_cases();
    for (int i = a; i < argc; i++)
        if (!find_case(argv[i])) {
            if (world_rank == 0) fprintf(stderr, "dropin: no case %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    if (guard <= 0) {
        signal(SIGALRM, on_alarm);
        for (int i = a; i < argc; i++) {
            const case_t *c = find_case(argv[i]);
            char out[RES] = "";
            MPI_Comm comm;
            hang_len = snprintf(hang_line, sizeof hang_line, "case %s: hang\n", c->name);
            /* rank 0 first, so that it is the one that reports */
            if (alarm_s > 0)
                alarm((strncmp(c->name, "big_", 4) ? alarm_s : 15 * alarm_s) + (world_rank ? 3 : 0));
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
            c->fn(comm, c->arg, out);
            if (!out[0]) snprintf(out, RES, "ok");
            MPI_Comm_free(&comm);
            report(c->name, out);
            alarm(0);
        }
        MPI_Finalize();
        return 0;
    }
    /* guarded: every case at once, each on its own communicator */
    int n = argc - a;
    gjob_t *jobs = calloc(n, sizeof *jobs);
    pthread_t *th = calloc(n, sizeof *th);
    for (int i = 0; i < n; i++) {
        jobs[i].c = find_case(argv[a + i]);
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[i].comm);
        /* One correct contiguous call first, from this thread, one
         * communicator after the other: whatever a library sets up at a
         * communicator's first call is done before the cases run at once.
         * (A communicator creation stuck in a hung case would block every
         * other thread's: Open MPI agrees on context ids one at a time.) */
        if (strncmp(jobs[i].c->name, "first_call_", 11)) {
            int w = world_rank;
            MPI_Bcast(&w, 1, MPI_INT, 0, jobs[i].comm);
            if (w != 0) snprintf(jobs[i].out, RES, "wrong data (warm-up call)");
        }
    }
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, guarded_body, &jobs[i]);
    double t0 = now();
    for (;;) {
        int left = 0;
        for (int i = 0; i < n; i++) left += !__atomic_load_n(&jobs[i].done, __ATOMIC_ACQUIRE);
        if (!left || now() - t0 > guard) break;
        usleep(20000);
    }
    int hung = 0, any = 0;
    for (int i = 0; i < n; i++) {
        char out[RES];
        if (__atomic_load_n(&jobs[i].done, __ATOMIC_ACQUIRE)) {
            memcpy(out, jobs[i].out, RES);
        } else {
            snprintf(out, RES, "hang");
            hung = 1;
        }
        report(jobs[i].c->name, out);
    }
    MPI_Allreduce(&hung, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any) {
        /* Threads are stuck inside MPI: MPI_Finalize cannot complete. */
        if (world_rank == 0) printf("guarded: some cases hung; exiting without MPI_Finalize\n");
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        MPI_Comm_free(&jobs[i].comm);
    }
    MPI_Finalize();
    return 0;
}
