//! The parameters `calibrate --collectives` fits, as data: each a factor
//! on a figure of a base model (the ping-pong's fit, a model file, or
//! [`generic`]), found in log2 units (0: the base's figure).
//!
//! ```text
//!   knob              what it scales                     what shows it
//!   node-overhead     o of every link inside a node      a root's sends one after another
//!   node-latency      L of every link inside a node      each forwarding hop of a tree
//!   node-bandwidth    1/G inside a node, copy rate       large messages inside a node
//!   memory-bandwidth  copies into one memory domain      many copies at once (large, many ranks)
//!   node-load         a node's ranks busy in one call    the cost of a message as ranks grow
//!   net-overhead      o between nodes (and groups)       sends between nodes
//!   net-gap           g of a node's port, in and out     a node's ranks sending (receiving)
//!                     (shared by the node's ranks)       across nodes at once
//!   net-latency       L between nodes (and groups)       hops between nodes
//!   net-bandwidth     1/G between nodes (and groups)     large messages between nodes
//!   top-bandwidth     a group's links to the others      many nodes' messages between groups
//!                     together (contention)              at once (a dragonfly's global links)
//! ```
//!
//! `net-overhead` and `net-gap` are the two halves of what a message
//! between nodes costs beyond its flight: `o` is each rank's own (its CPU,
//! at both ends), `g` the node's (its port holds every message at least `g`
//! each way, whichever rank sends or receives it). One rank a node cannot
//! tell them apart where a rank sends one message after another; a node's
//! ranks sending at once can (each pays `o` alone, they queue for `g`).
//! A base without a gap (a ping-pong cannot see one) has nothing to scale,
//! so `net-gap` moves `g + o`: its figure is `(g + o) 2^x - o`, at least 0
//! (the base's `g` at x = 0; x = 1 adds one `o`, x = 3 seven).

use crate::model::levels::INTRA_LOAD_PER_RANK;
use crate::model::sim::{Link, Model};

/// One fitted parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    NodeOverhead,
    NodeLatency,
    NodeBandwidth,
    MemoryBandwidth,
    NodeLoad,
    NetOverhead,
    NetGap,
    NetLatency,
    NetBandwidth,
    TopBandwidth,
}

/// A knob's name and what it means, for the report.
pub struct KnobInfo {
    pub knob: Knob,
    pub name: &'static str,
    pub what: &'static str,
    /// A refinement: fitted after the others, and kept only where it
    /// lowers the fit's error by [`super::PINNED`] or more beyond them
    /// (the nested model must earn its figure).
    pub refines: bool,
}

/// Every knob, in the order the fit tries them.
pub const KNOBS: &[KnobInfo] = &[
    KnobInfo {
        knob: Knob::NodeOverhead,
        name: "node-overhead",
        what: "a message's CPU cost inside a node (o)",
        refines: false,
    },
    KnobInfo {
        knob: Knob::NodeLatency,
        name: "node-latency",
        what: "a forwarding hop inside a node (L)",
        refines: false,
    },
    KnobInfo {
        knob: Knob::NodeBandwidth,
        name: "node-bandwidth",
        what: "one copy's rate inside a node",
        refines: false,
    },
    KnobInfo {
        knob: Knob::MemoryBandwidth,
        name: "memory-bandwidth",
        what: "what concurrent copies into one memory domain move together",
        refines: false,
    },
    KnobInfo {
        knob: Knob::NodeLoad,
        name: "node-load",
        what: "what each rank of a busy node adds to a message inside it",
        refines: false,
    },
    KnobInfo {
        knob: Knob::NetOverhead,
        name: "net-overhead",
        what: "a message's CPU cost between nodes (o)",
        refines: false,
    },
    KnobInfo {
        knob: Knob::NetGap,
        name: "net-gap",
        what: "what a node's network port holds per message, in and out, shared by its ranks (g; the factor is on g + o)",
        refines: true,
    },
    KnobInfo {
        knob: Knob::NetLatency,
        name: "net-latency",
        what: "a forwarding hop between nodes (L)",
        refines: false,
    },
    KnobInfo {
        knob: Knob::NetBandwidth,
        name: "net-bandwidth",
        what: "a node's network rate",
        refines: false,
    },
    KnobInfo {
        knob: Knob::TopBandwidth,
        name: "top-bandwidth",
        what: "all of one group's links to the other groups together (contention on the top level)",
        refines: false,
    },
];

/// `x` (log2 units, one per [`KNOBS`] entry) applied to `base`.
pub fn apply(base: &Model, x: &[f64]) -> Model {
    let mut m = base.clone();
    for (info, &v) in KNOBS.iter().zip(x) {
        if v == 0.0 {
            continue;
        }
        let f = v.exp2();
        match info.knob {
            Knob::NodeOverhead => node_links(&mut m, |l| l.overhead_us *= f),
            Knob::NodeLatency => node_links(&mut m, |l| l.latency_us *= f),
            Knob::NodeBandwidth => {
                node_links(&mut m, |l| scale_rate(l, f));
                m.copy_gbs *= f;
            }
            Knob::MemoryBandwidth => {
                m.memory_copy_gbs = Some(memory_default(base) * f);
            }
            Knob::NodeLoad => {
                m.intra_load_per_rank =
                    Some(base.intra_load_per_rank.unwrap_or(INTRA_LOAD_PER_RANK) * f);
            }
            Knob::NetOverhead => net_links(&mut m, |l| l.overhead_us *= f),
            Knob::NetGap => {
                m.inter.gap_us = gap(&base.inter, f);
                if let (Some(g), Some(b)) = (m.group.as_mut(), base.group.as_ref()) {
                    g.link.gap_us = gap(&b.link, f);
                }
            }
            Knob::NetLatency => net_links(&mut m, |l| l.latency_us *= f),
            Knob::NetBandwidth => net_links(&mut m, |l| scale_rate(l, f)),
            Knob::TopBandwidth => {
                // A base without a limit on a group's links starts at all
                // its nodes' ports at once (no contention beyond them);
                // x = 0 keeps the base as it is.
                let inter = base.inter.bandwidth_gbs;
                if let Some(g) = m.group.as_mut().filter(|_| f != 1.0) {
                    let full = g.nodes as f64 * inter;
                    g.global_gbs = Some(g.global_gbs.unwrap_or(full) * f);
                }
            }
        }
    }
    m
}

/// Whether a knob can change anything on `base` (a group level's rate
/// needs a group level; a gap, a base with a cost per message between
/// nodes).
pub fn applies(base: &Model, k: Knob) -> bool {
    match k {
        Knob::TopBandwidth => base.group.is_some(),
        Knob::NetGap => base.inter.gap_us + base.inter.overhead_us > 0.0,
        _ => true,
    }
}

/// `l`'s gap with `net-gap` at factor `f`: `(g + o) f - o`, at least 0
/// (module text).
fn gap(l: &Link, f: f64) -> f64 {
    ((l.gap_us + l.overhead_us) * f - l.overhead_us).max(0.0)
}

fn scale_rate(l: &mut Link, f: f64) {
    l.bandwidth_gbs *= f;
    if let Some(e) = l.eager_bandwidth_gbs.as_mut() {
        *e *= f;
    }
}

/// `m` with the rates of `base`'s links inside a node (`node-bandwidth`
/// moves the local copy alone where the data has no two ranks on a node).
pub fn keep_node_rates(m: &mut Model, base: &Model) {
    let rates = |to: &mut Link, from: &Link| {
        to.bandwidth_gbs = from.bandwidth_gbs;
        to.eager_bandwidth_gbs = from.eager_bandwidth_gbs;
    };
    rates(&mut m.intra, &base.intra);
    for (to, from) in m.levels.iter_mut().zip(&base.levels) {
        rates(&mut to.link, &from.link);
    }
}

fn node_links(m: &mut Model, f: impl Fn(&mut Link)) {
    f(&mut m.intra);
    for l in &mut m.levels {
        f(&mut l.link);
    }
}

fn net_links(m: &mut Model, f: impl Fn(&mut Link)) {
    f(&mut m.inter);
    if let Some(g) = m.group.as_mut() {
        f(&mut g.link);
    }
}

/// The memory domain's rate a model without one starts from: its fastest
/// link inside a node.
fn memory_default(base: &Model) -> f64 {
    base.memory_copy_gbs.unwrap_or_else(|| {
        base.levels
            .iter()
            .map(|l| l.link.bandwidth_gbs)
            .fold(base.intra.bandwidth_gbs, f64::max)
    })
}

/// The figure a knob sets, in words, on model `m` (for the report).
pub fn figure(m: &Model, k: Knob) -> String {
    let node = |f: fn(&Link) -> f64| {
        m.levels
            .iter()
            .map(|l| format!("{} {:.3}", l.shares, f(&l.link)))
            .chain([format!("node {:.3}", f(&m.intra))])
            .collect::<Vec<_>>()
            .join(", ")
    };
    let net = |f: fn(&Link) -> f64| {
        let mut s = format!("network {:.3}", f(&m.inter));
        if let Some(g) = &m.group {
            s += &format!(", between groups {:.3}", f(&g.link));
        }
        s
    };
    match k {
        Knob::NodeOverhead => format!("o (us): {}", node(|l| l.overhead_us)),
        Knob::NodeLatency => format!("L (us): {}", node(|l| l.latency_us)),
        Knob::NodeBandwidth => format!("GB/s: {}", node(|l| l.bandwidth_gbs)),
        Knob::MemoryBandwidth => match m.memory_copy_gbs {
            Some(g) => format!("{g:.2} GB/s per memory domain"),
            None => "no limit".into(),
        },
        Knob::NodeLoad => match m.intra_load_per_rank {
            Some(k) => format!("{:.2}% per rank beyond two", 100.0 * k),
            None => "none".into(),
        },
        Knob::NetOverhead => format!("o (us): {}", net(|l| l.overhead_us)),
        Knob::NetGap => format!("g (us): {}", net(|l| l.gap_us)),
        Knob::NetLatency => format!("L (us): {}", net(|l| l.latency_us)),
        Knob::NetBandwidth => format!("GB/s: {}", net(|l| l.bandwidth_gbs)),
        Knob::TopBandwidth => match &m.group {
            None => "no group level".into(),
            Some(g) => match g.global_gbs {
                Some(x) => format!("{x:.1} GB/s, a group's links to the others together"),
                None => "no limit on a group's links beyond its nodes' ports".into(),
            },
        },
    }
}

/// The model a fit starts from when it is given neither a ping-pong nor a
/// model: round figures of a commodity cluster (shared memory inside a
/// node, a 100 Gb/s-class network between nodes), there only to be moved
/// by the fit; a figure the data cannot pin stays at it, and the report
/// says so.
pub fn generic() -> Model {
    let link = |l: f64, o: f64, gbs: f64, eager: u64| Link {
        latency_us: l,
        overhead_us: o,
        gap_us: 0.0,
        bandwidth_gbs: gbs,
        eager_limit: eager,
        eager_bandwidth_gbs: None,
        burst_bytes: None,
        rendezvous_first_bytes: None,
    };
    Model {
        name: "generic".into(),
        source: "colltune's generic starting model (round figures, not measured)".into(),
        intra: link(0.1, 0.15, 5.0, 4096),
        inter: link(1.0, 0.3, 12.0, 65536),
        copy_gbs: 5.0,
        levels: Vec::new(),
        memory_copy_gbs: None,
        intra_load_per_rank: Some(INTRA_LOAD_PER_RANK),
        shared_reads: false,
        shared_ports: false,
        group: None,
        fit_error: None,
    }
}
