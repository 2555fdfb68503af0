//! Where ranks live: the rank-to-node map, and the tree shapes trees are built from.

use std::fmt;

use crate::error::ShapeError;

/// Which node each rank of a communicator runs on.
///
/// Nodes are numbered densely in the order of their lowest rank, so two maps
/// that group ranks the same way are equal whatever the nodes are called.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeMap {
    node_of: Vec<u32>,
    /// Ranks of each node, ascending.
    ranks: Vec<Vec<u32>>,
}

impl NodeMap {
    /// Builds the map from any per-rank node label (hostnames' hashes, the
    /// colour of a shared-memory split, ...).
    pub fn from_labels<L: PartialEq>(labels: &[L]) -> Self {
        let mut firsts: Vec<&L> = Vec::new();
        let mut node_of = Vec::with_capacity(labels.len());
        let mut ranks: Vec<Vec<u32>> = Vec::new();
        for (r, l) in labels.iter().enumerate() {
            // Consecutive ranks mostly share a node: try the last one first
            // (else a search over the nodes: O(p x nodes) at 526,848 ranks).
            let last = firsts.len().checked_sub(1).filter(|&n| firsts[n] == l);
            let n = match last.or_else(|| firsts.iter().position(|f| *f == l)) {
                Some(n) => n,
                None => {
                    firsts.push(l);
                    ranks.push(Vec::new());
                    firsts.len() - 1
                }
            };
            node_of.push(n as u32);
            ranks[n].push(r as u32);
        }
        NodeMap { node_of, ranks }
    }

    /// All `size` ranks on one node.
    pub fn single(size: usize) -> Self {
        Self::from_labels(&vec![0u32; size])
    }

    /// Consecutive ranks fill nodes of the given sizes in turn (`[3, 2]`: ranks
    /// 0-2 on node 0, 3-4 on node 1), as `mpirun --map-by slot` places them.
    pub fn blocks(sizes: &[usize]) -> Result<Self, ShapeError> {
        if sizes.contains(&0) {
            return Err(ShapeError::EmptyNode);
        }
        let labels: Vec<usize> = sizes
            .iter()
            .enumerate()
            .flat_map(|(n, &k)| std::iter::repeat_n(n, k))
            .collect();
        Ok(Self::from_labels(&labels))
    }

    /// `size` ranks dealt round-robin over `nodes` nodes (`--map-by node`).
    pub fn round_robin(size: usize, nodes: usize) -> Self {
        let labels: Vec<usize> = (0..size).map(|r| r % nodes.max(1)).collect();
        Self::from_labels(&labels)
    }

    /// Parses `4` (one node of 4), `2x3` (2 nodes of 3), `3+2` (nodes of 3 and
    /// 2, consecutive ranks), or each rank's node, `0,1,0,1` (any order:
    /// round-robin as `--map-by node`).
    pub fn parse(text: &str) -> Result<Self, ShapeError> {
        let bad = || ShapeError::BadNodeSpec(text.to_string());
        let t = text.trim();
        if t.contains(',') {
            let labels: Vec<u32> = t
                .split(',')
                .map(|s| s.trim().parse().map_err(|_| bad()))
                .collect::<Result<_, _>>()?;
            return Ok(Self::from_labels(&labels));
        }
        if let Some((n, k)) = t.split_once('x') {
            let n: usize = n.trim().parse().map_err(|_| bad())?;
            let k: usize = k.trim().parse().map_err(|_| bad())?;
            if n == 0 || k == 0 {
                return Err(bad());
            }
            return Self::blocks(&vec![k; n]);
        }
        let sizes: Vec<usize> = t
            .split('+')
            .map(|s| s.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        if sizes.is_empty() || sizes.contains(&0) {
            return Err(bad());
        }
        Self::blocks(&sizes)
    }

    pub fn size(&self) -> usize {
        self.node_of.len()
    }
    pub fn num_nodes(&self) -> usize {
        self.ranks.len()
    }
    pub fn node_of(&self, rank: usize) -> usize {
        self.node_of[rank] as usize
    }
    pub fn ranks_on(&self, node: usize) -> &[u32] {
        &self.ranks[node]
    }
    /// The largest number of ranks on one node.
    pub fn max_ppn(&self) -> usize {
        self.ranks.iter().map(Vec::len).max().unwrap_or(0)
    }
    /// Whether every node holds the same number of ranks.
    pub fn is_uniform(&self) -> bool {
        self.ranks.windows(2).all(|w| w[0].len() == w[1].len())
    }
}

impl fmt::Display for NodeMap {
    /// `4` for one node, `2x3` for equal nodes, `3+2` otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sizes: Vec<usize> = self.ranks.iter().map(Vec::len).collect();
        match sizes.as_slice() {
            [] => write!(f, "0"),
            [k] => write!(f, "{k}"),
            _ if self.is_uniform() => write!(f, "{}x{}", sizes.len(), sizes[0]),
            _ => {
                let parts: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
                write!(f, "{}", parts.join("+"))
            }
        }
    }
}

/// A rank's place in a broadcast tree, in ranks relative to the root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeNode {
    pub parent: Option<usize>,
    /// In the order the parent sends to them.
    pub children: Vec<usize>,
}

/// k-nomial tree over relative ranks `0..size` (radix 2: binomial).
///
/// A rank's parent clears its lowest non-zero base-`radix` digit; its
/// children set one digit below that, largest subtree first.
pub fn knomial_tree(vr: usize, size: usize, radix: usize) -> TreeNode {
    debug_assert!(radix >= 2 && vr < size);
    let mut parent = None;
    let mut span = 1usize; // radix^position of the lowest non-zero digit
    while span < size {
        let digit = (vr / span) % radix;
        if digit != 0 {
            parent = Some(vr - digit * span);
            break;
        }
        match span.checked_mul(radix) {
            Some(s) => span = s,
            None => break,
        }
    }
    // Children use digit positions below `span` (every position for the root).
    let mut children = Vec::new();
    let mut positions = Vec::new();
    let mut s = 1usize;
    while s < span && s < size {
        positions.push(s);
        match s.checked_mul(radix) {
            Some(n) => s = n,
            None => break,
        }
    }
    for &s in positions.iter().rev() {
        for d in 1..radix {
            let c = vr + d * s;
            if c < size {
                children.push(c);
            }
        }
    }
    TreeNode { parent, children }
}

/// Complete binary tree in heap order: children of `v` are `2v+1`, `2v+2`.
pub fn binary_tree(vr: usize, size: usize) -> TreeNode {
    let parent = if vr == 0 { None } else { Some((vr - 1) / 2) };
    let children = [2 * vr + 1, 2 * vr + 2]
        .into_iter()
        .filter(|&c| c < size)
        .collect();
    TreeNode { parent, children }
}

/// The root feeds `fanout` chains that split ranks `1..size` into nearly
/// equal consecutive runs; each rank forwards to the next one of its run.
pub fn chain_tree(vr: usize, size: usize, fanout: usize) -> TreeNode {
    let others = size.saturating_sub(1);
    let chains = fanout.clamp(1, others.max(1));
    // Chain c covers relative ranks [start(c), start(c+1)).
    let start = |c: usize| 1 + c * (others / chains) + c.min(others % chains);
    if vr == 0 {
        let children = (0..chains).map(start).filter(|&s| s < size).collect();
        return TreeNode {
            parent: None,
            children,
        };
    }
    let c = (0..chains)
        .rev()
        .find(|&c| start(c) <= vr)
        .expect("rank belongs to a chain");
    let parent = if vr == start(c) { 0 } else { vr - 1 };
    let next = vr + 1;
    let children = if next < start(c + 1).min(size) {
        vec![next]
    } else {
        vec![]
    };
    TreeNode {
        parent: Some(parent),
        children,
    }
}

/// Size of the binomial subtree rooted at relative rank `vr`.
pub fn binomial_subtree_size(vr: usize, size: usize) -> usize {
    let low = if vr == 0 {
        size.next_power_of_two()
    } else {
        1 << vr.trailing_zeros()
    };
    low.min(size - vr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_tree(size: usize, f: impl Fn(usize) -> TreeNode) {
        // every non-root has exactly one parent, which lists it as a child
        let nodes: Vec<TreeNode> = (0..size).map(&f).collect();
        assert_eq!(nodes[0].parent, None);
        for (v, n) in nodes.iter().enumerate().skip(1) {
            let p = n.parent.unwrap_or_else(|| panic!("{v} has no parent"));
            assert!(nodes[p].children.contains(&v), "size {size}: {p} !-> {v}");
        }
        let edges: usize = nodes.iter().map(|n| n.children.len()).sum();
        assert_eq!(edges, size - 1);
    }

    #[test]
    fn trees_are_spanning() {
        for size in 1..70 {
            check_tree(size, |v| knomial_tree(v, size, 2));
            check_tree(size, |v| knomial_tree(v, size, 3));
            check_tree(size, |v| knomial_tree(v, size, 8));
            check_tree(size, |v| binary_tree(v, size));
            for fanout in [1, 2, 4, 100] {
                check_tree(size, |v| chain_tree(v, size, fanout));
            }
        }
    }

    #[test]
    fn binomial_is_mpich_shape() {
        assert_eq!(knomial_tree(0, 8, 2).children, vec![4, 2, 1]);
        assert_eq!(knomial_tree(6, 8, 2).parent, Some(4));
        assert_eq!(knomial_tree(4, 8, 2).children, vec![6, 5]);
        assert_eq!(binomial_subtree_size(4, 7), 3);
        assert_eq!(binomial_subtree_size(0, 7), 7);
    }

    #[test]
    fn node_maps() {
        let m = NodeMap::parse("3+2").unwrap();
        assert_eq!(m.num_nodes(), 2);
        assert_eq!(m.ranks_on(1), &[3, 4]);
        assert_eq!(m.to_string(), "3+2");
        assert_eq!(NodeMap::parse("2x3").unwrap().to_string(), "2x3");
        assert_eq!(NodeMap::round_robin(5, 2).ranks_on(0), &[0, 2, 4]);
        assert!(NodeMap::parse("2x0").is_err());
        assert!(NodeMap::parse("a").is_err());
        let rr = NodeMap::parse("0,1,0,1,0").unwrap();
        assert_eq!(
            (rr.node_of(2), rr.node_of(3), rr.to_string()),
            (0, 1, "3+2".into())
        );
        assert!(NodeMap::parse("0,,1").is_err());
        assert_eq!(NodeMap::from_labels(&["b", "a", "b"]).ranks_on(0), &[0, 2]);
    }
}
