//! Transports execute schedules: on MPI ([`mpi`]); the network-model
//! simulator executes the same schedules.

pub mod mpi;
