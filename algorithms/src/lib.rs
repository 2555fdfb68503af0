//! # colltune-algorithms
//!
//! MPI collective algorithms as pure schedule generators, with no MPI in
//! sight. Given (rank, communicator size, root, message bytes, parameters,
//! rank-to-node map), an algorithm returns this rank's [`Schedule`]: typed
//! send / receive / copy / put steps over byte ranges, with their
//! dependencies. The `colltune` crate executes schedules on MPI (blocking and
//! nonblocking executions) and on a network model; [`check`] executes them
//! on an exact symbolic model to prove each algorithm correct and free of
//! deadlock for any rank count.
//!
//! The [`registry`] lists every algorithm by name with its parameters and
//! restrictions; everything else finds algorithms there.

#![forbid(unsafe_code)]

pub mod bcast;
pub mod builder;
pub mod channel;
pub mod check;
pub mod error;
pub mod plan;
pub mod registry;
pub mod schedule;
pub mod shape;
pub mod spec;
pub mod swap;
pub mod topo;
pub mod variant;

pub use builder::Builder;
pub use channel::{number_channels, Channel, ChannelNumbering, Direction};
pub use error::{BuildError, ShapeError, SpecError};
pub use plan::Plan;
pub use registry::{
    algorithms, build, build_all, build_resolved, lookup, resolve, variants, AlgorithmInfo,
    ParamInfo, ParamKind, ParamTuning, Restriction, Shape, Tuning, REGISTRY,
};
pub use schedule::{
    Buf, Bytes, Op, OpKind, Post, Rank, Region, Ring, Schedule, SendMode, Tag, SHARED_FLAGS,
};
pub use spec::{parse_size, AlgoSpec, Collective, Execution, ParamValue};
pub use topo::NodeMap;
pub use variant::{label, Variant};
