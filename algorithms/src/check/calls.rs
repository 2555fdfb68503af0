//! Several calls in a row, proven as one: what a shared-memory algorithm
//! must get right across calls (its window and flags outlive the call) and
//! a single call cannot show. A root may run ahead into the next call while
//! readers still copy out of the previous one; the proof must show that it
//! never overwrites what they have not read, and that no reader takes an
//! earlier call's data for this one's.
//!
//! Each rank's schedules of calls `0..k` become one schedule, as the
//! executor runs them:
//!
//! - call `j + 1` starts once every op of call `j` completed (its ops
//!   without dependencies depend on call `j`'s last ops);
//! - its message buffers are its own (`Data`, `Recv`, `Window` shifted
//!   past every earlier call's bytes), so a byte of an earlier call found
//!   there is caught; the shared window is one, as in the executor, and a
//!   schedule's ring slot (`Schedule::ring`) moves to the call's slot, as
//!   the executor moves it (call `j` is the window's call `j + 1`);
//! - flags carry the call's number, as the executor stamps them (value `v`
//!   of call `j` is `(j + 1) << 24 | v`), and an await of the previous
//!   call's value (`back` calls ago) becomes a plain await of that stamp
//!   (met at once in the first `back` calls, as in the executor's first
//!   calls on a window).
//!
//! The proof of one call (`shared`) then covers the interleaving of calls.

use super::CheckError;
use crate::schedule::{Buf, OpKind, Region, Schedule, SHARED_FLAGS};

/// Bits of a stamped flag value below the call's number.
const CALL_SHIFT: u32 = 24;

/// Rank `r`'s schedules of consecutive calls (`calls[j][r]`, message
/// buffers of `sizes[j]` bytes) as one schedule per rank.
pub(super) fn in_a_row(
    calls: &[Vec<Schedule>],
    sizes: &[u64],
) -> Result<Vec<Schedule>, CheckError> {
    let p = calls.first().map_or(0, Vec::len);
    (0..p)
        .map(|r| {
            let mut out = Schedule::default();
            let mut sinks: Vec<u32> = Vec::new();
            let mut last_signal = [None::<u32>; SHARED_FLAGS as usize];
            for (j, call) in calls.iter().enumerate() {
                let s = &call[r];
                let base = out.ops.len() as u32;
                let shift: u64 = sizes[..j].iter().sum();
                let slot = |reg: &mut Region| {
                    if let Some(ring) = s.ring {
                        *reg = ring.place(*reg, j as u64 + 1);
                    }
                };
                let stamp = |op: usize, v: u32, back: u64| -> Result<u32, CheckError> {
                    if v >> CALL_SHIFT != 0 || j >= (1 << (32 - CALL_SHIFT)) - 1 {
                        return Err(CheckError::Malformed {
                            rank: r,
                            op: base as usize + op,
                            why: format!(
                                "flag value {v} of call {j} too large to prove calls in a row"
                            ),
                        });
                    }
                    Ok(((j as u64 + 1 - back) << CALL_SHIFT) as u32 | v)
                };
                let mut depended = vec![false; s.ops.len()];
                for (i, op) in s.ops.iter().enumerate() {
                    let mut op = op.clone();
                    for d in &op.deps {
                        depended[*d as usize] = true;
                    }
                    let mut deps: Vec<u32> = if op.deps.is_empty() {
                        sinks.clone()
                    } else {
                        Vec::new()
                    };
                    match &mut op.kind {
                        OpKind::Send { src, .. } => shift_region(src, shift),
                        OpKind::Recv { dst, .. } => shift_region(dst, shift),
                        OpKind::Load { src, dst, .. } => {
                            slot(src);
                            shift_region(dst, shift);
                        }
                        OpKind::Copy { src, dst } => {
                            slot(src);
                            slot(dst);
                            shift_region(src, shift);
                            shift_region(dst, shift);
                        }
                        OpKind::Put {
                            src, dst_offset, ..
                        } => {
                            shift_region(src, shift);
                            *dst_offset += shift;
                        }
                        OpKind::Signal { flag, value } => {
                            *value = stamp(i, *value, 0)?;
                            if let Some(prev) = last_signal[*flag as usize] {
                                deps.push(prev);
                            }
                            last_signal[*flag as usize] = Some(base + i as u32);
                        }
                        OpKind::Await { value, back, .. } => {
                            if *back == 0 {
                                *value = stamp(i, *value, 0)?;
                            } else if j >= *back as usize {
                                *value = stamp(i, *value, *back as u64)?;
                                *back = 0;
                            }
                        }
                        _ => {}
                    }
                    deps.extend(op.deps.iter().map(|d| d + base));
                    deps.sort_unstable();
                    deps.dedup();
                    op.deps = deps;
                    out.ops.push(op);
                }
                if !s.ops.is_empty() {
                    sinks = (0..s.ops.len())
                        .filter(|&i| !depended[i])
                        .map(|i| base + i as u32)
                        .collect();
                }
                for b in [Buf::Data, Buf::Recv, Buf::Window] {
                    let l = &mut out.buf_len[b.index()];
                    *l = (*l).max(shift + s.buf_len[b.index()]);
                }
                let sh = &mut out.buf_len[Buf::Shared.index()];
                *sh = (*sh).max(s.buf_len[Buf::Shared.index()]);
            }
            Ok(out)
        })
        .collect()
}

/// A message buffer's region of call `j` lies `j` x bytes further on.
fn shift_region(r: &mut Region, by: u64) {
    if r.buf != Buf::Shared {
        r.offset += by;
    }
}
