//! The simulator: runs the very schedules the MPI transport runs (the same
//! [`Plan`]s, in the blocking or the dataflow execution) on a LogGP network
//! model with contention, as a discrete-event simulation. MPI-free.
//!
//! What a message costs: the sender's CPU is busy `o`; between nodes the
//! bytes then occupy the sender node's outgoing link for `n G` (and at least
//! `g`), fly for `L`, and occupy the receiver node's incoming link for `n G`
//! (a node's messages queue on its link: contention); inside a node they take
//! `L + n G` of the shared-memory link, the sender's process busy `n G` of
//! it for a rendezvous message (its reads queue on its buffer; with the
//! model's `shared_reads` they share it instead: k started together end
//! after `k n G`) and a local copy (`n / copy bandwidth`) for an eager one. Messages up to the eager limit leave
//! at once; larger ones wait for their receive plus one `L` (rendezvous). A
//! receive completes `o` after both it is posted and its data has arrived.
//! Copies take `n / copy bandwidth`; window synchronisation completes the
//! puts it closes. Shared memory (the `shm` broadcast): a load out of a
//! peer's part of the node's shared window copies at the copy bandwidth,
//! and queues with every shared-memory copy into the reader's memory domain on
//! `memory_copy_gbs` when the model gives it (a copy between two ranks of one
//! cache level stays in that cache and does not queue); a
//! flag raised is seen one intra-node latency later (a cache line between
//! cores). The dataflow execution does copies, loads and signals at once
//! when it starts them, as the MPI executor does. The call's time is the slowest rank's finish.
//!
//! Speed: a call of 16,384 ranks runs about a million ops, and a decision
//! table some hundreds of calls, so the engine keeps ops flat and touches
//! little memory per event. [`simulate`] builds one rank's schedule at a
//! time with one reused [`Builder`] and packs it at once into one array of
//! 40-byte ops (with what [`Plan`] derives: dependents, positions in
//! channels); no schedule is kept. Messages match by their position in
//! their channel (MPI's non-overtaking rule: the k-th send of a channel
//! meets its k-th receive), so a channel is a counter per side. The dataflow
//! execution keeps only the ops it can start now in a heap and parks ready
//! ops waiting for their turn in a channel on the channel. Events wait in a
//! radix heap (times never go back). The packed call is kept for its other
//! execution, which the tuner asks for next. These speed-ups were checked,
//! when made, to give bit for bit the times of a straightforward engine (a
//! heap of events, a queue per channel, a scan of the ready ops); the
//! model has changed since (roots, time-ordered rendezvous, shared-memory
//! copies), each change with its own test.
//!
//! The parts, one concern each:
//! - this file: the API ([`simulate`], [`simulate_at`], [`simulate_within`],
//!   [`rotation_roots`]), its errors, and the call kept for its other
//!   execution;
//! - `engine.rs`: the packed ops, blocking and dataflow ranks, matching by
//!   channel counters, the run loop;
//! - `pack.rs`: a rank's schedule into the engine's flat arrays;
//! - `network.rs`: what moving bytes costs: links, node ports, token
//!   buckets, shared-memory copies, rendezvous timing;
//! - `share.rs`: the reads of one buffer inside a node at once, sharing it
//!   (the model's `shared_reads`);
//! - `events.rs`: the radix heap of pending events;
//! - `traffic.rs`: messages and bytes per tier (node, group, global);
//! - `closed.rs`: the closed form of a call too large to hold (the O(p^2)
//!   ring), said to be one, and the dispatch to the others: `rounds.rs`
//!   (round-based schedules priced round by round on the node ports) and
//!   `pipelined.rs` (segmented chains); [`closed_form`] here adds
//!   `hierarchical` composed of its two phases' simulations;
//! - `model.rs`: the LogGP figures, read from YAML.

mod closed;
mod engine;
mod events;
mod flat;
pub mod model;
mod network;
mod pack;
mod pipelined;
mod rounds;
mod share;
#[cfg(test)]
mod tests;
pub mod traffic;

use std::cell::RefCell;

use colltune_algorithms::registry::build_into;
#[cfg(doc)]
use colltune_algorithms::Plan;
use colltune_algorithms::{
    build_resolved, resolve, AlgoSpec, BuildError, Builder, Collective, Execution, NodeMap, OpKind,
    Shape,
};

pub use closed::ClosedForm;
pub use engine::Engine;
pub use model::{GroupLevel, LevelLink, Link, Model, ModelError};
pub use traffic::{Tier, Traffic};

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("the simulated call did not finish: {0}")]
    Stuck(String),
    #[error(
        "too large to simulate: about {ops} million operations on {ranks} ranks \
         (this simulator holds at most {max} million, some {gb} GB); \
         leave this algorithm out (-a) or simulate fewer ranks"
    )]
    TooLarge {
        ops: u64,
        ranks: usize,
        max: u64,
        gb: u64,
    },
}

/// The most operations (all ranks together) one simulated call may hold:
/// some 64 bytes each, 9.6 GB.
pub const MAX_OPS: u64 = 150_000_000;

fn stuck(r: usize, first: usize, kind: Option<&OpKind>) -> SimError {
    SimError::Stuck(match kind {
        Some(k) => format!("rank {r} at op {first} ({k:?})"),
        None => format!("rank {r} at op {first}"),
    })
}

/// The last call simulated on this thread, packed, kept until it has run in
/// the other execution too (the tuner asks for both in turn) or another call
/// is simulated: at most one call's engine is kept, and it is dropped before
/// another is built.
struct Last {
    c: Collective,
    spec: AlgoSpec,
    bytes: u64,
    root: usize,
    nodes: NodeMap,
    /// The model's nodes per group: the tiers its traffic was counted at.
    per_group: Option<usize>,
    /// Executions it has run in (by `Execution::ALL` order).
    ran: [bool; 2],
    engine: Engine<'static>,
}

thread_local! {
    static LAST: RefCell<Option<Last>> = const { RefCell::new(None) };
}

/// Drops the call [`simulate`] keeps on this thread for its other execution,
/// if any (frees its memory; the next call builds afresh).
pub fn drop_kept_call() {
    LAST.with(|l| l.borrow_mut().take());
}

/// Simulates one call of `spec` with root 0 on `nodes`; microseconds.
pub fn simulate(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    exec: Execution,
    nodes: &NodeMap,
    bytes: u64,
) -> Result<f64, SimError> {
    simulate_at(m, c, spec, exec, nodes, bytes, 0)
}

/// The roots whose times stand for a rotating root (a benchmark's
/// repetition i broadcasting from rank i mod p), each for an equal share of
/// the ranks: every rank up to 8 ranks; on equal nodes of
/// consecutive ranks (`256x64`), rotating the root by a whole node maps the
/// cluster onto itself, so only the root's place inside its node matters:
/// ranks 0..ppn, or 8 of them evenly spread; otherwise 8 ranks evenly
/// spread. Swap has no root: rank 0 alone.
pub fn rotation_roots(c: Collective, nodes: &NodeMap) -> Vec<usize> {
    const MOST: usize = 8;
    let p = nodes.size();
    if c == Collective::Swap || p <= 1 {
        return vec![0];
    }
    if p <= MOST {
        return (0..p).collect();
    }
    let k = nodes.max_ppn();
    let consecutive = nodes.is_uniform()
        && (0..nodes.num_nodes()).all(|n| {
            nodes
                .ranks_on(n)
                .iter()
                .enumerate()
                .all(|(i, &r)| r as usize == n * k + i)
        });
    let span = if consecutive { k } else { p };
    if span <= MOST {
        return (0..span).collect();
    }
    (0..MOST).map(|i| i * span / MOST).collect()
}

/// Simulates one call of `spec` from `root` on `nodes`; microseconds.
///
/// Builds the ranks' schedules one at a time (as [`build_all`] would) and
/// packs each into the engine at once, so that no more than one schedule is
/// ever held. The packed call is kept until it has been simulated in the
/// other execution as well, which then skips building (see [`Last`] and
/// [`drop_kept_call`]).
///
/// [`build_all`]: colltune_algorithms::build_all
pub fn simulate_at(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    exec: Execution,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
) -> Result<f64, SimError> {
    simulate_within(m, c, spec, exec, nodes, bytes, root, f64::INFINITY)
        .map(|t| t.expect("no limit"))
}

/// [`simulate_at`], giving up (`None`) once the call has taken longer than
/// `limit` microseconds: what a tuner that already knows a faster candidate
/// needs to know of a slow one, for a fraction of its cost.
#[allow(clippy::too_many_arguments)]
pub fn simulate_within(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    exec: Execution,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
    limit: f64,
) -> Result<Option<f64>, SimError> {
    simulate_counted(m, c, spec, exec, nodes, bytes, root, limit).map(|(t, _)| t)
}

/// About how many ops (all ranks together) a call of `spec` holds,
/// estimated from 5 ranks' schedules (the median, so that one root's many
/// sends do not count for all): what the engine's memory and time grow
/// with (it runs some 1-3 million ops a second).
pub fn estimated_ops(
    c: Collective,
    spec: &AlgoSpec,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
) -> Result<u64, SimError> {
    let spec = resolve(c, spec).map_err(BuildError::from)?;
    let p = nodes.size();
    let mut b = Builder::new();
    let mut counts = Vec::new();
    for k in 0..5 {
        let rank = (root + 1 + k * p.saturating_sub(1) / 5) % p.max(1);
        let sh = Shape {
            rank,
            size: p,
            root,
            bytes,
            nodes,
        };
        b.clear();
        build_into(c, &spec, &sh, &mut b).map_err(BuildError::from)?;
        counts.push(b.len() as u64);
    }
    counts.sort_unstable();
    Ok(counts[2].saturating_mul(p as u64))
}

/// [`simulate_within`], with the call's messages and bytes per tier
/// (within a node, between nodes of one group, between groups).
#[allow(clippy::too_many_arguments)]
pub fn simulate_counted(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    exec: Execution,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
    limit: f64,
) -> Result<(Option<f64>, Traffic), SimError> {
    let spec = resolve(c, spec).map_err(BuildError::from)?;
    let shape = |rank| Shape {
        rank,
        size: nodes.size(),
        root,
        bytes,
        nodes,
    };
    let which = Execution::ALL
        .iter()
        .position(|&x| x == exec)
        .expect("an execution");
    let per_group = m.group.as_ref().map(|g| g.nodes);
    // Take the kept call; drop it at once unless it is this one.
    let last = LAST.with(|l| l.borrow_mut().take()).filter(|l| {
        l.c == c
            && l.bytes == bytes
            && l.root == root
            && l.spec == spec
            && l.nodes == *nodes
            && l.per_group == per_group
    });
    if last.is_none() && nodes.size() > 1024 {
        // A whole call is held at once: estimate it first.
        let (ops, p) = (estimated_ops(c, &spec, nodes, bytes, root)?, nodes.size());
        if ops > MAX_OPS {
            return Err(SimError::TooLarge {
                ops: ops / 1_000_000,
                ranks: p,
                max: MAX_OPS / 1_000_000,
                gb: MAX_OPS * 64 / 1_000_000_000,
            });
        }
    }
    let (mut engine, mut ran) = match last {
        Some(l) => {
            let mut e = l.engine;
            e.reset(m, exec);
            (e, l.ran)
        }
        None => {
            let mut e = Engine::empty(m, nodes, exec, true);
            // One builder for all ranks: what `build_resolved` does, keeping
            // the builder's memory and taking the dependencies flat.
            let mut b = Builder::new();
            let (mut deps, mut ends) = (Vec::new(), Vec::new());
            for rank in 0..nodes.size() {
                b.clear();
                build_into(c, &spec, &shape(rank), &mut b).map_err(BuildError::from)?;
                let ops = b.finish_flat(&mut deps, &mut ends);
                e.add_rank(ops, (&deps, &ends));
            }
            e.link_channels();
            (e, [false; 2])
        }
    };
    let t = engine.run_inner(limit).map_err(|(r, first)| {
        match build_resolved(c, &spec, &shape(r)) {
            Ok(s) => stuck(r, first, Some(&s.ops[first].kind)),
            Err(b) => b.into(),
        }
    })?;
    ran[which] = true;
    let traffic = engine.traffic();
    if ran.contains(&false) {
        let nodes = nodes.clone();
        LAST.with(|l| {
            *l.borrow_mut() = Some(Last {
                c,
                spec,
                bytes,
                root,
                nodes,
                per_group,
                ran,
                engine,
            })
        });
    }
    Ok(((t <= limit).then_some(t), traffic))
}

const COMPOSED: &str = "composed (not simulated whole): the inter-node phase simulated on \
                        the leaders + the intra-node phase simulated on one node";

/// The closed form of broadcast `spec` from `root` on `nodes`, where the
/// algorithm has one: `scatter_allgather_ring` (`closed.rs`), the
/// round-based `scatter_allgather`, `bine_bdw`, `circulant` (`rounds.rs`),
/// the segmented chains `chain`, `pipeline` (`pipelined.rs`), and
/// `hierarchical` on equal nodes of consecutive ranks, composed of its
/// phases' simulations ([`composed`]). None for any other call.
pub fn closed_form(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
) -> Option<ClosedForm> {
    if c != Collective::Bcast {
        return None;
    }
    if spec.name == "hierarchical" {
        return composed(m, &resolve(c, spec).ok()?, nodes, bytes, root);
    }
    closed::closed_form(m, spec, nodes, bytes, root)
}

/// `hierarchical` on equal nodes of consecutive ranks, composed: its
/// inter-node phase simulated on the leaders alone (one per node, the
/// nodes as they are) plus its intra-node phase simulated on one node,
/// the slower of the root's node and another's (each node's phase is the
/// same and touches nothing outside its node). The blocking execution
/// runs the phases one after the other on every leader, so the sum is its
/// time where the nodes' phases take equally long; the dataflow execution
/// may overlap them (the sum is then an upper bound). Traffic: the
/// leaders' plus every node's.
fn composed(
    m: &Model,
    spec: &AlgoSpec,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
) -> Option<ClosedForm> {
    let (p, k, n) = (nodes.size(), nodes.max_ppn(), nodes.num_nodes());
    let consecutive = (0..p).all(|r| nodes.node_of(r) == r / k.max(1));
    if !nodes.is_uniform() || !consecutive || n < 2 || k < 2 {
        return None;
    }
    let sim = |spec: &AlgoSpec, on: &NodeMap, root: usize| {
        simulate_counted(
            m,
            Collective::Bcast,
            spec,
            Execution::Blocking,
            on,
            bytes,
            root,
            f64::INFINITY,
        )
        .ok()
        .and_then(|(t, tr)| Some((t?, tr)))
    };
    let leaders = NodeMap::blocks(&vec![1; n]).ok()?;
    let (inter, mut traffic) = sim(spec.algo("inter").ok()?, &leaders, root / k)?;
    let one = NodeMap::single(k);
    let intra = spec.algo("intra").ok()?;
    let (t0, tr) = sim(intra, &one, 0)?;
    let (t_root, tr_root) = sim(intra, &one, root % k)?;
    for t in 0..3 {
        traffic.messages[t] += tr.messages[t] * (n as u64 - 1) + tr_root.messages[t];
        traffic.bytes[t] += tr.bytes[t] * (n as u64 - 1) + tr_root.bytes[t];
    }
    drop_kept_call();
    Some(ClosedForm {
        time_us: inter + t0.max(t_root),
        traffic,
        formula: COMPOSED,
    })
}
