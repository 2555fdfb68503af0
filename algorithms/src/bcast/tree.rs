//! The tree engine shared by binomial, k-nomial, binary, chain and pipeline
//! (Open MPI's `bcast_intra_generic` idea: one engine, many tree shapes).
//!
//! For each segment a rank receives it from its parent, then starts a send to
//! every child and waits for them before the next segment (blocking
//! execution). The dataflow execution instead posts every receive at once and
//! forwards each segment the moment it lands, so segments pipeline down the
//! tree.

use crate::builder::Builder;
use crate::schedule::{Post, Region};
use crate::shape::Shape;
use crate::topo::TreeNode;

/// Splits `[offset, offset + len)` into segments of `segment` bytes (0: one
/// segment). An empty range has no segments.
pub fn segments(offset: u64, len: u64, segment: u64) -> impl Iterator<Item = (u64, u64)> {
    let step = if segment == 0 { len.max(1) } else { segment };
    (0..len.div_ceil(step)).map(move |k| {
        let o = offset + k * step;
        (o, step.min(offset + len - o))
    })
}

/// Broadcasts `[offset, offset + len)` of the data buffer down `node`'s tree
/// (relative ranks of `sh`).
pub fn tree_bcast(
    b: &mut Builder,
    sh: &Shape,
    node: &TreeNode,
    offset: u64,
    len: u64,
    segment: u64,
) {
    for (o, l) in segments(offset, len, segment) {
        let seg = Region::data(o, l);
        if let Some(p) = node.parent {
            b.recv(sh.real(p), seg, Post::Blocking);
        }
        for &c in &node.children {
            b.send(sh.real(c), seg, Post::Immediate);
        }
        if !node.children.is_empty() {
            b.wait_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::segments;

    #[test]
    fn segments_cover_exactly() {
        assert_eq!(segments(0, 0, 10).count(), 0);
        assert_eq!(segments(5, 7, 0).collect::<Vec<_>>(), vec![(5, 7)]);
        assert_eq!(
            segments(0, 25, 10).collect::<Vec<_>>(),
            vec![(0, 10), (10, 10), (20, 5)]
        );
        assert_eq!(segments(3, 20, 10).last(), Some((13, 10)));
    }
}
