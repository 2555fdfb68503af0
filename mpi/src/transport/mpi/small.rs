//! `shm`'s one-copy calls run straight, without a plan or the general
//! executor: messages of at most
//! [`SMALL_MAX`](colltune_algorithms::bcast::shm::SMALL_MAX) bytes (the
//! small ring) and longer ones the variant's ring holds in one slot
//! (`segment` 0 or at least the message: [`one_slot`]). The schedules
//! `colltune_algorithms::bcast::shm` builds for them, which the checker
//! proves (every rank count and root, calls in a row reusing every slot of
//! the ring, mixed with the segmented path), are a handful of ops whose
//! only inputs are the root, the length and the call's number, so this
//! module does exactly those ops in their program order (the tests below
//! hold the two together, op by op):
//!
//! ```text
//!                small ring (<= SMALL_MAX)        one slot (longer)
//!   root:        await every other rank's DONE    ... of the previous call
//!                of the call 16 back
//!                copy the message into            ... slot 0 of the
//!                slot k % 16 of its small ring    segmented ring (after the
//!                                                 small ring)
//!                signal POSTED, then WRITTEN      signal WRITTEN, then POSTED
//!                (the second: for a rank that erroneously passed a count on
//!                the other side of SMALL_MAX), signal DONE
//!   others:      await the root's POSTED          ... WRITTEN
//!                copy the slot out, signal DONE
//! ```
//!
//! An await met before is met from what was seen (flags only rise): after
//! a barrier, or any collective, between two calls neither root waits.
//! Straight, a 2 KiB call costs the root 1,665 instructions, through the
//! general executor 2,818 (callgrind; IMB at 4 ranks 0.84-0.88x at 2-4 KiB).
//! Flags as the executor stamps them (the call's number in the upper
//! half), the window, the call count and the flags seen are the
//! communicator's, shared with the general executor, so calls of either
//! path follow each other on one window.

use std::sync::atomic::{AtomicU64, Ordering};

use colltune_algorithms::bcast::shm::{self, DONE, POSTED, SMALL_MAX, SMALL_RING, WRITTEN};
use colltune_algorithms::{Buf, Region};

use super::ffi;
use super::{Comm, SharedWindow, TransportError, FLAGS_BYTES, FLAG_STRIDE};

/// Flag `f` of the part at `part` (of a window `w` that outlives the
/// reference).
fn flag(_w: &SharedWindow, part: *mut u8, f: u8) -> &AtomicU64 {
    // SAFETY: flags are 64-byte aligned u64s at the head of a part that
    // lives as long as the window; every access to them is atomic.
    unsafe { AtomicU64::from_ptr(part.add(f as usize * FLAG_STRIDE).cast::<u64>()) }
}

/// Whether `shm` with `segment` and `slots` broadcasts `bytes` in one copy
/// through a slot (more than [`SMALL_MAX`]: the small ring's are
/// [`bcast`]'s): the message fits one slot of its ring.
pub fn one_slot(bytes: u64, segment: u64, slots: u64) -> bool {
    bytes > SMALL_MAX && slots > 0 && shm::ring(bytes, segment, slots).0 == bytes
}

/// Which of the two schedules a call runs.
#[derive(Clone, Copy)]
enum Path {
    /// At most SMALL_MAX bytes: slot k % 16 of the small ring.
    SmallRing,
    /// One slot of the segmented ring ([`one_slot`]).
    OneSlot,
}

/// Broadcasts `buf` (1..=SMALL_MAX bytes) from `root` through the small
/// ring of the communicator's shared window. The caller checked that the
/// communicator's ranks share memory (`Comm::shared_memory_fits`).
pub fn bcast(comm: &Comm, buf: &mut [u8], root: usize) -> Result<(), TransportError> {
    debug_assert!(!buf.is_empty() && buf.len() as u64 <= SMALL_MAX);
    run(comm, buf, root, Path::SmallRing)
}

/// Broadcasts `buf` (more than SMALL_MAX bytes, [`one_slot`] of the
/// variant) from `root` through slot 0 of the segmented ring, as the
/// schedule of one segment does. The caller checked that the
/// communicator's ranks share memory.
pub fn bcast_one_slot(comm: &Comm, buf: &mut [u8], root: usize) -> Result<(), TransportError> {
    debug_assert!(buf.len() as u64 > SMALL_MAX);
    run(comm, buf, root, Path::OneSlot)
}

fn run(comm: &Comm, buf: &mut [u8], root: usize, path: Path) -> Result<(), TransportError> {
    let bytes = buf.len() as u64;
    if comm.size() == 1 {
        // The schedule of one rank is empty: no window, no call counted.
        return Ok(());
    }
    let need = match path {
        Path::SmallRing => SMALL_RING.end(),
        Path::OneSlot => SMALL_RING.end() + bytes,
    };
    let w = comm.shared_window(need)?;
    let me = comm.rank();
    let part = |r: usize| {
        w.parts
            .get(r)
            .copied()
            .flatten()
            .ok_or(TransportError::NotSharedMemory { rank: me, peer: r })
    };
    let (mine, from) = (part(me)?, part(root)?);
    let call = comm.next_shared_call();
    let stamp = call << 32 | 1;
    // The slot, the call back whose readers the root awaits, the flag this
    // path's readers await and the one the other path's reader of an
    // erroneous count awaits (the root raises both).
    let (offset, back, awaited, other) = match path {
        Path::SmallRing => {
            let slot = SMALL_RING.place(Region::new(Buf::Shared, SMALL_RING.base, bytes), call);
            (slot.offset, SMALL_RING.slots as u64, POSTED, WRITTEN)
        }
        Path::OneSlot => (SMALL_RING.end(), 1, WRITTEN, POSTED),
    };
    let sync = || -> Result<(), TransportError> {
        if !w.unified {
            ffi::win_sync(w.win)?;
        }
        Ok(())
    };
    // Awaits rank `r`'s flag `f` >= `want` (from what was seen before
    // where that is enough: flags only rise).
    let wait = |r: usize, f: u8, want: u64| -> Result<(), TransportError> {
        if comm.flag_seen(r, f) >= want {
            return Ok(());
        }
        let fl = flag(&w, part(r)?, f);
        loop {
            let v = fl.load(Ordering::Acquire);
            if v >= want {
                comm.saw_flag(r, f, v);
                return sync();
            }
            std::thread::yield_now();
        }
    };
    if me == root {
        if call > back {
            let want = (call - back) << 32 | 1;
            for q in (0..comm.size()).filter(|&q| q != me) {
                wait(q, DONE, want)?;
            }
        }
        // SAFETY: this rank's part holds FLAGS_BYTES + `need` (the window
        // was made or grown for it); every reader of the slot's last call
        // signalled DONE after its load (awaited above).
        unsafe {
            std::ptr::copy_nonoverlapping(
                buf.as_ptr(),
                mine.add(FLAGS_BYTES + offset as usize),
                buf.len(),
            )
        };
        sync()?;
        flag(&w, mine, awaited).store(stamp, Ordering::Release);
        flag(&w, mine, other).store(stamp, Ordering::Release);
    } else {
        wait(root, awaited, stamp)?;
        // SAFETY: the root's part holds the slot; it published this call's
        // bytes (awaited above) and rewrites the slot only once this rank
        // signals DONE of this call.
        unsafe {
            std::ptr::copy_nonoverlapping(
                from.add(FLAGS_BYTES + offset as usize),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        sync()?;
    }
    flag(&w, mine, DONE).store(stamp, Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The ops [`bcast`] and [`bcast_one_slot`] do are the schedules' the
    //! checker proves.
    use super::one_slot;
    use colltune_algorithms::bcast::shm::{DONE, POSTED, SMALL_MAX, SMALL_RING, WRITTEN};
    use colltune_algorithms::registry::resolve;
    use colltune_algorithms::{build, AlgoSpec, Buf, Collective, NodeMap, OpKind, Region, Shape};

    /// The ops of `spec`'s schedule for one rank, named as the straight
    /// paths do them (a copy in or load of the slot at `slot`).
    fn ops(
        spec: &AlgoSpec,
        p: usize,
        root: usize,
        rank: usize,
        bytes: u64,
        slot: u64,
    ) -> Option<Vec<String>> {
        let nodes = NodeMap::single(p);
        let shape = Shape {
            rank,
            size: p,
            root,
            bytes,
            nodes: &nodes,
        };
        let s = build(Collective::Bcast, spec, &shape).unwrap();
        if p == 1 {
            assert!(s.ops.is_empty() && s.buf_len == [0; 4], "{s:?}");
            return None;
        }
        assert_eq!(s.ring, (bytes <= SMALL_MAX).then_some(SMALL_RING));
        let kinds = s
            .ops
            .iter()
            .map(|o| match &o.kind {
                OpKind::Await {
                    on,
                    flag,
                    value: 1,
                    back,
                } => format!("await {} {flag} back {back}", on.idx()),
                OpKind::Copy { src, dst }
                    if src.buf == Buf::Data
                        && src.offset == 0
                        && *dst == Region::new(Buf::Shared, slot, bytes) =>
                {
                    "copy in".into()
                }
                OpKind::Load { from, src, dst }
                    if dst.buf == Buf::Data
                        && dst.offset == 0
                        && *src == Region::new(Buf::Shared, slot, bytes) =>
                {
                    format!("load {}", from.idx())
                }
                OpKind::Signal { flag, value: 1 } => format!("signal {flag}"),
                other => format!("{other:?}"),
            })
            .collect();
        Some(kinds)
    }

    /// What the straight path does, in its order: the root's awaits (of
    /// the call `back` calls back), its copy and two signals, a reader's
    /// await of `awaited` and load; DONE last.
    fn straight(p: usize, root: usize, rank: usize, back: u32, signals: [u8; 2]) -> Vec<String> {
        let mut want: Vec<String> = Vec::new();
        if rank == root {
            for q in (0..p).filter(|&q| q != root) {
                want.push(format!("await {q} {DONE} back {back}"));
            }
            want.push("copy in".into());
            want.extend(signals.map(|f| format!("signal {f}")));
        } else {
            want.push(format!("await {root} {} back 0", signals[0]));
            want.push(format!("load {root}"));
        }
        want.push(format!("signal {DONE}"));
        want
    }

    fn check(spec: &AlgoSpec, bytes: u64, slot: u64, back: u32, signals: [u8; 2]) {
        for p in [1, 2, 3, 5, 8] {
            for root in 0..p {
                for rank in 0..p {
                    let Some(kinds) = ops(spec, p, root, rank, bytes, slot) else {
                        continue;
                    };
                    let want = straight(p, root, rank, back, signals);
                    // Program order as the straight path's, but for the
                    // root's awaits, which may come in any order.
                    let (mut got, mut w) = (kinds.clone(), want.clone());
                    got.sort();
                    w.sort();
                    assert_eq!(
                        got, w,
                        "{spec}, {bytes} B, {p} ranks, root {root}, rank {rank}: {kinds:?}"
                    );
                    let tail = |v: &[String]| {
                        v.iter()
                            .filter(|k| !k.starts_with("await"))
                            .cloned()
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(
                        tail(&kinds),
                        tail(&want),
                        "{spec}, {bytes} B, rank {rank}: {kinds:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_small_ring_path_does_the_schedules_ops() {
        for bytes in [1, 7, SMALL_MAX] {
            let spec = AlgoSpec::parse("shm").unwrap();
            check(
                &spec,
                bytes,
                SMALL_RING.base,
                SMALL_RING.slots,
                [POSTED, WRITTEN],
            );
        }
    }

    #[test]
    fn the_one_slot_path_does_the_schedules_ops() {
        let mut seen = 0;
        for text in [
            "shm",
            "shm:segment=0,slots=2",
            "shm:segment=4096,slots=1",
            "shm:segment=1048576,slots=8",
        ] {
            let spec = resolve(Collective::Bcast, &AlgoSpec::parse(text).unwrap()).unwrap();
            let (seg, slots) = (spec.int("segment").unwrap(), spec.int("slots").unwrap());
            for bytes in [
                SMALL_MAX + 1,
                4096,
                4097,
                65536,
                65537,
                1 << 20,
                (4 << 20) + 1,
            ] {
                if !one_slot(bytes, seg, slots) {
                    // More than one segment: the schedule copies more than once.
                    let nodes = NodeMap::single(3);
                    let shape = Shape {
                        rank: 0,
                        size: 3,
                        root: 0,
                        bytes,
                        nodes: &nodes,
                    };
                    let s = build(Collective::Bcast, &spec, &shape).unwrap();
                    let copies = s
                        .ops
                        .iter()
                        .filter(|o| matches!(o.kind, OpKind::Copy { .. }))
                        .count();
                    assert!(copies > 1, "{text} at {bytes} B: {copies} copies");
                    continue;
                }
                seen += 1;
                check(&spec, bytes, SMALL_RING.end(), 1, [WRITTEN, POSTED]);
            }
        }
        assert!(seen >= 10, "{seen}");
    }
}
