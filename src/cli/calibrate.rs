//! `colltune calibrate` (under mpirun, on the cluster to model): measures
//! ping-pong between two ranks of one node and between two nodes, the
//! overhead of a send and a receive call, the message gap of a stream, and
//! one core's copy bandwidth; fits the simulator's link parameters
//! ([`colltune_core::calibrate`]) and writes MODEL.yaml with the fit's errors in its
//! `source`, and every measured run to CSV.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;

use super::{init_mpi, parse_sizes, Code, UsageError};
use colltune_core::calibrate::{fit_link, LinkFit, PingPoint, Protocol};
use colltune_core::fit::human_bytes;
use colltune_core::sim::{Link, Model};
use colltune_core::stats::median;
use colltune_mpi::transport::mpi::ffi::{self, MPI_Comm};
use colltune_mpi::transport::mpi::{Comm, Control};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model to write (YAML).
    #[arg(long)]
    out: PathBuf,
    /// The model's name (default: calibrated-<host of rank 0>).
    #[arg(long)]
    name: Option<String>,
    /// Ping-pong message sizes.
    #[arg(long, default_value = "1..4M")]
    sizes: String,
    /// Timed runs per size; the median run counts, the spread is reported.
    #[arg(long, default_value_t = 7)]
    runs: u32,
    /// Time per size and link, milliseconds (split over the runs).
    #[arg(long, default_value_t = 150)]
    budget_ms: u64,
    /// Take the links this job cannot measure (no two ranks on one node, or
    /// only one node) from this model instead of failing.
    #[arg(long)]
    base: Option<PathBuf>,
    /// Every measured run (link, what, bytes, run, iterations, microseconds).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Open MPI's ob1 protocol limits of a link, `inter=EAGER/FIRST` or
    /// `intra=EAGER/FIRST`: the transport's `btl_*_eager_limit` and
    /// `btl_*_rndv_eager_limit` (`ompi_info --param btl tcp --level 9`;
    /// vader inside a node). Messages up to EAGER less ob1's 16-byte header
    /// are eager; a larger one carries FIRST less its 32-byte header with
    /// its request, the rest after the answer. Without it, the eager limit
    /// is fitted and a rendezvous sends everything after the answer.
    #[arg(long = "ob1", value_name = "LINK=EAGER/FIRST")]
    ob1: Vec<String>,
}

/// ob1's match header (eager messages) and rendezvous header, bytes.
const OB1_MATCH_HDR: u64 = 16;
const OB1_RNDV_HDR: u64 = 32;

/// `--ob1 inter=65536/65536`: (link, protocol).
fn parse_ob1(s: &str) -> Result<(String, Protocol), UsageError> {
    let bad = || {
        UsageError(format!(
            "--ob1 `{s}`: write LINK=EAGER/FIRST with LINK intra or inter, e.g. inter=64K/64K"
        ))
    };
    let (link, limits) = s.split_once('=').ok_or_else(bad)?;
    let (eager, first) = limits.split_once('/').ok_or_else(bad)?;
    let size = |v: &str| colltune_algorithms::parse_size(v.trim()).map_err(|_| bad());
    let (eager, first) = (size(eager)?, size(first)?);
    if !matches!(link, "intra" | "inter") || eager <= OB1_MATCH_HDR || first < OB1_RNDV_HDR {
        return Err(bad());
    }
    Ok((
        link.to_string(),
        Protocol {
            eager_limit: eager - OB1_MATCH_HDR,
            first_bytes: first - OB1_RNDV_HDR,
        },
    ))
}

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
const STREAM_MIN_BYTES: u64 = 256 << 10;

/// One pair of ranks to measure.
#[derive(Clone, Copy, Debug)]
struct Pair {
    leader: usize,
    follower: usize,
}

/// What one link's measurement gives.
struct LinkData {
    points: Vec<PingPoint>,
    overhead_us: f64,
    gap_us: f64,
    /// Microseconds per byte of a back-to-back stream of the largest
    /// messages (0: not measured).
    stream_per_byte: f64,
    /// (what, bytes, run, iterations, microseconds) rows for the CSV.
    raw: Vec<(String, u64, u32, u64, f64)>,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let sizes = parse_sizes(&a.sizes)?;
    let ob1 = a
        .ob1
        .iter()
        .map(|s| parse_ob1(s))
        .collect::<Result<Vec<_>, _>>()?;
    let known = |what: &str| ob1.iter().rev().find(|(l, _)| l == what).map(|(_, p)| *p);
    if a.runs == 0 {
        return Err(UsageError("--runs must be at least 1".into()).into());
    }
    let base = match &a.base {
        Some(p) => Some(Model::load(p).map_err(|e| UsageError(e.to_string()))?),
        None => None,
    };
    let _u = init_mpi()?;
    let comm = Comm::world().context("setting up MPI_COMM_WORLD")?;
    let lead = comm.rank() == 0;
    let nodes = comm.nodes().clone();
    if comm.size() < 2 {
        return Err(UsageError(
            "calibrate needs two ranks or more: run it under mpirun with ranks on two nodes \
             (and two on one node), e.g. mpirun -np 4 --map-by ppr:2:node"
                .into(),
        )
        .into());
    }
    // Intra: the first node with two ranks; inter: rank 0 and the first
    // rank on another node.
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
    for (what, pair, fix) in [
        (
            "intra",
            intra,
            "place two ranks on one node (--map-by ppr:2:node)",
        ),
        ("inter", inter, "run on two nodes or more"),
    ] {
        if pair.is_none() && base.is_none() {
            // Every rank sees the same layout; rank 0 says why, and the
            // others wait for that (mpirun ends the job at the first
            // non-zero exit, which could cut the message off).
            if lead {
                eprintln!(
                    "colltune: error: no two ranks of this job are {}: cannot measure the {what} \
                     link ({nodes}); {fix}, or give --base MODEL.yaml to take it from there",
                    if what == "intra" {
                        "on one node"
                    } else {
                        "on different nodes"
                    }
                );
            }
            comm.barrier()?;
            return Ok(Code::Usage);
        }
    }
    let host = ffi::processor_name();
    let t0 = Instant::now();
    let mut fits: Vec<(&str, Option<Pair>, Option<LinkFit>, Vec<_>)> = Vec::new();
    let mut notes = Vec::new();
    for (what, pair) in [("intra", intra), ("inter", inter)] {
        let Some(pair) = pair else {
            fits.push((what, None, None, Vec::new()));
            notes.push(String::new());
            continue;
        };
        if lead {
            println!(
                "measuring {what}-node link: ranks {} and {} ({} sizes)...",
                pair.leader,
                pair.follower,
                sizes.len()
            );
            let _ = std::io::stdout().flush();
        }
        let data = measure_link(&comm, pair, &sizes, a.runs, a.budget_ms)
            .with_context(|| format!("measuring the {what} link"))?;
        let stream = (data.stream_per_byte > 0.0).then_some(data.stream_per_byte);
        // Only links between nodes may be token buckets (shaped ports).
        let fit = fit_link(
            &data.points,
            data.overhead_us,
            data.gap_us,
            stream,
            what == "inter",
            known(what),
        )
        .map_err(|e| anyhow::anyhow!("fitting the {what} link: {e}"))?;
        let free = fit_link(
            &data.points,
            data.overhead_us,
            data.gap_us,
            None,
            false,
            known(what),
        )
        .map_err(|e| anyhow::anyhow!("fitting the {what} link: {e}"))?;
        notes.push(match stream {
            Some(_) => format!(
                "  rendezvous bandwidth from a stream of back-to-back {} messages: {:.3} GB/s \
                 (the ping-pong alone fits {:.3} GB/s to every size)",
                human_bytes(*sizes.last().expect("sizes")),
                fit.link.bandwidth_gbs,
                free.link.bandwidth_gbs
            ),
            None => format!(
                "  bandwidth from the ping-pong (sizes below {} measure no stream)",
                human_bytes(STREAM_MIN_BYTES)
            ),
        });
        fits.push((what, Some(pair), Some(fit), data.raw));
    }
    let copy_gbs = copy_bandwidth();
    comm.barrier()?;
    if !lead {
        return Ok(Code::Ok);
    }
    let take = |what: &str, f: &Option<LinkFit>| -> Link {
        match f {
            Some(f) => f.link.clone(),
            None => {
                let b = base.as_ref().expect("checked above");
                if what == "intra" {
                    b.intra.clone()
                } else {
                    b.inter.clone()
                }
            }
        }
    };
    let mut source = format!(
        "calibrated by `colltune calibrate` on {host} ({} ranks, layout {nodes}), {}, {}; \
         ping-pong {}..{}, median of {} runs per size.",
        comm.size(),
        colltune_mpi::bench::library_short(),
        chrono_like_now(),
        human_bytes(sizes[0]),
        human_bytes(*sizes.last().expect("sizes")),
        a.runs
    );
    for (what, pair, f, _) in &fits {
        match (pair, f) {
            (Some(p), Some(f)) => {
                let _ = write!(
                    source,
                    " {what} (ranks {}-{}): fit max relative error {:.1}%, median {:.1}%.",
                    p.leader,
                    p.follower,
                    100.0 * f.max_rel_error,
                    100.0 * f.median_rel_error
                );
            }
            _ => {
                let _ = write!(
                    source,
                    " {what}: not measurable in this job, taken from {}.",
                    a.base.as_ref().expect("checked").display()
                );
            }
        }
    }
    let model = Model {
        name: a
            .name
            .clone()
            .unwrap_or_else(|| format!("calibrated-{host}")),
        source,
        intra: take("intra", &fits[0].2),
        inter: take("inter", &fits[1].2),
        copy_gbs,
    };
    model
        .check()
        .map_err(|e| anyhow::anyhow!("the fitted model is not valid: {e}"))?;
    // Measured before written: the CSV first, so nothing is lost if the
    // model cannot be written.
    if let Some(p) = &a.csv {
        let mut w =
            csv::Writer::from_path(p).with_context(|| format!("writing {}", p.display()))?;
        w.write_record(["link", "what", "bytes", "run", "iterations", "time_us"])?;
        for (what, _, _, raw) in &fits {
            for (m, b, r, it, t) in raw {
                w.write_record([
                    what.to_string(),
                    m.clone(),
                    b.to_string(),
                    r.to_string(),
                    it.to_string(),
                    format!("{t:.4}"),
                ])?;
            }
        }
        w.flush()?;
        println!("raw runs: {}", p.display());
    }
    for ((what, _, f, raw), note) in fits.iter().zip(&notes) {
        let Some(f) = f else { continue };
        println!("\n{what}-node link, one-way ping-pong time:");
        println!(
            "{:>10} {:>12} {:>8} {:>12} {:>8}",
            "bytes", "measured us", "spread", "model us", "error"
        );
        for (b, m, p) in &f.points {
            let spread = spread_of(raw, *b);
            println!(
                "{:>10} {:>12.2} {:>7.2}x {:>12.2} {:>+7.1}%",
                b,
                m,
                spread,
                p,
                100.0 * (p - m) / m
            );
        }
        let l = &f.link;
        println!(
            "  L = {:.3} us, o = {:.3} us, g = {:.3} us, bandwidth = {:.3} GB/s{}{}, eager limit = {}; \
             max error {:.1}%, median {:.1}%",
            l.latency_us,
            l.overhead_us,
            l.gap_us,
            l.bandwidth_gbs,
            l.eager_bandwidth_gbs
                .map(|e| format!(" ({e:.3} GB/s eager)"))
                .unwrap_or_default(),
            l.burst_bytes
                .map(|b| format!(", token bucket {b} B"))
                .unwrap_or_default(),
            match l.rendezvous_first_bytes {
                Some(f) => format!("{} B (ob1; a rendezvous sends {f} B first)", l.eager_limit),
                None => format!("{} B", l.eager_limit),
            },
            100.0 * f.max_rel_error,
            100.0 * f.median_rel_error
        );
        println!("{note}");
    }
    println!("copy bandwidth (one core): {copy_gbs:.2} GB/s");
    std::fs::write(&a.out, model.to_yaml())
        .with_context(|| format!("writing the model to {}", a.out.display()))?;
    println!(
        "\nmodel {} written to {} in {:.1} s",
        model.name,
        a.out.display(),
        t0.elapsed().as_secs_f64()
    );
    Ok(Code::Ok)
}

fn spread_of(raw: &[(String, u64, u32, u64, f64)], bytes: u64) -> f64 {
    let v: Vec<f64> = raw
        .iter()
        .filter(|r| r.0 == "pingpong" && r.1 == bytes)
        .map(|r| r.4)
        .collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    if lo > 0.0 {
        hi / lo
    } else {
        1.0
    }
}

/// UTC date and time, from the system clock.
fn chrono_like_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        (secs % 86400) / 3600,
        (secs % 3600) / 60
    )
}

/// Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// One core's memcpy bandwidth, GB/s (median of 15 copies of 8 MiB).
fn copy_bandwidth() -> f64 {
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

/// Sends / receives on `comm` between the pair; wraps the raw calls.
struct Peer {
    comm: MPI_Comm,
    other: usize,
}

impl Peer {
    fn send(&self, buf: &[u8], tag: i32) -> anyhow::Result<()> {
        // SAFETY: buf is valid for the blocking call.
        unsafe {
            ffi::send(
                buf.as_ptr(),
                buf.len() as u64,
                self.other,
                tag,
                colltune_algorithms::SendMode::Standard,
                self.comm,
            )?
        };
        Ok(())
    }
    fn recv(&self, buf: &mut [u8], tag: i32) -> anyhow::Result<()> {
        // SAFETY: buf is valid for the blocking call.
        unsafe {
            ffi::recv(
                buf.as_mut_ptr(),
                buf.len() as u64,
                self.other,
                tag,
                self.comm,
            )?
        };
        Ok(())
    }
    fn send_u64(&self, v: u64) -> anyhow::Result<()> {
        self.send(&v.to_le_bytes(), TAG_CTL)
    }
    fn recv_u64(&self) -> anyhow::Result<u64> {
        let mut b = [0u8; 8];
        self.recv(&mut b, TAG_CTL)?;
        Ok(u64::from_le_bytes(b))
    }
}

/// Measures one link. Collective over `comm`: ranks outside the pair wait,
/// then everyone receives the results from the pair's leader.
fn measure_link(
    comm: &Comm,
    pair: Pair,
    sizes: &[u64],
    runs: u32,
    budget_ms: u64,
) -> anyhow::Result<LinkData> {
    let me = comm.rank();
    comm.barrier()?;
    let mut flat: Vec<f64> = Vec::new();
    let mut raw = Vec::new();
    if me == pair.leader || me == pair.follower {
        let leader = me == pair.leader;
        let peer = Peer {
            comm: comm.raw(),
            other: if leader { pair.follower } else { pair.leader },
        };
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
                peer.send_u64(it)?;
                it
            } else {
                peer.recv_u64()?
            };
            let mut times = Vec::new();
            for r in 0..runs {
                let t = pingpong(&peer, leader, msg, iters)? / (2.0 * iters as f64);
                times.push(t);
                raw.push(("pingpong".to_string(), b, r + 1, iters, t));
            }
            let med = median(&times);
            if b == sizes[0] {
                small_one_way = med;
            }
            let lo = times.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = times.iter().copied().fold(0.0, f64::max);
            flat.extend([b as f64, med, if lo > 0.0 { hi / lo } else { 1.0 }]);
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
        anyhow::bail!("the pair's results are incomplete ({} values)", vals.len());
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
        .map(|(w, b, r, it, t)| format!("{w} {b} {r} {it} {t}\n"))
        .collect();
    let got = comm.bcast_bytes(text.as_bytes(), pair.leader)?;
    let raw = String::from_utf8_lossy(&got)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Some((
                f.first()?.to_string(),
                f.get(1)?.parse().ok()?,
                f.get(2)?.parse().ok()?,
                f.get(3)?.parse().ok()?,
                f.get(4)?.parse().ok()?,
            ))
        })
        .collect();
    Ok(LinkData {
        points,
        overhead_us: vals[sizes.len() * 3],
        gap_us: vals[sizes.len() * 3 + 1],
        stream_per_byte: vals[sizes.len() * 3 + 2],
        raw,
    })
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
) -> anyhow::Result<(f64, RawRows)> {
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
            let t = ffi::wtime();
            let mut reqs = Vec::with_capacity(k);
            for _ in 0..k {
                // SAFETY: msg outlives the waitall below; sends only read it.
                reqs.push(unsafe {
                    ffi::isend(
                        msg.as_ptr(),
                        n as u64,
                        peer.other,
                        TAG_STREAM,
                        colltune_algorithms::SendMode::Standard,
                        peer.comm,
                    )?
                });
            }
            ffi::waitall(&mut reqs)?;
            let mut ack = [0u8; 1];
            peer.recv(&mut ack, TAG_ACK)?;
            let total = (ffi::wtime() - t) * 1e6;
            let per_byte = ((total - one_way) / ((k - 1) * n) as f64).max(0.0);
            rates.push(per_byte);
            raw.push(("stream".into(), n as u64, rep as u32 + 1, k as u64, total));
        } else {
            let mut reqs = Vec::with_capacity(k);
            for b in bufs.iter_mut() {
                // SAFETY: each buffer is its own and outlives the waitall.
                reqs.push(unsafe {
                    ffi::irecv(b.as_mut_ptr(), n as u64, peer.other, TAG_STREAM, peer.comm)?
                });
            }
            peer.send(&[1u8], TAG_CTL)?;
            ffi::waitall(&mut reqs)?;
            peer.send(&[1u8], TAG_ACK)?;
        }
    }
    Ok((if leader { median(&rates) } else { 0.0 }, raw))
}

/// `iters` round trips of `msg`; the leader's elapsed microseconds.
fn pingpong(peer: &Peer, leader: bool, msg: &mut [u8], iters: u64) -> anyhow::Result<f64> {
    let t = ffi::wtime();
    for _ in 0..iters {
        if leader {
            peer.send(msg, TAG_PP)?;
            peer.recv(msg, TAG_PP)?;
        } else {
            peer.recv(msg, TAG_PP)?;
            peer.send(msg, TAG_PP)?;
        }
    }
    Ok((ffi::wtime() - t) * 1e6)
}

type RawRows = Vec<(String, u64, u32, u64, f64)>;

/// The overhead `o` (mean of the time inside a nonblocking send call and
/// of a receive whose message has already arrived) and the gap `g` (per
/// message of a stream of one-byte messages, beyond the sender's
/// overhead), microseconds; both medians over repetitions.
fn overhead_and_gap(
    peer: &Peer,
    leader: bool,
    one_way: f64,
) -> anyhow::Result<(f64, f64, RawRows)> {
    let mut raw = Vec::new();
    let tx = [7u8; 1];
    let mut rx = [[0u8; 1]; WINDOW];
    let (mut o_s, mut o_r, mut gap) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..OVERHEAD_REPS {
        // Send overhead and the gap: a window of nonblocking sends, then an
        // acknowledgement.
        if leader {
            let mut reqs = Vec::with_capacity(WINDOW);
            let mut inside = 0.0;
            let t = ffi::wtime();
            for _ in 0..WINDOW {
                let a = ffi::wtime();
                // SAFETY: tx outlives the waitall below.
                reqs.push(unsafe {
                    ffi::isend(tx.as_ptr(), 1, peer.other, TAG_STREAM, colltune_algorithms::SendMode::Standard, peer.comm)?
                });
                inside += ffi::wtime() - a;
            }
            ffi::waitall(&mut reqs)?;
            let mut ack = [0u8; 1];
            peer.recv(&mut ack, TAG_ACK)?;
            let total = (ffi::wtime() - t) * 1e6;
            let os = inside * 1e6 / WINDOW as f64;
            let g = ((total - one_way) / WINDOW as f64).max(0.0);
            o_s.push(os);
            gap.push(g);
            raw.push(("send-overhead".into(), 1, rep as u32 + 1, WINDOW as u64, os));
            raw.push(("gap".into(), 1, rep as u32 + 1, WINDOW as u64, g));
        } else {
            let mut reqs = Vec::with_capacity(WINDOW);
            for b in rx.iter_mut() {
                // SAFETY: rx outlives the waitall below.
                reqs.push(unsafe {
                    ffi::irecv(b.as_mut_ptr(), 1, peer.other, TAG_STREAM, peer.comm)?
                });
            }
            ffi::waitall(&mut reqs)?;
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
            raw.push(("recv-overhead".into(), 1, rep as u32 + 1, 1, or));
        } else {
            let wait = (10.0 * one_way).max(20.0) * 1e-6;
            let t = ffi::wtime();
            while ffi::wtime() - t < wait {
                std::hint::spin_loop();
            }
            let a = ffi::wtime();
            peer.recv(&mut rx[0], TAG_STREAM)?;
            let or = (ffi::wtime() - a) * 1e6;
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

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
    }
}
