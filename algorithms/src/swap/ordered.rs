//! Ordered blocking swap: the lower rank sends then receives, the higher
//! receives then sends.
//!
//! ```text
//!   lower:  MPI_Send ----> MPI_Recv
//!   higher: MPI_Recv <---- MPI_Send
//! ```
//! Cost: 2(alpha + n beta): the two directions never overlap.
//!
//! Parameters: `pairing`.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::Post;
use crate::shape::Shape;
use crate::spec::AlgoSpec;

use super::pair;

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let p = pair(sh, spec)?;
    let Some(q) = p.partner else { return Ok(()) };
    if sh.rank < q {
        b.send(q, p.out, Post::Blocking);
        b.recv(q, p.inn, Post::Blocking);
    } else {
        b.recv(q, p.inn, Post::Blocking);
        b.send(q, p.out, Post::Blocking);
    }
    Ok(())
}
