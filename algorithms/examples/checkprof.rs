//! Times the checker per algorithm variant (a profiling aid):
//! `cargo run --release --example checkprof -- [max_ranks]`.
use colltune_algorithms::check::check_bcast;
use colltune_algorithms::{algorithms, variants, Collective, Execution, NodeMap};
fn main() {
    let max: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    let only = std::env::args().nth(2);
    for info in
        algorithms(Collective::Bcast).filter(|a| only.as_deref().is_none_or(|o| o == a.name))
    {
        for spec in variants(info, 65536) {
            let t = std::time::Instant::now();
            for p in (max - 3)..=max {
                let nodes = NodeMap::round_robin(p, 3);
                for root in 0..p {
                    for bytes in [7u64, 65537, (1 << 20) + 3] {
                        for exec in Execution::ALL {
                            check_bcast(&spec, &nodes, root, bytes, exec).unwrap();
                        }
                    }
                }
            }
            println!("{:>8.3} s  {spec}", t.elapsed().as_secs_f64());
        }
    }
}
