//! Split-binary-tree broadcast (Open MPI's `bcast_intra_split_bintree`).
//!
//! ```text
//!              0                 first half A goes down the left subtree,
//!          A /   \ B             second half B down the right one,
//!           1     2              then left and right ranks pair up and
//!          / \   / \             swap halves: 1<->2, 3<->5, 4<->6.
//!         3   4 5   6
//! ```
//! Each half travels log2(p) levels, so the tree phase costs about
//! log2(p)(alpha + (n/2) beta) and the swap alpha + (n/2) beta: half the
//! bandwidth term of a binary tree. Heap-ordered subtrees are unequal for
//! most p; a rank left without a partner gets its missing half from a rank of
//! the other subtree after that rank's own swap.
//!
//! Parameters: `segment` (bytes, 0 = whole half), for the tree phase.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::{Post, Region};
use crate::shape::Shape;
use crate::spec::AlgoSpec;
use crate::topo::binary_tree;

use super::tree::{segments, tree_bcast};

/// The heap subtree rooted at `top` among relative ranks `0..size`, without
/// listing it: level `d` below `top` is the contiguous block starting at
/// `top * 2^d + 2^d - 1`, and every level's ranks exceed the level above's,
/// so ascending order is level order. Queries cost O(log size).
struct Subtree {
    levels: Vec<(usize, usize)>, // [lo, hi) per level, clipped to size
}

impl Subtree {
    fn new(top: usize, size: usize) -> Self {
        let mut levels = Vec::new();
        let mut width = 1usize;
        loop {
            let lo = top * width + width - 1;
            if lo >= size {
                break;
            }
            levels.push((lo, (lo + width).min(size)));
            width *= 2;
        }
        Subtree { levels }
    }
    fn len(&self) -> usize {
        self.levels.iter().map(|(lo, hi)| hi - lo).sum()
    }
    fn contains(&self, v: usize) -> bool {
        self.levels.iter().any(|&(lo, hi)| (lo..hi).contains(&v))
    }
    /// Position of member `v` in ascending order.
    fn index(&self, v: usize) -> usize {
        self.levels
            .iter()
            .map(|&(lo, hi)| v.clamp(lo, hi) - lo)
            .sum()
    }
    /// The `k`-th member in ascending order.
    fn nth(&self, mut k: usize) -> usize {
        for &(lo, hi) in &self.levels {
            if k < hi - lo {
                return lo + k;
            }
            k -= hi - lo;
        }
        unreachable!("index within the subtree")
    }
}

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let segment = spec.int("segment")?;
    let (p, n, vr) = (sh.size, sh.bytes, sh.vrank());
    if p == 2 {
        tree_bcast(b, sh, &binary_tree(vr, p), 0, n, segment);
        return Ok(());
    }
    let h = n.div_ceil(2);
    let halves = [(0, h), (h, n - h)]; // (offset, len) of A and B
    let sides = [Subtree::new(1, p), Subtree::new(2, p)];

    if vr == 0 {
        // Interleave the two halves' segments so both subtrees start at once.
        let mut segs: Vec<_> = halves
            .iter()
            .map(|&(o, l)| segments(o, l, segment).collect::<Vec<_>>())
            .collect();
        let rounds = segs[0].len().max(segs[1].len());
        for k in 0..rounds {
            let mut sent = false;
            for (child, s) in segs.iter_mut().enumerate() {
                if let Some(&(o, l)) = s.get(k) {
                    b.send(sh.real(child + 1), Region::data(o, l), Post::Immediate);
                    sent = true;
                }
            }
            if sent {
                b.wait_all();
            }
        }
        return Ok(());
    }

    let side = usize::from(!sides[0].contains(vr));
    let other = 1 - side;
    let (mo, ml) = halves[side];
    let (to, tl) = halves[other];
    tree_bcast(b, sh, &binary_tree(vr, p), mo, ml, segment);

    let (mine, theirs) = (&sides[side], &sides[other]);
    let me = mine.index(vr);
    let pairs = mine.len().min(theirs.len());
    if me < pairs {
        let partner = sh.real(theirs.nth(me));
        b.exchange(partner, Region::data(mo, ml), partner, Region::data(to, tl));
        // Ranks of the other side left without a partner get our half from us.
        let mut j = pairs + me;
        while j < theirs.len() {
            b.send(sh.real(theirs.nth(j)), Region::data(mo, ml), Post::Blocking);
            j += pairs;
        }
    } else {
        let giver = theirs.nth((me - pairs) % pairs);
        b.recv(sh.real(giver), Region::data(to, tl), Post::Blocking);
    }
    // Zero-length halves (n = 1) send nothing: both sides skip the same ops.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Subtree;

    #[test]
    fn subtree_queries_match_a_listing() {
        for size in 3..200 {
            for top in [1, 2] {
                let mut list = Vec::new();
                let mut level = vec![top];
                while !level.is_empty() {
                    list.extend(&level);
                    level = level
                        .iter()
                        .flat_map(|&v| [2 * v + 1, 2 * v + 2])
                        .filter(|&c| c < size)
                        .collect();
                }
                list.sort_unstable();
                let s = Subtree::new(top, size);
                assert_eq!(s.len(), list.len());
                for (k, &v) in list.iter().enumerate() {
                    assert!(s.contains(v));
                    assert_eq!(s.index(v), k);
                    assert_eq!(s.nth(k), v);
                }
            }
        }
    }
}
