//! Forcing one of the MPI library's own broadcast algorithms, written once
//! for the runtime (`select::library`, a table's `ompi_tuned`,
//! `ompi_adapt` and `mpich` rules) and the benchmark (`bench`, the
//! library's algorithms as baselines):
//!
//! - [`tuned`]: Open MPI coll/tuned's `coll_tuned_bcast_algorithm` and
//!   `_segmentsize`, read when a communicator is made: written through
//!   `MPI_T` around the creation of a communicator, and written back;
//! - [`component`]: an Open MPI component picked by priority when a
//!   communicator is made (coll/adapt, coll/han): the priority raised
//!   around the creation, the per-call variables written around points;
//! - [`adapt`]: what this library's coll/adapt offers, and its component;
//! - [`han`]: what Open MPI 5.0's coll/han offers across nodes, and its
//!   component;
//! - [`mpich`]: what `MPIR_CVAR_BCAST_INTRA_ALGORITHM` offers, written
//!   around calls;
//! - [`nonblocking`]: the nonblocking and persistent broadcasts' variables
//!   (coll/libnbc's, MPICH's `MPIR_CVAR_IBCAST_INTRA_ALGORITHM`), written
//!   around `MPI_Ibcast` and `MPI_Bcast_init` under a lock;
//! - [`storage`]: such a variable's own int in the library, found by its
//!   symbol and proven through `MPI_T`, written with plain stores.
//!
//! Nothing here creates a communicator by itself: the caller passes the
//! creation (colltune's own private communicators copy no attributes:
//! `transport::mpi::control::CommHandle::private_of`).

pub mod adapt;
pub mod component;
pub mod han;
pub mod mpich;
pub mod nonblocking;
pub mod storage;
pub mod tuned;

/// The MPI library's name and version, short: `Open MPI v4.1.4`,
/// `MPICH 4.0.2`, `Intel(R) MPI Library 2021.13` (see [`crate::abi`]).
pub fn library_short() -> String {
    crate::abi::runtime().name.clone()
}
