//! The direct path: broadcasts whose schedule is one tree pass over the
//! whole message (linear, binomial, k-nomial, binary, and chain or pipeline
//! when the message fits one segment) run as plain `PMPI_Recv` from the
//! parent and `PMPI_Send` / `PMPI_Isend` + `PMPI_Waitall` to the children,
//! computed per call from (rank, root, size, tree) without building a
//! schedule: no allocation, no lock, no lookup.
//!
//! The messages are exactly the schedule's ([`colltune_algorithms::bcast`]:
//! `tree_bcast` and `linear`), same peers, order, tag and sizes, in either
//! execution (one segment pipelines nothing), so the direct path and the
//! general executor are interchangeable; the tests below prove the trees
//! equal `colltune_algorithms::topo`'s for every rank of 1..=70 ranks.

use std::ffi::c_int;

use colltune_algorithms::{AlgoSpec, Execution};

use crate::transport::mpi::ffi::{self, MPI_Comm, MPI_Request};
use crate::transport::mpi::MpiError;
use colltune_algorithms::SendMode;

/// The schedule's data tag (`exec::tag(Tag::Data)`).
const TAG: c_int = 1;

/// Requests one batch of sends keeps on the stack; a root with more
/// children posts them in batches of this many (the same messages, in the
/// same order).
const BATCH: usize = 32;

/// A tree the direct path runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tree {
    /// The root sends to every other rank (`linear`).
    Linear,
    /// `knomial:radix=k` (`binomial` is radix 2).
    Knomial(usize),
    /// Complete binary tree in heap order (`binary`).
    Binary,
    /// `chain:fanout=f` (`pipeline` is fanout 1).
    Chain(usize),
}

/// How a broadcast choice runs: the tree and the segment size above which
/// it pipelines (0: never), or None when it is not a tree (the general
/// executor runs it).
pub fn tree_of(spec: &AlgoSpec, _exec: Execution) -> Option<(Tree, u64)> {
    let seg = || spec.int("segment").ok();
    let int = |k: &str| spec.int(k).ok().and_then(|v| usize::try_from(v).ok());
    match spec.name.as_str() {
        "linear" => Some((Tree::Linear, 0)),
        "binomial" => Some((Tree::Knomial(2), seg()?)),
        "knomial" => Some((Tree::Knomial(int("radix")?.max(2)), seg()?)),
        "binary" => Some((Tree::Binary, seg()?)),
        "chain" => Some((Tree::Chain(int("fanout")?), seg()?)),
        "pipeline" => Some((Tree::Chain(1), seg()?)),
        _ => None,
    }
}

/// Whether a call of `bytes` with segment size `segment` is one segment.
#[inline]
pub fn one_segment(bytes: u64, segment: u64) -> bool {
    segment == 0 || bytes <= segment
}

impl Tree {
    /// The parent of relative rank `vr` of `size` (None: the root).
    pub fn parent(self, vr: usize, size: usize) -> Option<usize> {
        if vr == 0 {
            return None;
        }
        match self {
            Tree::Linear => Some(0),
            Tree::Knomial(k) => {
                let mut span = 1usize;
                while span < size {
                    let digit = (vr / span) % k;
                    if digit != 0 {
                        return Some(vr - digit * span);
                    }
                    span = span.checked_mul(k)?;
                }
                None
            }
            Tree::Binary => Some((vr - 1) / 2),
            Tree::Chain(f) => {
                let (chains, start) = chain_layout(size, f);
                let c = (0..chains).rev().find(|&c| start(c) <= vr)?;
                Some(if vr == start(c) { 0 } else { vr - 1 })
            }
        }
    }

    /// Calls `f` with every child of relative rank `vr` of `size`, in the
    /// schedule's order, until it returns an error.
    pub fn children<E>(
        self,
        vr: usize,
        size: usize,
        mut f: impl FnMut(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            Tree::Linear => {
                if vr == 0 {
                    for c in 1..size {
                        f(c)?;
                    }
                }
            }
            Tree::Knomial(k) => {
                // The lowest non-zero digit's place (every place for the root).
                let mut span = 1usize;
                while span < size {
                    if (vr / span) % k != 0 {
                        break;
                    }
                    match span.checked_mul(k) {
                        Some(s) => span = s,
                        None => break,
                    }
                }
                // The highest place below both span and size, then down.
                let mut top = 0usize;
                let mut s = 1usize;
                while s < span && s < size {
                    top = s;
                    match s.checked_mul(k) {
                        Some(n) => s = n,
                        None => break,
                    }
                }
                let mut s = top;
                while s > 0 {
                    for d in 1..k {
                        let c = vr + d * s;
                        if c < size {
                            f(c)?;
                        }
                    }
                    s /= k;
                }
            }
            Tree::Binary => {
                for c in [2 * vr + 1, 2 * vr + 2] {
                    if c < size {
                        f(c)?;
                    }
                }
            }
            Tree::Chain(fo) => {
                let (chains, start) = chain_layout(size, fo);
                if vr == 0 {
                    for c in 0..chains {
                        if start(c) < size {
                            f(start(c))?;
                        }
                    }
                } else if let Some(c) = (0..chains).rev().find(|&c| start(c) <= vr) {
                    if vr + 1 < start(c + 1).min(size) {
                        f(vr + 1)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// `topo::chain_tree`'s layout: the number of chains and where chain `c`
/// starts (relative ranks).
fn chain_layout(size: usize, fanout: usize) -> (usize, impl Fn(usize) -> usize) {
    let others = size.saturating_sub(1);
    let chains = fanout.clamp(1, others.max(1));
    (chains, move |c: usize| {
        1 + c * (others / chains) + c.min(others % chains)
    })
}

/// Broadcasts `len` bytes at `buf` from `root` down `tree` on `comm` (the
/// private communicator; `rank` of `size`): the schedule's messages, as plain
/// point-to-point calls. A failed send still completes the sends it
/// posted before returning (nothing is left in flight).
///
/// # Safety
/// `buf` is valid for reads and writes of `len` bytes; `comm` is a valid
/// communicator of `size` ranks where this process is `rank`.
pub unsafe fn run(
    comm: MPI_Comm,
    rank: usize,
    size: usize,
    root: usize,
    tree: Tree,
    buf: *mut u8,
    len: u64,
) -> Result<(), MpiError> {
    // tree_bcast has no segment, so no message, for 0 bytes; linear sends
    // empty messages.
    if len == 0 && tree != Tree::Linear {
        return Ok(());
    }
    let vr = (rank + size - root) % size;
    let real = |v: usize| (v + root) % size;
    if let Some(p) = tree.parent(vr, size) {
        ffi::recv(buf, len, real(p), TAG, comm)?;
    }
    // One child: a blocking send (what isend + waitall of one request is).
    let mut only = None;
    let mut many = false;
    let _ = tree.children(vr, size, |c| {
        if only.is_some() {
            many = true;
            return Err(());
        }
        only = Some(c);
        Ok(())
    });
    match (only, many) {
        (None, _) => Ok(()),
        (Some(c), false) => ffi::send(buf, len, real(c), TAG, SendMode::Standard, comm),
        (Some(_), true) => {
            let mut reqs: [MPI_Request; BATCH] = [ffi::request_null(); BATCH];
            let mut n = 0usize;
            let posted = tree.children(vr, size, |c| {
                if n == BATCH {
                    ffi::waitall(&mut reqs[..n])?;
                    n = 0;
                }
                reqs[n] = ffi::isend(buf, len, real(c), TAG, SendMode::Standard, comm)?;
                n += 1;
                Ok(())
            });
            // Every send posted completes, also after a failure.
            let waited = ffi::waitall(&mut reqs[..n]);
            posted.and(waited)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use colltune_algorithms::topo::{binary_tree, chain_tree, knomial_tree, TreeNode};

    fn node(t: Tree, vr: usize, size: usize) -> TreeNode {
        let mut children = Vec::new();
        let _ = t.children::<()>(vr, size, |c| {
            children.push(c);
            Ok(())
        });
        TreeNode {
            parent: t.parent(vr, size),
            children,
        }
    }

    fn same(a: TreeNode, b: TreeNode, what: &str) {
        assert_eq!(a.parent, b.parent, "{what}: parent");
        assert_eq!(a.children, b.children, "{what}: children");
    }

    /// The direct trees are topo's, rank by rank.
    #[test]
    fn trees_equal_the_schedules() {
        for size in 1..=70 {
            for vr in 0..size {
                for k in [2, 3, 4, 5, 8, 64] {
                    same(
                        node(Tree::Knomial(k), vr, size),
                        knomial_tree(vr, size, k),
                        &format!("knomial {k} vr {vr} of {size}"),
                    );
                }
                same(
                    node(Tree::Binary, vr, size),
                    binary_tree(vr, size),
                    &format!("binary vr {vr} of {size}"),
                );
                for f in [1, 2, 3, 4, 64] {
                    same(
                        node(Tree::Chain(f), vr, size),
                        chain_tree(vr, size, f),
                        &format!("chain {f} vr {vr} of {size}"),
                    );
                }
                let lin = node(Tree::Linear, vr, size);
                if vr == 0 {
                    assert_eq!(lin.children, (1..size).collect::<Vec<_>>());
                    assert_eq!(lin.parent, None);
                } else {
                    assert!(lin.children.is_empty());
                    assert_eq!(lin.parent, Some(0));
                }
            }
        }
    }

    #[test]
    fn choices_map_to_trees() {
        let t = |s: &str| {
            let spec = colltune_algorithms::registry::resolve(
                colltune_algorithms::Collective::Bcast,
                &AlgoSpec::parse(s).unwrap(),
            )
            .unwrap();
            tree_of(&spec, Execution::Blocking)
        };
        assert_eq!(t("linear"), Some((Tree::Linear, 0)));
        assert_eq!(t("binomial"), Some((Tree::Knomial(2), 0)));
        assert_eq!(t("knomial:radix=4"), Some((Tree::Knomial(4), 0)));
        assert_eq!(t("binary:segment=1024"), Some((Tree::Binary, 1024)));
        assert_eq!(t("pipeline"), Some((Tree::Chain(1), 65536)));
        assert_eq!(t("chain:fanout=2"), Some((Tree::Chain(2), 65536)));
        assert_eq!(t("scatter_allgather"), None);
        assert!(one_segment(65536, 65536) && !one_segment(65537, 65536) && one_segment(1 << 30, 0));
    }
}
