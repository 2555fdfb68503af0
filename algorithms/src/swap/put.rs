//! One-sided swap: each rank puts its buffer into its partner's window, then
//! copies what landed in its own window into its receive buffer.
//!
//! ```text
//!   put_fence:  fence; MPI_Put(out -> partner's window); fence; copy
//!   put_pscw:   post(partner); start(partner); MPI_Put; complete; wait; copy
//! ```
//! Cost: alpha + n beta for the put, plus synchronisation (a fence is
//! collective over the communicator; post-start-complete-wait only involves
//! the partner), plus a local copy of n bytes. The window is allocated once
//! per communicator by the transport and grown when a larger swap needs it.
//!
//! Parameters: `pairing`.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::{Buf, Region};
use crate::shape::Shape;
use crate::spec::AlgoSpec;

use super::pair;

pub fn build_fence(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let p = pair(sh, spec)?;
    b.need(Buf::Window, sh.bytes);
    // The fence is collective: the odd rank out takes part in it too.
    b.fence();
    if let Some(q) = p.partner {
        b.put(q, p.out, 0);
    }
    b.fence();
    if p.partner.is_some() {
        b.copy(Region::new(Buf::Window, 0, sh.bytes), p.inn);
    }
    Ok(())
}

pub fn build_pscw(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let p = pair(sh, spec)?;
    b.need(Buf::Window, sh.bytes);
    let Some(q) = p.partner else { return Ok(()) };
    b.expose_to(&[q]);
    b.access_to(&[q]);
    b.put(q, p.out, 0);
    b.end_access();
    b.end_exposure();
    b.copy(Region::new(Buf::Window, 0, sh.bytes), p.inn);
    Ok(())
}
