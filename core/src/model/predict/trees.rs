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
use colltune_algorithms::schedule::{Post, Region, SendMode, Tag};
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
    run(m, layout, mapping, Some(alg), false, ranks, bytes)
}

/// The time pico's loop reports of one `MPI_Bcast` (algorithm, ranks and
/// bytes as [`simulate`]'s): each rank reads its clock as it leaves the
/// `MPI_Barrier` ahead of the call and again as the call returns, and the
/// file holds the slowest rank's difference (pico's `bench_utils.h`:
/// `MPI_Barrier; start = MPI_Wtime(); call; end = MPI_Wtime()`, then the
/// maximum over ranks). The barrier is the one Open MPI's coll/tuned picks
/// at that size ([`barrier_decision`]), simulated on the same model: where
/// it lets ranks go in the order the broadcast reaches them (the tree
/// barrier, 256-511 and 1,024-4,095 ranks, and a binomial broadcast: a
/// rank's depth is the number of its set bits in both trees) a rank's
/// clock starts about when its data is due, and the call looks a hop long.
pub fn simulate_from_barrier(
    m: &Model,
    layout: &Layout,
    mapping: Mapping,
    alg: u32,
    ranks: usize,
    bytes: u64,
) -> Result<f64, String> {
    let exits = run(m, layout, mapping, None, true, ranks, bytes)?;
    let ends = run(m, layout, mapping, Some(alg), true, ranks, bytes)?;
    Ok(ends
        .iter()
        .zip(&exits)
        .map(|(e, s)| (e - s).max(0.0))
        .fold(0.0, f64::max))
}

/// The barrier Open MPI 4.1's coll/tuned runs at `size` ranks
/// (`ompi_coll_tuned_barrier_intra_dec_fixed`): 1 linear, 3 recursive
/// doubling, 4 Bruck, 6 tree.
pub fn barrier_decision(size: usize) -> u32 {
    match size {
        0..=3 => 3,
        4..=7 => 1,
        8..=63 => 3,
        64..=255 => 4,
        256..=511 => 6,
        512..=1023 => 4,
        1024..=4095 => 6,
        _ => 4,
    }
}

/// Rank `rank`'s part of coll/tuned's barrier [`barrier_decision`] on
/// `size` ranks, zero-byte messages as coll_base_barrier.c sends them
/// (its shapes, written here from their rules).
pub fn barrier(b: &mut Builder, rank: usize, size: usize) {
    let none = Region::data(0, 0);
    let send = |b: &mut Builder, to: usize| {
        b.send_tagged(to, none, Tag::Control, SendMode::Standard, Post::Blocking);
    };
    let recv = |b: &mut Builder, from: usize| {
        b.recv_tagged(from, none, Tag::Control, Post::Blocking);
    };
    let sendrecv = |b: &mut Builder, to: usize, from: usize| {
        b.send_tagged(
            to,
            none,
            Tag::Control,
            SendMode::Standard,
            Post::ExchangeWithNext,
        );
        b.recv_tagged(from, none, Tag::Control, Post::Blocking);
    };
    if size < 2 {
        return;
    }
    match barrier_decision(size) {
        1 => {
            if rank == 0 {
                for i in 1..size {
                    b.recv_tagged(i, none, Tag::Control, Post::Immediate);
                }
                b.wait_all();
                (1..size).for_each(|i| send(b, i));
            } else {
                send(b, 0);
                recv(b, 0);
            }
        }
        3 => {
            // The largest power of two at most `size`; the ranks above it
            // check in with one below first and are let go last.
            let adj = 1usize << (usize::BITS - 1 - size.leading_zeros());
            if adj != size {
                if rank >= adj {
                    sendrecv(b, rank - adj, rank - adj);
                } else if rank < size - adj {
                    recv(b, rank + adj);
                }
            }
            if rank < adj {
                let mut mask = 1;
                while mask < adj {
                    let remote = rank ^ mask;
                    mask <<= 1;
                    if remote < adj {
                        sendrecv(b, remote, remote);
                    }
                }
            }
            if adj != size && rank < size - adj {
                send(b, rank + adj);
            }
        }
        6 => {
            // Up the tree, then down it, largest jump first.
            let depth = size.next_power_of_two();
            let mut jump = 1;
            while jump < depth {
                let partner = rank ^ jump;
                if partner & (jump - 1) == 0 && partner < size {
                    if partner > rank {
                        recv(b, partner);
                    } else {
                        send(b, partner);
                    }
                }
                jump <<= 1;
            }
            let mut jump = depth >> 1;
            while jump > 0 {
                let partner = rank ^ jump;
                if partner & (jump - 1) == 0 && partner < size {
                    if partner > rank {
                        send(b, partner);
                    } else {
                        recv(b, partner);
                    }
                }
                jump >>= 1;
            }
        }
        _ => {
            // Bruck: log2 rounds, each a send `distance` up and a receive
            // from as far down.
            let mut distance = 1;
            while distance < size {
                sendrecv(b, (rank + distance) % size, (rank + size - distance) % size);
                distance <<= 1;
            }
        }
    }
}

/// Simulates each rank running the barrier ahead of the call (`barrier`),
/// then the broadcast of `alg` (where given); each rank's time from the
/// start to the end of what it ran, microseconds.
fn run(
    m: &Model,
    layout: &Layout,
    mapping: Mapping,
    alg: Option<u32>,
    barrier_first: bool,
    ranks: usize,
    bytes: u64,
) -> Result<Vec<f64>, String> {
    let cores = mapping.place(layout, ranks)?;
    let labels: Vec<usize> = cores.iter().map(|c| c / layout.cores_per_node()).collect();
    let nodes = NodeMap::from_labels(&labels);
    let groups = crate::model::levels::groups(m, layout, &cores)?;
    let (run, fanout) = resolved(alg.unwrap_or(1), ranks, bytes);
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
        if barrier_first {
            barrier(&mut b, rank, ranks);
        }
        if alg.is_none() {
            plans.push(Plan::new(b.finish()));
            continue;
        }
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
