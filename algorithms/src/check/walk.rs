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
use crate::schedule::{OpKind, Post};
use crate::spec::Execution;

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
            let rs = &mut self.ranks[r];
            if let Some((k, pos)) = rs.chan[i as usize] {
                if rs.chan_next[k as usize] != pos {
                    continue;
                }
                rs.chan_next[k as usize] += 1;
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
