//! Profiles one simulation: `simprof ALGO LAYOUT BYTES [nb]` (the time of
//! building the schedules, planning, packing, running, then of one whole
//! simulation, building included; with `SIMPROF_ONLY` set, only the latter;
//! with `SIMPROF_PAIR` set, the call blocking then nonblocking).
//!
//! `simprof dump` prints the simulated time of every algorithm variant of
//! every collective, in both executions, on a set of layouts and sizes, as
//! exact bits: diff two builds' outputs to check a change to the simulator
//! keeps its results bit for bit (it also checks that an `Engine` made from
//! `Plan`s agrees with `simulate`); `simprof schedules` hashes the schedules
//! those calls build, for the same check of the builder.
use std::path::Path;

use colltune_algorithms::{
    algorithms, build_all, variants, AlgoSpec, Collective, Execution, NodeMap, Plan,
};
use colltune_core::model::sim::{simulate, Engine, Link, Model};

/// The test fixture `tuning-tables/models/test-ib.yaml` (the whole-table
/// part runs the same file).
fn model() -> Model {
    Model::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tuning-tables/models/test-ib.yaml"
    )))
    .expect("tuning-tables/models/test-ib.yaml")
}

/// A second model: slow, high-latency links with equal eager limits.
fn slow_model() -> Model {
    Model {
        name: "q".into(),
        source: "q".into(),
        intra: Link {
            latency_us: 0.5,
            overhead_us: 0.2,
            gap_us: 0.1,
            bandwidth_gbs: 10.0,
            eager_limit: 8192,
            eager_bandwidth_gbs: None,
            burst_bytes: None,
            rendezvous_first_bytes: None,
        },
        inter: Link {
            latency_us: 2.0,
            overhead_us: 0.5,
            gap_us: 0.3,
            bandwidth_gbs: 1.0,
            eager_limit: 8192,
            eager_bandwidth_gbs: None,
            burst_bytes: None,
            rendezvous_first_bytes: None,
        },
        copy_gbs: 7.0,
        levels: Vec::new(),
        memory_copy_gbs: None,
        intra_load_per_rank: None,
        shared_reads: false,
        shared_ports: false,
        group: None,
        fit_error: None,
    }
}

fn dump() {
    use Execution::{Blocking, Nonblocking};
    let layouts = [
        "1", "2", "1+1", "3+2+3", "4x4", "5x3", "7+1+9", "16x8", "64x1", "2x33",
    ];
    let sizes: [u64; 11] = [
        0,
        1,
        100,
        4096,
        4097,
        8192,
        65536,
        65537,
        100_000,
        1 << 20,
        3_000_001,
    ];
    for (mi, m) in [model(), slow_model()].iter().enumerate() {
        for c in Collective::ALL {
            for a in algorithms(c) {
                for seg in [8192, 65536] {
                    for spec in variants(a, seg) {
                        for l in layouts {
                            let nodes = NodeMap::parse(l).unwrap();
                            for &b in &sizes {
                                // Both orders, each call twice in a row.
                                for exec in [Blocking, Nonblocking, Nonblocking, Blocking] {
                                    let t = match simulate(m, c, &spec, exec, &nodes, b) {
                                        Ok(t) => {
                                            // The engine made from plans agrees.
                                            let plans: Vec<Plan> =
                                                build_all(c, &spec, 0, b, &nodes)
                                                    .unwrap()
                                                    .into_iter()
                                                    .map(Plan::new)
                                                    .collect();
                                            let e = Engine::new(m, &nodes, &plans, exec);
                                            assert_eq!(e.run().unwrap().to_bits(), t.to_bits());
                                            format!("{:016x} {t}", t.to_bits())
                                        }
                                        Err(e) => format!("error: {e}"),
                                    };
                                    println!("{mi} {c} {spec} {l} {} {b} {t}", exec.name());
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `simprof schedules`: a hash of every schedule the dump's calls build
/// (ops, dependencies, buffer sizes), to check the builder the same way.
fn schedules() {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let layouts = ["1", "2", "3+2+3", "4x4", "7+1+9", "16x8", "2x33"];
    let sizes: [u64; 6] = [0, 1, 4097, 65537, 1 << 20, 3_000_001];
    for c in Collective::ALL {
        for a in algorithms(c) {
            for seg in [8192, 65536] {
                for spec in variants(a, seg) {
                    for l in layouts {
                        let nodes = NodeMap::parse(l).unwrap();
                        for &b in &sizes {
                            let mut h = DefaultHasher::new();
                            match colltune_algorithms::build_all(c, &spec, 0, b, &nodes) {
                                Ok(s) => format!("{s:?}").hash(&mut h),
                                Err(e) => e.to_string().hash(&mut h),
                            }
                            println!("{c} {spec} {l} {b} {:016x}", h.finish());
                        }
                    }
                }
            }
        }
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a.get(1).map(|s| s.as_str()) {
        Some("dump") => return dump(),
        Some("schedules") => return schedules(),
        _ => {}
    }
    let m = model();
    let nodes = NodeMap::parse(&a[2]).unwrap();
    let exec = if a.get(4).map(|s| s.as_str()) == Some("nb") {
        Execution::Nonblocking
    } else {
        Execution::Blocking
    };
    let bytes: u64 = a[3].parse().unwrap();
    let spec = AlgoSpec::parse(&a[1]).unwrap();
    if std::env::var_os("SIMPROF_PAIR").is_some() {
        // The call in both executions in turn, as the tuner asks for it.
        for exec in Execution::ALL {
            let t0 = std::time::Instant::now();
            let t = simulate(&m, Collective::Bcast, &spec, exec, &nodes, bytes).unwrap();
            eprintln!("simulate {} {:?}: {t} us", exec.name(), t0.elapsed());
        }
        return;
    }
    if std::env::var_os("SIMPROF_ONLY").is_some() {
        // Just the simulation, for a profiler.
        let t0 = std::time::Instant::now();
        let t = simulate(&m, Collective::Bcast, &spec, exec, &nodes, bytes).unwrap();
        eprintln!("simulate {:?}: {t} us", t0.elapsed());
        return;
    }
    let t0 = std::time::Instant::now();
    let scheds =
        colltune_algorithms::build_all(Collective::Bcast, &spec, 0, bytes, &nodes).unwrap();
    let t1 = std::time::Instant::now();
    let plans: Vec<colltune_algorithms::Plan> = scheds
        .into_iter()
        .map(colltune_algorithms::Plan::new)
        .collect();
    let t2 = std::time::Instant::now();
    let ops = plans.iter().map(|p| p.schedule.ops.len()).sum::<usize>();
    let e = colltune_core::model::sim::Engine::new(&m, &nodes, &plans, exec);
    let t3 = std::time::Instant::now();
    let t = e.run().unwrap();
    let t4 = std::time::Instant::now();
    drop(plans);
    let t5 = std::time::Instant::now();
    let t_all = simulate(&m, Collective::Bcast, &spec, exec, &nodes, bytes).unwrap();
    assert_eq!(t.to_bits(), t_all.to_bits());
    eprintln!(
        "build {:?} plan {:?} engine {:?} run {:?} drop {:?}; simulate (all) {:?}: {t} us ({ops} ops)",
        t1 - t0,
        t2 - t1,
        t3 - t2,
        t4 - t3,
        t5 - t4,
        t5.elapsed(),
    );
}
