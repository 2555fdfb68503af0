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
//! This crate has no `unsafe` code and does not link MPI: `simulate`,
//! `tune --model`, `show`, `validate`, `diff`, `export` and `plot` build on a
//! machine without an MPI library.

#![forbid(unsafe_code)]

pub use colltune_algorithms as algorithms;

pub mod agreement;
pub mod calibrate;
pub mod compare;
pub mod decide;
pub mod deploy;
pub mod export;
pub mod figure;
pub mod fit;
pub mod library;
pub mod method;
pub mod mpich;
pub mod ompi;
pub mod pattern;
pub mod progress;
pub mod record;
pub mod report;
pub mod sim;
pub mod simulate;
pub mod stats;
pub mod table;
pub mod tune;
pub mod units;
