//! The nonblocking (dataflow) execution's cost is linear in the number of
//! segments: `pipeline:segment=4096` at 32 MiB (8,192 segments) costs about
//! 8 times what 4 MiB (1,024 segments) does, not 64 times (a quadratic
//! executor: `MPI_Waitany` over every request in flight, the ready set
//! copied on every completion). The bound allowed is 3 times linear, for
//! noisy shared machines. `benches/exec_segments.sh` measures up to 1 GiB.

mod common;
use common::*;

/// Median time per call, in microseconds, of a broadcast of `size` bytes.
fn time_us(ranks: usize, size: &str) -> f64 {
    let mut c = mpirun(ranks);
    c.arg(colltune()).args([
        "bench",
        "--collective",
        "bcast",
        "-a",
        "pipeline:segment=4096",
        "--executions",
        "nonblocking",
        "--sizes",
        size,
        "--runs",
        "1",
        "--min-reps",
        "5",
        "--max-reps",
        "5",
        "--warmup",
        "1",
        "--root",
        "0",
        "--baseline",
        "none",
    ]);
    let o = run(c);
    let out = text(&o);
    assert!(o.status.success(), "bench {size} failed:\n{out}");
    let bytes = colltune_algorithms::parse_size(size).unwrap().to_string();
    // The IMB table's row: bytes reps t_min t_max t_avg t_med spread outliers
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() == 8 && f[0] == bytes)
        .and_then(|f| f[5].parse().ok())
        .unwrap_or_else(|| panic!("no time for {size} in:\n{out}"))
}

#[test]
fn dataflow_cost_is_linear_in_segments() {
    for ranks in [2, 3] {
        let small = time_us(ranks, "4M");
        let large = time_us(ranks, "32M");
        let ratio = large / small;
        eprintln!(
            "{ranks} ranks: 4 MiB {:.1} ms, 32 MiB {:.1} ms: {ratio:.1}x for 8x the segments",
            small / 1e3,
            large / 1e3
        );
        assert!(
            ratio < 24.0,
            "{ranks} ranks: 8x the segments cost {ratio:.1}x the time \
             (4 MiB {small:.0} us, 32 MiB {large:.0} us): superlinear"
        );
    }
}
