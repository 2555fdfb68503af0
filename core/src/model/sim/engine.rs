//! The engine: one simulated call as flat arrays, and the loop that runs it.
//!
//! Every rank's ops are packed into one array of 40-byte [`FOp`]s (see
//! `pack.rs`), their dependents into another. A rank is either blocking
//! (walks its ops in program order, as `transport::mpi::exec` does) or
//! dataflow (starts every op whose dependencies are done, keeping each
//! channel's order, as the nonblocking execution does; only its startable
//! ops wait in a heap). Messages match by their position in their channel
//! (MPI's non-overtaking rule: the k-th send of a channel meets its k-th
//! receive), so a channel side is a counter of ops posted, not a queue.
//! The run loop pops events (an op completes, a rank wakes, a rendezvous
//! transfer leaves) and lets the rank go on; the call's time is the slowest
//! rank's finish.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use colltune_algorithms::{Execution, NodeMap, Plan, Post};

use super::events::Events;
use super::model::Model;
use super::network::{Matched, Network};
use super::share::{self, Joined, Read};
use super::traffic::Traffic;
use super::{stuck, SimError};

/// What an event does: wake the rank, or complete op `ev` of it, or (with
/// this bit) start rendezvous transfer number `ev - RDV` (rank: the sender).
const WAKE: u32 = u32::MAX;
const RDV: u32 = 1 << 31;
/// With `RDV`: the reads of the rank's buffer (`share.rs`) reach an end,
/// the low bits the version of the buffer's reads that event is for.
const SHARED: u32 = 1 << share::VERSION_BITS;

pub(super) use super::flat::{ChanSide, FOp, Rank, RankCold, St, Wait, K, NONE};

/// One simulated call. The fields filled by packing are `pub(super)` for
/// `pack.rs`.
pub struct Engine<'a> {
    /// The model's links and the resources they hold.
    pub(super) net: Network,
    /// Messages and bytes per tier, counted while packing.
    pub(super) traffic: Traffic,
    pub(super) exec: Execution,
    /// Plans it was made from, if any (to name an op in an error).
    plans: Option<&'a [Plan]>,
    pub(super) ranks: Vec<Rank>,
    pub(super) cold: Vec<RankCold>,
    pub(super) ops: Vec<FOp>,
    pub(super) cs: Vec<ChanSide>,
    /// Ops of each channel side, by position (indices within the rank).
    pub(super) cs_ops: Vec<u32>,
    /// Per rank, its receive channel sides: ((source, tag) as a key, side).
    pub(super) recv_keys: Vec<(u64, u32)>,
    /// Send channel sides to pair: (side, destination, (self, tag) as a key).
    pub(super) send_keys: Vec<(u32, u32, u64)>,
    /// Dependents of each op (indices within the rank), per rank.
    pub(super) deps: Vec<u32>,
    pub(super) groups: Vec<u32>,
    /// The fence ops of each rank.
    pub(super) fence_list: Vec<u32>,
    events: Events,
    /// Dataflow: ops of the current rank that may start now.
    startable: BinaryHeap<Reverse<u32>>,
    fence_entries: Vec<(usize, f64)>,
    fence_ops: Vec<Vec<u32>>,
    /// Rendezvous transfers waiting for their start event: (send rank, send
    /// op, bytes still to move, receive rank, receive op, receive posted).
    rdv: Vec<(u32, u32, u64, u32, u32, f64)>,
    /// Scratch: the reads of a buffer that ended at one event.
    ended: Vec<Read>,
    /// Whether ops' dependents are packed (the dataflow execution needs them).
    pub(super) dependents: bool,
    /// Scratch for packing a rank.
    pub(super) channels: colltune_algorithms::ChannelNumbering,
    pub(super) scratch: Vec<u32>,
}

/// An index or count as the packed arrays hold it.
pub(super) fn u32_of(n: usize) -> u32 {
    u32::try_from(n).expect("simulated call too large")
}

impl<'a> Engine<'a> {
    /// An engine for the call the plans describe (rank `r` runs `plans[r]`).
    pub fn new(m: &'a Model, nodes: &NodeMap, plans: &'a [Plan], exec: Execution) -> Self {
        Engine::with_groups(m, nodes, plans, exec, None)
    }

    /// As [`Engine::new`], node `n` in group `group[n]` where given (a
    /// layout's or an allocation's grouping, not the model's consecutive one).
    pub fn with_groups(
        m: &'a Model,
        nodes: &NodeMap,
        plans: &'a [Plan],
        exec: Execution,
        group: Option<Vec<u32>>,
    ) -> Self {
        let mut e = Engine::empty(m, nodes, exec, exec == Execution::Nonblocking);
        if let Some(g) = group {
            e.net.place_groups(g);
        }
        for pl in plans {
            e.add_plan(pl);
        }
        e.link_channels();
        e.plans = Some(plans);
        e
    }

    /// An engine with no rank yet; `dependents`: pack them (for the dataflow
    /// execution) even if `exec` is blocking.
    pub(super) fn empty(m: &Model, nodes: &NodeMap, exec: Execution, dependents: bool) -> Self {
        let p = nodes.size();
        Engine {
            net: Network::new(m, nodes),
            traffic: Traffic::default(),
            exec,
            plans: None,
            ranks: Vec::with_capacity(p),
            cold: Vec::with_capacity(p),
            ops: Vec::new(),
            cs: Vec::new(),
            cs_ops: Vec::new(),
            recv_keys: Vec::new(),
            send_keys: Vec::new(),
            deps: Vec::new(),
            groups: Vec::new(),
            fence_list: Vec::new(),
            events: Events::default(),
            startable: BinaryHeap::new(),
            fence_entries: Vec::new(),
            rdv: Vec::new(),
            ended: Vec::new(),
            fence_ops: Vec::new(),
            dependents: dependents || exec == Execution::Nonblocking,
            channels: Default::default(),
            scratch: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, t: f64, r: u32, ev: u32) {
        self.events.push(t, r, ev);
    }

    #[inline]
    fn op(&self, r: u32, i: u32) -> &FOp {
        &self.ops[self.ranks[r as usize].op_base + i as usize]
    }

    #[inline]
    fn op_mut(&mut self, r: u32, i: u32) -> &mut FOp {
        let b = self.ranks[r as usize].op_base;
        &mut self.ops[b + i as usize]
    }

    /// Posts send or receive `op` (number `i` of rank `r`, its `FOp::t`
    /// being `t`) on its channel and matches it with the other side's op of
    /// the same position (MPI's non-overtaking rule), if that is posted.
    fn post(&mut self, r: u32, i: u32, op: &FOp, t: f64) {
        let c = self.ranks[r as usize].cs_base as usize + op.cs as usize;
        let side = &mut self.cs[c];
        debug_assert_eq!(side.posted, op.pos);
        side.posted += 1;
        side.last = i;
        side.t = t;
        side.bytes = op.len;
        let peer = side.peer;
        if peer == NONE {
            return;
        }
        let other = &self.cs[peer as usize];
        if other.posted <= op.pos {
            return;
        }
        let (j, jt, jbytes) = if other.posted == op.pos + 1 {
            (other.last, other.t, other.bytes)
        } else {
            let j = self.cs_ops[(other.start + op.pos) as usize];
            let o = self.op(op.peer, j);
            (j, o.t, o.len)
        };
        if op.kind == K::Send {
            self.deliver(r, i, op.len, t, op.peer, j, jt);
        } else {
            self.deliver(op.peer, j, jbytes, jt, r, i, t);
        }
    }

    /// Send `si` of rank `src` (`bytes`, its `FOp::t` being `s_t`) meets
    /// receive `ri` of rank `dst` (posted at `r_post`).
    #[allow(clippy::too_many_arguments)]
    fn deliver(&mut self, src: u32, si: u32, bytes: u64, s_t: f64, dst: u32, ri: u32, r_post: f64) {
        match self.net.matched(src, dst, bytes, s_t, r_post) {
            Matched::Eager { recv_done } => self.push(recv_done, dst, ri),
            Matched::Rendezvous { at, rest } => {
                // The data takes its turn on the links when it leaves (an
                // event then), not when the match was found: links serve
                // in time order.
                let k = u32_of(self.rdv.len());
                assert!(k < SHARED, "simulated call too large");
                self.rdv.push((src, si, rest, dst, ri, r_post));
                self.push(at, src, RDV | k);
            }
        }
    }

    /// Rendezvous transfer `k` leaves at `t`: inside a node, a read of
    /// the sender's buffer beside its others (`share.rs`).
    fn start_rdv(&mut self, k: u32, t: f64) {
        let (src, si, bytes, dst, ri, r_post) = self.rdv[k as usize];
        if self.net.read_shared(src, dst) {
            let key = self.net.share_key(src, dst);
            match self.net.read_join(src, dst, k, bytes, t) {
                Joined::Later(at) => self.push(at, src, RDV | k),
                Joined::Next(at, v) => self.push(at, key, RDV | SHARED | v),
            }
            return;
        }
        let (free, recv_done) = self.net.rendezvous_data(src, dst, bytes, t, r_post);
        self.push(free, src, si);
        self.push(recv_done, dst, ri);
    }

    /// The event of version `v` of rank `src`'s buffer's reads, at `t`:
    /// the reads that ended complete their sends and receives.
    fn end_reads(&mut self, src: u32, v: u32, t: f64) {
        let mut done = std::mem::take(&mut self.ended);
        done.clear();
        if let Some(next) = self.net.read_step(src, v, t, &mut done) {
            if let Some((at, v)) = next {
                self.push(at, src, RDV | SHARED | v);
            }
            for r in &done {
                // `src` names the share; the rendezvous names its sender.
                let (from, si, _, dst, ri, r_post) = self.rdv[r.k as usize];
                let (free, recv_done) = self.net.read_landed(from, r, t, r_post);
                self.push(free, from, si);
                self.push(recv_done, dst, ri);
            }
        }
        self.ended = done;
    }

    fn start(&mut self, r: u32, i: u32, t: f64) {
        let op = {
            let op = self.op_mut(r, i);
            op.st = St::Active;
            *op
        };
        let ts = t.max(self.ranks[r as usize].cpu);
        match op.kind {
            K::Send => {
                let s = self.net.post_send(r, op.peer, op.len, ts);
                self.ranks[r as usize].cpu = s.cpu;
                if let Some(free) = s.free {
                    self.push(free, r, i);
                }
                self.op_mut(r, i).t = s.t;
                self.post(r, i, &op, s.t);
            }
            K::Recv => {
                self.op_mut(r, i).t = ts;
                self.post(r, i, &op, ts);
            }
            K::Copy => {
                let end = self.net.copy_end(ts, op.len);
                self.local_done(r, i, end);
            }
            K::Put => {
                let to = op.peer;
                let (cpu, free, arr) = self.net.put(r, to, op.len, ts);
                self.ranks[r as usize].cpu = cpu;
                self.cold[r as usize].puts.push((i, to, free, arr));
            }
            K::Fence => {
                let k = self.cold[r as usize].fences;
                self.cold[r as usize].fences += 1;
                if self.fence_entries.len() <= k {
                    self.fence_entries.resize(k + 1, (0, 0.0));
                    self.fence_ops.resize(k + 1, Vec::new());
                }
                let puts_done = self.cold[r as usize]
                    .puts
                    .iter()
                    .map(|p| p.3)
                    .fold(ts, f64::max);
                let e = &mut self.fence_entries[k];
                e.0 += 1;
                e.1 = e.1.max(puts_done);
                self.fence_ops[k].push(r);
                if e.0 == self.ranks.len() {
                    let t_all = e.1 + self.net.barrier_cost(self.ranks.len());
                    let members = std::mem::take(&mut self.fence_ops[k]);
                    for q in members {
                        let f = self.fence_op(q, k);
                        let puts = std::mem::take(&mut self.cold[q as usize].puts);
                        for (op, ..) in puts {
                            self.push(t_all, q, op);
                        }
                        self.push(t_all, q, f);
                    }
                }
            }
            K::ExposeTo => {
                self.cold[r as usize].exposed = Some(ts);
                for g in op.cs..op.cs + op.pos {
                    let g = self.groups[g as usize];
                    self.push(ts, g, WAKE);
                }
                self.push(ts, r, i);
            }
            K::AccessTo | K::EndExposure => {
                self.cold[r as usize].blocked_sync = Some((i, ts));
                self.ranks[r as usize].blocked = true;
                self.try_sync(r);
            }
            K::EndAccess => {
                let puts = std::mem::take(&mut self.cold[r as usize].puts);
                let mut end = ts;
                let mut notify: Vec<(u32, f64)> = Vec::new();
                for &(op, target, free, arr) in &puts {
                    end = end.max(free);
                    self.push(free.max(ts), r, op);
                    let lat = self.net.latency(r, target);
                    match notify.iter_mut().find(|n| n.0 == target) {
                        Some(n) => n.1 = n.1.max(arr.max(ts + lat)),
                        None => notify.push((target, arr.max(ts + lat))),
                    }
                }
                // Targets of this epoch with no put still hear of its end.
                if let Some((g0, gn)) = self.cold[r as usize].access_group {
                    for g in g0..g0 + gn {
                        let g = self.groups[g as usize];
                        if !notify.iter().any(|n| n.0 == g) {
                            let lat = self.net.latency(r, g);
                            notify.push((g, ts + lat));
                        }
                    }
                }
                for (target, at) in notify {
                    self.cold[target as usize].accessed.push((r, at));
                    self.push(at, target, WAKE);
                }
                self.push(end, r, i);
            }
            K::WaitAll => {
                if self.exec == Execution::Blocking {
                    self.ranks[r as usize].wait = Wait::Below(i);
                }
                self.push(ts, r, i);
            }
            K::Load => {
                let end = self.net.shared_load(r, ts, op.len);
                self.local_done(r, i, end);
            }
            K::Signal => {
                self.cold[r as usize].signals.push((op.cs, op.pos, ts));
                let waiters = std::mem::take(&mut self.cold[r as usize].waiters);
                for (q, j, tq) in waiters {
                    if !self.try_await(q, j, tq) {
                        self.cold[r as usize].waiters.push((q, j, tq));
                    }
                }
                // A store: no CPU time to speak of, done when issued.
                self.local_done(r, i, ts);
            }
            K::Await => {
                if !self.try_await(r, i, ts) {
                    self.cold[op.peer as usize].waiters.push((r, i, ts));
                }
            }
        }
    }

    /// Copy, load or signal `i` of rank `r` keeps its CPU busy until `end`. The
    /// dataflow execution does it at once when it starts it (as the MPI
    /// executor does: a copy is done when issued), so that what depends on
    /// it (a flag raised) comes before later ops in program order; the
    /// blocking execution waits for its completion.
    fn local_done(&mut self, r: u32, i: u32, end: f64) {
        self.ranks[r as usize].cpu = end;
        if self.exec == Execution::Nonblocking {
            self.complete(r, i, end);
        } else {
            self.push(end, r, i);
        }
    }

    /// Completes await `i` of rank `r` (started at `ts`) if its flag got
    /// there: once the first signal that reached the value is seen.
    fn try_await(&mut self, r: u32, i: u32, ts: f64) -> bool {
        let op = *self.op(r, i);
        let seen = self.cold[op.peer as usize]
            .signals
            .iter()
            .find(|&&(f, v, _)| f == op.cs && v >= op.pos)
            .map(|s| s.2);
        match seen {
            Some(t) => {
                let at = ts.max(t + self.net.flag_latency());
                self.push(at, r, i);
                true
            }
            None => false,
        }
    }

    fn fence_op(&self, r: u32, k: usize) -> u32 {
        let c = &self.cold[r as usize];
        assert!(k < c.n_fences as usize, "k-th fence");
        self.fence_list[c.fence_base as usize + k]
    }

    /// Completes a blocked AccessTo / EndExposure once its peers allow.
    fn try_sync(&mut self, r: u32) {
        if !self.ranks[r as usize].blocked {
            return;
        }
        let Some((i, ts)) = self.cold[r as usize].blocked_sync else {
            return;
        };
        let op = *self.op(r, i);
        let done_at = match op.kind {
            K::AccessTo => {
                let mut at = ts;
                for g in op.cs..op.cs + op.pos {
                    let g = self.groups[g as usize];
                    match self.cold[g as usize].exposed {
                        Some(e) => at = at.max(e + self.net.latency(g, r)),
                        None => return,
                    }
                }
                at
            }
            K::EndExposure => {
                let c = &self.cold[r as usize];
                let (g0, gn) = c.expose_group.unwrap_or((0, 0));
                let mut at = ts;
                for g in g0..g0 + gn {
                    let g = self.groups[g as usize];
                    match c.accessed.iter().find(|a| a.0 == g) {
                        Some(a) => at = at.max(a.1),
                        None => return,
                    }
                }
                at
            }
            _ => return,
        };
        self.cold[r as usize].blocked_sync = None;
        self.ranks[r as usize].blocked = false;
        self.push(done_at, r, i);
    }

    fn advance(&mut self, r: u32, t: f64) {
        match self.exec {
            Execution::Blocking => self.advance_blocking(r, t),
            Execution::Nonblocking => self.advance_dataflow(r, t),
        }
    }

    #[inline]
    fn is_done(&self, r: u32, i: u32) -> bool {
        self.op(r, i).st == St::Done
    }

    fn advance_blocking(&mut self, r: u32, t: f64) {
        loop {
            let rs = &self.ranks[r as usize];
            let clear = match rs.wait {
                Wait::None => true,
                Wait::One(a) => self.is_done(r, a),
                Wait::Two(a) => self.is_done(r, a) && self.is_done(r, a + 1),
                // Ops after the WaitAll have not started: the ops before it
                // are done when all done ops but itself are.
                Wait::Below(i) => rs.done - self.is_done(r, i) as u32 == i,
            };
            if !clear {
                return;
            }
            let rs = &mut self.ranks[r as usize];
            rs.wait = Wait::None;
            if rs.pc >= rs.n || rs.blocked {
                return;
            }
            let pc = rs.pc;
            let op = self.ops[rs.op_base + pc as usize];
            match op.post {
                Post::ExchangeWithNext => {
                    rs.pc += 2;
                    rs.wait = Wait::Two(pc);
                    self.start(r, pc, t);
                    self.start(r, pc + 1, t);
                }
                Post::Immediate => {
                    rs.pc += 1;
                    self.start(r, pc, t);
                }
                Post::Blocking => {
                    rs.pc += 1;
                    if op.kind != K::WaitAll {
                        rs.wait = Wait::One(pc);
                    }
                    self.start(r, pc, t);
                }
            }
        }
    }

    /// Dataflow: whether ready op `op` may start now (a send or receive
    /// only in its turn in its channel); if not, it waits for that turn.
    #[inline]
    fn may_start(&self, r: u32, op: &FOp) -> bool {
        !matches!(op.kind, K::Send | K::Recv)
            || self.cs[self.ranks[r as usize].cs_base as usize + op.cs as usize].posted == op.pos
    }

    /// Starts every ready op that may start, in program order (a channel's
    /// next op, once parked, may start as soon as its predecessor has).
    fn advance_dataflow(&mut self, r: u32, t: f64) {
        if !self.ranks[r as usize].seeded {
            let rs = &mut self.ranks[r as usize];
            rs.seeded = true;
            let (b, n) = (rs.op_base, rs.n as usize);
            for i in 0..n {
                let op = &self.ops[b + i];
                if op.st == St::Ready && self.may_start(r, op) {
                    self.startable.push(Reverse(i as u32));
                }
            }
        }
        while let Some(Reverse(i)) = self.startable.pop() {
            self.start(r, i, t);
            let op = *self.op(r, i);
            if matches!(op.kind, K::Send | K::Recv) {
                let c = &self.cs[self.ranks[r as usize].cs_base as usize + op.cs as usize];
                if op.pos + 1 < c.len {
                    let j = self.cs_ops[(c.start + op.pos + 1) as usize];
                    if self.op(r, j).st == St::Ready {
                        self.startable.push(Reverse(j));
                    }
                }
            }
        }
    }

    fn complete(&mut self, r: u32, i: u32, t: f64) {
        let rs = &mut self.ranks[r as usize];
        let (b, db) = (rs.op_base, rs.dep_base);
        let op = &mut self.ops[b + i as usize];
        if op.st == St::Done {
            return;
        }
        op.st = St::Done;
        rs.done += 1;
        rs.finish = rs.finish.max(t);
        if self.exec == Execution::Nonblocking {
            let lo = db + op.dep_off as usize;
            let hi = if i + 1 < rs.n {
                db + self.ops[b + i as usize + 1].dep_off as usize
            } else {
                db + rs.n_deps as usize
            };
            for k in lo..hi {
                let d = self.deps[k];
                let dop = &mut self.ops[b + d as usize];
                dop.remaining -= 1;
                if dop.remaining == 0 {
                    dop.st = St::Ready;
                    let dop = *dop;
                    if self.may_start(r, &dop) {
                        self.startable.push(Reverse(d));
                    }
                }
            }
        }
    }

    /// Says where each rank sits, for a model with levels inside a node:
    /// `groups[k][r]` is rank r's group (cache, NUMA domain, socket) at the
    /// model's level k; `memory[r]` its memory domain (its socket: see
    /// [`Model::memory_copy_gbs`]).
    pub fn place(&mut self, groups: Vec<Vec<u32>>, memory: Vec<u32>) {
        self.net.place(groups, memory);
    }

    /// Messages and bytes of the call per tier (within a node, between
    /// nodes of one group, between groups).
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }

    /// Runs the call; each rank's finish time, microseconds (a benchmark
    /// that reports the mean over ranks, as OSU's does, needs them all).
    pub fn run_each(mut self) -> Result<Vec<f64>, SimError> {
        let plans = self.plans;
        self.run_inner(f64::INFINITY).map_err(|(r, first)| {
            let kind = plans.map(|p| &p[r].schedule.ops[first].kind);
            stuck(r, first, kind)
        })?;
        Ok(self.ranks.iter().map(|r| r.finish).collect())
    }

    /// Runs the call; the slowest rank's finish time, microseconds.
    pub fn run(mut self) -> Result<f64, SimError> {
        let plans = self.plans;
        self.run_inner(f64::INFINITY).map_err(|(r, first)| {
            let kind = plans.map(|p| &p[r].schedule.ops[first].kind);
            stuck(r, first, kind)
        })
    }

    /// Makes the engine, packed and possibly run, ready to run the same call
    /// again, on model `m` in execution `exec` (it must have dependents for
    /// the dataflow execution).
    pub(super) fn reset(&mut self, m: &Model, exec: Execution) {
        let dataflow = exec == Execution::Nonblocking;
        assert!(self.dependents || !dataflow, "no dependents packed");
        self.net.reset(m);
        self.exec = exec;
        for (rs, c) in self.ranks.iter_mut().zip(&mut self.cold) {
            let ops = &mut self.ops[rs.op_base..rs.op_base + rs.n as usize];
            for op in ops.iter_mut() {
                op.remaining = 0;
            }
            if self.dependents {
                for &d in &self.deps[rs.dep_base..rs.dep_base + rs.n_deps as usize] {
                    ops[d as usize].remaining += 1;
                }
            }
            for op in ops.iter_mut() {
                op.st = if dataflow && op.remaining == 0 {
                    St::Ready
                } else {
                    St::Pending
                };
                op.t = 0.0;
            }
            rs.cpu = 0.0;
            rs.finish = 0.0;
            rs.pc = 0;
            rs.done = 0;
            rs.wait = Wait::None;
            rs.seeded = false;
            rs.blocked = false;
            c.puts.clear();
            c.fences = 0;
            c.exposed = None;
            c.accessed.clear();
            c.blocked_sync = None;
            c.signals.clear();
            c.waiters.clear();
        }
        for side in &mut self.cs {
            side.posted = 0;
        }
        self.events = Events::default();
        self.startable.clear();
        self.fence_entries.clear();
        self.rdv.clear();
        self.fence_ops.clear();
    }

    /// Runs the call; on a deadlock, the first rank that did not finish and
    /// its first op not done. Gives up once simulated time passes `limit`
    /// (then returns a time above it).
    pub(super) fn run_inner(&mut self, limit: f64) -> Result<f64, (usize, usize)> {
        for r in 0..self.ranks.len() as u32 {
            self.push(0.0, r, WAKE);
        }
        while let Some(e) = self.events.pop() {
            let t = e.time();
            if t > limit {
                self.events = Events::default();
                return Ok(t);
            }
            if e.ev != WAKE && e.ev & RDV != 0 {
                if e.ev & SHARED != 0 {
                    self.end_reads(e.r, e.ev & !(RDV | SHARED), t);
                } else {
                    self.start_rdv(e.ev & !RDV, t);
                }
                continue;
            }
            if e.ev != WAKE {
                self.complete(e.r, e.ev, t);
            }
            self.try_sync(e.r);
            self.advance(e.r, t);
        }
        let mut worst = 0f64;
        for (r, rs) in self.ranks.iter().enumerate() {
            if rs.done < rs.n {
                let ops = &self.ops[rs.op_base..rs.op_base + rs.n as usize];
                let first = ops.iter().position(|o| o.st != St::Done).unwrap_or(0);
                return Err((r, first));
            }
            worst = worst.max(rs.finish);
        }
        Ok(worst)
    }
}
