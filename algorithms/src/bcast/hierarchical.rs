//! Hierarchical (node-aware) broadcast: an inter-node broadcast among node
//! leaders, composed with an intra-node broadcast inside every node, each
//! chosen from this same library.
//!
//! ```text
//!   node 0: [0* 1 2]    node 1: [3* 4]    node 2: [5* 6 7]     (* leader)
//!   inter:  0 ==> 3, 0 ==> 5            (e.g. binomial over 3 leaders)
//!   intra:  0 -> 1,2    3 -> 4    5 -> 6,7  (e.g. linear inside each node)
//! ```
//! The root leads its own node; elsewhere the lowest rank leads. Nodes may
//! hold different numbers of ranks. Cost: T_inter(N nodes, n) over the
//! network plus T_intra(ranks per node, n) in shared memory; with segmented
//! phases the dataflow execution overlaps them (a leader forwards a segment
//! inside its node as soon as it arrives from outside).
//!
//! With `intra=shm` each node's phase goes through the node's shared
//! memory (one copy in, every rank copies out) instead of messages.
//!
//! Parameters: `inter`, `intra` (broadcast algorithms, not hierarchical;
//! `inter` not `shm`, which needs ranks that share a node).

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::Buf;
use crate::shape::{Compose, Shape};
use crate::spec::{AlgoSpec, Collective};
use crate::topo::NodeMap;

/// `build_into` builds a phase's algorithm (the registry's own, which
/// lists this one: an algorithm never names the registry).
pub fn build(
    sh: &Shape,
    spec: &AlgoSpec,
    b: &mut Builder,
    build_into: Compose,
) -> Result<(), SpecError> {
    let nodes = sh.nodes;
    let root_node = nodes.node_of(sh.root);
    let my_node = nodes.node_of(sh.rank);
    let leader_of = |n: usize| {
        if n == root_node {
            sh.root
        } else {
            nodes.ranks_on(n)[0] as usize
        }
    };
    let leader = leader_of(my_node);

    // Only the leaders need the list of every node's leader (building it on
    // every rank costs O(p x nodes) for a whole communicator's schedules).
    if sh.rank == leader && nodes.num_nodes() > 1 {
        let leaders: Vec<usize> = (0..nodes.num_nodes()).map(leader_of).collect();
        let inter_nodes = NodeMap::single(leaders.len());
        let inter = Shape {
            rank: my_node,
            size: leaders.len(),
            root: root_node,
            bytes: sh.bytes,
            nodes: &inter_nodes,
        };
        b.with_map(&leaders, |b| {
            build_into(Collective::Bcast, spec.algo("inter")?, &inter, b)
        })?;
    }

    let members: Vec<usize> = nodes
        .ranks_on(my_node)
        .iter()
        .map(|&r| r as usize)
        .collect();
    if members.len() > 1 {
        let idx = |r: usize| members.iter().position(|&m| m == r).expect("member");
        let intra_nodes = NodeMap::single(members.len());
        let intra = Shape {
            rank: idx(sh.rank),
            size: members.len(),
            root: idx(leader),
            bytes: sh.bytes,
            nodes: &intra_nodes,
        };
        b.with_map(&members, |b| {
            build_into(Collective::Bcast, spec.algo("intra")?, &intra, b)
        })?;
    } else {
        // Alone on its node, this rank still takes part in allocating the
        // shared-memory window its machine's other ranks allocate (an
        // intra-node phase through shared memory, `shm`, on nodes that
        // share a machine: the emulated layouts), with the length they
        // declare: the phase's on a node of two.
        let pair = NodeMap::single(2);
        let mut probe = Builder::new();
        let two = Shape {
            rank: 0,
            size: 2,
            root: 0,
            bytes: sh.bytes,
            nodes: &pair,
        };
        build_into(Collective::Bcast, spec.algo("intra")?, &two, &mut probe)?;
        b.need(Buf::Shared, probe.needs(Buf::Shared));
    }
    Ok(())
}
