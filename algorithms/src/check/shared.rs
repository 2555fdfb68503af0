//! Shared memory: each rank's part of its node's shared window, the flags
//! its owner raises (`Signal`) and others wait on (`Await`), and direct
//! loads from a peer's part (`Load`), proven like messages.
//!
//! Bytes move as everywhere else (origins, `content`), at the moment the
//! checker runs the op. What makes that moment stand for every timing is a
//! proof on *happens-before*, built only from dependencies (which both
//! executions honour) and signal-to-await edges:
//!
//! - **no read before the write**: a `Load` of a piece last written (in
//!   this call) by op W of rank r must depend, directly or not, on an
//!   `Await` of one of r's flags for a value that only a signal depending
//!   on W can give (a value above the signal before the first such one);
//!   a piece not written in this call is never read;
//! - **no overwrite before every reader is done**: a write into a piece
//!   that rank q loaded since the last write must depend on an `Await` of
//!   one of q's flags for a value only a signal depending on that load can
//!   give. One schedule is one call on a fresh window; calls in a row
//!   (whose loads and writes of one part interleave across calls) are
//!   proven by running them as one schedule per rank (`calls`), where an
//!   await of the previous call's flag becomes a plain await.
//!
//! One-hop proofs: the await must be on the rank that did the other access
//! (a schedule that learns of it through a third rank is refused, which
//! errs on the safe side). Signals of a flag rise strictly in program
//! order, each depending on the one before (`validate`), so the first
//! signal to reach a value is known before the run.

use super::machine::Machine;
use super::proof::{split_at, F, NONE};
use super::CheckError;
use crate::schedule::{OpKind, Region};

impl Machine<'_> {
    /// Whether rank `q`'s op `i` awaited, for some flag of rank `r`, a value
    /// above that flag's threshold.
    fn published(&self, q: usize, i: u32, r: usize, t: [Option<i64>; F]) -> bool {
        (0..F).any(|f| match t[f] {
            Some(th) => self.shared.proofs[q]
                .awaited(i, r as u32, f as u8)
                .is_some_and(|v| v as i64 > th),
            None => false,
        })
    }

    /// Rank `q`'s op `i` loads `src` of rank `r`'s part: proves each piece
    /// was published to it, then records the load.
    pub(super) fn shared_load(
        &mut self,
        q: usize,
        i: u32,
        r: usize,
        src: Region,
    ) -> Result<(), CheckError> {
        let err = |why: String| CheckError::Shared {
            rank: q,
            op: i as usize,
            why,
        };
        if src.len == 0 {
            return Ok(());
        }
        let part = &mut self.shared.parts[r];
        split_at(part, src.offset);
        split_at(part, src.end());
        let pieces: Vec<(u64, u64, u32)> = part
            .range(src.offset..src.end())
            .map(|(&s, p)| (s, p.end, p.writer))
            .collect();
        for (s, e, w) in pieces {
            if w == NONE {
                return Err(err(format!(
                    "loads rank {r}'s shared [{s}, {e}) before it is written in this call"
                )));
            }
            let t = self.shared.proofs[r].thresholds(w);
            if !self.published(q, i, r, t) {
                return Err(err(format!(
                    "loads rank {r}'s shared [{s}, {e}) (written by its op {w}) without \
                     awaiting a signal of rank {r} that follows that write"
                )));
            }
            if let Some(p) = self.shared.parts[r].get_mut(&s) {
                p.readers.push((q as u32, i));
            }
        }
        Ok(())
    }

    /// Rank `r`'s op `i` writes `dst` of its own part: proves every load
    /// of it since the last write is done, then records the write.
    pub(super) fn shared_write(&mut self, r: usize, i: u32, dst: Region) -> Result<(), CheckError> {
        if dst.len == 0 {
            return Ok(());
        }
        let part = &mut self.shared.parts[r];
        split_at(part, dst.offset);
        split_at(part, dst.end());
        let keys: Vec<u64> = part.range(dst.offset..dst.end()).map(|(&s, _)| s).collect();
        for s in keys {
            let piece = self.shared.parts[r][&s].clone();
            for &(q, l) in &piece.readers {
                let t = self.shared.proofs[q as usize].thresholds(l);
                if !self.published(r, i, q as usize, t) {
                    return Err(CheckError::Shared {
                        rank: r,
                        op: i as usize,
                        why: format!(
                            "overwrites its shared [{s}, {}) that rank {q} read by its op {l} without \
                             awaiting a signal of rank {q} that follows that read",
                            piece.end
                        ),
                    });
                }
            }
            let p = self.shared.parts[r].get_mut(&s).expect("piece");
            p.writer = i;
            p.readers.clear();
        }
        Ok(())
    }

    /// Starts a shared-memory op (`kind` is op `i` of rank `r`).
    pub(super) fn start_shared(
        &mut self,
        r: usize,
        i: u32,
        kind: OpKind,
    ) -> Result<(), CheckError> {
        match kind {
            OpKind::Load { from, src, dst } => {
                self.shared_load(r, i, from.idx(), src)?;
                self.transfer(from.idx(), src, r, dst.buf, dst.offset);
                self.complete(r, i);
            }
            OpKind::Signal { flag, value } => {
                self.shared.flags[r][flag as usize] = Some(value);
                let mut blocked = std::mem::take(&mut self.shared.blocked[r]);
                blocked.retain(|&(q, j, f, v)| {
                    let met = f == flag && v <= value;
                    if met {
                        self.shared.released.push((q, j));
                    }
                    !met
                });
                self.shared.blocked[r] = blocked;
                self.complete(r, i);
                for (q, j) in std::mem::take(&mut self.shared.released) {
                    self.complete(q as usize, j);
                }
            }
            // An earlier call's: none before a fresh window (several
            // calls in a row are proven as one schedule, see `calls`).
            OpKind::Await { back: 1.., .. } => self.complete(r, i),
            OpKind::Await {
                on, flag, value, ..
            } => {
                if self.shared.flags[on.idx()][flag as usize].is_some_and(|v| v >= value) {
                    self.complete(r, i);
                } else {
                    self.shared.blocked[on.idx()].push((r as u32, i, flag, value));
                }
            }
            other => unreachable!("not a shared-memory op: {other:?}"),
        }
        Ok(())
    }
}
