//! Measuring a cluster's links for the simulator's network model (under
//! mpirun; [`colltune_core::model::calibrate`] fits the model to what this
//! measures, MPI-free).
//!
//! Per link, between one pair of ranks ([`Pairs`]: the first two ranks
//! sharing a node, and rank 0 with the first rank elsewhere),
//! [`measure_link`] times:
//! - a ping-pong per message size (iterations per run sized to a time
//!   budget by a probe; the median run counts, the spread is kept);
//! - the overhead `o`: the time inside `MPI_Isend`, and inside a receive
//!   whose message arrived long ago;
//! - the gap `g`: per message of a 32-message stream of one-byte messages;
//! - the sustained rate of 4-8 back-to-back messages of the largest size (a
//!   ping-pong leaves each direction idle half the time, which links with
//!   burst credit reward).
//!
//! [`copy_bandwidth`] times one core's memcpy.

use std::time::Instant;

use colltune_core::measure::stats::median;
use colltune_core::model::calibrate::PingPoint;
use thiserror::Error;

use crate::transport::mpi::{wtime, Comm, Control, MpiError, Peer};

const TAG_PP: i32 = 41;
const TAG_CTL: i32 = 42;
const TAG_STREAM: i32 = 43;
const TAG_ACK: i32 = 44;
/// Messages per window when timing send overhead and the gap.
const WINDOW: usize = 32;
const OVERHEAD_REPS: usize = 41;
/// Repetitions of the sustained-rate stream (the median counts).
const STREAM_REPS: usize = 3;
/// The stream's rate is measured when the largest size is at least this.
pub const STREAM_MIN_BYTES: u64 = 256 << 10;

#[derive(Debug, Error)]
pub enum CalibrateError {
    #[error(transparent)]
    Mpi(#[from] MpiError),
    #[error("the pair's results are incomplete ({0} values)")]
    Incomplete(usize),
}

/// One pair of ranks to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub leader: usize,
    pub follower: usize,
}

/// The pairs measured: inside a node, the first node with two ranks;
/// between nodes, rank 0 and the first rank on another node. `None` where
/// the job has no such pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pairs {
    pub intra: Option<Pair>,
    pub inter: Option<Pair>,
}

impl Pairs {
    pub fn of(comm: &Comm) -> Pairs {
        let nodes = comm.nodes();
        let intra = (0..nodes.num_nodes())
            .map(|n| nodes.ranks_on(n))
            .find(|r| r.len() >= 2)
            .map(|r| Pair {
                leader: r[0] as usize,
                follower: r[1] as usize,
            });
        let inter = (0..comm.size())
            .find(|&r| nodes.node_of(r) != nodes.node_of(0))
            .map(|r| Pair {
                leader: 0,
                follower: r,
            });
        Pairs { intra, inter }
    }
}

/// One measured run: what (`pingpong`, `stream`, `send-overhead`, `gap`,
/// `recv-overhead`), message bytes, run number (from 1), iterations and
/// microseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct RawRun {
    pub what: String,
    pub bytes: u64,
    pub run: u32,
    pub iterations: u64,
    pub time_us: f64,
}

/// What one link's measurement gives (the pair leader's view, on every rank).
#[derive(Clone, Debug)]
pub struct LinkData {
    pub points: Vec<PingPoint>,
    pub overhead_us: f64,
    pub gap_us: f64,
    /// Microseconds per byte of a back-to-back stream of the largest
    /// messages (None: not measured).
    pub stream_per_byte: Option<f64>,
    /// Every run, for the CSV.
    pub raw: Vec<RawRun>,
}

impl LinkData {
    /// The slowest over the fastest ping-pong run of `bytes` (1 if none).
    pub fn spread(&self, bytes: u64) -> f64 {
        let v: Vec<f64> = self
            .raw
            .iter()
            .filter(|r| r.what == "pingpong" && r.bytes == bytes)
            .map(|r| r.time_us)
            .collect();
        spread(&v)
    }
}

fn spread(v: &[f64]) -> f64 {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    if lo > 0.0 {
        hi / lo
    } else {
        1.0
    }
}

fn row(what: &str, bytes: u64, run: usize, iterations: u64, time_us: f64) -> RawRun {
    RawRun {
        what: what.into(),
        bytes,
        run: run as u32 + 1,
        iterations,
        time_us,
    }
}

/// Measures one link: `runs` timed runs per size of `sizes` (non-empty),
/// `budget_ms` per size split over the runs. Collective over `comm`: ranks
/// outside the pair wait, then everyone receives the results from the
/// pair's leader.
pub fn measure_link(
    comm: &Comm,
    pair: Pair,
    sizes: &[u64],
    runs: u32,
    budget_ms: u64,
) -> Result<LinkData, CalibrateError> {
    let me = comm.rank();
    comm.barrier()?;
    let mut flat: Vec<f64> = Vec::new();
    let mut raw = Vec::new();
    if me == pair.leader || me == pair.follower {
        let leader = me == pair.leader;
        let peer = Peer::new(comm, if leader { pair.follower } else { pair.leader });
        let maxb = *sizes.last().expect("sizes") as usize;
        let mut buf = vec![0u8; maxb.max(1)];
        let run_budget = budget_ms as f64 * 1e3 / runs as f64;
        let mut small_one_way = 0.0;
        for &b in sizes {
            let msg = &mut buf[..b as usize];
            // Warm up, then the leader picks the iterations per run.
            let probe = pingpong(&peer, leader, msg, 2)?;
            let iters = if leader {
                let it = ((run_budget / probe.max(1e-3)) as u64).clamp(1, 100_000);
                peer.send(&it.to_le_bytes(), TAG_CTL)?;
                it
            } else {
                let mut b = [0u8; 8];
                peer.recv(&mut b, TAG_CTL)?;
                u64::from_le_bytes(b)
            };
            let mut times = Vec::new();
            for r in 0..runs {
                let t = pingpong(&peer, leader, msg, iters)? / (2.0 * iters as f64);
                times.push(t);
                raw.push(row("pingpong", b, r as usize, iters, t));
            }
            let med = median(&times);
            if b == sizes[0] {
                small_one_way = med;
            }
            flat.extend([b as f64, med, spread(&times)]);
        }
        let (o, g, more) = overhead_and_gap(&peer, leader, small_one_way)?;
        raw.extend(more);
        let large = flat[flat.len() - 2];
        let (per_byte, more) = if maxb as u64 >= STREAM_MIN_BYTES {
            stream_rate(&peer, leader, &buf, large)?
        } else {
            (0.0, Vec::new())
        };
        raw.extend(more);
        flat.extend([o, g, per_byte]);
    }
    // The leader's view is the measurement.
    let bytes: Vec<u8> = flat.iter().flat_map(|v| v.to_le_bytes()).collect();
    let got = comm.bcast_bytes(&bytes, pair.leader)?;
    let vals: Vec<f64> = got
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    if vals.len() != sizes.len() * 3 + 3 {
        return Err(CalibrateError::Incomplete(vals.len()));
    }
    let points = vals[..sizes.len() * 3]
        .chunks_exact(3)
        .map(|c| PingPoint {
            bytes: c[0] as u64,
            one_way_us: c[1],
            spread: c[2],
        })
        .collect();
    // Every run travels with the results (the leader may not be rank 0).
    let text: String = raw
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {} {}\n",
                r.what, r.bytes, r.run, r.iterations, r.time_us
            )
        })
        .collect();
    let got = comm.bcast_bytes(text.as_bytes(), pair.leader)?;
    let raw = String::from_utf8_lossy(&got)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Some(RawRun {
                what: f.first()?.to_string(),
                bytes: f.get(1)?.parse().ok()?,
                run: f.get(2)?.parse().ok()?,
                iterations: f.get(3)?.parse().ok()?,
                time_us: f.get(4)?.parse().ok()?,
            })
        })
        .collect();
    let per_byte = vals[sizes.len() * 3 + 2];
    Ok(LinkData {
        points,
        overhead_us: vals[sizes.len() * 3],
        gap_us: vals[sizes.len() * 3 + 1],
        stream_per_byte: (per_byte > 0.0).then_some(per_byte),
        raw,
    })
}

/// One core's memcpy bandwidth, GB/s (median of 15 copies of 8 MiB).
pub fn copy_bandwidth() -> f64 {
    let n = 8 << 20;
    let src = vec![1u8; n];
    let mut dst = vec![0u8; n];
    let mut v = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        v.push(n as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    median(&v)
}

/// `iters` round trips of `msg`; the leader's elapsed microseconds.
fn pingpong(peer: &Peer, leader: bool, msg: &mut [u8], iters: u64) -> Result<f64, MpiError> {
    let t = wtime();
    for _ in 0..iters {
        if leader {
            peer.ping(msg, TAG_PP)?;
        } else {
            peer.pong(msg, TAG_PP, |_| {})?;
        }
    }
    Ok((wtime() - t) * 1e6)
}

/// The sustained rate: the leader sends k messages of `msg`'s size back to
/// back (the follower has posted k receives), then waits for an
/// acknowledgement; beyond the first message's one-way time, each further
/// message adds its bytes times the per-byte cost. Microseconds per byte,
/// the median of [`STREAM_REPS`] (the leader's; 0 on the follower).
fn stream_rate(
    peer: &Peer,
    leader: bool,
    msg: &[u8],
    one_way: f64,
) -> Result<(f64, Vec<RawRun>), MpiError> {
    let n = msg.len();
    // 4..8 messages, at most 64 MiB of receive buffers.
    let k = ((64usize << 20) / n.max(1)).clamp(4, 8);
    let mut raw = Vec::new();
    let mut rates = Vec::new();
    let mut bufs = if leader {
        Vec::new()
    } else {
        vec![vec![0u8; n]; k]
    };
    for rep in 0..STREAM_REPS {
        if leader {
            // Starts once the follower's receives are posted.
            let mut ready = [0u8; 1];
            peer.recv(&mut ready, TAG_CTL)?;
            let t = wtime();
            let mut sends = peer.batch(k);
            for _ in 0..k {
                sends.isend(msg, TAG_STREAM)?;
            }
            sends.wait_all()?;
            let mut ack = [0u8; 1];
            peer.recv(&mut ack, TAG_ACK)?;
            let total = (wtime() - t) * 1e6;
            let per_byte = ((total - one_way) / ((k - 1) * n) as f64).max(0.0);
            rates.push(per_byte);
            raw.push(row("stream", n as u64, rep, k as u64, total));
        } else {
            let mut recvs = peer.batch(k);
            for b in bufs.iter_mut() {
                recvs.irecv(b, TAG_STREAM)?;
            }
            peer.send(&[1u8], TAG_CTL)?;
            recvs.wait_all()?;
            peer.send(&[1u8], TAG_ACK)?;
        }
    }
    Ok((if leader { median(&rates) } else { 0.0 }, raw))
}

/// The overhead `o` (mean of the time inside a nonblocking send call and
/// of a receive whose message has already arrived) and the gap `g` (per
/// message of a stream of one-byte messages, beyond the sender's
/// overhead), microseconds; both medians over repetitions.
fn overhead_and_gap(
    peer: &Peer,
    leader: bool,
    one_way: f64,
) -> Result<(f64, f64, Vec<RawRun>), MpiError> {
    let mut raw = Vec::new();
    let tx = [7u8; 1];
    let mut rx = [[0u8; 1]; WINDOW];
    let (mut o_s, mut o_r, mut gap) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..OVERHEAD_REPS {
        // Send overhead and the gap: a window of nonblocking sends, then an
        // acknowledgement.
        if leader {
            let mut sends = peer.batch(WINDOW);
            let mut inside = 0.0;
            let t = wtime();
            for _ in 0..WINDOW {
                let a = wtime();
                sends.isend(&tx, TAG_STREAM)?;
                inside += wtime() - a;
            }
            sends.wait_all()?;
            let mut ack = [0u8; 1];
            peer.recv(&mut ack, TAG_ACK)?;
            let total = (wtime() - t) * 1e6;
            let os = inside * 1e6 / WINDOW as f64;
            let g = ((total - one_way) / WINDOW as f64).max(0.0);
            o_s.push(os);
            gap.push(g);
            raw.push(row("send-overhead", 1, rep, WINDOW as u64, os));
            raw.push(row("gap", 1, rep, WINDOW as u64, g));
        } else {
            let mut recvs = peer.batch(WINDOW);
            for b in rx.iter_mut() {
                recvs.irecv(b, TAG_STREAM)?;
            }
            recvs.wait_all()?;
            peer.send(&tx, TAG_ACK)?;
        }
        // Receive overhead: the follower receives a message that arrived
        // long ago (it waits ten one-way times, making no MPI call).
        if leader {
            peer.send(&tx, TAG_STREAM)?;
            let mut ack = [0u8; 8];
            peer.recv(&mut ack, TAG_ACK)?;
            let or = f64::from_le_bytes(ack);
            o_r.push(or);
            raw.push(row("recv-overhead", 1, rep, 1, or));
        } else {
            let wait = (10.0 * one_way).max(20.0) * 1e-6;
            let t = wtime();
            while wtime() - t < wait {
                std::hint::spin_loop();
            }
            let a = wtime();
            peer.recv(&mut rx[0], TAG_STREAM)?;
            let or = (wtime() - a) * 1e6;
            peer.send(&or.to_le_bytes(), TAG_ACK)?;
        }
    }
    if !leader {
        return Ok((0.0, 0.0, raw));
    }
    let o = 0.5 * (median(&o_s) + median(&o_r));
    let g = median(&gap);
    Ok((o, g, raw))
}
