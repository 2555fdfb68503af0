//! Ready-send swap: each rank pre-posts its receive, tells its partner so
//! with a zero-byte go-ahead, and sends in ready mode once the partner's
//! go-ahead has arrived (so the partner's receive is known to be posted).
//!
//! ```text
//!   MPI_Irecv(in)  ->  go-ahead <-> go-ahead (zero bytes)  ->  MPI_Rsend(out)  ->  MPI_Wait
//! ```
//! Cost: 2 alpha (go-ahead) + alpha + n beta; ready mode lets the library skip
//! its rendezvous handshake for large messages.
//!
//! Parameters: `pairing`.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::{Post, Region, SendMode, Tag};
use crate::shape::Shape;
use crate::spec::AlgoSpec;

use super::pair;

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let p = pair(sh, spec)?;
    let Some(q) = p.partner else { return Ok(()) };
    let none = Region::data(0, 0);
    b.recv(q, p.inn, Post::Immediate);
    b.send_tagged(
        q,
        none,
        Tag::Control,
        SendMode::Standard,
        Post::ExchangeWithNext,
    );
    let go = b.recv_tagged(q, none, Tag::Control, Post::Blocking);
    let data = b.send_tagged(q, p.out, Tag::Data, SendMode::Ready, Post::Blocking);
    b.depend(data, go);
    b.wait_all();
    Ok(())
}
