/* Regression (drop-in defect 3): one MPI_Bcast of at least 2 GiB.
 * MPI_Bcast(buf, 1 << 28, MPI_DOUBLE, ...) works in Open MPI; before the
 * fix the interposition library aborted it ("2147483648 bytes exceed one
 * MPI message"), even where it fell back to the library, because the
 * fallback re-described the buffer as bytes. Then 257 elements of a
 * contiguous type of 2^20 doubles (2 GiB + 8 MiB, a count the library
 * takes). The root is the last rank; every word is checked.
 *
 * Needs about 2.1 GiB per rank: prints `regress_2gib: skipped (memory)`
 * when /proc/meminfo says there is not enough. */
#define _GNU_SOURCE
#include "regress_common.h"
#include <stdint.h>
#include <sys/mman.h>

static uint64_t word(uint64_t seed, uint64_t i) {
    uint64_t z = (i + seed) * 0x9E3779B97F4A7C15ULL;
    return z ^ (z >> 29);
}

static int enough_memory(double need) {
    long avail_kb = 0;
    char line[256];
    FILE *f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %ld kB", &avail_kb) == 1) break;
    if (f) fclose(f);
    /* the ranks share this machine: rank 0 decides for all */
    int ok = (double)avail_kb * 1024.0 > need * r_size + 1.5e9, all = 0;
    if (r_rank != 0) ok = 1;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

static void run(uint64_t *b, size_t words, int by_type, uint64_t seed) {
    int root = r_size - 1;
    for (size_t i = 0; i < words; i++) b[i] = r_rank == root ? word(seed, i) : ~word(seed, i);
    int rc;
    if (by_type) {
        MPI_Datatype t;
        MPI_Type_contiguous(1 << 20, MPI_DOUBLE, &t);
        MPI_Type_commit(&t);
        rc = MPI_Bcast(b, (int)(words >> 20), t, root, MPI_COMM_WORLD);
        MPI_Type_free(&t);
    } else {
        rc = MPI_Bcast(b, (int)words, MPI_DOUBLE, root, MPI_COMM_WORLD);
    }
    if (rc != MPI_SUCCESS) r_fail("%s: error %ld (%ld words)", "MPI_Bcast", rc, (long)words);
    for (size_t i = 0; i < words; i++)
        if (b[i] != word(seed, i)) {
            r_fail("%s: word %ld of %ld wrong", "data", (long)i, (long)words);
            break;
        }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    r_start(argc > 1 ? atoi(argv[1]) : 300);
    size_t words = (size_t)257 << 20;
    if (!enough_memory((double)words * 8)) {
        if (r_rank == 0) printf("regress_2gib: skipped (memory)\n");
        MPI_Finalize();
        return 0;
    }
    uint64_t *b = mmap(NULL, words * 8, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (b == MAP_FAILED) {
        if (r_rank == 0) printf("regress_2gib: skipped (memory)\n");
        MPI_Finalize();
        return 0;
    }
    strcpy(r_case, "1 << 28 MPI_DOUBLE");
    run(b, (size_t)1 << 28, 0, 7);
    strcpy(r_case, "257 x contiguous(2^20 MPI_DOUBLE)");
    run(b, words, 1, 11);
    munmap(b, words * 8);
    return r_finish("regress_2gib");
}
