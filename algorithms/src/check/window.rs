//! One-sided communication: puts land in the target's window when the
//! epoch that holds them closes; fences complete when every rank posted
//! the same fence; post/start/complete/wait (`ExposeTo`, `AccessTo`,
//! `EndAccess`, `EndExposure`) complete when the peers' epochs allow. A put
//! outside an access epoch, or a complete without a start, is an error.

use std::collections::BTreeSet;

use super::machine::Machine;
use super::CheckError;
use crate::schedule::{Buf, OpKind, Rank};

impl Machine<'_> {
    /// Starts a one-sided op (`kind` is op `i` of rank `r`).
    pub(super) fn start_window(
        &mut self,
        r: usize,
        i: u32,
        kind: OpKind,
    ) -> Result<(), CheckError> {
        match kind {
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
            other => unreachable!("not a one-sided op: {other:?}"),
        }
        Ok(())
    }

    /// Completes `AccessTo` and `EndExposure` ops whose peers are ready.
    pub(super) fn try_complete_sync(&mut self, r: usize) -> bool {
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
}
