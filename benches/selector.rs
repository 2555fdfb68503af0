//! Selector overheads (`cargo bench --bench selector`): loading a
//! 1,000-rule table, and the per-call dispatch decision. Prints medians
//! over repeated trials; compare with the targets (load <= 1 ms, decision
//! <= 50 ns per call).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use colltune_algorithms::Collective;
use colltune_core::tables::decide::{RuntimeSettings, Selector};
use colltune_core::tables::table::{self, CommKey};

/// A realistic table: 2 collectives x 5 shapes x 100 rules, every field set.
fn big_table() -> String {
    let mut y = String::from(
        "schema: 1\nprovenance:\n  host: bench\n  mpi: Open MPI v4.1.4\n  date: 2026-11-30T00:00:00Z\n  command: bench\n  colltune: 0.1.0\n  source: measured\n  sweep:\n    mode: adaptive\n",
    );
    let bcast = [
        "linear", "binomial", "knomial", "binary", "pipeline", "chain",
    ];
    let swap = ["ordered", "sendrecv", "isend_irecv", "put_pscw"];
    for (coll, algos) in [("bcast", &bcast[..]), ("swap", &swap[..])] {
        y += &format!("{coll}:\n");
        for shape in 0..5u64 {
            let ranks = 4 << shape;
            y += &format!("- ranks: {ranks}\n  ppn: {ranks}\n  nodes: 1\n  rules:\n");
            for k in 0..100u64 {
                let a = algos[(k as usize) % algos.len()];
                y += &format!("  - min_bytes: {}\n", k * 1000);
                if k < 99 {
                    y += &format!("    max_bytes: {}\n", k * 1000 + 999);
                }
                y += &format!("    algorithm: {a}\n");
                if a == "knomial" {
                    y += "    params:\n      radix: 4\n      segment: 0\n";
                }
                if a == "pipeline" || a == "chain" {
                    y += "    params:\n      segment: 65536\n";
                }
                y += &format!(
                    "    execution: blocking\n    time_us: {}.25\n    at_bytes: {}\n    runner_up: binomial:segment=0 [nonblocking]\n    margin: 0.031\n",
                    k + 3,
                    k * 1000 + 500
                );
            }
        }
    }
    y
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let text = big_table();
    let path = std::env::temp_dir().join("colltune-bench-1000-rules.yaml");
    std::fs::write(&path, &text).unwrap();
    let t = table::load(&path).expect("valid");
    let rules: usize = [Collective::Bcast, Collective::Swap]
        .iter()
        .map(|&c| t.rules(c).iter().map(|r| r.rules.len()).sum::<usize>())
        .sum();
    assert_eq!(rules, 1000);

    let loads: Vec<f64> = (0..40)
        .map(|_| {
            let t0 = Instant::now();
            black_box(table::load(&path).unwrap());
            t0.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let (lo, hi) = (
        loads.iter().copied().fold(f64::INFINITY, f64::min),
        loads.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "table load, {rules} rules, {} KiB of YAML: median {:.3} ms (min {lo:.3}, max {hi:.3}; target <= 1 ms)",
        text.len() / 1024,
        median(loads.clone())
    );

    let sel = Arc::new(Selector {
        settings: RuntimeSettings::default(),
        table: Some(Arc::new(t)),
        fallback: None,
    });
    let key = CommKey::shape(16, 16, 1);
    let d = sel.decisions(Collective::Bcast, key);
    assert_eq!(d.rules().len(), 100);
    // sizes spread over every rule (and past the last)
    let sizes: Vec<u64> = (0..4096u64).map(|i| (i * 7919 * 31) % 120_000).collect();
    let calls = 4_000_000u64;
    let per_call: Vec<f64> = (0..9)
        .map(|_| {
            let t0 = Instant::now();
            let mut acc = 0usize;
            for i in 0..calls {
                let (_, id) = d.choose(black_box(sizes[(i as usize) & 4095]));
                acc = acc.wrapping_add(id);
            }
            black_box(acc);
            t0.elapsed().as_secs_f64() * 1e9 / calls as f64
        })
        .collect();
    println!(
        "dispatch decision (100 rules, forced > table > built-in > library): median {:.1} ns per call (min {:.1}, max {:.1}; target <= 50 ns)",
        median(per_call.clone()),
        per_call.iter().copied().fold(f64::INFINITY, f64::min),
        per_call.iter().copied().fold(0.0, f64::max)
    );
}
