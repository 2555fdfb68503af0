//! The checker's own tests: each error it exists to catch, caught.

use super::*;
use crate::builder::Builder;
use crate::schedule::{Post, SendMode};

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

/// Rank 0 publishes `segs` 4-byte segments through one 4-byte slot of its
/// shared part; rank 1 copies each out. `wait_entry`: the root waits for
/// rank 1 to enter before its first write; `wait_reuse`: before reusing
/// the slot; `await_written`: rank 1 waits for each segment's signal.
fn shared_pair(
    segs: u32,
    wait_entry: bool,
    wait_reuse: bool,
    await_written: bool,
) -> Vec<Schedule> {
    let shared = |len| Region::new(Buf::Shared, 0, len);
    two(
        |b| {
            b.need(Buf::Shared, 4);
            let entered = b.await_flag(1, 1, 0);
            for k in 0..segs {
                let free = if k == 0 {
                    wait_entry.then_some(entered)
                } else {
                    wait_reuse.then(|| b.await_flag(1, 1, k))
                };
                let c = b.copy(Region::data(4 * k as u64, 4), shared(4));
                if let Some(f) = free {
                    b.depend(c, f);
                }
                b.signal(0, k + 1, &[c]);
            }
        },
        |b| {
            let entry = b.signal(1, 0, &[]);
            for k in 0..segs {
                let after = if await_written {
                    b.await_flag(0, 0, k + 1)
                } else {
                    entry
                };
                let l = b.load(0, shared(4), Region::data(4 * k as u64, 4), after);
                b.signal(1, k + 1, &[l]);
            }
        },
    )
}

#[test]
fn shared_memory_broadcast_through_one_slot_is_proven() {
    for exec in Execution::ALL {
        let out = run(&shared_pair(3, true, true, true), exec, [12; 3]).unwrap();
        assert_eq!(out[1][0].mismatch(12, 0, Buf::Data), None, "{exec}");
    }
}

#[test]
fn loading_before_the_write_is_published_is_caught() {
    for exec in Execution::ALL {
        let e = run(&shared_pair(1, true, true, false), exec, [4; 3]).unwrap_err();
        assert!(
            matches!(e, CheckError::Shared { rank: 1, .. }),
            "{exec}: {e}"
        );
    }
}

#[test]
fn overwriting_a_slot_before_the_reader_is_done_is_caught() {
    for exec in Execution::ALL {
        let e = run(&shared_pair(3, true, false, true), exec, [12; 3]).unwrap_err();
        assert!(matches!(e, CheckError::Shared { .. }), "{exec}: {e}");
    }
}

#[test]
fn writing_before_readers_left_the_previous_call_is_caught() {
    for exec in Execution::ALL {
        let e = run(&shared_pair(1, false, true, true), exec, [4; 3]).unwrap_err();
        assert!(
            matches!(e, CheckError::Shared { rank: 0, ref why, .. } if why.contains("previous call")),
            "{exec}: {e}"
        );
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
