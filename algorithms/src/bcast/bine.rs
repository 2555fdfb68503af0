//! Bine trees (De Sensi, Pasqualoni et al., "Bine Trees: Enhancing
//! Collective Operations by Optimizing Communication Locality", SC'25):
//! `bine`, the latency tree, and `bine_bdw`, scatter then allgather along
//! the same tree.
//!
//! ```text
//!  offset from the root:  -2  -1   0   1   2   3   4   5     p = 8
//!  step 0 (distance 3):            0 --------> 3
//!  step 1 (distance 1):       -1 <-0           3-> 4
//!  step 2 (distance 1):   -2 <-1   0-> 1   2 <-3   4-> 5
//! ```
//! The idea: a binomial tree sends at distances p/2, p/4, ..., 1 from the
//! root's side of the ring; Bine numbers the ranks in negabinary (base -2)
//! and a rank's partner at step j differs from it in the j+1 lowest
//! negabinary digits, so the distances are |1 - 2 + 4 - ...| = 3, 1, 1 for
//! p = 8 (5, 3, 1, 1 for 16; about p/3 at first), and subtrees are ranks
//! close to each other: fewer messages cross far parts of the machine.
//! Seen on the ring of offsets from the root, the s-digit negabinary
//! numbers are the 2^s consecutive offsets `[lo, lo + 2^s)` (`[-2, 5]` for
//! s = 3); each step halves every interval, and the rank holding the data
//! sends to its mirror image across the interval's centre (flipping the low
//! digits is that reflection). Every subtree is an interval of offsets.
//!
//! **Any p (our extension; the authors' code takes powers of two).** With
//! s = ceil(log2 p), the p ranks take the window `[a, a + p)` of the
//! 2^s-offset range, a chosen so that the root keeps its relative place
//! (`a = -floor(-lo * p / 2^s)`). The intervals and steps are those of the
//! 2^s tree; an interval's other half may stick out of the window: its
//! part inside is still an interval, and the holder sends to the mirror
//! image clamped into that part (nothing when the part is empty). By
//! induction every rank of an interval's window part receives exactly once,
//! within s steps; a power of two is Bine's own tree. Any root: offsets are
//! taken from it.
//!
//! **bine_bdw.** Blocks are numbered by offset (`offset - a`), the block
//! remapping that makes every subtree's blocks contiguous: the scatter
//! sends each child its subtree's interval of blocks down the Bine tree,
//! then the allgather climbs the steps back, each rank swapping what its
//! half of the interval holds with its mirror image in the other half (the
//! tree's own edges one way only: the parent kept what it scattered). (The
//! authors' code pairs every rank at the fixed distance |rho_j| instead,
//! with blocks remapped to match; mirror pairs take the same steps and
//! bytes, the tree's own edges are the same pairs, and the blocks of every
//! pair's halves stay plain intervals of the buffer.) Where
//! the window cuts an interval's halves unequally, the ranks of the larger
//! part whose mirror image is cut off get the other part from those that
//! have it, doubling the holders each round (c, 2c, 4c, ... ranks).
//!
//! Cost: `bine` s(alpha + n beta), or (s + k - 1)(alpha + (n/k) beta) with
//! k segments pipelined; `bine_bdw` 2s alpha + 2((p-1)/p) n beta for p a
//! power of two (log2 of the cut parts' ratio more rounds at cut steps
//! otherwise), like scatter-allgather with the messages kept short.
//!
//! Parameters: `bine`: `segment` (bytes, 0 = whole message); `bine_bdw`:
//! none.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::{Post, Region};
use crate::shape::Shape;
use crate::spec::AlgoSpec;
use crate::topo::TreeNode;

use super::scatter_allgather::Chunks;
use super::tree::tree_bcast;

/// An inclusive interval of offsets.
pub type Span = (i64, i64);

fn contains(s: Span, x: i64) -> bool {
    s.0 <= x && x <= s.1
}

/// The Bine tree over `p` ranks: offsets from the root, the 2^s range and
/// the window of the p ranks in it.
#[derive(Clone, Copy, Debug)]
pub struct Bine {
    p: i64,
    s: u32,
    /// First offset of the 2^s range (minus the odd powers of two below 2^s).
    lo: i64,
    /// First offset of the window.
    a: i64,
}

/// One step of the tree, seen from one rank: the interval `[l, r]` of the
/// 2^s tree holding that rank (halves `[l, mid)` and `[mid, r]`), its
/// holder `h` and the rank `q` that `h` sends to (None: the other half is
/// outside the window).
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub l: i64,
    pub mid: i64,
    pub r: i64,
    pub h: i64,
    pub q: Option<i64>,
}

/// One move of a cut allgather step's fill ([`Step::fill`]): in `round`
/// (1: the first after the mirror exchange) the rank receives the other
/// part's blocks from offset `peer`, or sends them to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    From { round: u32, peer: i64 },
    To { round: u32, peer: i64 },
}

impl Step {
    pub fn halves(&self) -> [Span; 2] {
        [(self.l, self.mid - 1), (self.mid, self.r)]
    }
    /// The half without the holder.
    pub fn other(&self) -> Span {
        self.halves()[usize::from(self.h < self.mid)]
    }

    /// Where the window cuts this step's halves unequally, how offset `d`
    /// of the larger part `own` (both parts clipped to the window) takes
    /// part in getting the `other` part's blocks to the ranks whose mirror
    /// image is cut off: counted from the halves' boundary, ranks t < c
    /// (c = the other part's size) got them in the exchange, and each
    /// round every holder t sends them to t + w (w = c, 2c, 4c, ...), so
    /// rank t >= c receives once, from t - w for the largest w <= t, then
    /// sends at the doublings after. The holder `h` (which kept every block
    /// since the scatter) is never sent to. Nothing where `own` is not the
    /// larger part.
    pub fn fill(&self, d: i64, own: Span, other: Span) -> impl Iterator<Item = Fill> {
        let (c, size) = (other.1 - other.0 + 1, own.1 - own.0 + 1);
        let (mid, h) = (self.mid, self.h);
        let low = d < mid;
        let at = move |t: i64| if low { mid - 1 - t } else { mid + t };
        let t = if low { mid - 1 - d } else { d - mid };
        let (mut w, mut round) = (c, 1);
        let mut from = None;
        if size > c && t >= c {
            while 2 * w <= t {
                w *= 2;
                round += 1;
            }
            from = (d != h).then(|| Fill::From {
                round,
                peer: at(t - w),
            });
            w *= 2;
            round += 1;
        }
        let sends = std::iter::successors(Some((w, round)), |&(w, r)| Some((2 * w, r + 1)))
            .take_while(move |&(w, _)| w < size)
            .filter(move |&(w, _)| t + w < size && at(t + w) != h)
            .map(move |(w, round)| Fill::To {
                round,
                peer: at(t + w),
            });
        from.into_iter().chain(sends)
    }
}

impl Bine {
    pub fn new(p: usize) -> Self {
        let s = p.next_power_of_two().trailing_zeros();
        let o: i64 = (1..s).step_by(2).map(|i| 1i64 << i).sum();
        let a = (i128::from(o) * p as i128 / (1i128 << s)) as i64;
        Bine {
            p: p as i64,
            s,
            lo: -o,
            a: -a,
        }
    }

    /// The part of interval `s` inside the window, if any.
    pub fn clip(&self, s: Span) -> Option<Span> {
        let (x0, x1) = (s.0.max(self.a), s.1.min(self.a + self.p - 1));
        (x0 <= x1).then_some((x0, x1))
    }

    /// Offset `d`'s half of step `st` and the other half, each clipped to
    /// the window; None where either has no rank in it.
    pub fn parts(&self, st: &Step, d: i64) -> Option<(Span, Span)> {
        let [left, right] = st.halves();
        let (own, other) = if d < st.mid {
            (left, right)
        } else {
            (right, left)
        };
        Some((self.clip(own)?, self.clip(other)?))
    }

    /// The offset of relative rank `vr`.
    pub fn offset(&self, vr: usize) -> i64 {
        let v = vr as i64;
        if v < self.a + self.p {
            v
        } else {
            v - self.p
        }
    }

    /// The relative rank at offset `d`.
    pub fn vrank(&self, d: i64) -> usize {
        d.rem_euclid(self.p) as usize
    }

    /// The block (0..p) of offset `d`.
    pub fn block(&self, d: i64) -> usize {
        (d - self.a) as usize
    }

    /// The steps seen from offset `d`, first step first: O(log p).
    pub fn steps(&self, d: i64) -> Vec<Step> {
        let mut out = Vec::with_capacity(self.s as usize);
        let (mut l, mut h) = (self.lo, 0i64);
        for j in (0..self.s).rev() {
            let half = 1i64 << j;
            let (mid, r) = (l + half, l + 2 * half - 1);
            let mut st = Step {
                l,
                mid,
                r,
                h,
                q: None,
            };
            st.q = self
                .clip(st.other())
                .map(|(x0, x1)| (l + r - h).clamp(x0, x1));
            out.push(st);
            if contains(st.other(), d) {
                h =
                    st.q.expect("an offset of the window is in its clipped half");
            }
            if d >= mid {
                l = mid;
            }
        }
        out
    }

    /// Offset `d`'s parent and children (offsets), children in send order.
    pub(crate) fn tree(&self, d: i64) -> (Option<i64>, Vec<i64>) {
        let mut parent = None;
        let mut children = Vec::new();
        for st in self.steps(d) {
            match st.q {
                Some(q) if st.h == d => children.push(q),
                Some(q) if q == d => parent = Some(st.h),
                _ => {}
            }
        }
        (parent, children)
    }
}

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let bine = Bine::new(sh.size);
    let (parent, children) = bine.tree(bine.offset(sh.vrank()));
    let node = TreeNode {
        parent: parent.map(|d| bine.vrank(d)),
        children: children.into_iter().map(|d| bine.vrank(d)).collect(),
    };
    tree_bcast(b, sh, &node, 0, sh.bytes, spec.int("segment")?);
    Ok(())
}

/// What `bine_bdw` needs to place its messages.
struct Blocks<'a> {
    sh: &'a Shape<'a>,
    bine: Bine,
    ch: Chunks,
}

impl Blocks<'_> {
    fn bytes(&self, s: Span) -> Region {
        self.ch
            .range(self.bine.block(s.0), self.bine.block(s.1) + 1)
    }
    fn real(&self, d: i64) -> usize {
        self.sh.real(self.bine.vrank(d))
    }
}

pub fn build_bdw(sh: &Shape, _spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let bine = Bine::new(sh.size);
    let bl = Blocks {
        sh,
        bine,
        ch: Chunks::new(sh.bytes, sh.size),
    };
    let d = bine.offset(sh.vrank());
    let steps = bine.steps(d);
    // Scatter: each child gets its subtree's blocks.
    let mut sent = false;
    for st in &steps {
        let Some(q) = st.q else { continue };
        let sub = bl.bytes(bine.clip(st.other()).expect("q is in it"));
        if sub.len == 0 {
            continue;
        }
        if st.h == d {
            b.send(bl.real(q), sub, Post::Immediate);
            sent = true;
        } else if q == d {
            b.recv(bl.real(st.h), sub, Post::Blocking);
        }
    }
    if sent {
        b.wait_all();
    }
    for st in steps.iter().rev() {
        allgather_step(&bl, st, d, b);
    }
    Ok(())
}

/// One allgather step at offset `d`: afterwards every rank of the step's
/// interval (window part) holds the blocks of all of it.
fn allgather_step(bl: &Blocks, st: &Step, d: i64, b: &mut Builder) {
    let Some((own, other)) = bl.bine.parts(st, d) else {
        return;
    };
    let (mine, theirs) = (bl.bytes(own), bl.bytes(other));
    let none = Region::data(0, 0);
    // The holder kept every block of the interval since the scatter.
    let needs = |x: i64| x != st.h;
    let mirror = st.l + st.r - d;
    if contains(other, mirror) {
        let give = if needs(mirror) { mine } else { none };
        let take = if needs(d) { theirs } else { none };
        b.exchange(bl.real(mirror), give, bl.real(mirror), take);
    }
    // The larger part's ranks without a mirror image in the other part.
    if theirs.len == 0 {
        return;
    }
    for f in st.fill(d, own, other) {
        match f {
            Fill::From { peer, .. } => b.recv(bl.real(peer), theirs, Post::Blocking),
            Fill::To { peer, .. } => b.send(bl.real(peer), theirs, Post::Blocking),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Follows the tree from the root: every rank reached once; returns
    /// each rank's depth.
    fn reached(p: usize) -> Vec<u32> {
        let bine = Bine::new(p);
        let mut depth = vec![u32::MAX; p];
        depth[0] = 0;
        let mut todo = vec![0i64];
        while let Some(d) = todo.pop() {
            let (_, children) = bine.tree(d);
            let v = bine.vrank(d);
            for &c in &children {
                let cv = bine.vrank(c);
                assert_eq!(depth[cv], u32::MAX, "p {p}: rank {cv} reached twice");
                assert_eq!(bine.tree(c).0, Some(d), "p {p}: {cv}'s parent is not {v}");
                depth[cv] = depth[v] + 1;
                todo.push(c);
            }
        }
        depth
    }

    #[test]
    fn every_rank_once_within_ceil_log2_p_hops() {
        for p in (1..=300usize).chain([1000, 1024, 1025, 4095]) {
            let s = p.next_power_of_two().trailing_zeros();
            let depth = reached(p);
            let bine = Bine::new(p);
            assert!(depth.iter().all(|&x| x <= s), "p {p}: {depth:?}");
            for v in 0..p {
                let n = bine.steps(bine.offset(v)).len() as u32;
                assert_eq!(n, s, "p {p}: rank {v} sees {n} steps");
            }
        }
    }

    #[test]
    fn powers_of_two_are_bines_tree() {
        // Bine's partners: flip the low j+1 negabinary digits, distance
        // |rho_j| = |1 - 2 + 4 - ...| at step s-1-j from the root.
        for s in 1..=10u32 {
            let bine = Bine::new(1 << s);
            let (_, children) = bine.tree(0);
            let rho = |j: u32| (0..=j).map(|i| (-2i64).pow(i)).sum::<i64>();
            let expect: Vec<i64> = (0..s).rev().map(rho).collect();
            assert_eq!(children, expect, "p = 2^{s}");
        }
        // p = 8 from the authors' description: 0 -> 3, 0 -> 7, 3 -> 4, ...
        let bine = Bine::new(8);
        let kids = |v: usize| -> Vec<usize> {
            let (_, c) = bine.tree(bine.offset(v));
            c.into_iter().map(|d| bine.vrank(d)).collect()
        };
        assert_eq!(kids(0), vec![3, 7, 1]);
        assert_eq!(kids(3), vec![4, 2]);
        assert_eq!(kids(7), vec![6]);
        assert_eq!(kids(4), vec![5]);
    }
}
