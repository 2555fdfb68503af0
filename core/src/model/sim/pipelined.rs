//! The closed form of a segmented chain (`chain`, `pipeline`): n segments
//! down a tree of chains, the first reaching the end of the longest chain
//! after one hop per rank, the others following one period apart.
//!
//! ```text
//!   0 --> 1 --> 2 --> ... --> p-1      segment k leaves rank r at about
//!   |  hop  |  hop  |                  arrival(r) + k * period
//!   time = max over ranks of arrival(r) + (n - 1) * period
//!   hop(r -> c)  = 2o + L (+ L rendezvous) + s G         on their link
//!   period       = the most of: a rank's receive and sends of one segment
//!                  (its receive's o, each send's o + s G, the longest
//!                  send's 2o + L (+ L) + s G), and a node port's
//!                  bytes of one segment (sum of s G over its messages
//!                  leaving or entering the node)
//! ```
//! O(p), not O(p n) events: the chain's 8.4 million messages at 526,848
//! ranks take the event simulation 6-8 s of CPU. Not a simulation: a rank
//! that waits for a slower neighbour is not seen beyond the period; a test
//! holds it against the simulation where both run.

use colltune_algorithms::topo::chain_tree;
use colltune_algorithms::NodeMap;

use super::model::{Link, Model};
use super::traffic::{Tier, Tiers, Traffic};

/// `(time, traffic)` of a broadcast of `n` bytes in segments of `segment`
/// (0: one) down the chains of `chain_tree(fanout)` from `root`.
pub(super) fn chain(
    m: &Model,
    nodes: &NodeMap,
    root: usize,
    n: u64,
    segment: u64,
    fanout: usize,
) -> (f64, Traffic) {
    let p = nodes.size();
    let mut traffic = Traffic::default();
    if p <= 1 || n == 0 {
        return (0.0, traffic);
    }
    let s = if segment == 0 { n } else { segment.min(n) };
    let nseg = n.div_ceil(s);
    let last = n - (nseg - 1) * s;
    let tiers = Tiers::new(nodes, m.node_groups(nodes.num_nodes()));
    let tier = |a: usize, b: usize| tiers.of(a, b);
    let link = |t: Tier| m.link_at(t);
    let hop = |l: &Link, len: u64| l.alpha(len) + len as f64 * l.per_byte_for(len);
    let real = |vr: usize| (vr + root) % p;
    let (mut out, mut inn) = (vec![0f64; nodes.num_nodes()], vec![0f64; nodes.num_nodes()]);
    let mut arrival = vec![0f64; p];
    let (mut period, mut end) = (0f64, 0f64);
    // Relative ranks in order: a parent comes before its children.
    for vr in 0..p {
        let node = chain_tree(vr, p, fanout);
        let (mut t, mut busy, mut flight) = (arrival[vr], 0.0, 0f64);
        if let Some(parent) = node.parent {
            busy += link(tier(real(parent), real(vr))).overhead_us;
        }
        for &c in &node.children {
            let tr = tier(real(vr), real(c));
            let l = link(tr);
            traffic.messages[tr as usize] += nseg;
            traffic.bytes[tr as usize] += n;
            t += hop(l, s) - l.latency_us;
            arrival[c] = t + l.latency_us;
            // The sends follow one another; their flights overlap.
            let (own, fly) = (l.overhead_us + s as f64 * l.per_byte_for(s), hop(l, s));
            busy += own;
            flight = flight.max(fly - own);
            if tr != Tier::Node {
                let g = s as f64 * l.per_byte_for(s);
                out[nodes.node_of(real(vr))] += g;
                inn[nodes.node_of(real(c))] += g;
            }
        }
        period = period.max(busy + flight);
        end = end.max(arrival[vr]);
    }
    let port = out.iter().chain(&inn).fold(0f64, |a, &b| a.max(b));
    // The last segment is `last` bytes: the period's bytes scale down.
    let tail = if nseg > 1 {
        (nseg - 2) as f64 * period.max(port) + period.max(port) * (last as f64 / s as f64)
    } else {
        0.0
    };
    (end + tail, traffic)
}
