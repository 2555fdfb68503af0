//! k-nomial-tree broadcast (Open MPI's `bcast_intra_knomial`).
//!
//! ```text
//!                0                     radix 3, p = 9 (relative ranks)
//!        /    /     \    \
//!       3    6       1    2
//!      / \  / \
//!     4   5 7   8
//! ```
//! A rank's parent clears its lowest non-zero base-k digit; it sends to every
//! rank that sets one lower digit. ceil(log_k p) rounds of up to k-1 sends.
//! Cost: ceil(log_k p)(k-1)(alpha + n beta) if a rank's sends serialise, and
//! ceil(log_k p)(alpha + n beta) when they overlap; shallower than binomial,
//! so fewer relays (context switches on an oversubscribed node).
//!
//! Parameters: `radix` (k, 2..=64), `segment` (bytes, 0 = whole message).

use crate::builder::Builder;
use crate::error::SpecError;
use crate::shape::Shape;
use crate::spec::AlgoSpec;
use crate::topo::knomial_tree;

use super::tree::tree_bcast;

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let radix = spec.int("radix")? as usize;
    let node = knomial_tree(sh.vrank(), sh.size, radix);
    tree_bcast(b, sh, &node, 0, sh.bytes, spec.int("segment")?);
    Ok(())
}
