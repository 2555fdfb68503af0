//! A call that fails midway leaves nothing running: the next call on the
//! same communicator delivers every byte (`transport::mpi::exec`).
//!
//! Two ranks. In the failing call rank 1 posts, besides the receives of
//! rank 0's K segments, a receive that no message of this call matches (a
//! control-tag one), and its last segment's region is half a segment, so
//! that receive fails with `MPI_ERR_TRUNCATE` (an erroneous program, under
//! the private communicator's `MPI_ERRORS_RETURN`). The next call, correct
//! on both ranks, starts with a control-tag message: a receive the failed
//! call left posted would swallow it (and the call would hang or deliver
//! the wrong bytes). Every execution, with the failed call both waited for
//! (it must report the error) and dropped (`Pending`'s drop must drain).
//!
//! The MPI program is this test binary itself: `worker` (ignored by a plain
//! `cargo test`) runs under mpirun, started by the test.

mod common;
use common::*;

use colltune_algorithms::{Builder, Execution, Plan, Post, Region, SendMode, Tag};
use colltune_mpi::transport::mpi::{execute, start, Buffers, Comm, Control, TransportError};

const WORKER: &str = "COLLTUNE_EXEC_ERRORS_WORKER";
/// Segments per call, each above Open MPI's eager limits (a rendezvous:
/// a send completes only once its receive matched).
const K: u64 = 4;
const L: u64 = 64 << 10;

#[test]
fn a_failed_call_leaves_nothing_for_the_next() {
    let mut c = mpirun(2);
    c.args(["-x", &format!("{WORKER}=1")])
        .arg(std::env::current_exe().unwrap())
        .args(["worker", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"]);
    // A receive left posted makes the next call hang: bound the wait.
    let mut t = std::process::Command::new("timeout");
    t.arg("120").arg(c.get_program()).args(c.get_args());
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            t.env(k, v);
        }
    }
    let o = run(t);
    let out = text(&o);
    assert!(
        o.status.success(),
        "the worker failed (status {:?}; 124: timed out, a call hung):\n{out}",
        o.status.code()
    );
    assert_eq!(
        out.matches("next call correct").count(),
        2 * 4,
        "every rank, every scenario:\n{out}"
    );
}

fn pattern(seed: u8, len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// Rank 0 sends `extra` (a control-tag message of one segment, first) and
/// then K data segments; rank 1 receives them, the control one at K * L.
/// `faulty`: rank 1's control receive gets no message (rank 0 sends none)
/// and its last segment's region is half a segment.
fn plan(rank: usize, faulty: bool) -> Plan {
    let mut b = Builder::new();
    if rank == 0 {
        if !faulty {
            b.send_tagged(
                1,
                Region::data(0, L),
                Tag::Control,
                SendMode::Standard,
                Post::Immediate,
            );
        }
        for j in 0..K {
            b.send(1, Region::data(j * L, L), Post::Immediate);
        }
        b.wait_all();
    } else {
        b.recv_tagged(0, Region::data(K * L, L), Tag::Control, Post::Immediate);
        for j in 0..K {
            let len = if faulty && j == K - 1 { L / 2 } else { L };
            b.recv(0, Region::data(j * L, len), Post::Blocking);
        }
        b.wait_all();
    }
    Plan::new(b.finish())
}

#[test]
#[ignore = "an MPI program: a_failed_call_leaves_nothing_for_the_next runs it under mpirun"]
fn worker() {
    assert!(
        std::env::var_os(WORKER).is_some(),
        "run under mpirun by a_failed_call_leaves_nothing_for_the_next"
    );
    let _universe = mpi::initialize().expect("MPI initialises once");
    let comm = Comm::world().expect("the world communicator");
    assert_eq!(comm.size(), 2, "two ranks");
    let rank = comm.rank();
    let mut seed = 0u8;
    for exec in [Execution::Blocking, Execution::Nonblocking] {
        for drop_it in [false, true] {
            let name = format!(
                "{exec:?}, failed call {}",
                if drop_it { "dropped" } else { "waited for" }
            );
            // The failing call.
            seed = seed.wrapping_add(1);
            let bad = plan(rank, true);
            let mut buf = if rank == 0 {
                pattern(seed, K * L)
            } else {
                vec![0u8; ((K + 1) * L) as usize]
            };
            let pending = start(&comm, &bad, exec, Buffers::bcast(&mut buf))
                .unwrap_or_else(|e| panic!("{name}: start: {e}"));
            if drop_it {
                drop(pending);
            } else {
                let r = pending.wait();
                match (rank, r) {
                    (0, Ok(())) => {}
                    (1, Err(TransportError::Mpi(e))) => {
                        assert!(
                            e.message.to_lowercase().contains("trunc"),
                            "{name}: rank 1 failed, but not with a truncation: {e}"
                        );
                    }
                    (r, other) => panic!("{name}: rank {r}: unexpected outcome {other:?}"),
                }
            }
            drop(buf);
            comm.barrier().unwrap();

            // The next call, correct on both ranks.
            seed = seed.wrapping_add(1);
            let good = plan(rank, false);
            let want = pattern(seed, K * L);
            let mut buf = if rank == 0 {
                want.clone()
            } else {
                vec![0u8; ((K + 1) * L) as usize]
            };
            execute(&comm, &good, exec, Buffers::bcast(&mut buf))
                .unwrap_or_else(|e| panic!("{name}: the next call failed: {e}"));
            if rank == 1 {
                let (data, control) = buf.split_at((K * L) as usize);
                assert!(data == &want[..], "{name}: the next call's data is wrong");
                assert!(
                    control == &want[..L as usize],
                    "{name}: the next call's control message is wrong"
                );
            }
            println!("rank {rank}: {name}: next call correct");
            comm.barrier().unwrap();
        }
    }
}
