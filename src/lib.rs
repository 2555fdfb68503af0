//! colltune: tune and select MPI collective algorithms.
pub use colltune_algorithms as algorithms;
