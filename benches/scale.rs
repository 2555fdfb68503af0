//! The simulator at the largest machines' size (`cargo bench --bench
//! scale`): a 1 MiB broadcast on 526,848 ranks (9,408 nodes x 56, Frontier's
//! size) on the Slingshot model of its class, for every broadcast algorithm
//! of the registry at its defaults (so algorithms added to the registry are
//! timed without a change here), each call built and run on its own, in
//! each execution. Target: <= 10 s of wall time each.
//!
//! An algorithm whose messages grow as p^2 (`scatter_allgather_ring`: some
//! 5.5 x 10^11 ops here) cannot be held whole: the simulator refuses it
//! (`SimError::TooLarge`) and its closed form is priced instead, printed as
//! such (`sim::closed_form`: an alpha-beta formula of its schedule, its
//! traffic counted from the schedule's structure).
//!
//! A call estimated above 12 million ops (`sim::estimated_ops`) is priced
//! by its closed form where it has one (`sim::closed_form`), printed as
//! `closed form`: here the round-based schedules (`scatter_allgather`,
//! `bine_bdw`, `circulant`: 10-18 million messages, minutes of event
//! simulation) round by round (`sim/rounds.rs`), the segmented chains
//! (`chain`, `pipeline`: 8.4 million messages, 6-8 s of CPU) by theirs
//! (`sim/pipelined.rs`), `hierarchical(intra=shm)` (8.3 million copies) as
//! its two phases simulated apart (on the leaders, on one node); each is
//! held against the simulation at 64-4,096 ranks by a test.
//!
//! An algorithm that needs ranks sharing one node (`shm`) runs as the
//! intra-node phase of `hierarchical`, the only way it applies across
//! nodes. Each call prints its wall time and this process's CPU time over
//! it (user + system, from /proc/self/stat): on a machine shared with other
//! work the wall time is the CPU time plus waiting for a core.
//!
//! Arguments (after `--`): algorithm names run those alone; `--nodes N`
//! and `--ppn K` change the size (CI runs a small one:
//! `tests/simulator.rs`); `--blocking` runs the blocking execution only.

use std::path::Path;
use std::time::Instant;

use colltune_algorithms::registry::Restriction;
use colltune_algorithms::{algorithms, AlgoSpec, Collective, Execution, NodeMap};
use colltune_core::model::sim::{
    closed_form, drop_kept_call, estimated_ops, simulate_counted, Model, SimError, Tier,
};

const TARGET_S: f64 = 10.0;
/// Above this many ops (`sim::estimated_ops`; the engine runs some 1-3
/// million a second here) a call with a closed form is priced by it, not
/// simulated.
const CLOSED_FROM: u64 = 12_000_000;

fn model() -> Model {
    Model::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tuning-tables/models/slingshot11-epyc-zen3.yaml"
    )))
    .expect("tuning-tables/models/slingshot11-epyc-zen3.yaml")
}

/// This process's CPU time so far (user + system), seconds; 0 where
/// /proc is not there.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name (in parentheses) come the state, then 10
    // numbers, then utime and stime, in clock ticks (100 a second).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn arg<T: std::str::FromStr>(args: &[String], flag: &str, default: T) -> T {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One row's traffic: messages (and MiB) between nodes and inside them.
fn traffic(t: &colltune_core::model::sim::Traffic) -> String {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    format!(
        "msgs node {} / net {}, MiB node {:.0} / net {:.0}",
        t.messages_at(Tier::Node),
        t.messages_at(Tier::Group) + t.messages_at(Tier::Global),
        mib(t.bytes_at(Tier::Node)),
        mib(t.bytes_at(Tier::Group) + t.bytes_at(Tier::Global))
    )
}

/// The best time over block sizes 64 KiB-4 MiB (and how it was priced).
fn best_segment(m: &Model, name: &str, nodes: &NodeMap, bytes: u64) -> Option<(f64, u64, bool)> {
    let mut best: Option<(f64, u64, bool)> = None;
    for seg in (16..=22).map(|k| 1u64 << k) {
        let spec = AlgoSpec::parse(&format!("{name}:segment={seg}")).expect("a spec");
        let msgs = (nodes.size() as u64) * bytes.div_ceil(seg);
        let got = if msgs > 4_000_000 {
            closed_form(m, Collective::Bcast, &spec, nodes, bytes, 0).map(|f| (f.time_us, true))
        } else {
            drop_kept_call();
            simulate_counted(
                m,
                Collective::Bcast,
                &spec,
                Execution::Blocking,
                nodes,
                bytes,
                0,
                f64::INFINITY,
            )
            .ok()
            .and_then(|(t, _)| t)
            .map(|t| (t, false))
        };
        if let Some((t, closed)) = got {
            if best.is_none_or(|b| t < b.0) {
                best = Some((t, seg, closed));
            }
        }
    }
    best
}

/// `--bound`: circulant at 64 MiB against the one-ported lower bound.
fn bound(m: &Model) {
    let bytes = 64u64 << 20;
    let l = &m.inter;
    let (beta, a) = (l.per_byte(), 2.0 * l.overhead_us + l.latency_us);
    println!(
        "64 MiB broadcast, one rank per node, model {} (B = {} GB/s, a = 2o + L = {a:.2} us);          best block size of 64K-4M each; us",
        m.name, l.bandwidth_gbs
    );
    for p in [64usize, 1024, 65536] {
        let q = p.next_power_of_two().trailing_zeros() as f64;
        let lb = ((bytes as f64 * beta).sqrt() + ((q - 1.0) * a).sqrt()).powi(2);
        let nodes = NodeMap::blocks(&vec![1; p]).expect("a layout");
        let show = |name: &str| match best_segment(m, name, &nodes, bytes) {
            Some((t, seg, closed)) => format!(
                "{name} {t:.0} ({:.3}x, block {}K{})",
                t / lb,
                seg >> 10,
                if closed { ", closed form" } else { "" }
            ),
            None => format!("{name} not run (too many messages, no closed form)"),
        };
        println!("  p = {p}: lower bound {lb:.0}");
        for name in ["circulant", "binomial", "pipeline", "scatter_allgather"] {
            let line = if name == "scatter_allgather" {
                let spec = AlgoSpec::new(name);
                let t = if p > 4096 {
                    closed_form(m, Collective::Bcast, &spec, &nodes, bytes, 0)
                        .map(|f| (f.time_us, " closed form"))
                } else {
                    simulate_counted(
                        m,
                        Collective::Bcast,
                        &spec,
                        Execution::Blocking,
                        &nodes,
                        bytes,
                        0,
                        f64::INFINITY,
                    )
                    .ok()
                    .and_then(|(t, _)| t)
                    .map(|t| (t, ""))
                };
                t.map_or("-".into(), |(t, how)| {
                    format!("{name} {t:.0} ({:.3}x{how})", t / lb)
                })
            } else {
                show(name)
            };
            println!("    {line}");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--bound") {
        bound(&model());
        return;
    }
    let (n, k) = (
        arg(&args, "--nodes", 9408usize),
        arg(&args, "--ppn", 56usize),
    );
    let names: Vec<&str> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            !a.starts_with('-')
                && !matches!(
                    args.get(i.wrapping_sub(1)).map(|s| s.as_str()),
                    Some("--nodes" | "--ppn")
                )
        })
        .map(|(_, a)| a.as_str())
        .collect();
    let execs: &[Execution] = if args.iter().any(|a| a == "--blocking") {
        &[Execution::Blocking]
    } else {
        &Execution::ALL
    };
    let m = model();
    let nodes = NodeMap::blocks(&vec![k; n]).expect("a layout");
    let bytes = 1u64 << 20;
    println!(
        "{} ranks ({n} nodes x {k}), 1 MiB broadcast from root 0, model {} (target: <= {TARGET_S} s each):",
        nodes.size(),
        m.name
    );
    let mut worst = 0f64;
    for a in algorithms(Collective::Bcast) {
        if !names.is_empty() && !names.contains(&a.name) {
            continue;
        }
        let (spec, name) = if a.has(Restriction::SharedMemory) {
            let s = format!("hierarchical(intra={})", a.name);
            (AlgoSpec::parse(&s).expect("a spec"), s)
        } else {
            (AlgoSpec::new(a.name), a.name.to_string())
        };
        for &exec in execs {
            drop_kept_call();
            let (t0, c0) = (Instant::now(), cpu_s());
            // Round-based schedules and segmented chains of millions of
            // messages: their closed form.
            let big = estimated_ops(Collective::Bcast, &spec, &nodes, bytes, 0)
                .is_ok_and(|ops| ops > CLOSED_FROM);
            let closed = big
                .then(|| closed_form(&m, Collective::Bcast, &spec, &nodes, bytes, 0))
                .flatten();
            if let Some(f) = closed {
                let (s, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
                worst = worst.max(s);
                println!(
                    "  {name:<28} {:<12} closed form  {:>12.1} us in {:>6.2} s wall ({:>6.2} s CPU){}  [{}]",
                    exec.name(),
                    f.time_us,
                    s,
                    cpu,
                    if s > TARGET_S { "  (over target)" } else { "" },
                    traffic(&f.traffic)
                );
                continue;
            }
            let got = simulate_counted(
                &m,
                Collective::Bcast,
                &spec,
                exec,
                &nodes,
                bytes,
                0,
                f64::INFINITY,
            );
            let (how, t, tr) = match got {
                Ok((t, tr)) => ("simulated", t.expect("no limit"), tr),
                Err(SimError::TooLarge { .. }) => {
                    match closed_form(&m, Collective::Bcast, &spec, &nodes, bytes, 0) {
                        Some(f) => ("closed form (not simulated)", f.time_us, f.traffic),
                        None => {
                            println!(
                                "  {name:<28} {:<12} too large, and no closed form",
                                exec.name()
                            );
                            continue;
                        }
                    }
                }
                Err(e) => {
                    println!("  {name:<28} {:<12} error: {e}", exec.name());
                    continue;
                }
            };
            let (s, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
            worst = worst.max(s);
            println!(
                "  {name:<28} {:<12} {how} {:>12.1} us in {:>6.2} s wall ({:>6.2} s CPU){}  [{}]",
                exec.name(),
                t,
                s,
                cpu,
                if s > TARGET_S { "  (over target)" } else { "" },
                traffic(&tr)
            );
        }
    }
    println!("slowest: {worst:.2} s wall (target <= {TARGET_S} s)");
}
