//! Nonblocking swaps: which half of the exchange is started without waiting.
//!
//! ```text
//!   isend_recv:   MPI_Isend; MPI_Recv;  MPI_Wait
//!   irecv_send:   MPI_Irecv; MPI_Send;  MPI_Wait
//!   isend_irecv:  MPI_Irecv; MPI_Isend; MPI_Waitall
//! ```
//! Cost: alpha + n beta when both directions overlap. They differ in what can
//! overlap with computation between posting and waiting (the blocking
//! execution's split point is the first blocking call): nothing for
//! `isend_recv` past the receive, the receive for `irecv_send`, both for
//! `isend_irecv`.
//!
//! Parameters: `pairing`.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::Post;
use crate::shape::Shape;
use crate::spec::AlgoSpec;

use super::pair;

pub fn build_isend_recv(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let p = pair(sh, spec)?;
    if let Some(q) = p.partner {
        b.send(q, p.out, Post::Immediate);
        b.recv(q, p.inn, Post::Blocking);
        b.wait_all();
    }
    Ok(())
}

pub fn build_irecv_send(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let p = pair(sh, spec)?;
    if let Some(q) = p.partner {
        b.recv(q, p.inn, Post::Immediate);
        b.send(q, p.out, Post::Blocking);
        b.wait_all();
    }
    Ok(())
}

pub fn build_isend_irecv(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let p = pair(sh, spec)?;
    if let Some(q) = p.partner {
        b.recv(q, p.inn, Post::Immediate);
        b.send(q, p.out, Post::Immediate);
        b.wait_all();
    }
    Ok(())
}
