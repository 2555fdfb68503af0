//! # colltune
//!
//! Tune and select MPI collective algorithms. Algorithms are pure schedules
//! ([`algorithms`], an MPI-free crate); [`transport`] executes them on MPI;
//! [`verify`] checks every byte of every algorithm on a live communicator.

pub use colltune_algorithms as algorithms;

pub mod bench;
pub mod calibrate;
pub mod capi;
pub mod cli;
pub mod emu;
pub mod export;
pub mod fit;
pub mod ompi;
pub mod pattern;
pub mod plot;
pub mod progress;
pub mod record;
pub mod select;
pub mod sim;
pub mod stats;
pub mod table;
pub mod transport;
pub mod tune;
pub mod verify;
