//! # colltune-core
//!
//! Everything of colltune that needs no MPI, grouped by what it knows, and
//! named by its folder (`colltune_core::measure::record`):
//!
//! - [`measure`]: the raw-sample schema (`record`), statistics (`stats`),
//!   latency/bandwidth fits (`fit`), IMB-style reports (`report`), what is
//!   measured and how (`method`: the MPI layer and the simulator agree on
//!   it), imports of other tools' output;
//! - [`tables`]: decision tables (`table`: schema, build, validate, diff),
//!   the runtime's decision (`decide`) and exports to the MPI libraries'
//!   own formats (`export`);
//! - [`model`]: the discrete-event simulator (`sim`), its calibration fit
//!   (`calibrate`) and the predictions of the libraries' own algorithms;
//! - [`libraries`]: the MPI libraries' own algorithms (Open MPI, MPICH);
//! - [`tune`]: the tuning search.
//!
//! [`tune`], `measure::fit` and `model::calibrate` (what optimises, through
//! argmin) are the default feature `tuner`; the runtime libraries build
//! without it.
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
