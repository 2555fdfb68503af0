//! Linear broadcast: the root sends the whole message to every other rank.
//!
//! ```text
//!        root
//!   /  /  |  \  \
//!  1  2   3   4  5
//! ```
//! Cost (alpha-beta): (p-1)(alpha + n beta) at the root, which starts every
//! send at once and waits for all (Open MPI's `basic_linear`). Best for small
//! p or when relays are expensive (oversubscribed nodes, where every relay is
//! a context switch).
//!
//! Parameters: none.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::{Post, Region};
use crate::shape::Shape;
use crate::spec::AlgoSpec;

pub fn build(sh: &Shape, _spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let all = Region::data(0, sh.bytes);
    if sh.rank == sh.root {
        for vr in 1..sh.size {
            b.send(sh.real(vr), all, Post::Immediate);
        }
        b.wait_all();
    } else {
        b.recv(sh.root, all, Post::Blocking);
    }
    Ok(())
}
