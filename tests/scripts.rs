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
    let f = dir.join("compare.csv");
    std::fs::write(&f, format!("{HEADER}{csv}")).unwrap();
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
