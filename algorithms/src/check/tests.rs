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
