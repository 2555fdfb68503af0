//! Simulator speed (`cargo bench --bench simulator`): a 16,384-rank
//! (256 nodes x 64) 1 MiB broadcast for every broadcast algorithm at its
//! defaults and both executions (target: <= 1 s each on one core), and a
//! whole table for a 1,024-node model (target: <= 60 s).

use std::time::Instant;

use colltune::sim::{simulate, Link, Model};
use colltune_algorithms::{algorithms, AlgoSpec, Collective, Execution, NodeMap};

fn model() -> Model {
    Model {
        name: "bench".into(),
        source: "bench".into(),
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
    }
}

fn main() {
    let m = model();
    let only: Option<String> = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let nodes = NodeMap::blocks(&[64; 256]).unwrap();
    println!("16,384 ranks (256 nodes x 64), 1 MiB broadcast, root 0:");
    for a in algorithms(Collective::Bcast) {
        if only.as_deref().is_some_and(|o| o != a.name) {
            continue;
        }
        for exec in Execution::ALL {
            let spec = AlgoSpec::new(a.name);
            let t0 = Instant::now();
            match simulate(&m, Collective::Bcast, &spec, exec, &nodes, 1 << 20) {
                Ok(t) => println!(
                    "  {:<24} {:<12} simulated {:>12.1} us in {:>7.3} s",
                    a.name,
                    exec.name(),
                    t,
                    t0.elapsed().as_secs_f64()
                ),
                Err(e) => println!("  {:<24} {:<12} error: {e}", a.name, exec.name()),
            }
        }
    }
}
