//! # colltune-core
//!
//! Everything of colltune that needs no MPI: the raw-sample schema
//! ([`record`]), statistics ([`stats`]), latency/bandwidth fits ([`fit`]),
//! IMB-style reports ([`report`]), decision tables ([`table`]: schema,
//! build, validate, diff), the discrete-event simulator ([`sim`]) and its
//! calibration fit ([`calibrate`]), the
//! tuning search ([`tune`]) and exports to the MPI libraries' own formats
//! ([`export`]). What is measured and how ([`method`]) is described here too,
//! so the MPI layer and the simulator agree on it.
//!
//! [`tune`], [`fit`] and [`calibrate`] (what optimises, through argmin) are
//! the default feature `tuner`; the runtime libraries build without it.
//!
//! This crate has no `unsafe` code and does not link MPI: `simulate`,
//! `tune --model`, `show`, `validate`, `diff`, `export` and `plot` build on a
//! machine without an MPI library.

#![forbid(unsafe_code)]

pub use colltune_algorithms as algorithms;

pub mod libraries;
pub mod measure;
pub mod model;
pub mod progress;
pub mod tables;
#[cfg(feature = "tuner")]
pub mod tune;
pub mod units;

// Every module also by its name alone (`colltune_core::record`), as the
// crates above and the tests name them.
pub use libraries::{library, mpich, ompi};
#[cfg(feature = "tuner")]
pub use measure::fit;
pub use measure::{figure, import, method, noise, pattern, record, report, stats};
#[cfg(feature = "tuner")]
pub use model::calibrate;
pub use model::{compare, placed, placement, sim, simulate};
#[cfg(feature = "tuner")]
pub use model::{levels, predict};
pub use tables::{agreement, decide, deploy, export, table};
#[cfg(feature = "tuner")]
pub use tune::noise_bench;
