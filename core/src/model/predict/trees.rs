//! Open MPI's coll/tuned broadcasts as coll/tuned runs them, on the
//! simulator: the tree shapes and rank numbering of coll_base_topo.c (read
//! to learn the shapes, written here from their rules), run by the tree
//! engine all of them share (`bcast_intra_generic`: each rank receives from
//! its parent, then starts a send to every child in order and waits for
//! them), with coll/tuned's forced defaults: segment size 0 (one segment),
//! chain fanout 4, k-nomial radix 4; ranks placed on a layout as `mpirun
//! --map-by` places them; algorithm 0 as Open MPI 4.1's fixed decision
//! chooses ([`crate::libraries::ompi::tuned_bcast_decision`]).
//!
//! Split binary (4) and the scatter-allgathers (8, 9) run colltune's
//! schedules of the same name, not Open MPI's numbering (an approximation:
//! no published set forces them, and the fixed decision picks them only
//! from 256 ranks, or at 1 MiB and above on 16-31 ranks).

use colltune_algorithms::bcast::tree::tree_bcast;
use colltune_algorithms::registry::build_into;
use colltune_algorithms::topo::{knomial_tree, TreeNode};
use colltune_algorithms::{
    resolve, AlgoSpec, Builder, Collective, Execution, NodeMap, Plan, Shape,
};

use crate::libraries::ompi::tuned_bcast_decision;
use crate::model::placement::{Layout, Mapping};
use crate::model::sim::{Engine, Model};

/// coll/tuned's forced chain fanout and k-nomial radix.
pub const CHAIN_FANOUT: usize = 4;
pub const KNOMIAL_RADIX: usize = 4;

/// `ompi_coll_base_topo_build_tree(fanout)`: a rank at level `l` (levels
/// hold 1, f, f^2, ... ranks in order) has children `vr + f^l * i` for
/// i = 1..=f; so 0's children are 1, 2, 1's are 3, 5 and 2's 4, 6.
pub fn kary_tree(vr: usize, size: usize, fanout: usize) -> TreeNode {
    let mut level = 0;
    let mut first = 0; // first rank of `level`
    let mut width = 1; // fanout^level
    while vr >= first + width {
        first += width;
        width *= fanout;
        level += 1;
    }
    let children = (1..=fanout)
        .map(|i| vr + width * i)
        .take_while(|&c| c < size)
        .collect();
    let parent = (level > 0).then(|| {
        // Step back by one level's spacing until inside the level above.
        let up = width / fanout;
        let mut p = vr;
        while p >= first {
            p -= up;
        }
        p
    });
    TreeNode { parent, children }
}

/// `build_bmtree`: a rank's parent clears its highest set bit; its
/// children are `vr + 2^k` for every power of two above `vr`, in that order
/// (the root sends to 1 first, whose subtree is every odd rank: largest
/// subtree first).
pub fn binomial_tree(vr: usize, size: usize) -> TreeNode {
    // The smallest power of two above vr (1 for the root).
    let mask = if vr == 0 {
        1
    } else {
        (vr + 1).next_power_of_two()
    };
    let parent = (vr != 0).then_some(vr ^ (mask >> 1));
    let mut children = Vec::new();
    let mut m = mask;
    while m < size && vr + m < size {
        children.push(vr + m);
        m <<= 1;
    }
    TreeNode { parent, children }
}

/// `build_chain(fanout)`: ranks 1..size in `fanout` consecutive chains, the
/// first `(size - 1) % fanout` one longer; the root feeds each chain's
/// head. A fanout below 1 is 1 (one chain: the pipeline).
pub fn chain(vr: usize, size: usize, fanout: usize) -> TreeNode {
    let fanout = fanout.clamp(1, (size - 1).max(1));
    colltune_algorithms::topo::chain_tree(vr, size, fanout)
}

/// The root sends to every other rank in rank order.
pub fn linear(vr: usize, size: usize) -> TreeNode {
    if vr == 0 {
        TreeNode {
            parent: None,
            children: (1..size).collect(),
        }
    } else {
        TreeNode {
            parent: Some(0),
            children: vec![],
        }
    }
}

/// One rank's place in coll/tuned algorithm `alg`'s tree (relative ranks),
/// or None for the algorithms that are not trees (4, 8, 9).
pub fn tree(alg: u32, vr: usize, size: usize, chain_fanout: usize) -> Option<TreeNode> {
    Some(match alg {
        1 => linear(vr, size),
        2 => chain(vr, size, chain_fanout),
        3 => chain(vr, size, 1),
        5 => kary_tree(vr, size, 2),
        6 => binomial_tree(vr, size),
        7 => knomial_tree(vr, size, KNOMIAL_RADIX),
        _ => return None,
    })
}

/// The algorithm and chain fanout a call of coll/tuned algorithm `alg`
/// runs: a forced one with the forced defaults, 0 as the fixed decision
/// chooses (its chain fanout 0: one chain); the scatter-allgathers below a
/// byte per rank as basic linear, which they run there
/// ([`crate::libraries::ompi::Forced::runs_as`]; `osu_bcast` sends bytes).
pub fn resolved(alg: u32, ranks: usize, bytes: u64) -> (u32, usize) {
    if super::own::is_own(alg) {
        // colltune's own: forced as it is, no decision in between.
        return (alg, 0);
    }
    let (id, fanout) = if alg == 0 {
        (tuned_bcast_decision(ranks, bytes), 1)
    } else {
        (alg, CHAIN_FANOUT)
    };
    let forced = crate::libraries::ompi::Forced { id, segment: 0 };
    let ranks = u32::try_from(ranks).unwrap_or(u32::MAX);
    (forced.runs_as(ranks, bytes).id, fanout)
}

/// Whether algorithms `a` and `b` (0: the library's decision) run the same
/// code at this shape: the same algorithm, and for the chain the same
/// fanout (the decision's is one chain, the forced one [`CHAIN_FANOUT`]).
pub fn same_run(a: u32, b: u32, ranks: usize, bytes: u64) -> bool {
    let (x, y) = (resolved(a, ranks, bytes), resolved(b, ranks, bytes));
    x.0 == y.0 && (x.0 != 2 || x.1 == y.1)
}

/// Simulates one `MPI_Bcast` of `bytes` from rank 0 under coll/tuned
/// algorithm `alg` (0: the library's decision; from [`super::own::FIRST`]
/// on, colltune's own) on `ranks` ranks placed by
/// `mapping` on `layout`; each rank's time from the call's start to its
/// return, microseconds.
pub fn simulate(
    m: &Model,
    layout: &Layout,
    mapping: Mapping,
    alg: u32,
    ranks: usize,
    bytes: u64,
) -> Result<Vec<f64>, String> {
    let cores = mapping.place(layout, ranks)?;
    let labels: Vec<usize> = cores.iter().map(|c| c / layout.cores_per_node()).collect();
    let nodes = NodeMap::from_labels(&labels);
    let groups = crate::model::levels::groups(m, layout, &cores)?;
    let (run, fanout) = resolved(alg, ranks, bytes);
    let other = match run {
        4 => Some("split_binary:segment=0"),
        8 => Some("scatter_allgather"),
        9 => Some("scatter_allgather_ring"),
        own => super::own::of(own).map(|o| o.spec),
    };
    let spec = other
        .map(|s| {
            AlgoSpec::parse(s)
                .map_err(|e| e.to_string())
                .and_then(|s| resolve(Collective::Bcast, &s).map_err(|e| e.to_string()))
        })
        .transpose()?;
    let mut plans = Vec::with_capacity(ranks);
    for rank in 0..ranks {
        let sh = Shape {
            rank,
            size: ranks,
            root: 0,
            bytes,
            nodes: &nodes,
        };
        let mut b = Builder::new();
        match (&spec, tree(run, sh.vrank(), ranks, fanout)) {
            (None, Some(node)) => tree_bcast(&mut b, &sh, &node, 0, bytes, 0),
            (Some(spec), _) => build_into(Collective::Bcast, spec, &sh, &mut b)
                .map_err(|e| format!("algorithm {run}: {e}"))?,
            (None, None) => {
                return Err(format!(
                    "coll/tuned has no broadcast algorithm {run}, nor colltune one of that number"
                ))
            }
        }
        plans.push(Plan::new(b.finish()));
    }
    // the layout's groups (an allocation's), not the model's count
    let group = layout.node_groups(&cores);
    let mut e = Engine::with_groups(m, &nodes, &plans, Execution::Blocking, group);
    let memory = cores
        .iter()
        .map(|&c| layout.group_of(c, crate::model::placement::Level::Socket) as u32)
        .collect();
    e.place(groups, memory);
    e.run_each().map_err(|e| e.to_string())
}

/// What OSU's `osu_bcast` reports of a call whose ranks took `each`
/// (from [`simulate`]): the mean over ranks of each rank's time.
pub fn osu_time(each: &[f64]) -> f64 {
    each.iter().sum::<f64>() / each.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(size: usize, f: impl Fn(usize) -> TreeNode) {
        // Every rank but the root has one parent, which lists it.
        for vr in 0..size {
            let n = f(vr);
            assert_eq!(n.parent.is_none(), vr == 0, "{vr}");
            if let Some(p) = n.parent {
                assert!(f(p).children.contains(&vr), "{vr} not a child of {p}");
            }
            for &c in &n.children {
                assert_eq!(f(c).parent, Some(vr));
            }
        }
    }

    #[test]
    fn shapes_and_numbering_as_coll_base_topo_builds_them() {
        // build_tree(2) on 7 ranks: 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6.
        assert_eq!(kary_tree(0, 7, 2).children, vec![1, 2]);
        assert_eq!(kary_tree(1, 7, 2).children, vec![3, 5]);
        assert_eq!(kary_tree(2, 7, 2).children, vec![4, 6]);
        assert_eq!(kary_tree(5, 7, 2).parent, Some(1));
        assert_eq!(kary_tree(6, 7, 2).parent, Some(2));
        assert_eq!(kary_tree(9, 12, 2).parent, Some(5)); // 1 -> 3, 5; 5 -> 9
                                                         // build_bmtree: the parent clears the highest bit.
        assert_eq!(binomial_tree(0, 8).children, vec![1, 2, 4]);
        assert_eq!(binomial_tree(1, 8).children, vec![3, 5]);
        assert_eq!(binomial_tree(2, 8).children, vec![6]);
        assert_eq!(binomial_tree(4, 8).children, Vec::<usize>::new());
        assert_eq!(binomial_tree(6, 7).parent, Some(2));
        assert_eq!(binomial_tree(5, 7).parent, Some(1));
        assert_eq!(binomial_tree(0, 5).children, vec![1, 2, 4]);
        // build_kmtree radix 4: farthest digit first.
        assert_eq!(knomial_tree(0, 20, 4).children, vec![16, 4, 8, 12, 1, 2, 3]);
        // build_chain(4) on 11 ranks: chains 1-3, 4-6, 7-8, 9-10.
        assert_eq!(chain(0, 11, 4).children, vec![1, 4, 7, 9]);
        assert_eq!(chain(8, 11, 4).children, Vec::<usize>::new());
        assert_eq!(chain(9, 11, 4).parent, Some(0));
        assert_eq!(chain(0, 3, 4).children, vec![1, 2]);
        for size in [1, 2, 3, 7, 12, 37, 130, 254] {
            for alg in [1, 2, 3, 5, 6, 7] {
                check(size, |vr| tree(alg, vr, size, 4).unwrap());
            }
        }
    }
}
