//! Binomial-tree broadcast (MPICH's `bcast_intra_binomial`).
//!
//! ```text
//!            0
//!        /   |   \
//!       4    2    1        relative ranks, p = 8
//!      / \   |
//!     6   5  3
//!     |
//!     7
//! ```
//! Rank v receives from v with its lowest set bit cleared and sends to v + 2^j
//! for every 2^j below that bit, largest subtree first.
//! Cost: ceil(log2 p)(alpha + n beta) unsegmented; with s segments of size
//! n/s, about (ceil(log2 p) + s - 1)(alpha + (n/s) beta) when the dataflow
//! execution pipelines them.
//!
//! Parameters: `segment` (bytes, 0 = whole message).

use crate::builder::Builder;
use crate::error::SpecError;
use crate::shape::Shape;
use crate::spec::AlgoSpec;
use crate::topo::knomial_tree;

use super::tree::tree_bcast;

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let node = knomial_tree(sh.vrank(), sh.size, 2);
    tree_bcast(b, sh, &node, 0, sh.bytes, spec.int("segment")?);
    Ok(())
}
