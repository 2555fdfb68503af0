//! Profiles one simulation: `simprof ALGO LAYOUT BYTES [exec]`.
use colltune::sim::{simulate, Link, Model};
use colltune_algorithms::{AlgoSpec, Collective, Execution, NodeMap};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let m = Model {
        name: "p".into(),
        source: "p".into(),
        intra: Link {
            latency_us: 0.3,
            overhead_us: 0.1,
            gap_us: 0.05,
            bandwidth_gbs: 10.0,
            eager_limit: 4096,
        },
        inter: Link {
            latency_us: 1.5,
            overhead_us: 0.3,
            gap_us: 0.1,
            bandwidth_gbs: 12.5,
            eager_limit: 65536,
        },
        copy_gbs: 10.0,
    };
    let nodes = NodeMap::parse(&a[2]).unwrap();
    let exec = if a.get(4).map(|s| s.as_str()) == Some("nb") {
        Execution::Nonblocking
    } else {
        Execution::Blocking
    };
    let t0 = std::time::Instant::now();
    let spec = AlgoSpec::parse(&a[1]).unwrap();
    let plans: Vec<colltune_algorithms::Plan> =
        colltune_algorithms::build_all(Collective::Bcast, &spec, 0, a[3].parse().unwrap(), &nodes)
            .unwrap()
            .into_iter()
            .map(colltune_algorithms::Plan::new)
            .collect();
    let t1 = std::time::Instant::now();
    let t = simulate(
        &m,
        Collective::Bcast,
        &spec,
        exec,
        &nodes,
        a[3].parse().unwrap(),
    )
    .unwrap();
    eprintln!(
        "build+plan {:?}, simulate (incl. build) {:?}: {t} us ({} ops)",
        t1 - t0,
        t1.elapsed(),
        plans.iter().map(|p| p.schedule.ops.len()).sum::<usize>()
    );
}
