//! Chain broadcast with fanout (Open MPI's `bcast_intra_chain`).
//!
//! ```text
//!            0                fanout 2, p = 7 (relative ranks)
//!          /   \
//!         1     4
//!         |     |
//!         2     5
//!         |     |
//!         3     6
//! ```
//! The root feeds `fanout` chains that split the other ranks into nearly
//! equal runs; every rank forwards each segment to the next rank of its run.
//! Cost, pipelined: (p/f + s - 1)(alpha + (n/s) beta) plus the root's f-way
//! send; one relay per rank, so cheap in context switches.
//!
//! Parameters: `fanout` (1..=64), `segment` (bytes, 0 = whole message).

use crate::builder::Builder;
use crate::error::SpecError;
use crate::shape::Shape;
use crate::spec::AlgoSpec;
use crate::topo::chain_tree;

use super::tree::tree_bcast;

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let fanout = spec.int("fanout")? as usize;
    let node = chain_tree(sh.vrank(), sh.size, fanout);
    tree_bcast(b, sh, &node, 0, sh.bytes, spec.int("segment")?);
    Ok(())
}
