//! The measurement scripts' arithmetic, without MPI: `jobs/imb-compare.sh
//! --analyse` on CSVs whose answers are known by construction.

mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};

use common::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const HEADER: &str = "np,algorithm,bytes,t_min_us,t_max_us,t_avg_us,run\n";

/// `jobs/imb-compare.sh --analyse FILE`.
fn analyse_file(f: &Path) -> Output {
    Command::new("bash")
        .arg(format!("{ROOT}/jobs/imb-compare.sh"))
        .arg("--analyse")
        .arg(f)
        .output()
        .expect("bash runs")
}

/// `--analyse` of `csv` (the header added): its standard output; the
/// command must succeed.
fn analyse(dir: &Path, csv: &str) -> String {
    analyse_headed(dir, &format!("{HEADER}{csv}"))
}

/// `--analyse` of `csv`, its header included: its standard output; the
/// command must succeed.
fn analyse_headed(dir: &Path, csv: &str) -> String {
    let f = dir.join("compare.csv");
    std::fs::write(&f, csv).unwrap();
    let o = analyse_file(&f);
    let out = text(&o);
    assert!(o.status.success(), "--analyse failed:\n{out}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// One line per (configuration, size, run): `t_avg` from `times[run]`.
fn lines(csv: &mut String, np: u32, config: &str, bytes: u64, times: &[f64]) {
    for (run, t) in times.iter().enumerate() {
        writeln!(csv, "{np},{config},{bytes},{t},{t},{t},{}", run + 1).unwrap();
    }
}

fn line_with<'a>(out: &'a str, needle: &str) -> &'a str {
    out.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{out}"))
}

/// The best of the forced algorithms by median is partly the luckiest: held
/// out, each run's best is picked from the other runs.
#[test]
fn the_best_forced_algorithm_held_out() {
    let d = scratch("imb-analyse-heldout");
    let mut csv = String::new();
    // 4 ranks, sizes 4 and 8 B (not below the rank count, so no identical
    // code check). binomial is 9 us twice and 20 us once: its median (9)
    // beats linear's 10, but only thanks to the runs it is measured in.
    for b in [4, 8] {
        lines(&mut csv, 4, "default", b, &[20.0, 20.0, 20.0]);
        lines(&mut csv, 4, "dropin", b, &[10.0, 10.0, 10.0]);
        lines(&mut csv, 4, "tuned1_basic_linear", b, &[10.0, 10.0, 10.0]);
        lines(&mut csv, 4, "tuned6_binomial", b, &[9.0, 9.0, 20.0]);
    }
    let out = analyse(&d, &csv);
    // In sample, paired: 10/9, 10/9, 10/20, median 1.111 at both sizes.
    assert!(
        line_with(&out, "dropin / best forced: geomean").contains("geomean 1.111"),
        "{out}"
    );
    // Held out: runs 1 and 2 pick linear (binomial's other runs: 9 and 20,
    // median 14.5), run 3 binomial (9, 9): 1.0, 1.0, 0.5, median 1.0.
    let held = line_with(&out, "dropin / best forced, held out:");
    assert!(
        held.contains("geomean 1.000") && held.contains("sizes above 1.15x: 0 of 2"),
        "{out}"
    );
    assert!(
        line_with(&out, "dropin / default:     geomean").contains("0.500"),
        "{out}"
    );
    assert!(!out.contains("identical code"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Open MPI's scatter_allgather (8, 9) runs basic_linear (1) when count <
/// ranks: those three are the same code, and their paired ratios are what
/// the machine can resolve.
#[test]
fn identical_code_shows_the_noise_floor() {
    let d = scratch("imb-analyse-identical");
    let mut csv = String::new();
    for b in [1, 2, 4] {
        lines(&mut csv, 4, "default", b, &[2.0, 2.0, 2.0]);
        lines(&mut csv, 4, "dropin", b, &[1.0, 1.0, 1.0]);
        lines(&mut csv, 4, "tuned1_basic_linear", b, &[1.0, 1.0, 1.0]);
        // the same code, 30% slower in every run / 5% faster
        lines(&mut csv, 4, "tuned8_scatter_allgather", b, &[1.3, 1.3, 1.3]);
        lines(
            &mut csv,
            4,
            "tuned9_scatter_allgather_ring",
            b,
            &[0.95, 0.95, 0.95],
        );
    }
    let out = analyse(&d, &csv);
    assert!(
        out.contains("identical code (scatter_allgather runs basic_linear when count < 4 ranks)"),
        "{out}"
    );
    // sizes 1 and 2 B only: 4 B is not below 4 ranks
    assert!(
        line_with(&out, "tuned8_scatter_allgather at 1 B").contains("paired median 1.30"),
        "{out}"
    );
    assert!(!out.contains("at 4 B: paired"), "{out}");
    assert!(
        line_with(&out, "outside 1/1.15..1.15").contains("2 of 4"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A CSV this script did not write is refused, naming it.
#[test]
fn a_foreign_csv_is_refused() {
    let d = scratch("imb-analyse-foreign");
    let f = d.join("other.csv");
    std::fs::write(&f, "config,bytes,t_avg,run\n").unwrap();
    let o = analyse_file(&f);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("other.csv") && err.contains("not a CSV this script wrote"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// IMB-NBC Ibcast's table as IMB 2021+ prints it (`t_ovrl` before
/// `t_pure`), around it what IMB prints before and after.
const NBC_LOG: &str = "\
# List of Benchmarks to run:

# Ibcast

#-----------------------------------------------------------------------------
# Benchmarking Ibcast 
# #processes = 4 
#-----------------------------------------------------------------------------
       #bytes #repetitions t_ovrl[usec] t_pure[usec]  t_CPU[usec]   overlap[%]
            1         1000         1.52         0.92         0.52         0.00
           64         1000         1.22         3.76         0.81        89.16
      4194304         1000      6595.49      3483.56       583.97         0.00


# All processes entering MPI_Finalize
";

/// `jobs/imb-compare.sh --bench BENCH --parse LOG` of `log`.
fn parse(dir: &Path, bench: &str, log: &str) -> Output {
    let f = dir.join("imb.log");
    std::fs::write(&f, log).unwrap();
    Command::new("bash")
        .arg(format!("{ROOT}/jobs/imb-compare.sh"))
        .args(["--bench", bench, "--parse"])
        .arg(&f)
        .output()
        .expect("bash runs")
}

/// IMB-NBC's columns are read by their heading's names: in IMB's order, in
/// another order, and a renamed one or another benchmark's table refused.
#[test]
fn imb_nbc_columns_are_read_by_their_names() {
    let d = scratch("imb-parse-nbc");
    let o = parse(&d, "nbc", NBC_LOG);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "np,algorithm,bytes,t_ovrl_us,t_pure_us,t_cpu_us,overlap_pct,run\n\
         0,parsed,1,1.52,0.92,0.52,0.00,1\n\
         0,parsed,64,1.22,3.76,0.81,89.16,1\n\
         0,parsed,4194304,6595.49,3483.56,583.97,0.00,1\n"
    );
    // t_pure printed first (IMB's other layout): still t_pure's figures
    // in t_pure's column
    let swapped = NBC_LOG
        .replace("t_ovrl[usec] t_pure[usec]", "t_pure[usec] t_ovrl[usec]")
        .replace("1.52         0.92", "0.92         1.52");
    let o = parse(&d, "nbc", &swapped);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\n0,parsed,1,1.52,0.92,0.52,0.00,1\n"),
        "{}",
        text(&o)
    );
    // a column IMB renamed: refused, naming it
    let o = parse(&d, "nbc", &NBC_LOG.replace("t_CPU[usec]", "t_comp[usec]"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("printed no column t_CPU[usec]"),
        "{}",
        text(&o)
    );
    // IMB-NBC's output is no IMB-MPI1 Bcast table
    let o = parse(&d, "mpi1", NBC_LOG);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no Bcast table in it"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// One IMB-NBC line per run: t_pure from `pure[run]`, t_ovrl twice it,
/// overlap% `overlap`.
fn nbc_lines(csv: &mut String, config: &str, bytes: u64, pure: &[f64], overlap: f64) {
    for (run, t) in pure.iter().enumerate() {
        let ovrl = 2.0 * t;
        writeln!(
            csv,
            "4,{config},{bytes},{ovrl},{t},{t},{overlap},{}",
            run + 1
        )
        .unwrap();
    }
}

/// `--analyse` of an IMB-NBC CSV: t_pure's ratios, t_ovrl's, and the
/// overlap achieved against the default's and the best forced one's, each
/// paired per run.
#[test]
fn imb_nbc_analysis_compares_time_and_overlap() {
    let d = scratch("imb-analyse-nbc");
    let mut csv = String::new();
    for b in [1, 4096] {
        for (config, pure, overlap) in [
            ("default", [10.0, 20.0, 10.0], 20.0),
            // in every run 0.8x the default's time, 10 points more overlap
            ("dropin", [8.0, 16.0, 8.0], 30.0),
            ("libnbc1_linear", [10.0, 20.0, 10.0], 0.0),
            // the best forced (median 8): the drop-in's time, 40 points
            ("libnbc2_binomial", [8.0, 16.0, 8.0], 40.0),
        ] {
            nbc_lines(&mut csv, config, b, &pure, overlap);
        }
    }
    let out = analyse_headed(
        &d,
        &format!("np,algorithm,bytes,t_ovrl_us,t_pure_us,t_cpu_us,overlap_pct,run\n{csv}"),
    );
    for (line, want) in [
        ("4 ranks, median of 3 runs", "t_pure in us"),
        ("dropin / default:     geomean", "geomean 0.800"),
        ("dropin / best forced: geomean", "geomean 1.000"),
        ("dropin / default, t_ovrl:", "geomean 0.800"),
        ("dropin - default, overlap:", "mean +10.0 points"),
        ("dropin - best forced, overlap:", "mean -10.0 points"),
        (
            "dropin - best forced, overlap:",
            "sizes below -5 points: 2 of 2",
        ),
    ] {
        assert!(
            line_with(&out, line).contains(want),
            "{line}: {want}\n{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A launcher standing in for mpirun: it logs its arguments and writes the
/// next prepared CSV (`launchN.csv` in `FIX`) where `--csv` says.
const FAKE_LAUNCHER: &str = r#"#!/bin/bash
echo "$*" >> "$FIX/args.log"
n=$(($(wc -l < "$FIX/args.log")))
prev=
for a in "$@"; do [ "$prev" = --csv ] && csv=$a; prev=$a; done
cp "$FIX/launch$n.csv" "$csv"
"#;

/// One launch's CSV: per size, the library's `mpi` call at 10 us and
/// linear at `linear[run]`, three runs of three samples.
fn launch_csv(path: &Path, points: &[(u64, [f64; 3])]) {
    let mut w = colltune_core::measure::record::Writer::open(path, false).unwrap();
    for &(b, linear) in points {
        for (run, t) in linear.iter().enumerate() {
            for rep in 1..=3 {
                for (spec, exec, x) in [("mpi", "library", 10.0), ("linear", "blocking", *t)] {
                    let mut s =
                        colltune_core::measure::record::sample(spec, exec, b, run as u32 + 1, x);
                    s.rep = rep;
                    w.write(&[s]).unwrap();
                }
            }
        }
    }
}

/// The sweep: at 4 KiB linear is 30% faster in every run (resolved); at
/// 64 B its runs say 5-16% (one launch: unresolved).
fn first_launch(d: &Path) {
    launch_csv(
        &d.join("launch1.csv"),
        &[
            (64, [10.0 / 1.1618, 10.0 / 1.0513, 10.0 / 1.1052]),
            (4096, [10.0 / 1.3; 3]),
        ],
    );
}

/// `colltune_batch_tune` (jobs/common.sh, the Slurm and PBS jobs) with
/// BUDGET minutes, LAUNCHES 3: its standard output and the launcher's
/// argument lines.
fn batch_job(d: &Path, budget: &str) -> (String, Vec<String>) {
    let launcher = d.join("fake-mpirun");
    std::fs::write(&launcher, FAKE_LAUNCHER).unwrap();
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            ". {ROOT}/jobs/common.sh; LAUNCH=(bash {}); colltune_batch_tune",
            launcher.display()
        ))
        .env("FIX", d)
        .env("BIN", colltune())
        .env("OUT", d.join("out"))
        .env("TAG", "N1-np4")
        .env("TABLE", d.join("out/combined.yaml"))
        .env("BUDGET", budget)
        .env("LAUNCHES", "3")
        .env("TUNE_ARGS", "--collective bcast --sizes 1..4K --stride 2")
        .env_remove("CLUSTER")
        .env_remove("LAUNCHER")
        .output()
        .expect("bash runs");
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let args = std::fs::read_to_string(d.join("args.log")).unwrap();
    (out, args.lines().map(String::from).collect())
}

/// The batch job's later launches measure only the sizes the earlier ones
/// left unresolved, and stop once none is. Launch 1: at 4 KiB linear is
/// 30% faster in every run (chosen, but on one launch's evidence: a second
/// launch confirms it); at 64 B its runs say 5-16% (one launch:
/// unresolved). Launch 2, at those two sizes only, agrees: resolved and
/// confirmed, so no third launch.
#[test]
fn later_launches_measure_only_the_unresolved_sizes() {
    let d = scratch("batch-further-launches");
    first_launch(&d);
    launch_csv(
        &d.join("launch2.csv"),
        &[(64, [10.0 / 1.1; 3]), (4096, [10.0 / 1.3; 3])],
    );
    let (out, args) = batch_job(&d, "30");
    assert_eq!(args.len(), 2, "{out}\n{args:?}");
    assert!(
        args[0].contains("--sizes 1..4K --stride 2") && args[0].contains("--budget 30 "),
        "{args:?}"
    );
    // launches with another after them run no further rounds inside
    assert!(
        args.iter().all(|a| a.ends_with(" --extra-rounds 0")),
        "{args:?}"
    );
    // the sweep's --sizes and --stride replaced by the earlier launch's
    // CSV (tune --focus: its open points only), the rest kept
    assert!(
        args[1].contains("--collective bcast --focus ")
            && args[1].contains("out/tune-N1-np4.csv")
            && !args[1].contains("--sizes")
            && !args[1].contains("--stride")
            && args[1].contains("tune-N1-np4-l2.csv"),
        "{args:?}"
    );
    assert!(
        out.contains("launch 2 of 3 at the unresolved sizes 64,4096 ")
            && out.contains("no size unresolved after 2 launch(es)"),
        "{out}"
    );
    let sizes = std::fs::read_to_string(d.join("out/tune-N1-np4-l2.csv.sizes")).unwrap();
    assert_eq!(sizes.trim(), "64,4096");
    let t = std::fs::read_to_string(d.join("out/combined.yaml")).unwrap();
    assert!(
        t.contains("launches: 2") && !t.contains("unresolved:"),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// With less than a minute of the budget left, no further launch: the
/// sizes left unresolved are said, and listed from the combined table.
#[test]
fn no_further_launch_past_the_budget() {
    let d = scratch("batch-further-budget");
    first_launch(&d);
    let (out, args) = batch_job(&d, "0.5");
    assert_eq!(args.len(), 1, "{out}\n{args:?}");
    assert!(
        out.contains("the budget is spent; sizes left unresolved: 64,4096")
            && out.contains("left unresolved in the combined table: bcast 4 4 1 64")
            && out.contains("left unresolved in the combined table: bcast 4 4 1 4096"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `jobs/stability.sh` with a stand-in mpirun on PATH: its two tunes
/// alternate (a, b, a, b), each later launch measures only the sizes its
/// own tune left unresolved (the scripts' code, jobs/common.sh), and a tune
/// with none left gets no further launch. Both sweeps leave 64 B open (5-16%
/// over the library) and 4 KiB chosen on one launch; each second launch
/// resolves the one and confirms the other, so no third launch for either.
#[test]
fn stability_tunes_launch_again_only_at_their_unresolved_sizes() {
    let d = scratch("stability-launches");
    first_launch(&d);
    std::fs::copy(d.join("launch1.csv"), d.join("launch2.csv")).unwrap();
    for n in [3, 4] {
        launch_csv(
            &d.join(format!("launch{n}.csv")),
            &[(64, [10.0 / 1.1; 3]), (4096, [10.0 / 1.3; 3])],
        );
    }
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("mpirun"), FAKE_LAUNCHER).unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(bin.join("mpirun"))
        .status()
        .unwrap();
    let run = |extra: &[(&str, &str)]| {
        let mut c = Command::new("bash");
        c.arg(format!("{ROOT}/jobs/stability.sh"))
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("FIX", &d)
            .env("COLLTUNE", colltune())
            .env("OUT", d.join("out"))
            .env("SIZES", "64,4K")
            .env("JUDGE", "0")
            .env_remove("LAUNCHES")
            .env_remove("EXTRA_LAUNCHES")
            .env_remove("TUNE_ARGS");
        for (k, v) in extra {
            c.env(k, v);
        }
        c.output().expect("bash runs")
    };
    // the old knob is refused, with what to set instead
    let o = run(&[("EXTRA_LAUNCHES", "2")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("LAUNCHES=18 for the same number"),
        "{}",
        text(&o)
    );
    let o = run(&[]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let args: Vec<String> = std::fs::read_to_string(d.join("args.log"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(args.len(), 4, "{out}\n{args:?}");
    // a later launch focuses on its own tune's earlier launch, not the other's
    assert!(
        args[2].contains("out/a.csv") && !args[2].contains("out/b.csv"),
        "{args:?}"
    );
    for (i, (csv, sizes)) in [
        ("out/a.csv ", "--sizes 64,4K "),
        ("out/b.csv ", "--sizes 64,4K "),
        ("out/a-l2.csv ", "--focus "),
        ("out/b-l2.csv ", "--focus "),
    ]
    .iter()
    .enumerate()
    {
        assert!(
            args[i].contains(csv)
                && args[i].contains(sizes)
                && args[i].ends_with(" --extra-rounds 0"),
            "launch {i}: {args:?}"
        );
    }
    assert!(
        out.contains("tune a, launch 3 of 16: no size unresolved after 2 launch(es)")
            && out.contains("tune b, launch 3 of 16: no size unresolved after 2 launch(es)")
            && out.contains("table a: 0 size(s) left unresolved"),
        "{out}"
    );
    let t = std::fs::read_to_string(d.join("out/a.yaml")).unwrap();
    assert!(
        t.contains("launches: 2") && !t.contains("unresolved:"),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Every library's forced configurations (`--mpi`: MPICH's `mpich_NAME`,
/// Intel MPI's `impiN_NAME`, Open MPI 5's `adaptN_NAME` beside
/// `tunedN_NAME`) are read as forced algorithms; the shim is not one.
#[test]
fn every_librarys_forced_algorithms_are_read_as_forced() {
    let d = scratch("imb-analyse-libraries");
    for (slow, fast) in [
        ("mpich_binomial", "mpich_scatter_ring_allgather"),
        ("impi1_binomial", "impi8_knomial"),
        ("tuned1_basic_linear", "adapt6_linear"),
    ] {
        let mut csv = String::new();
        for b in [4, 8] {
            lines(&mut csv, 4, "default", b, &[20.0, 20.0, 20.0]);
            lines(&mut csv, 4, "dropin", b, &[10.0, 10.0, 10.0]);
            // the shim is the fastest, but no forced algorithm
            lines(&mut csv, 4, "shim", b, &[1.0, 1.0, 1.0]);
            lines(&mut csv, 4, slow, b, &[8.0, 8.0, 8.0]);
            lines(&mut csv, 4, fast, b, &[5.0, 5.0, 5.0]);
        }
        let out = analyse(&d, &csv);
        // the table's rows: bytes, default, best forced's time and name
        // (12 characters), ...
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with("4 ") && !l.contains("ranks"))
            .unwrap_or_else(|| panic!("no 4 B row in:\n{out}"));
        let name = &fast[..fast.len().min(12)];
        assert!(row.contains(&format!("5.00 {name:>12}")), "{fast}: {out}");
        assert!(
            line_with(&out, "dropin / best forced: geomean").contains("geomean 2.000"),
            "{out}"
        );
        assert!(
            line_with(&out, "dropin / shim (paired)").contains("geomean 10.000"),
            "{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `--pair A/B@LO-HI`: A over B paired per run, in the size range only;
/// a deployed table's configuration is never read as a forced algorithm.
#[test]
fn pairs_are_paired_per_run_in_their_size_range() {
    let d = scratch("imb-analyse-pairs");
    let mut csv = String::new();
    for b in [1024, 65536, 131072] {
        lines(&mut csv, 4, "default", b, &[20.0, 20.0, 20.0]);
        lines(&mut csv, 4, "dropin", b, &[10.0, 10.0, 10.0]);
        lines(&mut csv, 4, "tuned1_basic_linear", b, &[10.0, 20.0, 40.0]);
        lines(&mut csv, 4, "tuned6_binomial", b, &[30.0, 30.0, 30.0]);
    }
    // dropin-lib names binomial: 1.1x its runs at 64 KiB, 1.0x above; at
    // 1 KiB (outside the range) 5x.
    lines(&mut csv, 4, "dropin-lib", 1024, &[150.0, 150.0, 150.0]);
    lines(&mut csv, 4, "dropin-lib", 65536, &[33.0, 33.0, 33.0]);
    lines(&mut csv, 4, "dropin-lib", 131072, &[30.0, 30.0, 30.0]);
    // The deployed configuration follows linear's runs at half its time;
    // faster than every forced algorithm, it must not be taken for one
    // (then the best forced would be it, and dropin / best 1.0).
    for b in [1024, 65536, 131072] {
        lines(&mut csv, 4, "deploy-lib", b, &[5.0, 10.0, 20.0]);
    }
    let f = d.join("compare.csv");
    std::fs::write(&f, format!("{HEADER}{csv}")).unwrap();
    let o = Command::new("bash")
        .arg(format!("{ROOT}/jobs/imb-compare.sh"))
        .args(["--analyse"])
        .arg(&f)
        .args([
            "--pair",
            "dropin-lib/tuned6_binomial@65536-",
            "--pair",
            "deploy-lib/tuned1_basic_linear",
            "--pair",
            "dropin/nosuch",
        ])
        .output()
        .expect("bash runs");
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let lib = line_with(
        &out,
        "dropin-lib / tuned6_binomial (paired, 65536-131072 B)",
    );
    assert!(
        lib.contains("geomean 1.049") && lib.contains("worst 1.10 at 65536 B"),
        "{out}"
    );
    assert!(lib.contains("above 1.05x: 1 of 2"), "{out}");
    let dep = line_with(&out, "deploy-lib / tuned1_basic_linear (paired)");
    assert!(
        dep.contains("geomean 0.500") && dep.contains("above 1.05x: 0 of 3"),
        "{out}"
    );
    assert!(
        out.contains("pair dropin/nosuch: no configuration nosuch"),
        "{out}"
    );
    // the best forced algorithm is linear's median (20), not the deployed
    // configuration's: dropin / best forced 10/10, 10/20, 10/40 -> 0.5
    assert!(
        line_with(&out, "dropin / best forced: geomean").contains("geomean 0.500"),
        "{out}"
    );
    // a malformed pair is refused before anything runs
    let o = Command::new("bash")
        .arg(format!("{ROOT}/jobs/imb-compare.sh"))
        .args(["--pair", "dropin"])
        .output()
        .expect("bash runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--pair dropin: give A/B"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// `jobs/imb-compare.sh`'s arguments are checked before anything is built
/// or run: an option without its value, an unknown library, an algorithm
/// the library does not have.
#[test]
fn bad_arguments_are_refused_before_any_run() {
    let run = |args: &[&str]| {
        Command::new("bash")
            .arg(format!("{ROOT}/jobs/imb-compare.sh"))
            .args(args)
            .output()
            .expect("bash runs")
    };
    let o = run(&["--ranks"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--ranks needs a value"), "{}", text(&o));
    let o = run(&["--mpi", "nosuch", "--imb", "/nonexistent"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("unknown MPI `nosuch`"), "{}", text(&o));
    // coll/adapt's algorithms are forced by the environment on Open MPI 5
    // only (4.1 has no MPICH names either); refused before IMB is looked at
    if Path::new("/usr/bin/mpicc.openmpi").exists() {
        for bad in ["adapt:1", "binomial", "10"] {
            let o = run(&[
                "--mpi",
                "openmpi4",
                "--forced",
                bad,
                "--imb",
                "/nonexistent",
            ]);
            assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
            assert!(
                text(&o).contains(&format!("--forced {bad}: not an algorithm of openmpi4")),
                "{}",
                text(&o)
            );
        }
    }
}
