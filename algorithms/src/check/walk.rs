//! The two executions, as walkers over the machine: which op of a rank
//! starts next.
//!
//! - *blocking*: program order, `Post` honoured (a blocking op is waited
//!   for; immediate ones are waited for by the next `WaitAll`; an exchange
//!   starts a send and a receive together and waits for both);
//! - *dataflow* (the nonblocking execution): every op whose dependencies
//!   are done starts, in program order, each channel's ops in their order.

use super::machine::{Machine, St};
use super::CheckError;
use crate::schedule::{OpKind, Post, Tag};
use crate::spec::Execution;

/// Index of one rank's channel (outgoing or incoming, peer, tag) among its
/// `4 p` channels.
pub(super) fn chan_index(k: &OpKind) -> Option<usize> {
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

impl Machine<'_> {
    /// Runs rank `r` as far as it goes now (its execution's steps and any
    /// window synchronisation its peers allow).
    pub(super) fn advance(&mut self, r: usize) -> Result<(), CheckError> {
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
}
