//! Simulator speed (`cargo bench --bench simulator`), in two parts:
//!
//! 1. a 16,384-rank (256 nodes x 64) 1 MiB broadcast for every broadcast
//!    algorithm at its defaults and both executions, each call built and run
//!    on its own (target: <= 1 s each on one core); `scatter_allgather_ring`
//!    sends O(p^2) messages (some 537 million ops here, more memory than
//!    most machines have: the simulator refuses it, `SimError::TooLarge`)
//!    and is left out unless named;
//! 2. a whole decision table for a 1,024-node model: `colltune tune --model
//!    tuning-tables/models/test-ib.yaml --layout 1024x1 --collective bcast`
//!    (target: <= 60 s).
//!
//! Arguments (after `--`): an algorithm name runs part 1 for it alone (and
//! no table); `--no-table` skips part 2, `--table-only` part 1; `--wide`
//! adds the table for 1024 nodes x 4 ranks to part 2 (no target; minutes).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use colltune_algorithms::{algorithms, AlgoSpec, Collective, Execution, NodeMap};
use colltune_core::model::sim::{drop_kept_call, simulate, Model};

/// The test fixture `tuning-tables/models/test-ib.yaml` (the whole-table
/// part runs the same file).
fn model() -> Model {
    Model::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tuning-tables/models/test-ib.yaml"
    )))
    .expect("tuning-tables/models/test-ib.yaml")
}

/// Algorithms whose message count grows as p^2: run only when named.
const QUADRATIC: &[&str] = &["scatter_allgather_ring"];

fn per_algorithm(only: Option<&str>) {
    let m = model();
    let nodes = NodeMap::blocks(&[64; 256]).unwrap();
    println!("16,384 ranks (256 nodes x 64), 1 MiB broadcast, root 0 (target: <= 1 s):");
    for a in algorithms(Collective::Bcast) {
        if only.is_some_and(|o| o != a.name) {
            continue;
        }
        if only.is_none() && QUADRATIC.contains(&a.name) {
            println!(
                "  {:<24} skipped: O(p^2) messages (name it to run it)",
                a.name
            );
            continue;
        }
        for exec in Execution::ALL {
            let spec = AlgoSpec::new(a.name);
            // Each call on its own: not the second execution of a call the
            // simulator kept built (as the tuner's second one is).
            drop_kept_call();
            let t0 = Instant::now();
            match simulate(&m, Collective::Bcast, &spec, exec, &nodes, 1 << 20) {
                Ok(t) => {
                    let s = t0.elapsed().as_secs_f64();
                    println!(
                        "  {:<24} {:<12} simulated {:>12.1} us in {:>7.3} s{}",
                        a.name,
                        exec.name(),
                        t,
                        s,
                        if s > 1.0 { "  (over target)" } else { "" }
                    );
                }
                Err(e) => println!("  {:<24} {:<12} error: {e}", a.name, exec.name()),
            }
        }
    }
}

/// Runs `colltune tune` over the test model for `layout` (output in a
/// temporary directory); prints its wall time, against the target if any.
fn whole_table(layout: &str, target_s: Option<f64>) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = repo.join("tuning-tables/models/test-ib.yaml");
    let dir = std::env::temp_dir().join(format!(
        "colltune-bench-table-{layout}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_colltune"));
    cmd.arg("tune")
        .arg("--model")
        .arg(&model)
        .args(["--layout", layout, "--collective", "bcast"])
        .arg("--table")
        .arg(dir.join("table.yaml"))
        .arg("--csv")
        .arg(dir.join("samples.csv"));
    println!(
        "whole table: colltune tune --model {} --layout {layout} --collective bcast{}:",
        model.display(),
        target_s
            .map(|t| format!(" (target: <= {t} s)"))
            .unwrap_or_default()
    );
    let t0 = Instant::now();
    let out = cmd.output().expect("run colltune");
    let s = t0.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        println!(
            "  failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("tuned over model"))
        .unwrap_or("");
    match target_s {
        Some(t) => println!(
            "  {layout}: {s:.1} s wall, {:.0}% of the target{}",
            100.0 * s / t,
            if s > t { "  (over target)" } else { "" }
        ),
        None => println!("  {layout}: {s:.1} s wall"),
    }
    if !summary.is_empty() {
        println!("  {summary}");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let only = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(|s| s.as_str());
    if !flag("--table-only") {
        per_algorithm(only);
    }
    if !flag("--no-table") && only.is_none() {
        whole_table("1024x1", Some(60.0));
        if flag("--wide") {
            whole_table("1024x4", None);
        }
    }
}
