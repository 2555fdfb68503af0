//! Round-by-round closed forms, for calls whose event count is too large
//! to simulate in seconds: the round-based schedules (scatter-allgather by
//! recursive doubling, `bine_bdw`, `circulant`) priced as synchronous
//! rounds, with each node's network port as the one shared resource.
//!
//! ```text
//!   round i:  every message of the round, m bytes on link l
//!             msg(m)   = 2o + L (+ L rendezvous) + m G         (its own cost)
//!             port(x)  = sum of m G over x's messages leaving  (one node's
//!                        (or entering) node x, + 2o + L         port, in turn)
//!   time    = sum over rounds of max(max msg(m), max port(x))
//! ```
//! Each rank's messages are enumerated from the algorithm's own structure
//! (`Bine::steps`, `Circulant::recv_all`, the binomial scatter), in
//! O(p log p) or O(p x rounds), never as events: a few seconds at 526,848
//! ranks where the event simulation takes minutes. It is not a simulation:
//! the rounds do not overlap (a rank that could start early waits), and
//! the copies inside a node do not contend. The traffic is counted
//! message by message, so it is the schedules' own (a test holds it equal
//! to the simulator's, and the time within a stated factor).

use colltune_algorithms::bcast::bine::{Bine, Fill, Span};
use colltune_algorithms::bcast::circulant::Circulant;
use colltune_algorithms::topo::binomial_subtree_size;
use colltune_algorithms::NodeMap;

use super::model::Model;
use super::traffic::{Tier, Tiers, Traffic};

/// One round's costs so far: the largest message cost and, per node, its
/// ports' busy time out and in.
struct Round {
    msg: f64,
    alpha: f64,
    out: Vec<f64>,
    inn: Vec<f64>,
}

/// Rounds being priced: messages are added to a round by number, in any
/// order; rounds before `closed` are folded into `time_us`.
pub(super) struct Pricer<'a> {
    m: &'a Model,
    nodes: &'a NodeMap,
    tiers: Tiers<'a>,
    root: usize,
    p: usize,
    rounds: Vec<Option<Round>>,
    closed: usize,
    pub(super) time_us: f64,
    pub(super) traffic: Traffic,
}

impl<'a> Pricer<'a> {
    pub(super) fn new(m: &'a Model, nodes: &'a NodeMap, root: usize) -> Self {
        Pricer {
            m,
            nodes,
            tiers: Tiers::new(nodes, m.node_groups(nodes.num_nodes())),
            root,
            p: nodes.size(),
            rounds: Vec::new(),
            closed: 0,
            time_us: 0.0,
            traffic: Traffic::default(),
        }
    }

    /// A message of `len` bytes from relative rank `from` to `to` in round
    /// `round` (nothing if empty).
    pub(super) fn send(&mut self, round: usize, from: usize, to: usize, len: u64) {
        if len == 0 {
            return;
        }
        debug_assert!(round >= self.closed, "round {round} already priced");
        let (a, b) = ((from + self.root) % self.p, (to + self.root) % self.p);
        let (na, nb) = (self.nodes.node_of(a), self.nodes.node_of(b));
        let tier = self.tiers.of(a, b);
        self.traffic.add(tier, len);
        let link = self.m.link_at(tier);
        let (al, busy) = (link.alpha(len), len as f64 * link.per_byte_for(len));
        if self.rounds.len() <= round {
            self.rounds.resize_with(round + 1, || None);
        }
        let n = self.nodes.num_nodes();
        let r = self.rounds[round].get_or_insert_with(|| Round {
            msg: 0.0,
            alpha: 0.0,
            out: Vec::new(),
            inn: Vec::new(),
        });
        r.msg = r.msg.max(al + busy);
        if tier != Tier::Node {
            if r.out.is_empty() {
                r.out = vec![0.0; n];
                r.inn = vec![0.0; n];
            }
            r.alpha = r.alpha.max(al);
            r.out[na] += busy;
            r.inn[nb] += busy;
        }
    }

    /// Prices every round before `round` (no message may join them later).
    pub(super) fn close_before(&mut self, round: usize) {
        while self.closed < round.min(self.rounds.len()) {
            if let Some(r) = self.rounds[self.closed].take() {
                let port = r.out.iter().chain(&r.inn).fold(0f64, |a, &b| a.max(b));
                let port = if port > 0.0 { port + r.alpha } else { 0.0 };
                self.time_us += r.msg.max(port);
            }
            self.closed += 1;
        }
    }

    /// The total: every round priced.
    pub(super) fn finish(mut self) -> (f64, Traffic) {
        self.close_before(usize::MAX);
        (self.time_us, self.traffic)
    }
}

/// Bytes of chunks `[c0, c1)` of `n` bytes cut into p chunks.
fn chunks(n: u64, p: usize, c0: usize, c1: usize) -> u64 {
    let chunk = n.div_ceil(p as u64);
    let at = |c: usize| (c as u64 * chunk).min(n);
    at(c1.max(c0)) - at(c0)
}

/// `scatter_allgather`: the binomial scatter (one round per distance, the
/// farthest first, as the root posts them), then recursive doubling among
/// the largest power of two pp <= p (the p - pp others hand in their chunk
/// first and get the rest last).
pub(super) fn doubling(pr: &mut Pricer, p: usize, n: u64) {
    let s = p.next_power_of_two().trailing_zeros() as usize;
    let mut round = 0;
    for j in (0..s).rev() {
        let d = 1 << j;
        for vr in (0..p).step_by(2 * d) {
            let c = vr + d;
            if c < p {
                pr.send(
                    round,
                    vr,
                    c,
                    chunks(n, p, c, c + binomial_subtree_size(c, p)),
                );
            }
        }
        round += 1;
    }
    let pp = 1usize << (usize::BITS - 1 - p.leading_zeros());
    for vr in pp..p {
        pr.send(round, vr, vr - pp, chunks(n, p, vr, vr + 1));
    }
    round += 1;
    let mut mask = 1;
    while mask < pp {
        for vr in 0..pp {
            let (partner, g) = (vr ^ mask, vr & !(mask - 1));
            pr.send(round, vr, partner, chunks(n, p, g, g + mask));
            let (x0, x1) = ((pp + g).min(p), (pp + g + mask).min(p));
            pr.send(round, vr, partner, chunks(n, p, x0, x1));
        }
        round += 1;
        mask <<= 1;
    }
    for vr in 0..p - pp {
        let extra = vr + pp;
        pr.send(round, vr, extra, chunks(n, p, 0, extra));
        pr.send(round, vr, extra, chunks(n, p, extra + 1, p));
    }
}

fn contains(s: Span, x: i64) -> bool {
    s.0 <= x && x <= s.1
}

/// `bine_bdw`: the scatter down Bine's steps (round j: step j), then the
/// allgather up them (each step a round of mirror exchanges, then one round
/// per doubling of the holders where the window cuts the halves unequally),
/// rank by rank as `bcast::bine::build_bdw` builds them.
pub(super) fn bine_bdw(pr: &mut Pricer, p: usize, n: u64) {
    let bine = Bine::new(p);
    let s = p.next_power_of_two().trailing_zeros() as usize;
    let bytes = |sp: Span| chunks(n, p, bine.block(sp.0), bine.block(sp.1) + 1);
    for vr in 0..p {
        let d = bine.offset(vr);
        let steps = bine.steps(d);
        for (j, st) in steps.iter().enumerate() {
            if let (Some(q), true) = (st.q, st.h == d) {
                let sub = bine.clip(st.other()).expect("q is in it");
                pr.send(j, vr, bine.vrank(q), bytes(sub));
            }
        }
        // Allgather step a (the tree's last step first): rounds from
        // s + a (s + 1), the exchange, then the doublings.
        for (a, st) in steps.iter().rev().enumerate() {
            let base = s + a * (s + 1);
            let Some((own, other)) = bine.parts(st, d) else {
                continue;
            };
            let (mine, theirs) = (bytes(own), bytes(other));
            let mirror = st.l + st.r - d;
            if contains(other, mirror) && mirror != st.h {
                pr.send(base, vr, bine.vrank(mirror), mine);
            }
            if theirs == 0 {
                continue;
            }
            for f in st.fill(d, own, other) {
                if let Fill::To { round, peer } = f {
                    pr.send(base + round as usize, vr, bine.vrank(peer), theirs);
                }
            }
        }
    }
}

/// `circulant`: n - 1 + q rounds; in round i (k = i mod q) each rank r but
/// the root receives block `recv[k] + offset` from r - skip[k] when it is
/// not negative (a block past the last is the last), round by round over
/// the ranks' receive schedules (`Circulant::recv_all`: O(log p) a rank).
pub(super) fn circulant(pr: &mut Pricer, p: usize, n: u64, segment: u64) {
    let block = if segment == 0 { n } else { segment };
    let blocks = n.div_ceil(block);
    let c = Circulant::new(p);
    let recv = c.recv_all();
    let len = |b: i64| {
        let o = b.min(blocks as i64 - 1) as u64 * block;
        block.min(n - o)
    };
    // A round where every rank but the root gets a whole block costs what
    // the last such round of its k cost: priced once per k.
    let mut seen: Vec<Option<(f64, Traffic)>> = vec![None; c.q];
    for (i, (k, offset)) in c.rounds(blocks).enumerate() {
        let whole = (1..p).all(|r| {
            let b = recv.at(r, k) + offset;
            b >= 0 && len(b) == block
        });
        if let (true, Some((dt, tr))) = (whole, &seen[k]) {
            pr.time_us += dt;
            for t in 0..3 {
                pr.traffic.messages[t] += tr.messages[t];
                pr.traffic.bytes[t] += tr.bytes[t];
            }
            pr.closed = i + 1;
            continue;
        }
        let (t0, tr0) = (pr.time_us, pr.traffic);
        for vr in 1..p {
            let b = recv.at(vr, k) + offset;
            if b >= 0 {
                pr.send(i, (vr + p - c.skip[k]) % p, vr, len(b));
            }
        }
        pr.close_before(i + 1);
        if whole {
            let mut tr = pr.traffic;
            for t in 0..3 {
                tr.messages[t] -= tr0.messages[t];
                tr.bytes[t] -= tr0.bytes[t];
            }
            seen[k] = Some((pr.time_us - t0, tr));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use colltune_algorithms::{AlgoSpec, Collective, NodeMap};

    use super::super::closed_form;
    use super::super::model::Model;
    use super::super::tests::simulated;

    fn shipped(name: &str) -> Model {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tuning-tables/models");
        Model::load(&dir.join(name)).expect("a shipped model")
    }

    /// The closed forms (round by round, the segmented chains, the
    /// hierarchical composition) against the event simulation where both
    /// run (64 to 4,096 ranks, three models, 64 KiB and 1 MiB): the same
    /// messages and bytes per tier, and the time within 1.35x either way
    /// (0.79-1.33x seen; the rounds do not overlap, the copies inside a
    /// node do not contend: not a simulation), except `bine_bdw` and
    /// `scatter_allgather` on a rank count that is not a power of two (65),
    /// whose extra rounds overlap the next ones in the simulation: there
    /// the closed form is up to 2.2x the simulated time (1.0-2.1x seen,
    /// pessimistic), never below 1/1.35.
    #[test]
    fn the_round_closed_forms_count_what_the_simulator_counts() {
        const TOL: f64 = 1.35;
        const CUT: f64 = 2.2;
        let models = [
            shipped("slingshot11-epyc-zen3.yaml"),
            shipped("leonardo-dragonfly.yaml"),
            shipped("ib-hdr200-epyc-zen3.yaml"),
        ];
        let (mut worst, mut bad) = (1f64, Vec::new());
        let names = [
            "scatter_allgather",
            "bine_bdw",
            "circulant",
            "chain",
            "pipeline",
            "hierarchical",
            "hierarchical(intra=shm)",
        ];
        for name in names {
            let spec = AlgoSpec::parse(name).unwrap();
            for m in &models {
                for layout in ["64", "8x8", "5x13", "64x16", "256x16"] {
                    let nodes = NodeMap::parse(layout).unwrap();
                    for (bytes, root) in [(65536, 0), (1 << 20, 3)] {
                        let Some(f) = closed_form(m, Collective::Bcast, &spec, &nodes, bytes, root)
                        else {
                            // Composition needs several nodes.
                            assert!(name.starts_with("hierarchical") && nodes.num_nodes() == 1);
                            continue;
                        };
                        let (t, traffic) = simulated(m, &spec, &nodes, bytes, root);
                        let what = format!("{name} {} {layout} {bytes} B root {root}", m.name);
                        assert_eq!(f.traffic, traffic, "{what}");
                        let r = f.time_us / t;
                        println!(
                            "{what}: closed {:.1} us, simulated {t:.1} us, {r:.3}",
                            f.time_us
                        );
                        let cut = matches!(name, "bine_bdw" | "scatter_allgather")
                            && !nodes.size().is_power_of_two();
                        if r < 1.0 / TOL || r > if cut { CUT } else { TOL } {
                            bad.push(format!("{what}: {r:.3}"));
                        }
                        if !cut {
                            worst = worst.max(r).max(1.0 / r);
                        }
                    }
                }
            }
        }
        assert!(bad.is_empty(), "outside the tolerance: {bad:#?}");
        println!("worst ratio (uncut) {worst:.3}");
    }
}
