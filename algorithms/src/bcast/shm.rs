//! Shared-memory broadcast: the root copies the message once into memory
//! every rank of its node maps, and every other rank copies it out, all at
//! once (the idea of MPICH's release/gather broadcast and Open MPI 5's
//! shared-memory components). No messages: flags in the same memory say
//! what is written and what is read.
//!
//! ```text
//!   root's part of the node's shared window:  [ slot 0 | slot 1 | slot 2 | slot 3 ]   (a ring)
//!
//!   root:     copy seg k -> slot k % s, then WRITTEN = k+1 ───────────┐
//!             (seg k < s: once every other rank's DONE of the         │ flags, no
//!              previous call is 1; seg k >= s reuses a slot once      │ messages
//!              every reader's CONSUMED >= k-s+1)                      │
//!   rank q:   wait WRITTEN >= k+1, copy slot k % s -> seg k,  <───────┘
//!             CONSUMED = k+1 (when the root will reuse that slot)
//!   everyone: DONE = 1 once its loads (writes) of the call are done
//!
//!   seg:   0    1    2    3    4    5 ...
//!   root:  W0   W1   W2   W3   (wait all R0) W4 ...
//!   q:          R0   R1   R2   R3   R4 ...          every q in parallel
//! ```
//! Flags carry the call's number (the executor stamps them), so a flag of
//! an earlier call never satisfies a wait of this one. The root never waits
//! for the readers to *enter* a call: its first pass waits only for every
//! other rank to be done with the *previous* call's shared memory (an
//! `Await` of the previous call's DONE), which after a barrier or any other
//! collective in between is long true, so a message of at most `s` slots
//! costs the root one copy and two flag stores. Back to back, a root can
//! run ahead by one call and no further; a reader that is still copying out
//! of call c keeps the root of call c+1 (whoever it is) from overwriting
//! any slot. The checker proves this over calls in a row (`check::calls`).
//!
//! Cost: the root writes n bytes once (n / copy bandwidth), the p-1 readers
//! copy n bytes each at the same time, sharing the node's memory bandwidth
//! B_node: about n/B_copy + (p-1) n / B_node, plus one flag round trip per
//! segment (a cache line moving between cores). Segments pipeline: readers
//! copy segment k while the root writes k+1. Against a tree of
//! point-to-point messages (each edge a copy in and a copy out through the
//! transport, relayed only after it arrived), half the copies and no relay
//! latency.
//!
//! Only for ranks that share memory: on a communicator that spans nodes it
//! does not apply (`Restriction::SharedMemory`); as the intra-node phase of
//! `hierarchical` it runs inside each node.
//!
//! Parameters: `segment` (bytes a slot holds; 0: the whole message in one
//! slot; either way at most [`SLOT_MAX`]) and `slots` (slots in the ring).
//! Every rank's part of the window holds `slots` x slot bytes (the root's
//! part is the ring; parts have one length so that any rank can be root).

use crate::builder::{Builder, OpId};
use crate::error::SpecError;
use crate::schedule::{Buf, Region, Ring};
use crate::shape::Shape;
use crate::spec::AlgoSpec;

use super::tree::segments;

/// The root's flag: segments written so far.
pub const WRITTEN: u8 = 0;
/// A reader's flag: segments copied out so far (signalled only for the
/// segments whose slot the root reuses in this call).
pub const CONSUMED: u8 = 1;
/// Every rank's flag: 1 once it is done with the call's shared memory (a
/// reader: every load; the root: every write). The next call's root awaits
/// it (`Await { previous: true }`) before its ring's first pass.
pub const DONE: u8 = 2;
/// The root's flag on the small-message path: the calls it posted (each
/// small call's root signals it once its copy is in).
pub const POSTED: u8 = 3;
/// The most bytes one slot holds, whatever `segment` says (so that a
/// whole-message slot cannot map the message once per rank of the node).
pub const SLOT_MAX: u64 = 4 << 20;
/// Messages of at most this many bytes take the small-message path: one
/// slot of [`SMALL_RING`] per call, whatever `segment` and `slots` say.
pub const SMALL_MAX: u64 = 1024;
/// The small-message ring: the first bytes of every rank's part of the
/// window, one [`SMALL_MAX`]-byte slot per call in turn (call `k` uses slot
/// `k % 16`); the segmented ring follows it.
pub const SMALL_RING: Ring = Ring {
    base: 0,
    stride: SMALL_MAX,
    slots: 16,
};

/// The bytes one slot holds and the slots in the ring, for a message of
/// `bytes`.
pub fn ring(bytes: u64, segment: u64, slots: u64) -> (u64, u64) {
    let slot = if segment == 0 { bytes } else { segment }
        .min(SLOT_MAX)
        .min(bytes);
    let nseg = if slot == 0 { 0 } else { bytes.div_ceil(slot) };
    (slot, slots.min(nseg))
}

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let (slot, ring_slots) = ring(sh.bytes, spec.int("segment")?, spec.int("slots")?);
    if sh.bytes > 0 && sh.bytes <= SMALL_MAX {
        small(sh, b);
        return Ok(());
    }
    let base = SMALL_RING.end();
    b.need(Buf::Shared, base + slot * ring_slots);
    let at = |k: usize, l: u64| Region::new(Buf::Shared, base + (k as u64 % ring_slots) * slot, l);
    let segs: Vec<(u64, u64)> = segments(0, sh.bytes, slot).collect();
    let n = segs.len();
    let ring_slots = ring_slots as usize;
    if n == 0 {
        return Ok(());
    }
    let mine: Vec<OpId> = if sh.rank == sh.root {
        // The ring's first pass needs every other rank of the node done
        // with the previous call (all its loads, from any root's part):
        // after a barrier or any other collective they are, so the root
        // writes at once.
        let others: Vec<usize> = (1..sh.size).map(|vr| sh.real(vr)).collect();
        let before: Vec<OpId> = others
            .iter()
            .map(|&q| b.await_previous(q, DONE, 1))
            .collect();
        let mut last = None;
        for (k, &(o, l)) in segs.iter().enumerate() {
            let freed: Vec<OpId> = if k < ring_slots {
                before.clone()
            } else {
                let done = (k - ring_slots + 1) as u32;
                others
                    .iter()
                    .map(|&q| b.await_flag(q, CONSUMED, done))
                    .collect()
            };
            let c = b.copy(Region::data(o, l), at(k, l));
            for f in freed {
                b.depend(c, f);
            }
            last = Some(b.signal(WRITTEN, k as u32 + 1, &[c]));
        }
        // For a rank that erroneously passed at most SMALL_MAX bytes (the
        // small path's reader): it completes (with what the small slot
        // holds) instead of waiting for ever, as the library's own
        // broadcast completes a longer receive.
        let posted = b.signal(POSTED, 1, &[last.expect("n > 0")]);
        vec![posted]
    } else {
        let mut loads = Vec::with_capacity(n);
        for (k, &(o, l)) in segs.iter().enumerate() {
            let a = b.await_flag(sh.root, WRITTEN, k as u32 + 1);
            let load = b.load(sh.root, at(k, l), Region::data(o, l), a);
            if k + ring_slots < n {
                b.signal(CONSUMED, k as u32 + 1, &[load]);
            }
            loads.push(load);
        }
        loads
    };
    // Done with this call's shared memory: the next call's root (whoever
    // it is) waits for this before it writes.
    b.signal(DONE, 1, &mine);
    Ok(())
}

/// The small-message path: the root of call `k` copies the message into
/// slot `k % 16` of its part's small ring and signals POSTED; each reader
/// awaits the root's POSTED of this call, copies the slot out and signals
/// DONE. The root waits only before it reuses a slot: for every other
/// rank's DONE of the call 16 calls back (whoever was its root, the slot
/// was last written then or earlier), so it runs up to 16 calls ahead of
/// its slowest reader, as an eager send would, and between two calls
/// separated by a barrier it never waits. Calls of the segmented path
/// between small ones count too (their DONE, the same flag), and their
/// ring lies after the small one, so neither path overwrites the other's.
fn small(sh: &Shape, b: &mut Builder) {
    b.ring(SMALL_RING);
    let slot = Region::new(Buf::Shared, SMALL_RING.base, sh.bytes);
    let data = Region::data(0, sh.bytes);
    let mine = if sh.rank == sh.root {
        let freed: Vec<OpId> = (1..sh.size)
            .map(|vr| b.await_back(sh.real(vr), DONE, 1, SMALL_RING.slots))
            .collect();
        let c = b.copy(data, slot);
        for f in freed {
            b.depend(c, f);
        }
        let p = b.signal(POSTED, 1, &[c]);
        // For a rank that erroneously passed more than SMALL_MAX bytes
        // (the segmented path's reader of one segment): as above.
        b.signal(WRITTEN, 1, &[p])
    } else {
        let a = b.await_flag(sh.root, POSTED, 1);
        b.load(sh.root, slot, data, a)
    };
    b.signal(DONE, 1, &[mine]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_bounded_and_fits_the_message() {
        assert_eq!(ring(0, 4096, 4), (0, 0));
        assert_eq!(ring(100, 4096, 4), (100, 1));
        assert_eq!(ring(10_000, 4096, 4), (4096, 3));
        assert_eq!(ring(1 << 20, 4096, 4), (4096, 4));
        assert_eq!(ring(1 << 30, 0, 2), (SLOT_MAX, 2));
    }
}
