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
//!   give; the call before this one counts as having read everything, so
//!   the first write into a piece waits for each reader to have signalled
//!   anything at all in this call (it has then left the previous call).
//!
//! One-hop proofs: the await must be on the rank that did the other access
//! (a schedule that learns of it through a third rank is refused, which
//! errs on the safe side). Signals of a flag rise strictly in program
//! order, each depending on the one before (`validate`), so the first
//! signal to reach a value is known before the run.

use std::collections::BTreeMap;

use super::machine::Machine;
use super::CheckError;
use crate::schedule::{Buf, OpKind, Region, Schedule, SHARED_FLAGS};

const NONE: u32 = u32::MAX;
/// The call before this one, as a reader of every piece.
const PREVIOUS_CALL: u32 = u32::MAX;
const F: usize = SHARED_FLAGS as usize;

/// What one rank's schedule says about its shared-memory ops, derived once.
#[derive(Default)]
pub(super) struct Proof {
    /// Per op: the awaits it depends on (itself included), as the highest
    /// value awaited per (rank, flag), sorted: op i's are
    /// `know[know_end[i - 1]..know_end[i]]`.
    know: Vec<(u32, u8, u32)>,
    know_end: Vec<u32>,
    /// Per op and flag: the first signal of the flag depending on the op
    /// (itself included), or NONE.
    first_signal: Vec<[u32; F]>,
    /// Per signal op: the value of the flag's signal before it (-1: none).
    prev_value: Vec<i64>,
}

impl Proof {
    pub(super) fn new(s: &Schedule) -> Proof {
        let n = s.ops.len();
        let mut know = Vec::new();
        let mut know_end = Vec::with_capacity(n);
        let mut prev_value = vec![-1i64; n];
        let mut last = [-1i64; F];
        let (mut acc, mut tmp) = (Vec::new(), Vec::new());
        for (i, op) in s.ops.iter().enumerate() {
            acc.clear();
            for &d in &op.deps {
                let d = d as usize;
                let lo = if d == 0 { 0 } else { know_end[d - 1] as usize };
                merge_max(&mut acc, &know[lo..know_end[d] as usize], &mut tmp);
            }
            match op.kind {
                OpKind::Await { on, flag, value } => {
                    merge_max(&mut acc, &[(on.0, flag, value)], &mut tmp)
                }
                OpKind::Signal { flag, value } => {
                    prev_value[i] = last[flag as usize];
                    last[flag as usize] = value as i64;
                }
                _ => {}
            }
            know.extend_from_slice(&acc);
            know_end.push(u32::try_from(know.len()).expect("fits u32"));
        }
        // Dependencies point back: by the time op i is reached, every op
        // depending on it has passed its first signals on to it.
        let mut first_signal = vec![[NONE; F]; n];
        for i in (0..n).rev() {
            if let OpKind::Signal { flag, .. } = s.ops[i].kind {
                first_signal[i][flag as usize] = i as u32;
            }
            let fs = first_signal[i];
            for &d in &s.ops[i].deps {
                let t = &mut first_signal[d as usize];
                for f in 0..F {
                    t[f] = t[f].min(fs[f]);
                }
            }
        }
        Proof {
            know,
            know_end,
            first_signal,
            prev_value,
        }
    }

    /// The highest value of rank `r`'s flag `f` that op `i` awaited, if any.
    fn awaited(&self, i: u32, r: u32, f: u8) -> Option<u32> {
        let lo = if i == 0 {
            0
        } else {
            self.know_end[i as usize - 1] as usize
        };
        let k = &self.know[lo..self.know_end[i as usize] as usize];
        k.binary_search_by_key(&(r, f), |&(kr, kf, _)| (kr, kf))
            .ok()
            .map(|at| k[at].2)
    }

    /// Per flag: the value an await must exceed to be sure op `i` of this
    /// rank happened before (None: no signal of that flag follows it).
    /// Op `PREVIOUS_CALL`: any signal follows it.
    fn thresholds(&self, i: u32, signals: [bool; F]) -> [Option<i64>; F] {
        let mut out = [None; F];
        for f in 0..F {
            out[f] = if i == PREVIOUS_CALL {
                signals[f].then_some(-1)
            } else {
                match self.first_signal[i as usize][f] {
                    NONE => None,
                    s => Some(self.prev_value[s as usize]),
                }
            };
        }
        out
    }
}

/// Merges `b` into `a` (both sorted by (rank, flag)), keeping the higher
/// value of a (rank, flag) in both; `tmp` is scratch.
fn merge_max(a: &mut Vec<(u32, u8, u32)>, b: &[(u32, u8, u32)], tmp: &mut Vec<(u32, u8, u32)>) {
    if b.is_empty() {
        return;
    }
    if a.is_empty() {
        a.extend_from_slice(b);
        return;
    }
    tmp.clear();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        match (x.0, x.1).cmp(&(y.0, y.1)) {
            std::cmp::Ordering::Less => {
                tmp.push(x);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                tmp.push(y);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                tmp.push((x.0, x.1, x.2.max(y.2)));
                i += 1;
                j += 1;
            }
        }
    }
    tmp.extend_from_slice(&a[i..]);
    tmp.extend_from_slice(&b[j..]);
    std::mem::swap(a, tmp);
}

/// A piece of a rank's shared part: its last writer in this call (NONE:
/// not written yet) and the loads since, as (rank, op).
#[derive(Clone, Debug)]
struct Piece {
    end: u64,
    writer: u32,
    readers: Vec<(u32, u32)>,
}

/// The checker's shared-memory state.
#[derive(Default)]
pub(super) struct SharedState {
    proofs: Vec<Proof>,
    /// Per rank: whether each flag is ever signalled.
    signals: Vec<[bool; F]>,
    /// Per rank and flag: its value (None: not signalled in this call).
    pub(super) flags: Vec<[Option<u32>; F]>,
    /// Per rank: awaits on its flags not met yet: (rank, op, flag, value).
    blocked: Vec<Vec<(u32, u32, u8, u32)>>,
    /// Scratch: awaits a signal just met.
    released: Vec<(u32, u32)>,
    /// Per rank: its part, as pieces by start.
    parts: Vec<BTreeMap<u64, Piece>>,
}

impl SharedState {
    pub(super) fn new(sched: &[Schedule]) -> SharedState {
        let p = sched.len();
        let mut st = SharedState {
            proofs: Vec::with_capacity(p),
            signals: vec![[false; F]; p],
            flags: vec![[None; F]; p],
            blocked: vec![Vec::new(); p],
            released: Vec::new(),
            parts: vec![BTreeMap::new(); p],
        };
        let mut prev_readers: Vec<Vec<(u32, u32)>> = vec![Vec::new(); p];
        for (r, s) in sched.iter().enumerate() {
            let uses = s.uses_shared();
            st.proofs.push(if uses {
                Proof::new(s)
            } else {
                Proof::default()
            });
            if !uses {
                continue;
            }
            for op in &s.ops {
                match op.kind {
                    OpKind::Signal { flag, .. } => st.signals[r][flag as usize] = true,
                    OpKind::Load { from, .. } => {
                        let list = &mut prev_readers[from.idx()];
                        if !list.contains(&(r as u32, PREVIOUS_CALL)) {
                            list.push((r as u32, PREVIOUS_CALL));
                        }
                    }
                    _ => {}
                }
            }
        }
        for (r, readers) in prev_readers.into_iter().enumerate() {
            st.parts[r].insert(
                0,
                Piece {
                    end: u64::MAX,
                    writer: NONE,
                    readers,
                },
            );
        }
        st
    }
}

fn split_at(part: &mut BTreeMap<u64, Piece>, at: u64) {
    if let Some((_, piece)) = part.range_mut(..at).next_back() {
        if piece.end > at {
            let right = Piece {
                end: piece.end,
                ..piece.clone()
            };
            piece.end = at;
            part.insert(at, right);
        }
    }
}

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
            let t = self.shared.proofs[r].thresholds(w, self.shared.signals[r]);
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
                let t =
                    self.shared.proofs[q as usize].thresholds(l, self.shared.signals[q as usize]);
                if !self.published(r, i, q as usize, t) {
                    let when = if l == PREVIOUS_CALL {
                        "in the previous call".to_string()
                    } else {
                        format!("by its op {l}")
                    };
                    return Err(CheckError::Shared {
                        rank: r,
                        op: i as usize,
                        why: format!(
                            "overwrites its shared [{s}, {}) that rank {q} read {when} without \
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
            OpKind::Await { on, flag, value } => {
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

/// Whether a region is of the shared window.
pub(super) fn is_shared(r: &Region) -> bool {
    r.buf == Buf::Shared
}
