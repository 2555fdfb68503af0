//! The schedule checker: runs every rank's schedule together on an exact
//! symbolic model of MPI and proves the outcome.
//!
//! - **Every byte:** buffers hold, instead of values, the *origin* of each
//!   byte (which rank's which buffer at which offset), as interval maps, so a
//!   1 MiB broadcast is checked exactly at the cost of its message count.
//! - **No deadlock even if every send were synchronous:** a send completes only
//!   when its receive is matched; messages match first-in first-out per
//!   (source, destination, tag), as MPI's non-overtaking rule says.
//! - **Both executions:** blocking (program order, `Post` honoured) and
//!   nonblocking (dataflow: an op starts when its dependencies completed, ops
//!   of one channel start in program order, ready ops start in program order).
//! - **Hazards:** no op writes a region an in-flight op reads or writes; no op
//!   reads a region an in-flight receive writes; ready-mode sends find their
//!   receive posted; puts happen inside an access epoch.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use thiserror::Error;

use crate::error::BuildError;
use crate::registry::build_all;
use crate::schedule::{Buf, OpKind, Post, Rank, Region, Schedule, SendMode, Tag};
use crate::spec::{AlgoSpec, Collective, Execution};
use crate::swap::partner;
use crate::topo::NodeMap;

/// Where a byte came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub rank: u32,
    pub buf: Buf,
    pub offset: u64,
}

impl Origin {
    fn shifted(self, by: u64) -> Origin {
        Origin {
            offset: self.offset + by,
            ..self
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} {:?}[{}]", self.rank, self.buf, self.offset)
    }
}

/// A buffer's content: the origin of every byte, as disjoint pieces covering
/// `[0, u64::MAX)`; byte `x` of a piece starting at `s` holds `origin + (x - s)`.
#[derive(Clone, Debug)]
pub struct Content {
    pieces: BTreeMap<u64, (u64, Origin)>,
}

impl Content {
    /// Every byte is its own origin (what a rank holds before the call).
    pub fn identity(rank: u32, buf: Buf) -> Self {
        let mut pieces = BTreeMap::new();
        pieces.insert(
            0,
            (
                u64::MAX,
                Origin {
                    rank,
                    buf,
                    offset: 0,
                },
            ),
        );
        Content { pieces }
    }

    fn split_at(&mut self, at: u64) {
        if let Some((&s, &(e, o))) = self.pieces.range(..at).next_back() {
            if e > at {
                self.pieces.insert(s, (at, o));
                self.pieces.insert(at, (e, o.shifted(at - s)));
            }
        }
    }

    /// The origins of `[off, off + len)`, as (length, origin) runs.
    pub fn read(&self, off: u64, len: u64) -> Vec<(u64, Origin)> {
        let mut out = Vec::new();
        self.read_into(off, len, &mut out);
        out
    }

    /// As [`Content::read`], into a reused vector.
    pub fn read_into(&self, off: u64, len: u64, out: &mut Vec<(u64, Origin)>) {
        out.clear();
        let end = off + len;
        if len == 0 {
            return;
        }
        let first = self.pieces.range(..=off).next_back();
        let rest = self.pieces.range(off + 1..end);
        for (&s, &(e, o)) in first.into_iter().chain(rest) {
            let a = s.max(off);
            let b = e.min(end);
            if a < b {
                out.push((b - a, o.shifted(a - s)));
            }
        }
    }

    /// Overwrites `[off, ...)` with the runs.
    pub fn write(&mut self, off: u64, runs: &[(u64, Origin)]) {
        let len: u64 = runs.iter().map(|r| r.0).sum();
        if len == 0 {
            return;
        }
        self.split_at(off);
        self.split_at(off + len);
        while let Some((&s, _)) = self.pieces.range(off..off + len).next() {
            self.pieces.remove(&s);
        }
        let mut at = off;
        for &(l, o) in runs {
            if l > 0 {
                self.pieces.insert(at, (at + l, o));
                at += l;
            }
        }
    }

    /// The first byte of `[0, len)` whose origin is not `want + offset`.
    pub fn mismatch(&self, len: u64, rank: u32, buf: Buf) -> Option<(u64, Origin)> {
        let mut at = 0;
        for (l, o) in self.read(0, len) {
            if o.rank != rank || o.buf != buf || o.offset != at {
                return Some((at, o));
            }
            at += l;
        }
        None
    }
}

/// What the checker found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CheckError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("rank {rank} op {op}: malformed schedule: {why}")]
    Malformed { rank: usize, op: usize, why: String },
    #[error("rank {rank} op {op}: {region:?} is outside the {limit}-byte buffer")]
    OutOfBounds {
        rank: usize,
        op: usize,
        region: Region,
        limit: u64,
    },
    #[error("rank {rank} op {op}: touches {region:?} while op {other} is still using it")]
    Hazard {
        rank: usize,
        op: usize,
        other: usize,
        region: Region,
    },
    #[error("message from rank {from} to rank {to} ({tag:?}): {sent} bytes sent into a {posted}-byte receive (sender op {send_op}, receiver op {recv_op})")]
    LengthMismatch {
        from: usize,
        to: usize,
        tag: Tag,
        sent: u64,
        posted: u64,
        send_op: usize,
        recv_op: usize,
    },
    #[error("rank {rank} op {op}: ready-mode send to rank {to} before its receive was posted")]
    ReadyTooEarly { rank: usize, op: usize, to: usize },
    #[error("rank {rank} op {op}: {why}")]
    Epoch { rank: usize, op: usize, why: String },
    #[error("deadlock ({execution} execution): {stuck}")]
    Deadlock { execution: Execution, stuck: String },
    #[error("rank {rank} {buf:?}[{offset}] holds {found} after the call, expected {expected}")]
    WrongData {
        rank: usize,
        buf: Buf,
        offset: u64,
        found: String,
        expected: String,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum St {
    Pending,
    Active,
    Done,
}

/// Index of one rank's channel (outgoing or incoming, peer, tag) among its
/// `4 p` channels.
fn chan_index(k: &OpKind) -> Option<usize> {
    let tag = |t: &Tag| match t {
        Tag::Data => 0,
        Tag::Control => 1,
    };
    match k {
        OpKind::Send { to, tag: t, .. } => Some((to.idx() * 2 + tag(t)) * 2),
        OpKind::Recv { from, tag: t, .. } => Some((from.idx() * 2 + tag(t)) * 2 + 1),
        _ => None,
    }
}

#[derive(Default)]
struct RankState {
    st: Vec<St>,
    // blocking execution
    pc: usize,
    waiting: Vec<u32>,
    // dataflow execution
    remaining: Vec<u32>,
    dependents: Vec<Vec<u32>>,
    ready: BTreeSet<u32>,
    chan_pos: Vec<usize>,
    chan_next: Vec<usize>,
    // both
    active: Vec<u32>,
    fences: Vec<u32>,
    puts: Vec<u32>,
    access: Option<Vec<Rank>>,
    exposure: Option<(Vec<Rank>, BTreeSet<u32>)>,
    content: [Option<Content>; 3],
    /// Whether the schedule opens post/start epochs (else no sync to poll).
    has_epochs: bool,
}

#[derive(Clone)]
struct Chan {
    src: u32,
    tag: Tag,
    sends: VecDeque<u32>,
    recvs: VecDeque<u32>,
}

struct Machine<'a> {
    sched: &'a [Schedule],
    exec: Execution,
    ranks: Vec<RankState>,
    /// Per destination rank: (source, tag, posted unmatched sends, posted
    /// unmatched receives). Ranks talk to few peers, so a short list.
    chans: Vec<Vec<Chan>>,
    fence_posted: Vec<usize>,
    queue: VecDeque<usize>,
    queued: Vec<bool>,
    scratch: Vec<(u64, Origin)>,
}

/// Runs the schedules of every rank of a communicator together; returns
/// each rank's buffers afterwards (`limits`: each buffer's length).
pub fn run(
    sched: &[Schedule],
    exec: Execution,
    limits: [u64; 3],
) -> Result<Vec<[Content; 3]>, CheckError> {
    validate(sched, limits)?;
    let mut m = Machine {
        sched,
        exec,
        ranks: Vec::new(),
        chans: vec![Vec::new(); sched.len()],
        fence_posted: Vec::new(),
        queue: (0..sched.len()).collect(),
        queued: vec![true; sched.len()],
        scratch: Vec::new(),
    };
    for (r, s) in sched.iter().enumerate() {
        let n = s.ops.len();
        let mut rs = RankState {
            st: vec![St::Pending; n],
            remaining: s.ops.iter().map(|o| o.deps.len() as u32).collect(),
            dependents: vec![Vec::new(); n],
            chan_pos: vec![0; n],
            chan_next: vec![0; sched.len() * 4],
            content: Buf::ALL.map(|b| Some(Content::identity(r as u32, b))),
            has_epochs: s
                .ops
                .iter()
                .any(|o| matches!(o.kind, OpKind::AccessTo { .. } | OpKind::EndExposure)),
            ..Default::default()
        };
        let mut counts = vec![0usize; sched.len() * 4];
        for (i, op) in s.ops.iter().enumerate() {
            for &d in &op.deps {
                rs.dependents[d as usize].push(i as u32);
            }
            if op.deps.is_empty() {
                rs.ready.insert(i as u32);
            }
            if let Some(k) = chan_index(&op.kind) {
                rs.chan_pos[i] = counts[k];
                counts[k] += 1;
            }
        }
        m.ranks.push(rs);
    }
    while let Some(r) = m.queue.pop_front() {
        m.queued[r] = false;
        m.advance(r)?;
    }
    let stuck: Vec<String> = (0..sched.len())
        .filter_map(|r| m.describe_stuck(r))
        .collect();
    if !stuck.is_empty() {
        return Err(CheckError::Deadlock {
            execution: exec,
            stuck: stuck.join("; "),
        });
    }
    Ok(m.ranks
        .into_iter()
        .map(|mut rs| rs.content.each_mut().map(|c| c.take().expect("content")))
        .collect())
}

fn validate(sched: &[Schedule], limits: [u64; 3]) -> Result<(), CheckError> {
    let p = sched.len() as u32;
    for (rank, s) in sched.iter().enumerate() {
        for (op, o) in s.ops.iter().enumerate() {
            let mal = |why: String| CheckError::Malformed { rank, op, why };
            for &d in &o.deps {
                if d as usize >= op {
                    return Err(mal(format!("depends on later op {d}")));
                }
            }
            let mut regions: Vec<Region> = [o.kind.reads(), o.kind.writes()]
                .into_iter()
                .flatten()
                .collect();
            match &o.kind {
                OpKind::Send { to: peer, .. } | OpKind::Recv { from: peer, .. }
                    if (peer.0 >= p || peer.idx() == rank) =>
                {
                    return Err(mal(format!("peer {peer} is not another rank")));
                }
                OpKind::Put {
                    to,
                    src,
                    dst_offset,
                } => {
                    if to.0 >= p || to.idx() == rank {
                        return Err(mal(format!("put target {to} is not another rank")));
                    }
                    regions.push(Region::new(Buf::Window, *dst_offset, src.len));
                }
                OpKind::ExposeTo { group } | OpKind::AccessTo { group }
                    if group.iter().any(|g| g.0 >= p || g.idx() == rank) =>
                {
                    return Err(mal("epoch group names an invalid rank".into()));
                }
                _ => {}
            }
            for region in regions {
                let limit = limits[region.buf.index()];
                if region.end() > limit {
                    return Err(CheckError::OutOfBounds {
                        rank,
                        op,
                        region,
                        limit,
                    });
                }
            }
            if o.post == Post::ExchangeWithNext {
                let next = s.ops.get(op + 1);
                let ok = matches!(
                    (&o.kind, next.map(|n| (&n.kind, n.post))),
                    (
                        OpKind::Send {
                            mode: SendMode::Standard,
                            ..
                        },
                        Some((OpKind::Recv { .. }, Post::Blocking)),
                    ) | (
                        OpKind::Recv { .. },
                        Some((
                            OpKind::Send {
                                mode: SendMode::Standard,
                                ..
                            },
                            Post::Blocking,
                        )),
                    )
                );
                if !ok {
                    return Err(mal(
                        "an exchange must be a standard send and a receive, the second blocking"
                            .into(),
                    ));
                }
            }
        }
    }
    Ok(())
}

impl Machine<'_> {
    fn chan(&mut self, src: u32, dst: u32, tag: Tag) -> &mut Chan {
        let list = &mut self.chans[dst as usize];
        let at = match list.iter().position(|c| c.src == src && c.tag == tag) {
            Some(i) => i,
            None => {
                list.push(Chan {
                    src,
                    tag,
                    sends: VecDeque::new(),
                    recvs: VecDeque::new(),
                });
                list.len() - 1
            }
        };
        &mut list[at]
    }

    fn enqueue(&mut self, r: usize) {
        if !self.queued[r] {
            self.queued[r] = true;
            self.queue.push_back(r);
        }
    }

    fn op(&self, r: usize, i: u32) -> &OpKind {
        &self.sched[r].ops[i as usize].kind
    }

    fn advance(&mut self, r: usize) -> Result<(), CheckError> {
        loop {
            let mut progress = self.try_complete_sync(r);
            progress |= match self.exec {
                Execution::Blocking => self.step_blocking(r)?,
                Execution::Nonblocking => self.step_dataflow(r)?,
            };
            if !progress {
                return Ok(());
            }
        }
    }

    /// Blocking execution: start ops in program order, waiting as `Post` says.
    fn step_blocking(&mut self, r: usize) -> Result<bool, CheckError> {
        let rs = &self.ranks[r];
        if !rs.waiting.is_empty() {
            if rs.waiting.iter().all(|&i| rs.st[i as usize] == St::Done) {
                self.ranks[r].waiting.clear();
                return Ok(true);
            }
            return Ok(false);
        }
        let ops = &self.sched[r].ops;
        let pc = rs.pc;
        if pc >= ops.len() {
            return Ok(false);
        }
        let op = &ops[pc];
        match (op.post, &op.kind) {
            (_, OpKind::WaitAll) => {
                let pending: Vec<u32> = (0..pc as u32)
                    .filter(|&i| rs.st[i as usize] != St::Done)
                    .collect();
                self.ranks[r].st[pc] = St::Done;
                self.ranks[r].waiting = pending;
                self.ranks[r].pc += 1;
            }
            (Post::ExchangeWithNext, _) => {
                self.ranks[r].pc += 2;
                self.ranks[r].waiting = vec![pc as u32, pc as u32 + 1];
                self.start(r, pc as u32)?;
                self.start(r, pc as u32 + 1)?;
            }
            (Post::Immediate, _) => {
                self.ranks[r].pc += 1;
                self.start(r, pc as u32)?;
            }
            (Post::Blocking, _) => {
                self.ranks[r].pc += 1;
                self.ranks[r].waiting = vec![pc as u32];
                self.start(r, pc as u32)?;
            }
        }
        Ok(true)
    }

    /// Dataflow execution: start every op whose dependencies are done, in
    /// program order, keeping each channel in program order.
    fn step_dataflow(&mut self, r: usize) -> Result<bool, CheckError> {
        let candidates: Vec<u32> = self.ranks[r].ready.iter().copied().collect();
        let mut progress = false;
        for i in candidates {
            if let Some(k) = chan_index(self.op(r, i)) {
                let rs = &mut self.ranks[r];
                if rs.chan_next[k] != rs.chan_pos[i as usize] {
                    continue;
                }
                rs.chan_next[k] += 1;
            }
            self.ranks[r].ready.remove(&i);
            if matches!(self.op(r, i), OpKind::WaitAll) {
                self.ranks[r].st[i as usize] = St::Active;
                self.complete(r, i);
            } else {
                self.start(r, i)?;
            }
            progress = true;
        }
        Ok(progress)
    }

    fn hazard_check(&self, r: usize, i: u32) -> Result<(), CheckError> {
        let kind = self.op(r, i);
        let (reads, writes) = (kind.reads(), kind.writes());
        for &a in &self.ranks[r].active {
            let other = self.op(r, a);
            let (or, ow) = (other.reads(), other.writes());
            let clash = |x: Option<Region>, y: Option<Region>| match (x, y) {
                (Some(x), Some(y)) if x.overlaps(&y) => Some(x),
                _ => None,
            };
            if let Some(region) = clash(writes, or).or(clash(writes, ow)).or(clash(reads, ow)) {
                return Err(CheckError::Hazard {
                    rank: r,
                    op: i as usize,
                    other: a as usize,
                    region,
                });
            }
        }
        Ok(())
    }

    fn start(&mut self, r: usize, i: u32) -> Result<(), CheckError> {
        self.hazard_check(r, i)?;
        self.ranks[r].st[i as usize] = St::Active;
        self.ranks[r].active.push(i);
        let kind = self.op(r, i).clone();
        match kind {
            OpKind::Send { to, tag, mode, .. } => {
                let ch = self.chan(r as u32, to.0, tag);
                if mode == SendMode::Ready && ch.recvs.len() <= ch.sends.len() {
                    return Err(CheckError::ReadyTooEarly {
                        rank: r,
                        op: i as usize,
                        to: to.idx(),
                    });
                }
                ch.sends.push_back(i);
                self.try_match(r as u32, to.0, tag)?;
            }
            OpKind::Recv { from, tag, .. } => {
                self.chan(from.0, r as u32, tag).recvs.push_back(i);
                self.try_match(from.0, r as u32, tag)?;
            }
            OpKind::Copy { src, dst } => {
                self.transfer(r, src, r, dst.buf, dst.offset);
                self.complete(r, i);
            }
            OpKind::Put { to, .. } => {
                let in_access = self.ranks[r]
                    .access
                    .as_ref()
                    .is_some_and(|g| g.contains(&to));
                let in_fence = !self.ranks[r].fences.is_empty();
                if !in_access && !in_fence {
                    return Err(CheckError::Epoch {
                        rank: r,
                        op: i as usize,
                        why: format!("put to rank {to} outside any access epoch"),
                    });
                }
                self.ranks[r].puts.push(i);
            }
            OpKind::Fence => {
                let k = self.ranks[r].fences.len();
                self.ranks[r].fences.push(i);
                if self.fence_posted.len() <= k {
                    self.fence_posted.resize(k + 1, 0);
                }
                self.fence_posted[k] += 1;
                if self.fence_posted[k] == self.sched.len() {
                    for q in 0..self.sched.len() {
                        self.apply_puts(q);
                    }
                    for q in 0..self.sched.len() {
                        let f = self.ranks[q].fences[k];
                        self.complete(q, f);
                    }
                }
            }
            OpKind::ExposeTo { group } => {
                for g in &group {
                    self.enqueue(g.idx());
                }
                self.ranks[r].exposure = Some((group, BTreeSet::new()));
                self.complete(r, i);
            }
            OpKind::AccessTo { .. } | OpKind::EndExposure => {
                // completed by try_complete_sync once the peers are ready
            }
            OpKind::EndAccess => {
                let Some(group) = self.ranks[r].access.take() else {
                    return Err(CheckError::Epoch {
                        rank: r,
                        op: i as usize,
                        why: "complete without start".into(),
                    });
                };
                self.apply_puts(r);
                for g in group {
                    if let Some((_, done)) = self.ranks[g.idx()].exposure.as_mut() {
                        done.insert(r as u32);
                    }
                    self.enqueue(g.idx());
                }
                self.complete(r, i);
            }
            OpKind::WaitAll => self.complete(r, i),
        }
        Ok(())
    }

    /// Completes `AccessTo` and `EndExposure` ops whose peers are ready.
    fn try_complete_sync(&mut self, r: usize) -> bool {
        let mut progress = false;
        if !self.ranks[r].has_epochs {
            return false;
        }
        let active = self.ranks[r].active.clone();
        for i in active {
            match self.op(r, i).clone() {
                OpKind::AccessTo { group } => {
                    let me = Rank(r as u32);
                    let ready = group.iter().all(|g| {
                        self.ranks[g.idx()]
                            .exposure
                            .as_ref()
                            .is_some_and(|(eg, done)| eg.contains(&me) && !done.contains(&me.0))
                    });
                    if ready {
                        self.ranks[r].access = Some(group);
                        self.complete(r, i);
                        progress = true;
                    }
                }
                OpKind::EndExposure => {
                    let done = self.ranks[r]
                        .exposure
                        .as_ref()
                        .is_none_or(|(g, done)| g.iter().all(|x| done.contains(&x.0)));
                    if done {
                        self.ranks[r].exposure = None;
                        self.complete(r, i);
                        progress = true;
                    }
                }
                _ => {}
            }
        }
        progress
    }

    fn apply_puts(&mut self, r: usize) {
        for i in std::mem::take(&mut self.ranks[r].puts) {
            if let OpKind::Put {
                to,
                src,
                dst_offset,
            } = *self.op(r, i)
            {
                self.transfer(r, src, to.idx(), Buf::Window, dst_offset);
            }
            self.complete(r, i);
        }
    }

    fn try_match(&mut self, src: u32, dst: u32, tag: Tag) -> Result<(), CheckError> {
        loop {
            let ch = self.chan(src, dst, tag);
            if ch.sends.is_empty() || ch.recvs.is_empty() {
                return Ok(());
            }
            let s = ch.sends.pop_front().expect("send");
            let rv = ch.recvs.pop_front().expect("recv");
            let (OpKind::Send { src: sr, .. }, OpKind::Recv { dst: dr, .. }) =
                (self.op(src as usize, s), self.op(dst as usize, rv))
            else {
                unreachable!("channels hold sends and receives")
            };
            let (sr, dr) = (*sr, *dr);
            if sr.len != dr.len {
                return Err(CheckError::LengthMismatch {
                    from: src as usize,
                    to: dst as usize,
                    tag,
                    sent: sr.len,
                    posted: dr.len,
                    send_op: s as usize,
                    recv_op: rv as usize,
                });
            }
            self.transfer(src as usize, sr, dst as usize, dr.buf, dr.offset);
            self.complete(src as usize, s);
            self.complete(dst as usize, rv);
        }
    }

    fn complete(&mut self, r: usize, i: u32) {
        let rs = &mut self.ranks[r];
        rs.st[i as usize] = St::Done;
        rs.active.retain(|&a| a != i);
        if self.exec == Execution::Nonblocking {
            for d in std::mem::take(&mut rs.dependents[i as usize]) {
                rs.remaining[d as usize] -= 1;
                if rs.remaining[d as usize] == 0 {
                    rs.ready.insert(d);
                }
            }
        }
        self.enqueue(r);
    }

    /// Copies the origins of `src` on rank `from` to `buf[offset..]` of rank `to`.
    fn transfer(&mut self, from: usize, src: Region, to: usize, buf: Buf, offset: u64) {
        let mut runs = std::mem::take(&mut self.scratch);
        self.ranks[from].content[src.buf.index()]
            .as_ref()
            .expect("content")
            .read_into(src.offset, src.len, &mut runs);
        self.ranks[to].content[buf.index()]
            .as_mut()
            .expect("content")
            .write(offset, &runs);
        self.scratch = runs;
    }

    fn describe_stuck(&self, r: usize) -> Option<String> {
        let rs = &self.ranks[r];
        let first = rs.st.iter().position(|&s| s != St::Done)?;
        let waiting: Vec<usize> = rs
            .st
            .iter()
            .enumerate()
            .filter(|(_, &s)| s == St::Active)
            .map(|(i, _)| i)
            .collect();
        let at = waiting.first().copied().unwrap_or(first);
        Some(format!(
            "rank {r} waits at op {at} ({:?})",
            self.sched[r].ops[at].kind
        ))
    }
}

/// Buffer lengths for a call of `bytes`.
fn limits(bytes: u64) -> [u64; 3] {
    [bytes, bytes, bytes]
}

/// Proves a broadcast: every rank ends with every byte of the root's buffer,
/// the root's buffer is untouched, and nothing deadlocks.
pub fn check_bcast(
    spec: &AlgoSpec,
    nodes: &NodeMap,
    root: usize,
    bytes: u64,
    exec: Execution,
) -> Result<(), CheckError> {
    let sched = build_all(Collective::Bcast, spec, root, bytes, nodes)?;
    let out = run(&sched, exec, limits(bytes))?;
    for (r, c) in out.iter().enumerate() {
        let data = &c[Buf::Data.index()];
        if let Some((offset, found)) = data.mismatch(bytes, root as u32, Buf::Data) {
            return Err(CheckError::WrongData {
                rank: r,
                buf: Buf::Data,
                offset,
                found: found.to_string(),
                expected: format!("rank {root} Data[{offset}]"),
            });
        }
    }
    Ok(())
}

/// Proves a swap: every paired rank's receive buffer holds its partner's
/// data buffer, data buffers are untouched, the odd rank out receives nothing.
pub fn check_swap(
    spec: &AlgoSpec,
    nodes: &NodeMap,
    bytes: u64,
    exec: Execution,
) -> Result<(), CheckError> {
    let resolved = crate::registry::resolve(Collective::Swap, spec).map_err(BuildError::from)?;
    let pairing = resolved
        .word("pairing")
        .map_err(BuildError::from)?
        .to_string();
    let sched = build_all(Collective::Swap, &resolved, 0, bytes, nodes)?;
    let out = run(&sched, exec, limits(bytes))?;
    let p = nodes.size();
    for (r, c) in out.iter().enumerate() {
        let expect = [
            (Buf::Data, r as u32, Buf::Data),
            match partner(r, p, &pairing) {
                Some(q) => (Buf::Recv, q as u32, Buf::Data),
                None => (Buf::Recv, r as u32, Buf::Recv),
            },
        ];
        for (buf, want_rank, want_buf) in expect {
            if let Some((offset, found)) = c[buf.index()].mismatch(bytes, want_rank, want_buf) {
                return Err(CheckError::WrongData {
                    rank: r,
                    buf,
                    offset,
                    found: found.to_string(),
                    expected: format!("rank {want_rank} {want_buf:?}[{offset}]"),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::Builder;
    use crate::schedule::Post;

    fn two(f0: impl Fn(&mut Builder), f1: impl Fn(&mut Builder)) -> Vec<Schedule> {
        let mut b0 = Builder::new();
        f0(&mut b0);
        let mut b1 = Builder::new();
        f1(&mut b1);
        vec![b0.finish(), b1.finish()]
    }

    #[test]
    fn content_tracks_origins() {
        let mut c = Content::identity(0, Buf::Data);
        let other = Content::identity(1, Buf::Data);
        c.write(10, &other.read(100, 20));
        let runs = c.read(5, 30);
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[1].1.offset, 100);
        assert_eq!(runs[2].1.offset, 30);
        assert_eq!(c.mismatch(10, 0, Buf::Data), None);
        assert_eq!(c.mismatch(11, 0, Buf::Data).map(|m| m.0), Some(10));
    }

    #[test]
    fn head_to_head_blocking_sends_deadlock() {
        let s = two(
            |b| {
                b.send(1, Region::data(0, 4), Post::Blocking);
                b.recv(1, Region::new(Buf::Recv, 0, 4), Post::Blocking);
            },
            |b| {
                b.send(0, Region::data(0, 4), Post::Blocking);
                b.recv(0, Region::new(Buf::Recv, 0, 4), Post::Blocking);
            },
        );
        assert!(matches!(
            run(&s, Execution::Blocking, [4; 3]),
            Err(CheckError::Deadlock { .. })
        ));
        // The dataflow execution posts both at once: no deadlock.
        assert!(run(&s, Execution::Nonblocking, [4; 3]).is_ok());
    }

    #[test]
    fn length_mismatch_and_bounds_are_caught() {
        let s = two(
            |b| {
                b.send(1, Region::data(0, 4), Post::Blocking);
            },
            |b| {
                b.recv(0, Region::data(0, 3), Post::Blocking);
            },
        );
        assert!(matches!(
            run(&s, Execution::Blocking, [4; 3]),
            Err(CheckError::LengthMismatch { .. })
        ));
        assert!(matches!(
            run(&s, Execution::Blocking, [2; 3]),
            Err(CheckError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn ready_send_without_posted_receive_is_caught() {
        let s = two(
            |b| {
                b.send_tagged(
                    1,
                    Region::data(0, 4),
                    Tag::Data,
                    SendMode::Ready,
                    Post::Blocking,
                );
            },
            |b| {
                b.recv(0, Region::data(0, 4), Post::Blocking);
            },
        );
        // rank 0 runs first and finds no receive posted
        assert!(matches!(
            run(&s, Execution::Blocking, [4; 3]),
            Err(CheckError::ReadyTooEarly { .. })
        ));
    }

    #[test]
    fn overwriting_a_buffer_in_flight_is_a_hazard() {
        let s = two(
            |b| {
                b.send(1, Region::data(0, 4), Post::Immediate);
                b.recv(1, Region::data(2, 4), Post::Immediate);
                b.wait_all();
            },
            |b| {
                b.recv(0, Region::data(0, 4), Post::Immediate);
                b.send(0, Region::data(4, 4), Post::Immediate);
                b.wait_all();
            },
        );
        assert!(matches!(
            run(&s, Execution::Blocking, [8; 3]),
            Err(CheckError::Hazard { .. })
        ));
    }

    #[test]
    fn wrong_data_is_caught() {
        // A "broadcast" that sends the wrong half.
        let s = two(
            |b| {
                b.send(1, Region::data(1, 3), Post::Blocking);
            },
            |b| {
                b.recv(0, Region::data(0, 3), Post::Blocking);
            },
        );
        let out = run(&s, Execution::Blocking, [4; 3]).unwrap();
        assert_eq!(out[1][0].mismatch(4, 0, Buf::Data).map(|m| m.0), Some(0));
    }
}
