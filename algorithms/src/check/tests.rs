//! The checker's own tests: each error it exists to catch, caught.

use super::*;
use crate::builder::Builder;
use crate::schedule::{Post, Ring, SendMode};

fn two(f0: impl Fn(&mut Builder), f1: impl Fn(&mut Builder)) -> Vec<Schedule> {
    let mut b0 = Builder::new();
    f0(&mut b0);
    let mut b1 = Builder::new();
    f1(&mut b1);
    vec![b0.finish(), b1.finish()]
}

#[test]
fn head_to_head_blocking_sends_deadlock() {
    let s = two(
        |b| {
            b.send(1, Region::data(0, 4), Post::Blocking);
            b.recv(1, Region::new(Buf::Recv, 0, 4), Post::Blocking);
        },
        |b| {
            b.send(0, Region::data(0, 4), Post::Blocking);
            b.recv(0, Region::new(Buf::Recv, 0, 4), Post::Blocking);
        },
    );
    assert!(matches!(
        run(&s, Execution::Blocking, [4; 3]),
        Err(CheckError::Deadlock { .. })
    ));
    // The dataflow execution posts both at once: no deadlock.
    assert!(run(&s, Execution::Nonblocking, [4; 3]).is_ok());
}

#[test]
fn length_mismatch_and_bounds_are_caught() {
    let s = two(
        |b| {
            b.send(1, Region::data(0, 4), Post::Blocking);
        },
        |b| {
            b.recv(0, Region::data(0, 3), Post::Blocking);
        },
    );
    assert!(matches!(
        run(&s, Execution::Blocking, [4; 3]),
        Err(CheckError::LengthMismatch { .. })
    ));
    assert!(matches!(
        run(&s, Execution::Blocking, [2; 3]),
        Err(CheckError::OutOfBounds { .. })
    ));
}

#[test]
fn ready_send_without_posted_receive_is_caught() {
    let s = two(
        |b| {
            b.send_tagged(
                1,
                Region::data(0, 4),
                Tag::Data,
                SendMode::Ready,
                Post::Blocking,
            );
        },
        |b| {
            b.recv(0, Region::data(0, 4), Post::Blocking);
        },
    );
    // rank 0 runs first and finds no receive posted
    assert!(matches!(
        run(&s, Execution::Blocking, [4; 3]),
        Err(CheckError::ReadyTooEarly { .. })
    ));
}

#[test]
fn overwriting_a_buffer_in_flight_is_a_hazard() {
    let s = two(
        |b| {
            b.send(1, Region::data(0, 4), Post::Immediate);
            b.recv(1, Region::data(2, 4), Post::Immediate);
            b.wait_all();
        },
        |b| {
            b.recv(0, Region::data(0, 4), Post::Immediate);
            b.send(0, Region::data(4, 4), Post::Immediate);
            b.wait_all();
        },
    );
    assert!(matches!(
        run(&s, Execution::Blocking, [8; 3]),
        Err(CheckError::Hazard { .. })
    ));
}

#[test]
fn wrong_data_is_caught() {
    // A "broadcast" that sends the wrong half.
    let s = two(
        |b| {
            b.send(1, Region::data(1, 3), Post::Blocking);
        },
        |b| {
            b.recv(0, Region::data(0, 3), Post::Blocking);
        },
    );
    let out = run(&s, Execution::Blocking, [4; 3]).unwrap();
    assert_eq!(out[1][0].mismatch(4, 0, Buf::Data).map(|m| m.0), Some(0));
}

/// How the pair below protects its one slot.
#[derive(Clone, Copy)]
struct Pair {
    /// The root's first write waits for rank 1 to be done with the
    /// previous call.
    wait_previous: bool,
    /// The root waits for rank 1's load before reusing the slot.
    wait_reuse: bool,
    /// Rank 1 waits for each segment's signal (in the previous call: a
    /// stale one, when false).
    await_written: bool,
}

const SAFE: Pair = Pair {
    wait_previous: true,
    wait_reuse: true,
    await_written: true,
};

/// Rank 0 publishes `segs` 4-byte segments through one 4-byte slot of its
/// shared part; rank 1 copies each out (flags as `shm`'s: 0 written, 1
/// consumed, 2 done with the call).
fn shared_pair(segs: u32, how: Pair) -> Vec<Schedule> {
    let shared = |len| Region::new(Buf::Shared, 0, len);
    two(
        |b| {
            b.need(Buf::Shared, 4);
            let before = b.await_previous(1, 2, 1);
            let mut last = None;
            for k in 0..segs {
                let free = if k == 0 {
                    how.wait_previous.then_some(before)
                } else {
                    how.wait_reuse.then(|| b.await_flag(1, 1, k))
                };
                let c = b.copy(Region::data(4 * k as u64, 4), shared(4));
                if let Some(f) = free {
                    b.depend(c, f);
                }
                last = Some(b.signal(0, k + 1, &[c]));
            }
            b.signal(2, 1, &[last.unwrap()]);
        },
        |b| {
            let mut loads = Vec::new();
            for k in 0..segs {
                let after = if how.await_written {
                    b.await_flag(0, 0, k + 1)
                } else {
                    b.await_previous(0, 0, k + 1)
                };
                let l = b.load(0, shared(4), Region::data(4 * k as u64, 4), after);
                b.signal(1, k + 1, &[l]);
                loads.push(l);
            }
            b.signal(2, 1, &loads);
        },
    )
}

/// `calls` calls of the pair in a row, run (`segs` segments each).
fn pair_in_a_row(
    segs: u32,
    how: Pair,
    calls: usize,
    exec: Execution,
) -> Result<Vec<[Content; Buf::COUNT]>, CheckError> {
    let bytes = 4 * segs as u64;
    let one: Vec<Vec<Schedule>> = (0..calls).map(|_| shared_pair(segs, how)).collect();
    let sched = calls::in_a_row(&one, &vec![bytes; calls])?;
    run(&sched, exec, [bytes * calls as u64; 3])
}

#[test]
fn shared_memory_broadcast_through_one_slot_is_proven() {
    for exec in Execution::ALL {
        let out = run(&shared_pair(3, SAFE), exec, [12; 3]).unwrap();
        assert_eq!(out[1][0].mismatch(12, 0, Buf::Data), None, "{exec}");
        // Three calls in a row: each call's bytes, from that call.
        let out = pair_in_a_row(3, SAFE, 3, exec).unwrap();
        assert_eq!(out[1][0].mismatch(36, 0, Buf::Data), None, "{exec}");
    }
}

#[test]
fn loading_before_the_write_is_published_is_caught() {
    let how = Pair {
        await_written: false,
        ..SAFE
    };
    for exec in Execution::ALL {
        let e = run(&shared_pair(1, how), exec, [4; 3]).unwrap_err();
        assert!(
            matches!(e, CheckError::Shared { rank: 1, .. }),
            "{exec}: {e}"
        );
    }
}

#[test]
fn a_reader_taking_the_previous_calls_data_is_caught() {
    // Rank 1 waits for the previous call's signal: it may load before this
    // call's write (or after, without a proof that it follows it).
    let how = Pair {
        await_written: false,
        ..SAFE
    };
    for exec in Execution::ALL {
        let e = pair_in_a_row(1, how, 3, exec).unwrap_err();
        assert!(
            matches!(
                e,
                CheckError::Shared { rank: 1, .. } | CheckError::WrongData { rank: 1, .. }
            ),
            "{exec}: {e}"
        );
    }
}

#[test]
fn overwriting_a_slot_before_the_reader_is_done_is_caught() {
    let how = Pair {
        wait_reuse: false,
        ..SAFE
    };
    for exec in Execution::ALL {
        let e = run(&shared_pair(3, how), exec, [12; 3]).unwrap_err();
        assert!(matches!(e, CheckError::Shared { .. }), "{exec}: {e}");
    }
}

#[test]
fn a_root_running_ahead_into_the_next_call_is_caught() {
    // One call alone is fine (a fresh window); in a row, the root's next
    // call overwrites the slot rank 1 may still be loading (caught at the
    // write, or at rank 1's load of what it wrote).
    let how = Pair {
        wait_previous: false,
        ..SAFE
    };
    for exec in Execution::ALL {
        run(&shared_pair(2, how), exec, [8; 3]).unwrap();
        let e = pair_in_a_row(2, how, 2, exec).unwrap_err();
        assert!(matches!(e, CheckError::Shared { .. }), "{exec}: {e}");
    }
}

#[test]
fn an_await_never_signalled_deadlocks_and_signals_must_rise() {
    let s = two(
        |b| {
            b.await_flag(1, 0, 5);
        },
        |b| {
            b.signal(0, 4, &[]);
        },
    );
    assert!(matches!(
        run(&s, Execution::Nonblocking, [4; 3]),
        Err(CheckError::Deadlock { .. })
    ));
    let s = two(
        |b| {
            b.signal(0, 4, &[]);
            b.signal(0, 4, &[]);
        },
        |_| {},
    );
    assert!(matches!(
        run(&s, Execution::Blocking, [4; 3]),
        Err(CheckError::Malformed { .. })
    ));
}

/// `shm`'s small-message ring as a pair (rank 0 root, rank 1 reader;
/// flags: 3 posted, 2 done), its root waiting for rank 1's done of the
/// call `back` calls ago before it writes, `ring`: slots taken in turn.
fn small_pair(back: u32, ring: Option<Ring>) -> Vec<Schedule> {
    let slot = Region::new(Buf::Shared, 0, 4);
    two(
        |b| {
            b.need(Buf::Shared, 4);
            if let Some(r) = ring {
                b.ring(r);
            }
            let free = b.await_back(1, 2, 1, back);
            let c = b.copy(Region::data(0, 4), slot);
            b.depend(c, free);
            let p = b.signal(3, 1, &[c]);
            b.signal(2, 1, &[p]);
        },
        |b| {
            if let Some(r) = ring {
                b.ring(r);
            }
            let a = b.await_flag(0, 3, 1);
            let l = b.load(0, slot, Region::data(0, 4), a);
            b.signal(2, 1, &[l]);
        },
    )
}

#[test]
fn a_small_ring_reused_too_early_is_caught() {
    let ring = Ring {
        base: 0,
        stride: 4,
        slots: 4,
    };
    let row = |back, ring| {
        let calls = 9;
        let one: Vec<Vec<Schedule>> = (0..calls).map(|_| small_pair(back, ring)).collect();
        calls::in_a_row(&one, &vec![4; calls]).unwrap()
    };
    for exec in Execution::ALL {
        // Waiting for the call a ring's length back: 9 calls through 4
        // slots, every byte right.
        let out = run(&row(4, Some(ring)), exec, [36; 3]).unwrap();
        assert_eq!(out[1][0].mismatch(36, 0, Buf::Data), None, "{exec}");
        // One call short of that: slot k % 4 rewritten while the reader of
        // call k - 4 may still copy it out.
        let e = run(&row(5, Some(ring)), exec, [36; 3]).unwrap_err();
        assert!(matches!(e, CheckError::Shared { .. }), "{exec}: {e}");
        // The ring's wait without the ring: one slot for every call.
        let e = run(&row(4, None), exec, [36; 3]).unwrap_err();
        assert!(matches!(e, CheckError::Shared { .. }), "{exec}: {e}");
    }
}
