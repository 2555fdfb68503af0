//! `shm`'s small-message path (messages of at most
//! [`SMALL_MAX`](colltune_algorithms::bcast::shm::SMALL_MAX) bytes) run
//! straight, without a plan or the general executor: the schedule
//! `colltune_algorithms::bcast::shm` builds for such a message, and the
//! checker proves (every rank count and root, calls in a row reusing every
//! slot of the ring, mixed with the segmented path), is a handful of ops
//! whose only inputs are the root, the length and the call's number, so
//! this module does exactly those ops in their program order (the test
//! below holds the two together):
//!
//! ```text
//!   root:   await every other rank's DONE of the call 16 back (met at once
//!           in the window's first 16 calls; from what was seen before when
//!           that is enough), copy the message into slot k % 16 of its
//!           part's small ring, signal POSTED (and WRITTEN, for a rank
//!           that erroneously passed more bytes), signal DONE
//!   others: await the root's POSTED of this call, copy the slot out,
//!           signal DONE
//! ```
//!
//! Flags as the executor stamps them (the call's number in the upper
//! half), the window, the call count and the flags seen are the
//! communicator's, shared with the general executor, so calls of either
//! path follow each other on one window.

use std::sync::atomic::{AtomicU64, Ordering};

use colltune_algorithms::bcast::shm::{DONE, POSTED, SMALL_MAX, SMALL_RING, WRITTEN};
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

/// Broadcasts `buf` (1..=SMALL_MAX bytes) from `root` through the small
/// ring of the communicator's shared window. The caller checked that the
/// communicator's ranks share memory (`Comm::shared_memory_fits`).
pub fn bcast(comm: &Comm, buf: &mut [u8], root: usize) -> Result<(), TransportError> {
    let bytes = buf.len() as u64;
    debug_assert!(bytes > 0 && bytes <= SMALL_MAX);
    if comm.size() == 1 {
        // The schedule of one rank is empty: no window, no call counted.
        return Ok(());
    }
    let w = comm.shared_window(SMALL_RING.end())?;
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
    let slot = SMALL_RING.place(Region::new(Buf::Shared, SMALL_RING.base, bytes), call);
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
        let back = SMALL_RING.slots as u64;
        if call > back {
            let want = (call - back) << 32 | 1;
            for q in (0..comm.size()).filter(|&q| q != me) {
                wait(q, DONE, want)?;
            }
        }
        // SAFETY: this rank's part holds FLAGS_BYTES + the ring (the
        // window was made or grown for it); every reader of the slot's last
        // call signalled DONE after its load (awaited above).
        unsafe {
            std::ptr::copy_nonoverlapping(
                buf.as_ptr(),
                mine.add(FLAGS_BYTES + slot.offset as usize),
                buf.len(),
            )
        };
        sync()?;
        flag(&w, mine, POSTED).store(stamp, Ordering::Release);
        // What the schedule signals for an erroneous longer receive.
        flag(&w, mine, WRITTEN).store(stamp, Ordering::Release);
    } else {
        wait(root, POSTED, stamp)?;
        // SAFETY: the root's part holds the ring; it published this call's
        // bytes (POSTED, awaited above) and rewrites the slot only once
        // this rank signals DONE of this call.
        unsafe {
            std::ptr::copy_nonoverlapping(
                from.add(FLAGS_BYTES + slot.offset as usize),
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
    //! The ops [`bcast`] does are the schedule's the checker proves.
    use colltune_algorithms::bcast::shm::{DONE, POSTED, SMALL_MAX, SMALL_RING, WRITTEN};
    use colltune_algorithms::{build, AlgoSpec, Buf, Collective, NodeMap, OpKind, Shape};

    #[test]
    fn the_straight_path_does_the_schedules_ops() {
        for p in [1, 2, 3, 5, 8] {
            let nodes = NodeMap::single(p);
            for root in 0..p {
                for bytes in [1, 7, SMALL_MAX] {
                    for rank in 0..p {
                        let shape = Shape {
                            rank,
                            size: p,
                            root,
                            bytes,
                            nodes: &nodes,
                        };
                        let spec = AlgoSpec::parse("shm").unwrap();
                        let s = build(Collective::Bcast, &spec, &shape).unwrap();
                        if p == 1 {
                            assert!(s.ops.is_empty() && s.buf_len == [0; 4], "{s:?}");
                            continue;
                        }
                        assert_eq!(s.ring, Some(SMALL_RING));
                        let kinds: Vec<String> = s
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
                                        && *dst
                                            == colltune_algorithms::Region::new(
                                                Buf::Shared,
                                                SMALL_RING.base,
                                                bytes,
                                            ) =>
                                {
                                    "copy in".into()
                                }
                                OpKind::Load { from, src, dst }
                                    if dst.buf == Buf::Data
                                        && dst.offset == 0
                                        && src.offset == SMALL_RING.base
                                        && src.len == bytes =>
                                {
                                    format!("load {}", from.idx())
                                }
                                OpKind::Signal { flag, value: 1 } => format!("signal {flag}"),
                                other => format!("{other:?}"),
                            })
                            .collect();
                        let mut want: Vec<String> = Vec::new();
                        if rank == root {
                            for q in (0..p).filter(|&q| q != root) {
                                want.push(format!("await {q} {DONE} back {}", SMALL_RING.slots));
                            }
                            want.push("copy in".into());
                            want.push(format!("signal {POSTED}"));
                            want.push(format!("signal {WRITTEN}"));
                        } else {
                            want.push(format!("await {root} {POSTED} back 0"));
                            want.push(format!("load {root}"));
                        }
                        want.push(format!("signal {DONE}"));
                        let mut got = kinds.clone();
                        let mut w = want.clone();
                        // The root's awaits may come in any order.
                        got.sort();
                        w.sort();
                        assert_eq!(got, w, "{p} ranks, root {root}, rank {rank}: {kinds:?}");
                        // Program order: every op after the ones it depends on,
                        // and the last one DONE.
                        assert_eq!(kinds.last(), want.last());
                    }
                }
            }
        }
    }
}
