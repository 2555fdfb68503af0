//! The simulator: runs the very schedules the MPI transport runs (the same
//! [`Plan`]s, in the blocking or the dataflow execution) on a LogGP network
//! model with contention, as a discrete-event simulation. MPI-free.
//!
//! What a message costs: the sender's CPU is busy `o`; between nodes the
//! bytes then occupy the sender node's outgoing link for `n G` (and at least
//! `g`), fly for `L`, and occupy the receiver node's incoming link for `n G`
//! (a node's messages queue on its link: contention); inside a node they take
//! `L + n G` of the shared-memory link. Messages up to the eager limit leave
//! at once; larger ones wait for their receive plus one `L` (rendezvous). A
//! receive completes `o` after both it is posted and its data has arrived.
//! Copies take `n / copy bandwidth`; window synchronisation completes the
//! puts it closes. The call's time is the slowest rank's finish.

pub mod model;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

use colltune_algorithms::{
    build_all, AlgoSpec, BuildError, Collective, Execution, NodeMap, OpKind, Plan, Post,
};

pub use model::{Link, Model, ModelError};

/// A simulated time with a total order (times are never NaN; `total_cmp` keeps the heap sound anyway).
#[derive(Clone, Copy, Debug)]
struct T(f64);
impl PartialEq for T {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o).is_eq()
    }
}
impl Eq for T {}
impl PartialOrd for T {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for T {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Wake,
    Done(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Pending,
    Active,
    Done,
}

struct PostedSend {
    rank: u32,
    op: u32,
    t_post: f64,
    bytes: u64,
    /// Eager: when the data has arrived at the receiver.
    arrival: Option<f64>,
}

struct PostedRecv {
    rank: u32,
    op: u32,
    t_post: f64,
}

#[derive(Default)]
struct Chan {
    src: u32,
    tag: u8,
    sends: VecDeque<PostedSend>,
    recvs: VecDeque<PostedRecv>,
}

struct RankState {
    st: Vec<St>,
    cpu: f64,
    pc: usize,
    waiting: Vec<u32>,
    remaining: Vec<u32>,
    ready: BTreeSet<u32>,
    chan_next: Vec<u32>,
    done: usize,
    finish: f64,
    /// Puts started and not yet closed: (op, target, inject end, arrival).
    puts: Vec<(u32, u32, f64, f64)>,
    fences: usize,
    exposed: Option<f64>,
    /// EndAccess times of origins, as seen by this target.
    accessed: Vec<(u32, f64)>,
    /// Blocked sync op waiting on peers: (op, entered at).
    blocked_sync: Option<(u32, f64)>,
}

/// One simulated call.
pub struct Engine<'a> {
    m: &'a Model,
    node_of: Vec<u32>,
    nodes: usize,
    plans: &'a [Plan],
    exec: Execution,
    ranks: Vec<RankState>,
    heap: BinaryHeap<Reverse<(T, u64, u32, Ev)>>,
    seq: u64,
    chans: Vec<Vec<Chan>>,
    nic_out: Vec<f64>,
    nic_in: Vec<f64>,
    fence_entries: Vec<(usize, f64)>,
    fence_ops: Vec<Vec<u32>>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("the simulated call did not finish: {0}")]
    Stuck(String),
}

impl<'a> Engine<'a> {
    pub fn new(m: &'a Model, nodes: &NodeMap, plans: &'a [Plan], exec: Execution) -> Self {
        let p = plans.len();
        let ranks = plans
            .iter()
            .map(|pl| {
                let n = pl.schedule.ops.len();
                RankState {
                    st: vec![St::Pending; n],
                    cpu: 0.0,
                    pc: 0,
                    waiting: Vec::new(),
                    remaining: pl
                        .schedule
                        .ops
                        .iter()
                        .map(|o| o.deps.len() as u32)
                        .collect(),
                    ready: if exec == Execution::Nonblocking {
                        pl.roots.iter().copied().collect()
                    } else {
                        BTreeSet::new()
                    },
                    chan_next: vec![0; pl.channels],
                    done: 0,
                    finish: 0.0,
                    puts: Vec::new(),
                    fences: 0,
                    exposed: None,
                    accessed: Vec::new(),
                    blocked_sync: None,
                }
            })
            .collect();
        Engine {
            m,
            node_of: (0..p).map(|r| nodes.node_of(r) as u32).collect(),
            nodes: nodes.num_nodes(),
            plans,
            exec,
            ranks,
            heap: BinaryHeap::new(),
            seq: 0,
            chans: (0..p).map(|_| Vec::new()).collect(),
            nic_out: vec![0.0; nodes.num_nodes()],
            nic_in: vec![0.0; nodes.num_nodes()],
            fence_entries: Vec::new(),
            fence_ops: Vec::new(),
        }
    }

    fn push(&mut self, t: f64, r: u32, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((T(t), self.seq, r, ev)));
    }

    fn link(&self, a: u32, b: u32) -> &Link {
        if self.node_of[a as usize] == self.node_of[b as usize] {
            &self.m.intra
        } else {
            &self.m.inter
        }
    }

    /// Moves `bytes` from rank `a` to rank `b` starting at `t`: (when the
    /// sender's buffer is free again, when the data has arrived).
    fn transfer(&mut self, a: u32, b: u32, bytes: u64, t: f64) -> (f64, f64) {
        let (na, nb) = (
            self.node_of[a as usize] as usize,
            self.node_of[b as usize] as usize,
        );
        if na == nb {
            let l = &self.m.intra;
            let end = t + bytes as f64 * l.per_byte();
            return (end, end + l.latency_us);
        }
        let l = &self.m.inter;
        let wire = bytes as f64 * l.per_byte();
        let start = t.max(self.nic_out[na]);
        let inject_end = start + wire;
        self.nic_out[na] = inject_end.max(start + l.gap_us);
        let land_start = (start + l.latency_us).max(self.nic_in[nb]);
        let arrival = land_start + wire;
        self.nic_in[nb] = arrival;
        (inject_end, arrival)
    }

    fn chan(&mut self, src: u32, dst: u32, tag: u8) -> &mut Chan {
        let list = &mut self.chans[dst as usize];
        let i = match list.iter().position(|c| c.src == src && c.tag == tag) {
            Some(i) => i,
            None => {
                list.push(Chan {
                    src,
                    tag,
                    ..Default::default()
                });
                list.len() - 1
            }
        };
        &mut list[i]
    }

    /// Matches the heads of a channel when both are posted.
    fn try_match(&mut self, src: u32, dst: u32, tag: u8) {
        loop {
            let c = self.chan(src, dst, tag);
            if c.sends.is_empty() || c.recvs.is_empty() {
                return;
            }
            let s = c.sends.pop_front().expect("send");
            let r = c.recvs.pop_front().expect("recv");
            let o_r = self.link(src, dst).overhead_us;
            let arrival = match s.arrival {
                Some(a) => a,
                None => {
                    // Rendezvous: the data leaves once the receive is known.
                    let lat = self.link(src, dst).latency_us;
                    let t0 = s.t_post.max(r.t_post) + lat;
                    let (free, arr) = self.transfer(src, dst, s.bytes, t0);
                    self.push(free, s.rank, Ev::Done(s.op));
                    arr
                }
            };
            self.push(arrival.max(r.t_post) + o_r, r.rank, Ev::Done(r.op));
        }
    }

    fn start(&mut self, r: u32, i: u32, t: f64) {
        let plan = &self.plans[r as usize];
        let kind = &plan.schedule.ops[i as usize].kind;
        let rs = &mut self.ranks[r as usize];
        rs.st[i as usize] = St::Active;
        let ts = t.max(rs.cpu);
        match kind {
            OpKind::Send { to, src, tag, .. } => {
                let o = self.link(r, to.0).overhead_us;
                let t_post = ts + o;
                self.ranks[r as usize].cpu = t_post;
                let bytes = src.len;
                let arrival = if bytes <= self.link(r, to.0).eager_limit {
                    let (free, arr) = self.transfer(r, to.0, bytes, t_post);
                    self.push(free, r, Ev::Done(i));
                    Some(arr)
                } else {
                    None
                };
                let tag = *tag as u8;
                self.chan(r, to.0, tag).sends.push_back(PostedSend {
                    rank: r,
                    op: i,
                    t_post,
                    bytes,
                    arrival,
                });
                self.try_match(r, to.0, tag);
            }
            OpKind::Recv { from, tag, .. } => {
                let tag = *tag as u8;
                self.chan(from.0, r, tag).recvs.push_back(PostedRecv {
                    rank: r,
                    op: i,
                    t_post: ts,
                });
                self.try_match(from.0, r, tag);
            }
            OpKind::Copy { src, .. } => {
                let end = ts + src.len as f64 * 1e-3 / self.m.copy_gbs;
                self.ranks[r as usize].cpu = end;
                self.push(end, r, Ev::Done(i));
            }
            OpKind::Put { to, src, .. } => {
                let o = self.link(r, to.0).overhead_us;
                let t_post = ts + o;
                self.ranks[r as usize].cpu = t_post;
                let (free, arr) = self.transfer(r, to.0, src.len, t_post);
                self.ranks[r as usize].puts.push((i, to.0, free, arr));
            }
            OpKind::Fence => {
                let k = self.ranks[r as usize].fences;
                self.ranks[r as usize].fences += 1;
                if self.fence_entries.len() <= k {
                    self.fence_entries.resize(k + 1, (0, 0.0));
                    self.fence_ops.resize(k + 1, Vec::new());
                }
                let puts_done = self.ranks[r as usize]
                    .puts
                    .iter()
                    .map(|p| p.3)
                    .fold(ts, f64::max);
                let e = &mut self.fence_entries[k];
                e.0 += 1;
                e.1 = e.1.max(puts_done);
                self.fence_ops[k].push(r);
                if e.0 == self.plans.len() {
                    let t_all = e.1 + self.barrier_cost();
                    let members = std::mem::take(&mut self.fence_ops[k]);
                    for q in members {
                        let f = self.fence_op(q, k);
                        let puts = std::mem::take(&mut self.ranks[q as usize].puts);
                        for (op, ..) in puts {
                            self.push(t_all, q, Ev::Done(op));
                        }
                        self.push(t_all, q, Ev::Done(f));
                    }
                }
            }
            OpKind::ExposeTo { group } => {
                self.ranks[r as usize].exposed = Some(ts);
                for g in group.clone() {
                    self.push(ts, g.0, Ev::Wake);
                }
                self.push(ts, r, Ev::Done(i));
            }
            OpKind::AccessTo { .. } | OpKind::EndExposure => {
                self.ranks[r as usize].blocked_sync = Some((i, ts));
                self.try_sync(r);
            }
            OpKind::EndAccess => {
                let puts = std::mem::take(&mut self.ranks[r as usize].puts);
                let mut end = ts;
                let mut notify: Vec<(u32, f64)> = Vec::new();
                for &(op, target, free, arr) in &puts {
                    end = end.max(free);
                    self.push(free.max(ts), r, Ev::Done(op));
                    let lat = self.link(r, target).latency_us;
                    match notify.iter_mut().find(|n| n.0 == target) {
                        Some(n) => n.1 = n.1.max(arr.max(ts + lat)),
                        None => notify.push((target, arr.max(ts + lat))),
                    }
                }
                // Targets of this epoch with no put still hear of its end.
                if let Some(OpKind::AccessTo { group }) = self.plans[r as usize]
                    .schedule
                    .ops
                    .iter()
                    .rev()
                    .find(|o| matches!(o.kind, OpKind::AccessTo { .. }))
                    .map(|o| &o.kind)
                {
                    for g in group {
                        if !notify.iter().any(|n| n.0 == g.0) {
                            let lat = self.link(r, g.0).latency_us;
                            notify.push((g.0, ts + lat));
                        }
                    }
                }
                for (target, at) in notify {
                    self.ranks[target as usize].accessed.push((r, at));
                    self.push(at, target, Ev::Wake);
                }
                self.push(end, r, Ev::Done(i));
            }
            OpKind::WaitAll => {
                if self.exec == Execution::Blocking {
                    let rs = &mut self.ranks[r as usize];
                    rs.waiting = (0..i).filter(|&j| rs.st[j as usize] != St::Done).collect();
                }
                self.push(ts, r, Ev::Done(i));
            }
        }
    }

    fn fence_op(&self, r: u32, k: usize) -> u32 {
        self.plans[r as usize]
            .schedule
            .ops
            .iter()
            .enumerate()
            .filter(|(_, o)| matches!(o.kind, OpKind::Fence))
            .nth(k)
            .map(|(i, _)| i as u32)
            .expect("k-th fence")
    }

    fn barrier_cost(&self) -> f64 {
        let log = |n: usize| (n.max(1) as f64).log2().ceil();
        let ppn = (self.plans.len() / self.nodes.max(1)).max(1);
        2.0 * (log(self.nodes) * (self.m.inter.latency_us + 2.0 * self.m.inter.overhead_us)
            + log(ppn) * (self.m.intra.latency_us + 2.0 * self.m.intra.overhead_us))
    }

    /// Completes a blocked AccessTo / EndExposure once its peers allow.
    fn try_sync(&mut self, r: u32) {
        let Some((i, ts)) = self.ranks[r as usize].blocked_sync else {
            return;
        };
        let kind = &self.plans[r as usize].schedule.ops[i as usize].kind;
        let done_at = match kind {
            OpKind::AccessTo { group } => {
                let mut at = ts;
                for g in group {
                    match self.ranks[g.idx()].exposed {
                        Some(e) => at = at.max(e + self.link(g.0, r).latency_us),
                        None => return,
                    }
                }
                at
            }
            OpKind::EndExposure => {
                let group: Vec<u32> = self.plans[r as usize]
                    .schedule
                    .ops
                    .iter()
                    .find_map(|o| match &o.kind {
                        OpKind::ExposeTo { group } => Some(group.iter().map(|g| g.0).collect()),
                        _ => None,
                    })
                    .unwrap_or_default();
                let mut at = ts;
                for g in group {
                    match self.ranks[r as usize].accessed.iter().find(|a| a.0 == g) {
                        Some(a) => at = at.max(a.1),
                        None => return,
                    }
                }
                at
            }
            _ => return,
        };
        self.ranks[r as usize].blocked_sync = None;
        self.push(done_at, r, Ev::Done(i));
    }

    fn advance(&mut self, r: u32, t: f64) {
        match self.exec {
            Execution::Blocking => self.advance_blocking(r, t),
            Execution::Nonblocking => self.advance_dataflow(r, t),
        }
    }

    fn advance_blocking(&mut self, r: u32, t: f64) {
        let plan = &self.plans[r as usize];
        let n = plan.schedule.ops.len();
        loop {
            let rs = &mut self.ranks[r as usize];
            if !rs.waiting.is_empty() {
                if rs.waiting.iter().all(|&w| rs.st[w as usize] == St::Done) {
                    rs.waiting.clear();
                } else {
                    return;
                }
            }
            if rs.pc >= n || rs.blocked_sync.is_some() {
                return;
            }
            let pc = rs.pc;
            let op = &plan.schedule.ops[pc];
            match op.post {
                Post::ExchangeWithNext => {
                    rs.pc += 2;
                    rs.waiting = vec![pc as u32, pc as u32 + 1];
                    self.start(r, pc as u32, t);
                    self.start(r, pc as u32 + 1, t);
                }
                Post::Immediate => {
                    rs.pc += 1;
                    self.start(r, pc as u32, t);
                }
                Post::Blocking => {
                    rs.pc += 1;
                    if !matches!(op.kind, OpKind::WaitAll) {
                        rs.waiting = vec![pc as u32];
                    }
                    self.start(r, pc as u32, t);
                }
            }
        }
    }

    fn advance_dataflow(&mut self, r: u32, t: f64) {
        let plan = &self.plans[r as usize];
        loop {
            let mut started = false;
            let candidates: Vec<u32> = self.ranks[r as usize].ready.iter().copied().collect();
            for i in candidates {
                if let Some((c, pos)) = plan.chan[i as usize] {
                    let rs = &mut self.ranks[r as usize];
                    if rs.chan_next[c as usize] != pos {
                        continue;
                    }
                    rs.chan_next[c as usize] += 1;
                }
                self.ranks[r as usize].ready.remove(&i);
                self.start(r, i, t);
                started = true;
            }
            if !started {
                return;
            }
        }
    }

    fn complete(&mut self, r: u32, i: u32, t: f64) {
        let plan = &self.plans[r as usize];
        let rs = &mut self.ranks[r as usize];
        if rs.st[i as usize] == St::Done {
            return;
        }
        rs.st[i as usize] = St::Done;
        rs.done += 1;
        rs.finish = rs.finish.max(t);
        if self.exec == Execution::Nonblocking {
            for &d in &plan.dependents[i as usize] {
                let rem = &mut rs.remaining[d as usize];
                *rem -= 1;
                if *rem == 0 {
                    rs.ready.insert(d);
                }
            }
        }
    }

    /// Runs the call; the slowest rank's finish time, microseconds.
    pub fn run(mut self) -> Result<f64, SimError> {
        for r in 0..self.plans.len() as u32 {
            self.push(0.0, r, Ev::Wake);
        }
        while let Some(Reverse((T(t), _, r, ev))) = self.heap.pop() {
            if let Ev::Done(i) = ev {
                self.complete(r, i, t);
            }
            self.try_sync(r);
            self.advance(r, t);
        }
        let mut worst = 0f64;
        for (r, rs) in self.ranks.iter().enumerate() {
            if rs.done < self.plans[r].schedule.ops.len() {
                let first = rs.st.iter().position(|&s| s != St::Done).unwrap_or(0);
                return Err(SimError::Stuck(format!(
                    "rank {r} at op {first} ({:?})",
                    self.plans[r].schedule.ops[first].kind
                )));
            }
            worst = worst.max(rs.finish);
        }
        Ok(worst)
    }
}

/// Simulates one call of `spec` (root 0) on `nodes`; microseconds.
pub fn simulate(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    exec: Execution,
    nodes: &NodeMap,
    bytes: u64,
) -> Result<f64, SimError> {
    let plans: Vec<Plan> = build_all(c, spec, 0, bytes, nodes)?
        .into_iter()
        .map(Plan::new)
        .collect();
    Engine::new(m, nodes, &plans, exec).run()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn model() -> Model {
        Model {
            name: "test".into(),
            source: "test".into(),
            intra: Link {
                latency_us: 0.5,
                overhead_us: 0.2,
                gap_us: 0.1,
                bandwidth_gbs: 10.0,
                eager_limit: 8192,
            },
            inter: Link {
                latency_us: 2.0,
                overhead_us: 0.5,
                gap_us: 0.3,
                bandwidth_gbs: 1.0,
                eager_limit: 8192,
            },
            copy_gbs: 10.0,
        }
    }

    fn sim(spec: &str, c: Collective, exec: Execution, nodes: &NodeMap, bytes: u64) -> f64 {
        simulate(
            &model(),
            c,
            &AlgoSpec::parse(spec).unwrap(),
            exec,
            nodes,
            bytes,
        )
        .unwrap()
    }

    #[test]
    fn a_single_message_costs_the_model() {
        let m = model();
        let two = NodeMap::blocks(&[1, 1]).unwrap();
        // 1 KiB between nodes: o + n G (leave) + L, then o at the receiver
        let t = sim("linear", Collective::Bcast, Execution::Blocking, &two, 1000);
        let want = m.inter.overhead_us
            + 1000.0 * m.inter.per_byte()
            + m.inter.latency_us
            + m.inter.overhead_us;
        assert!((t - want).abs() < 1e-6, "{t} vs {want}");
        // inside a node it is cheaper
        let one = NodeMap::single(2);
        assert!(sim("linear", Collective::Bcast, Execution::Blocking, &one, 1000) < t);
    }

    #[test]
    fn contention_on_a_node_link_serialises_its_messages() {
        // root on node 0 sends 1 MB to 3 ranks of node 1: they share links.
        let nodes = NodeMap::blocks(&[1, 3]).unwrap();
        let t = sim(
            "linear",
            Collective::Bcast,
            Execution::Blocking,
            &nodes,
            1_000_000,
        );
        let wire = 1_000_000.0 * model().inter.per_byte();
        assert!(t > 3.0 * wire, "{t} <= 3 x {wire}");
        // the hierarchical broadcast crosses the link once
        let h = sim(
            "hierarchical:inter=linear,intra=linear",
            Collective::Bcast,
            Execution::Blocking,
            &nodes,
            1_000_000,
        );
        assert!(h < 0.5 * t, "{h} vs {t}");
    }

    #[test]
    fn pipelining_needs_the_dataflow_execution() {
        let nodes = NodeMap::blocks(&[1; 8]).unwrap();
        let b = sim(
            "pipeline:segment=65536",
            Collective::Bcast,
            Execution::Blocking,
            &nodes,
            4 << 20,
        );
        let n = sim(
            "pipeline:segment=65536",
            Collective::Bcast,
            Execution::Nonblocking,
            &nodes,
            4 << 20,
        );
        let whole = sim(
            "pipeline:segment=0",
            Collective::Bcast,
            Execution::Nonblocking,
            &nodes,
            4 << 20,
        );
        assert!(n < whole / 2.0, "segmented {n} vs whole {whole}");
        assert!(n <= b, "dataflow {n} vs blocking {b}");
    }

    #[test]
    fn every_algorithm_finishes_in_both_executions() {
        let nodes = NodeMap::blocks(&[3, 2, 3]).unwrap();
        for c in Collective::ALL {
            for a in colltune_algorithms::algorithms(c) {
                for spec in colltune_algorithms::variants(a, 65536) {
                    for exec in Execution::ALL {
                        for bytes in [0, 1, 100_000, 1 << 20] {
                            let t = simulate(&model(), c, &spec, exec, &nodes, bytes)
                                .unwrap_or_else(|e| panic!("{c} {spec} {exec} {bytes}: {e}"));
                            assert!(t.is_finite() && t >= 0.0);
                            if bytes > 0 {
                                assert!(t > 0.0, "{spec} {bytes}");
                            }
                        }
                    }
                }
            }
        }
    }
}
