//! Closed forms for calls too large to simulate: an algorithm whose
//! messages grow as p^2 (the ring allgather's p - 1 steps on every rank)
//! cannot be held whole at hundreds of thousands of ranks (526,848 ranks:
//! some 5.5 x 10^11 ops), so its time is the alpha-beta formula of its
//! schedule and its traffic is counted from the schedule's structure, in
//! O(p). Said so wherever printed: it is not a simulation (no contention,
//! the slowest link present on every step).
//!
//! ```text
//!   scatter (binomial)            ring allgather, p - 1 steps
//!   0 -> p/2 -> p/4 ... 1         r -> r+1 -> r+2 ... (a chunk a step)
//!   ceil(log2 p) (2o + L)         (p - 1)(2o + L + c G),  c = ceil(n / p)
//!     + (p - 1)/p n G
//! ```
//! `L`, `o`, `G` are the slowest link's the call crosses (between groups,
//! else between nodes, else inside the node); a message above the eager
//! limit pays one `L` more (rendezvous).
//!
//! Only `scatter_allgather_ring` has one; [`closed_form`] says None for
//! every other call.

use colltune_algorithms::topo::{binomial_subtree_size, knomial_tree};
use colltune_algorithms::{resolve, AlgoSpec, Collective, NodeMap};

use super::model::{Link, Model};
use super::pipelined;
use super::rounds::{self, Pricer};
use super::traffic::{Tier, Tiers, Traffic};

/// A call priced by formula, not simulated.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedForm {
    /// Microseconds.
    pub time_us: f64,
    /// Messages and bytes per tier, counted from the schedule's structure.
    pub traffic: Traffic,
    /// The formula, in words (for a table's note).
    pub formula: &'static str,
}

const RING: &str = "closed form (not simulated): ceil(log2 p)(2o + L) + (p-1)/p n G \
                    + (p-1)(2o + L + ceil(n/p) G), slowest link present";

const ROUNDS: &str = "closed form (not simulated): synchronous rounds, each the most of its \
                      messages' 2o + L + m G and its busiest node port's sum of m G";

const PIPELINED: &str = "closed form (not simulated): the first segment's arrival at the \
                         chains' ends + (n - 1) x the slowest rank's or node port's period";

/// The closed form of a broadcast of `spec` from `root` on `nodes`, where
/// the algorithm has one (`scatter_allgather_ring`, and round by round
/// `scatter_allgather`, `bine_bdw`, `circulant`: `rounds.rs`; the
/// segmented chains `chain` and `pipeline`: `pipelined.rs`; `hierarchical`
/// is composed in `sim/mod.rs`).
pub(super) fn closed_form(
    m: &Model,
    spec: &AlgoSpec,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
) -> Option<ClosedForm> {
    let c = Collective::Bcast;
    let p = nodes.size();
    let by_rounds = |formula, f: &dyn Fn(&mut Pricer)| {
        let mut pr = Pricer::new(m, nodes, root % p.max(1));
        if p > 1 && bytes > 0 {
            f(&mut pr);
        }
        let (time_us, traffic) = pr.finish();
        Some(ClosedForm {
            time_us,
            traffic,
            formula,
        })
    };
    match spec.name.as_str() {
        "scatter_allgather_ring" => {}
        "scatter_allgather" => return by_rounds(ROUNDS, &|pr| rounds::doubling(pr, p, bytes)),
        "bine_bdw" => return by_rounds(ROUNDS, &|pr| rounds::bine_bdw(pr, p, bytes)),
        "chain" | "pipeline" => {
            let spec = resolve(c, spec).ok()?;
            let seg = spec.int("segment").ok()?;
            let fanout = if spec.name == "chain" {
                spec.int("fanout").ok()? as usize
            } else {
                1
            };
            let (time_us, traffic) = pipelined::chain(m, nodes, root, bytes, seg, fanout);
            return Some(ClosedForm {
                time_us,
                traffic,
                formula: PIPELINED,
            });
        }
        "circulant" => {
            let seg = resolve(c, spec).ok()?.int("segment").ok()?;
            return by_rounds(ROUNDS, &|pr| rounds::circulant(pr, p, bytes, seg));
        }
        _ => return None,
    }
    if p <= 1 || bytes == 0 {
        // Nothing to send: no op at all (as the schedules build none).
        return Some(ClosedForm {
            time_us: 0.0,
            traffic: Traffic::default(),
            formula: RING,
        });
    }
    let tiers = Tiers::new(nodes, m.node_groups(nodes.num_nodes()));
    let tier = |a: usize, b: usize| tiers.of(a, b);
    let chunk = bytes.div_ceil(p as u64);
    let at = |c: usize| (c as u64 * chunk).min(bytes);
    let real = |vr: usize| (vr + root) % p;
    let mut traffic = Traffic::default();
    let mut slowest = Tier::Node;
    // The scatter: every relative rank but 0 gets its subtree's chunks from
    // its parent (itself with its lowest set bit cleared), if any bytes.
    for vr in 1..p {
        let parent = knomial_tree(vr, p, 2).parent.expect("a parent");
        let len = at(vr + binomial_subtree_size(vr, p)) - at(vr);
        if len > 0 {
            let t = tier(real(parent), real(vr));
            traffic.add(t, len);
            slowest = slowest.max(t);
        }
    }
    // The ring: from each rank to its right, every chunk but its right
    // neighbour's own, one message per chunk that holds bytes.
    let full = bytes.div_ceil(chunk) as usize;
    for vr in 0..p {
        let t = tier(real(vr), real((vr + 1) % p));
        let right = (vr + 1) % p;
        let own = at(right + 1) - at(right);
        traffic.messages[t as usize] += (full - usize::from(own > 0)) as u64;
        traffic.bytes[t as usize] += bytes - own;
        slowest = slowest.max(t);
    }
    let link = m.link_at(slowest);
    let alpha = |l: &Link, n: u64| l.alpha(n);
    let steps = (p as f64).log2().ceil();
    let pf = p as f64;
    let time_us = steps * alpha(link, chunk)
        + (pf - 1.0) / pf * bytes as f64 * link.per_byte()
        + (pf - 1.0) * (alpha(link, chunk) + chunk as f64 * link.per_byte_for(chunk));
    Some(ClosedForm {
        time_us,
        traffic,
        formula: RING,
    })
}

#[cfg(test)]
mod tests {
    use colltune_algorithms::{AlgoSpec, NodeMap};

    use super::super::tests::{model, simulated};
    use super::super::GroupLevel;
    use super::closed_form;

    #[test]
    fn the_rings_closed_form_counts_what_the_simulator_counts() {
        let mut grouped = model();
        grouped.group = Some(GroupLevel {
            nodes: 2,
            link: grouped.inter.clone(),
            global_gbs: None,
        });
        let ring = AlgoSpec::parse("scatter_allgather_ring").unwrap();
        for m in [model(), grouped] {
            for layout in ["1", "7", "2x3", "4x4", "3+1+2+5", "8x1"] {
                let nodes = NodeMap::parse(layout).unwrap();
                for (bytes, root) in [(0, 0), (5, 1), (1000, 2), (1 << 20, 0)] {
                    let root = root % nodes.size();
                    let f = closed_form(&m, &ring, &nodes, bytes, root).expect("the ring has one");
                    let (t, traffic) = simulated(&m, &ring, &nodes, bytes, root);
                    let what = format!("{layout} {bytes} B root {root}");
                    assert_eq!(f.traffic, traffic, "{what}");
                    // Not a simulation: within a factor of the simulated
                    // time (no contention, the slowest link every step).
                    assert!(
                        f.time_us <= 3.0 * t && t <= 3.0 * f.time_us,
                        "{what}: closed form {} us, simulated {t} us",
                        f.time_us
                    );
                }
            }
        }
        let binomial = AlgoSpec::parse("binomial").unwrap();
        let one = NodeMap::single(4);
        assert!(closed_form(&model(), &binomial, &one, 8, 0).is_none());
    }
}
