//! Binary-tree broadcast (Open MPI's `bcast_intra_bintree`).
//!
//! ```text
//!          0
//!       /     \
//!      1       2          relative ranks in heap order:
//!     / \     / \         children of v are 2v+1 and 2v+2
//!    3   4   5   6
//! ```
//! Cost: about log2(p) levels of 2(alpha + n beta) unsegmented; segmented and
//! pipelined, (2 log2 p + s - 1)(alpha + (n/s) beta).
//!
//! Parameters: `segment` (bytes, 0 = whole message).

use crate::builder::Builder;
use crate::error::SpecError;
use crate::shape::Shape;
use crate::spec::AlgoSpec;
use crate::topo::binary_tree;

use super::tree::tree_bcast;

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let node = binary_tree(sh.vrank(), sh.size);
    tree_bcast(b, sh, &node, 0, sh.bytes, spec.int("segment")?);
    Ok(())
}
