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
    closed_form, drop_kept_call, simulate_counted, Model, SimError, Tier,
};

const TARGET_S: f64 = 10.0;

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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
