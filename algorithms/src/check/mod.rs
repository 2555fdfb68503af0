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
//! - **Shared memory:** a load from a peer's part of the node's shared
//!   window happens after the write it reads, and a write into a rank's
//!   part after every load of what it overwrites, proven from dependencies
//!   and signal-to-await edges alone, so for every timing of both
//!   executions; over several calls in a row too (`check_bcast_calls`: a
//!   root running ahead, readers left behind, the root changing).
//!
//! By file: `content` (buffers as the origins of their bytes),
//! `validate` (what a schedule must be before it runs), `machine` (ranks,
//! message matching, starting and completing ops), `walk` (the blocking
//! and dataflow executions), `window` (one-sided epochs and puts),
//! `shared` (shared-memory windows: loads, flags and their proof) and
//! `proof` (what that proof derives from each schedule, and its state),
//! `calls` (calls in a row as one schedule),
//! `hazard` (buffers in flight). This file: the public API and its errors.

mod calls;
mod content;
mod hazard;
mod machine;
mod proof;
mod shared;
mod validate;
mod walk;
mod window;

use thiserror::Error;

pub use content::{Content, Origin};

use crate::error::BuildError;
use crate::registry::build_all;
use crate::schedule::{Buf, Region, Schedule, Tag};
use crate::spec::{AlgoSpec, Collective, Execution};
use crate::swap::partner;
use crate::topo::NodeMap;
use machine::Machine;
use validate::validate;

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
    #[error("rank {rank} op {op}: shared memory: {why}")]
    Shared { rank: usize, op: usize, why: String },
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

/// Runs the schedules of every rank of a communicator together; returns
/// each rank's buffers afterwards (`limits`: each buffer's length).
pub fn run(
    sched: &[Schedule],
    exec: Execution,
    limits: [u64; 3],
) -> Result<Vec<[Content; Buf::COUNT]>, CheckError> {
    validate(sched, limits)?;
    Machine::new(sched, exec).run()
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

/// Proves broadcasts in a row on one communicator, call `j` from root
/// `roots[j]`: each ends with every rank holding that call's bytes of its
/// root (none of an earlier call's), and nothing deadlocks, for every
/// timing, a rank entering a call as soon as it left the one before.
pub fn check_bcast_calls(
    spec: &AlgoSpec,
    nodes: &NodeMap,
    roots: &[usize],
    bytes: u64,
    exec: Execution,
) -> Result<(), CheckError> {
    let calls: Vec<(usize, u64)> = roots.iter().map(|&r| (r, bytes)).collect();
    check_bcast_sequence(spec, nodes, &calls, exec)
}

/// [`check_bcast_calls`] with each call's root and size: `calls[j]` is
/// `(root, bytes)` (sizes may mix the paths of an algorithm, `shm`'s small
/// and segmented ones say).
pub fn check_bcast_sequence(
    spec: &AlgoSpec,
    nodes: &NodeMap,
    calls: &[(usize, u64)],
    exec: Execution,
) -> Result<(), CheckError> {
    let scheds = calls
        .iter()
        .map(|&(root, bytes)| build_all(Collective::Bcast, spec, root, bytes, nodes))
        .collect::<Result<Vec<_>, _>>()?;
    let sizes: Vec<u64> = calls.iter().map(|c| c.1).collect();
    let sched = calls::in_a_row(&scheds, &sizes)?;
    let out = run(&sched, exec, limits(sizes.iter().sum()))?;
    let mut from = 0;
    for (j, &(root, bytes)) in calls.iter().enumerate() {
        for (r, c) in out.iter().enumerate() {
            let data = &c[Buf::Data.index()];
            if let Some((offset, found)) = data.mismatch_in(from, bytes, root as u32, Buf::Data) {
                return Err(CheckError::WrongData {
                    rank: r,
                    buf: Buf::Data,
                    offset,
                    found: found.to_string(),
                    expected: format!("rank {root} Data[{offset}] (call {j} of {})", calls.len()),
                });
            }
        }
        from += bytes;
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
mod tests;
