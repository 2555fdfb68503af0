//! The communicator and call an algorithm builds a schedule for, and the
//! one way an algorithm builds another inside its own schedule.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::spec::{AlgoSpec, Collective};
use crate::topo::NodeMap;

/// The communicator and call an algorithm builds a schedule for.
#[derive(Clone, Copy, Debug)]
pub struct Shape<'a> {
    /// This rank.
    pub rank: usize,
    /// Ranks in the communicator.
    pub size: usize,
    /// Root of a broadcast (ignored by swaps).
    pub root: usize,
    /// Bytes of the message (for a swap: of each partner's buffer).
    pub bytes: u64,
    pub nodes: &'a NodeMap,
}

impl Shape<'_> {
    /// This rank relative to the root.
    pub fn vrank(&self) -> usize {
        (self.rank + self.size - self.root) % self.size
    }
    /// The communicator rank of relative rank `vr`.
    pub fn real(&self, vr: usize) -> usize {
        (vr + self.root) % self.size
    }
}

/// Appends the ops of another algorithm's resolved spec to a builder: how
/// a composed algorithm (hierarchical) builds its phases. The registry
/// hands its own `build_into` to the algorithms that compose, so no
/// algorithm names the registry that lists it.
pub type Compose = fn(Collective, &AlgoSpec, &Shape, &mut Builder) -> Result<(), SpecError>;
