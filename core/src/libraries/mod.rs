//! The MPI libraries' own broadcast algorithms and decisions: Open MPI's
//! coll/tuned, coll/adapt and coll/han (`ompi`), MPICH's (`mpich`), and a
//! table's choice of one of them (`library`).

pub mod library;
pub mod mpich;
pub mod mpich_ibcast;
pub mod ompi;
