//! Pipeline broadcast: one chain through every rank, segmented (Open MPI's
//! `bcast_intra_pipeline`).
//!
//! ```text
//!   0 -> 1 -> 2 -> 3 -> ... -> p-1      (relative ranks)
//! ```
//! Every rank forwards segment i while segment i+1 is on its way in.
//! Cost: (p - 1 + s - 1)(alpha + (n/s) beta): bandwidth-optimal for long
//! messages, latency-poor for short ones.
//!
//! Parameters: `segment` (bytes, 0 = whole message).

use crate::builder::Builder;
use crate::error::SpecError;
use crate::shape::Shape;
use crate::spec::AlgoSpec;
use crate::topo::chain_tree;

use super::tree::tree_bcast;

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let node = chain_tree(sh.vrank(), sh.size, 1);
    tree_bcast(b, sh, &node, 0, sh.bytes, spec.int("segment")?);
    Ok(())
}
