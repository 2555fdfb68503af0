//! The machine every rank's schedule runs on: each rank's state (ops
//! pending, active or done; its buffers), the channels that match messages,
//! and what starting and completing an op does. Which op starts next is the
//! execution's business (`walk`); one-sided ops are `window`'s.
//!
//! Sends are synchronous: a send stays active until its receive is matched,
//! so a schedule that completes here completes under any MPI buffering.
//! Messages match first-in first-out per (source, destination, tag).

use std::collections::{BTreeSet, VecDeque};

use super::content::{Content, Origin};
use super::proof::SharedState;
use super::CheckError;
use crate::channel::number_channels;
use crate::schedule::{Buf, OpKind, Rank, Region, Schedule, SendMode, Tag};
use crate::spec::Execution;

/// Where an op is in the call.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum St {
    Pending,
    Active,
    Done,
}

/// One rank's progress through its schedule.
#[derive(Default)]
pub(super) struct RankState {
    pub(super) st: Vec<St>,
    // blocking execution
    pub(super) pc: usize,
    pub(super) waiting: Vec<u32>,
    // dataflow execution
    pub(super) remaining: Vec<u32>,
    pub(super) dependents: Vec<Vec<u32>>,
    pub(super) ready: BTreeSet<u32>,
    /// Each send's or receive's (channel, position in it).
    pub(super) chan: Vec<Option<(u32, u32)>>,
    /// Per channel, the position whose turn it is to start.
    pub(super) chan_next: Vec<u32>,
    // both
    pub(super) active: Vec<u32>,
    pub(super) fences: Vec<u32>,
    pub(super) puts: Vec<u32>,
    pub(super) access: Option<Vec<Rank>>,
    pub(super) exposure: Option<(Vec<Rank>, BTreeSet<u32>)>,
    pub(super) content: [Option<Content>; Buf::COUNT],
    /// Whether the schedule opens post/start epochs (else no sync to poll).
    pub(super) has_epochs: bool,
}

/// The messages of one (source, destination, tag) not matched yet: posted
/// sends, or posted receives (one of the two is empty).
#[derive(Clone)]
struct Chan {
    src: u32,
    tag: Tag,
    sends: VecDeque<u32>,
    recvs: VecDeque<u32>,
}

/// Every rank's schedule and state, run together.
pub(super) struct Machine<'a> {
    pub(super) sched: &'a [Schedule],
    pub(super) exec: Execution,
    pub(super) ranks: Vec<RankState>,
    /// Per destination rank: (source, tag, posted unmatched sends, posted
    /// unmatched receives). Ranks talk to few peers, so a short list.
    chans: Vec<Vec<Chan>>,
    pub(super) fence_posted: Vec<usize>,
    /// Shared windows: flags, pieces, proofs.
    pub(super) shared: SharedState,
    queue: VecDeque<usize>,
    queued: Vec<bool>,
    scratch: Vec<(u64, Origin)>,
}

impl<'a> Machine<'a> {
    /// Every rank at its first op, each byte of its buffers its own origin.
    pub(super) fn new(sched: &'a [Schedule], exec: Execution) -> Self {
        let mut m = Machine {
            sched,
            exec,
            ranks: Vec::new(),
            chans: vec![Vec::new(); sched.len()],
            fence_posted: Vec::new(),
            shared: SharedState::new(sched),
            queue: (0..sched.len()).collect(),
            queued: vec![true; sched.len()],
            scratch: Vec::new(),
        };
        for (r, s) in sched.iter().enumerate() {
            let n = s.ops.len();
            let (chan, channels) = number_channels(&s.ops);
            let mut rs = RankState {
                st: vec![St::Pending; n],
                remaining: s.ops.iter().map(|o| o.deps.len() as u32).collect(),
                dependents: vec![Vec::new(); n],
                chan,
                chan_next: vec![0; channels],
                content: Buf::ALL.map(|b| Some(Content::identity(r as u32, b))),
                has_epochs: s
                    .ops
                    .iter()
                    .any(|o| matches!(o.kind, OpKind::AccessTo { .. } | OpKind::EndExposure)),
                ..Default::default()
            };
            for (i, op) in s.ops.iter().enumerate() {
                for &d in &op.deps {
                    rs.dependents[d as usize].push(i as u32);
                }
                if op.deps.is_empty() {
                    rs.ready.insert(i as u32);
                }
            }
            m.ranks.push(rs);
        }
        m
    }

    /// Advances ranks until none can; returns each rank's buffers, or the
    /// deadlock if some rank did not finish.
    pub(super) fn run(mut self) -> Result<Vec<[Content; Buf::COUNT]>, CheckError> {
        while let Some(r) = self.queue.pop_front() {
            self.queued[r] = false;
            self.advance(r)?;
        }
        let stuck: Vec<String> = (0..self.sched.len())
            .filter_map(|r| self.describe_stuck(r))
            .collect();
        if !stuck.is_empty() {
            return Err(CheckError::Deadlock {
                execution: self.exec,
                stuck: stuck.join("; "),
            });
        }
        Ok(self
            .ranks
            .into_iter()
            .map(|mut rs| rs.content.each_mut().map(|c| c.take().expect("content")))
            .collect())
    }
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

    pub(super) fn enqueue(&mut self, r: usize) {
        if !self.queued[r] {
            self.queued[r] = true;
            self.queue.push_back(r);
        }
    }

    pub(super) fn op(&self, r: usize, i: u32) -> &OpKind {
        &self.sched[r].ops[i as usize].kind
    }

    pub(super) fn start(&mut self, r: usize, i: u32) -> Result<(), CheckError> {
        self.hazard_check(r, i)?;
        self.ranks[r].st[i as usize] = St::Active;
        let kind = self.op(r, i).clone();
        // An await touches no buffer: kept out of the list hazards scan
        // (a dataflow rank may have hundreds waiting at once).
        if !matches!(kind, OpKind::Await { .. }) {
            self.ranks[r].active.push(i);
        }
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
                if dst.buf == Buf::Shared {
                    self.shared_write(r, i, dst)?;
                }
                self.transfer(r, src, r, dst.buf, dst.offset);
                self.complete(r, i);
            }
            OpKind::Put { .. }
            | OpKind::Fence
            | OpKind::ExposeTo { .. }
            | OpKind::AccessTo { .. }
            | OpKind::EndAccess
            | OpKind::EndExposure => self.start_window(r, i, kind)?,
            OpKind::Load { .. } | OpKind::Signal { .. } | OpKind::Await { .. } => {
                self.start_shared(r, i, kind)?
            }
            OpKind::WaitAll => self.complete(r, i),
        }
        Ok(())
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

    pub(super) fn complete(&mut self, r: usize, i: u32) {
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
    pub(super) fn transfer(&mut self, from: usize, src: Region, to: usize, buf: Buf, offset: u64) {
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
