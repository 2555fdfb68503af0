//! Swap with one `MPI_Sendrecv` per rank.
//!
//! ```text
//!   both:  MPI_Sendrecv(out -> partner, in <- partner)
//! ```
//! Cost: alpha + n beta when the two directions overlap fully (full-duplex
//! links), 2(alpha + n beta) at worst.
//!
//! Parameters: `pairing`.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::shape::Shape;
use crate::spec::AlgoSpec;

use super::pair;

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let p = pair(sh, spec)?;
    if let Some(q) = p.partner {
        b.exchange(q, p.out, q, p.inn);
    }
    Ok(())
}
