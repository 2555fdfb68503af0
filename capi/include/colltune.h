/* colltune: C interface of the runtime selector.
 *
 * Call colltune_init() after MPI_Init and colltune_finalize() before
 * MPI_Finalize. colltune_bcast has MPI_Bcast's signature and semantics; it
 * runs the algorithm the decision table (COLLTUNE_TABLE) chooses for the
 * communicator's shape and the bytes of the type signature (any datatype:
 * layouts other than plain contiguous elements are packed), or MPI_Bcast
 * itself with the caller's arguments when no rule applies, above 2^31 - 1
 * bytes, on intercommunicators and on communicators colltune could not set
 * up on every rank. colltune_swap exchanges
 * equal-size buffers between partners (pairing 0: neighbours 0-1, 2-3, ...;
 * 1: halves, i with i + p/2; an odd rank out receives nothing).
 *
 * Environment: COLLTUNE_TABLE (the table), COLLTUNE_BCAST / COLLTUNE_SWAP
 * (force an algorithm, e.g. pipeline:segment=65536@nonblocking),
 * COLLTUNE_STRICT=1 (a bad table is an error, not a warning),
 * COLLTUNE_TRACE=1 (log each call's rule and algorithm; =all: every rank).
 *
 * Every function returns MPI_SUCCESS or an MPI error code.
 */
#ifndef COLLTUNE_H
#define COLLTUNE_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLTUNE_PAIR_NEIGHBORS 0
#define COLLTUNE_PAIR_HALVES 1

int colltune_init(void);
int colltune_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int colltune_swap(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  int pairing, MPI_Comm comm);
int colltune_finalize(void);

/* Describes the choice colltune makes for a call of `bytes` on `comm`
 * (writes at most `len` bytes, NUL-terminated); collective over `comm` the
 * first time a communicator is seen. */
int colltune_explain(MPI_Comm comm, long long bytes, char *out, int len);

#ifdef __cplusplus
}
#endif
#endif
