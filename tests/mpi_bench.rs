//! `colltune bench` and `colltune fit` end to end under mpirun, and their
//! errors on bad input.

mod common;
use common::*;
use std::process::Command;

fn samples(path: &std::path::Path) -> Vec<colltune_core::measure::record::Sample> {
    colltune_core::measure::record::read(path).unwrap()
}

#[test]
fn bench_writes_every_point_and_compares_with_the_library() {
    let dir = scratch("bench");
    let csv = dir.join("raw.csv");
    let mut c = mpirun(3);
    c.arg(colltune()).args([
        "bench",
        "--collective",
        "bcast",
        "-a",
        "linear",
        "-a",
        "pipeline",
        "--sweep",
        "segment=8K,0",
        "--sizes",
        "1,4K,64K",
        "--runs",
        "2",
        "--budget-ms",
        "2",
        "--baseline",
        "mpi,ompi-tuned",
        "--csv",
    ]);
    c.arg(&csv);
    let o = run(c);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("# Benchmarking bcast linear [blocking]"),
        "{out}"
    );
    assert!(
        out.contains("geometric mean, best of colltune / MPI library default"),
        "{out}"
    );
    assert!(out.contains("best forced Open MPI algorithm"), "{out}");
    let header = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        header.lines().next().unwrap(),
        colltune_core::measure::record::COLUMNS.join(",")
    );
    let rows = samples(&csv);
    // every (subject, size, run) has at least min-reps samples
    let subjects = ["linear", "pipeline:segment=8192", "pipeline:segment=0"];
    for s in subjects {
        for exec in ["blocking", "nonblocking"] {
            for bytes in ["1", "4096", "65536"] {
                for run in ["1", "2"] {
                    let n = rows
                        .iter()
                        .filter(|r| {
                            r.spec == s
                                && r.execution == exec
                                && r.bytes.to_string() == bytes
                                && r.run.to_string() == run
                        })
                        .count();
                    assert!(n >= 5, "{s} {exec} {bytes} run {run}: {n} samples");
                }
            }
        }
    }
    assert!(rows
        .iter()
        .any(|r| r.spec == "mpi" && r.execution == "library"));
    assert!(rows
        .iter()
        .any(|r| r.algorithm == "ompi_tuned" && r.spec.contains("name=binomial")));
    // rotating root: all three roots appear
    for root in 0..3 {
        assert!(rows.iter().any(|r| r.root == root), "root {root}");
    }
    assert!(rows.iter().all(|r| r.time_us > 0.0 && r.ranks == 3));

    let f = run({
        let mut c = Command::new(colltune());
        c.arg("fit").arg(&csv);
        c
    });
    let fout = text(&f);
    assert!(f.status.success(), "{fout}");
    assert!(
        fout.contains("peak MB/s") && fout.contains("latency us") && fout.contains("max error"),
        "{fout}"
    );
    assert!(
        fout.contains("pipeline:segment=8192 [nonblocking]"),
        "{fout}"
    );
}

#[test]
fn bench_swap_study_iterations_and_overlap() {
    let dir = scratch("swap");
    let csv = dir.join("swap.csv");
    let mut c = mpirun(5);
    c.arg(colltune()).args([
        "bench",
        "--collective",
        "swap",
        "-a",
        "ordered",
        "-a",
        "isend_irecv",
        "-a",
        "rsend",
        "-a",
        "put_fence",
        "--sizes",
        "64K,2M",
        "--runs",
        "2",
        "--budget-ms",
        "2",
        "--iterations",
        "1,4",
        "--overlap-us",
        "0,200",
        "--root",
        "0",
        "--cache",
        "off",
        "--csv",
    ]);
    c.arg(&csv);
    let o = run(c);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let rows = samples(&csv);
    for it in [1, 4] {
        for ov in [0.0, 200.0] {
            assert!(
                rows.iter().any(|r| r.iterations == it
                    && r.overlap_us == ov
                    && r.spec.starts_with("rsend")),
                "iterations {it} overlap {ov}"
            );
        }
    }
    assert!(rows
        .iter()
        .all(|r| r.cache == "off" && r.root == -1 && r.collective == "swap"));
    // with 200 us of computation per call, no call can take less than that
    assert!(rows
        .iter()
        .filter(|r| r.overlap_us == 200.0)
        .all(|r| r.time_us >= 200.0));
}

#[test]
fn window_synchronised_repetitions_cover_every_root() {
    let dir = scratch("window");
    for ranks in [3, 4] {
        let csv = dir.join(format!("window-{ranks}.csv"));
        let mut c = mpirun(ranks);
        c.arg(colltune()).args([
            "bench",
            "--collective",
            "bcast",
            "-a",
            "binomial",
            "--sizes",
            "1,64K",
            "--runs",
            "2",
            "--budget-ms",
            "5",
            "--min-reps",
            "8",
            "--baseline",
            "none",
            "--overlap-us",
            "0,100",
            "--sync",
            "window",
            "--csv",
        ]);
        c.arg(&csv);
        let o = run(c);
        let out = text(&o);
        assert!(o.status.success(), "{out}");
        assert!(out.contains("start at synchronised instants"), "{out}");
        let rows = samples(&csv);
        assert!(
            rows.iter().all(|r| r.source == "measured:window"),
            "{ranks} ranks"
        );
        for root in 0..ranks as i64 {
            assert!(
                rows.iter().any(|r| r.root == root),
                "{ranks} ranks: root {root}"
            );
        }
        // A time runs from the agreed instant to the end of the call: never
        // less than the computation inside it.
        assert!(rows
            .iter()
            .all(|r| r.time_us.is_finite() && r.time_us > r.overlap_us));
    }
}

fn colltune_plain(args: &[&str]) -> std::process::Output {
    run({
        let mut c = Command::new(colltune());
        c.args(args);
        c
    })
}

#[test]
fn bad_input_is_refused_clearly() {
    for (args, needle) in [
        (
            &["bench", "-a", "warp_drive"][..],
            "unknown bcast algorithm `warp_drive`",
        ),
        (&["bench", "-a", "pipeline:segment=3"], "out of range"),
        (&["bench", "--sizes", "8..2"], "--sizes"),
        (&["bench", "--sizes", "4G"], "more than one MPI message"),
        (&["bench", "--sweep", "segment"], "--sweep `segment`"),
        (&["bench", "--root", "middle"], "--root `middle`"),
        // Options of a few words: clap's own message, listing them.
        (
            &["bench", "--cache", "lukewarm"],
            "invalid value 'lukewarm' for '--cache <CACHE>'\n  [possible values: warm, off]",
        ),
        (
            &["bench", "--sync", "sometimes"],
            "[possible values: barrier, window]",
        ),
        (
            &["bench", "--pattern", "often"],
            "[possible values: synchronized, back-to-back, imb]",
        ),
        (
            &["bench", "--baseline", "mvapich"],
            "[possible values: mpi, ompi-tuned, ompi-adapt, ompi-han, mpich-algorithms, interposed, none]",
        ),
        (
            &["tune", "--pairing", "diagonal"],
            "[possible values: neighbors, halves]",
        ),
        (&["tune", "--cache", "hot"], "[possible values: warm, off]"),
        (&["fit", "/nonexistent.csv"], "cannot open"),
    ] {
        let o = colltune_plain(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(needle), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "{args:?}");
    }
    let dir = scratch("badcsv");
    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        format!(
            "{}\nbcast,linear,linear,blocking,4,4,1,4,lots,0,warm,1,0,synchronized,1,1,3.0,0,x,h,measured,0,,,\n",
            colltune_core::measure::record::COLUMNS.join(",")
        ),
    )
    .unwrap();
    let o = colltune_plain(&["fit", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("line 2") && text(&o).contains("column `bytes`"),
        "{}",
        text(&o)
    );
}

/// `bench --pattern` at 2 and 3 ranks: the CSV records the pattern; a
/// back-to-back repetition is a block of whole root rotations (its calls in
/// `iterations`), successive blocks starting from successive roots.
#[test]
fn bench_records_each_call_pattern() {
    let dir = scratch("pattern");
    for ranks in [2usize, 3] {
        for pattern in ["synchronized", "back-to-back", "imb"] {
            let csv = dir.join(format!("{pattern}-np{ranks}.csv"));
            let mut c = mpirun(ranks);
            c.arg(colltune()).args([
                "bench",
                "--collective",
                "bcast",
                "-a",
                "linear",
                "-a",
                "binomial",
                "--executions",
                "blocking",
                "--sizes",
                "1,4K",
                "--runs",
                "2",
                "--budget-ms",
                "5",
                "--baseline",
                "mpi",
                "--pattern",
                pattern,
                "--csv",
            ]);
            c.arg(&csv);
            let o = run(c);
            let out = text(&o);
            assert!(o.status.success(), "{ranks} ranks, {pattern}: {out}");
            assert!(out.contains(&format!("pattern {pattern}")), "{out}");
            let header = std::fs::read_to_string(&csv).unwrap();
            assert!(header.lines().next().unwrap().contains(",pattern,"));
            let s = samples(&csv);
            assert!(!s.is_empty());
            assert!(
                s.iter().all(|x| x.pattern == pattern),
                "{ranks} ranks, {pattern}: patterns {:?}",
                colltune_core::tables::table::build::patterns(&s)
            );
            if pattern == "back-to-back" {
                for x in &s {
                    assert!(
                        x.iterations >= ranks as u32 && x.iterations % ranks as u32 == 0,
                        "a block is whole rotations: {x:?}"
                    );
                }
                let roots: std::collections::BTreeSet<i64> = s.iter().map(|x| x.root).collect();
                assert_eq!(
                    roots.len(),
                    ranks,
                    "blocks start from every root: {roots:?}"
                );
                assert!(out.contains("back-to-back calls"), "{out}");
            } else {
                assert!(s.iter().all(|x| x.iterations == 1));
            }
        }
    }
    // A back-to-back block sizes itself: --iterations is refused, before MPI.
    let o = run({
        let mut c = Command::new(colltune());
        c.args(["bench", "--pattern", "back-to-back", "--iterations", "4"]);
        c
    });
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--iterations"), "{}", text(&o));
    let o = run({
        let mut c = Command::new(colltune());
        c.args(["bench", "--pattern", "skampi"]);
        c
    });
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("back-to-back"), "{}", text(&o));
    // IMB's measure starts each call after a barrier.
    for cmd in ["bench", "tune"] {
        let o = run({
            let mut c = Command::new(colltune());
            c.args([cmd, "--pattern", "imb", "--sync", "window"]);
            c
        });
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", text(&o));
        assert!(text(&o).contains("--sync barrier"), "{cmd}: {}", text(&o));
    }
}

/// `--baseline interposed` calls `MPI_Bcast` through its `MPI_` symbol:
/// under `LD_PRELOAD` of the drop-in, that call (and only that one: the
/// other baselines call `PMPI_Bcast`) goes through colltune, shown by its
/// trace; without a preload it is the library's default call again.
#[test]
fn the_interposed_baseline_measures_the_drop_in_and_only_it() {
    let dir = scratch("interposed");
    let libs = shared_libs();
    let preload = libs.join("libcolltune_preload.so");
    // bench under the drop-in (linear forced, every call traced by rank 0)
    let run_with = |baselines: &str, csv: &std::path::Path| {
        let mut c = mpirun(3);
        c.args(["-x", &format!("LD_PRELOAD={}", preload.display())])
            .args(["-x", "COLLTUNE_BCAST=linear", "-x", "COLLTUNE_TRACE=lead"]);
        c.arg(colltune()).args([
            "bench",
            "--collective",
            "bcast",
            "--baselines-only",
            "--baseline",
            baselines,
            "--sizes",
            "777",
            "--runs",
            "1",
            "--budget-ms",
            "2",
            "--csv",
        ]);
        c.arg(csv);
        let o = run(c);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        let traced = t
            .lines()
            .filter(|l| l.starts_with("colltune trace:") && l.contains(" bcast 777 B "))
            .count();
        (t, traced)
    };
    let (t, traced) = run_with("mpi,ompi-tuned,interposed", &dir.join("with.csv"));
    let s = samples(&dir.join("with.csv"));
    let calls = s
        .iter()
        .filter(|x| x.spec == "interposed" && x.bytes == 777)
        .count();
    assert!(calls > 0, "no interposed samples:\n{t}");
    assert!(
        traced >= calls,
        "{calls} interposed samples but {traced} calls through the drop-in:\n{t}"
    );
    assert!(
        t.contains("interposed MPI_Bcast / best forced Open MPI algorithm"),
        "{t}"
    );
    assert!(
        t.contains("linear [blocking] (forced by the environment)"),
        "{t}"
    );
    // without the interposed baseline nothing of 777 B reaches the drop-in
    let (t, traced) = run_with("mpi,ompi-tuned", &dir.join("without.csv"));
    assert_eq!(
        traced, 0,
        "baselines other than interposed went through the drop-in:\n{t}"
    );
    // without a preload: the library's own call, recorded apart from `mpi`
    let mut c = mpirun(2);
    c.arg(colltune()).args([
        "bench",
        "--collective",
        "bcast",
        "--baselines-only",
        "--baseline",
        "mpi,interposed",
        "--sizes",
        "1K",
        "--runs",
        "1",
        "--budget-ms",
        "2",
    ]);
    let o = run(c);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("interposed MPI_Bcast / MPI library default"),
        "{t}"
    );
    assert!(!t.contains("colltune trace"), "{t}");
}
