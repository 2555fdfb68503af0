//! Inspecting tables and samples (show, validate, diff, explain, report,
//! plot, export), bad input for each, and the exported rules in the real
//! libraries: Open MPI runs the algorithm the exported file names (shown by
//! timing), MPICH loads the exported JSON and broadcasts correctly.

mod common;
use colltune_core::tables::table::diff::{diff, Difference, Kind};
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ct(args: &[&str]) -> Output {
    run({
        let mut c = Command::new(colltune());
        c.args(args);
        c
    })
}

const HEAD: &str = "schema: 1\nprovenance:\n  host: test\n  mpi: Open MPI v4.1.4\n  date: 2026-11-30T00:00:00Z\n  command: test\n  colltune: test\n  source: measured\n  sweep:\n    mode: built\n";

fn table(dir: &Path, name: &str, ranks: u32, rules: &[(u64, &str, &str, f64)]) -> PathBuf {
    let with_at: Vec<(u64, &str, &str, f64, u64)> =
        rules.iter().map(|r| (r.0, r.1, r.2, r.3, r.0)).collect();
    table_at(dir, name, ranks, &with_at)
}

/// As `table`, with the size each rule's figures were measured at.
fn table_at(dir: &Path, name: &str, ranks: u32, rules: &[(u64, &str, &str, f64, u64)]) -> PathBuf {
    let mut y = format!("{HEAD}bcast:\n- ranks: {ranks}\n  ppn: {ranks}\n  nodes: 1\n  rules:\n");
    for (i, (min, algo, exec, t, at)) in rules.iter().enumerate() {
        let spec = colltune_algorithms::AlgoSpec::parse(algo).unwrap();
        y += &format!("  - min_bytes: {min}\n");
        if let Some(next) = rules.get(i + 1) {
            y += &format!("    max_bytes: {}\n", next.0 - 1);
        }
        y += &format!("    algorithm: {}\n", spec.name);
        if !spec.params.is_empty() {
            y += "    params:\n";
            for (k, v) in &spec.params {
                y += &format!("      {k}: \"{v}\"\n");
            }
        }
        y += &format!("    execution: {exec}\n    time_us: {t}\n    at_bytes: {at}\n    runner_up: binomial:segment=0 [blocking]\n    margin: 0.1\n");
    }
    let p = dir.join(name);
    std::fs::write(&p, y).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn show_validate_diff_explain() {
    let d = scratch("inspect");
    let a = table(
        &d,
        "a.yaml",
        4,
        &[
            (0, "linear", "blocking", 3.0),
            (4096, "pipeline:segment=65536", "nonblocking", 100.0),
        ],
    );
    let b = table_at(
        &d,
        "b.yaml",
        4,
        &[
            (0, "linear", "blocking", 3.0, 0),
            (1024, "binomial", "blocking", 8.0, 5000),
        ],
    );

    let o = ct(&["show", s(&a)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("4096..") && text(&o).contains("pipeline:segment=65536 [nonblocking]"),
        "{}",
        text(&o)
    );

    let o = ct(&["validate", s(&a), s(&b)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // The ranges found, their choices and ratios are checked on these
    // tables in colltune_core::tables::table::diff's tests; here `diff` prints
    // each difference the library finds.
    let o = ct(&["diff", s(&a), s(&b)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let load = |p: &Path| colltune_core::tables::table::load(p).unwrap();
    let found = diff(&load(&a), &load(&b));
    let [Difference {
        kind: Kind::Ranges(ranges),
        key,
        ..
    }] = found.as_slice()
    else {
        panic!("{found:?}")
    };
    assert!(
        ranges.len() == 2 && ranges[1].expected.is_some(),
        "{ranges:?}"
    );
    assert!(
        t.contains(&format!(
            "bcast on {key}: {} range(s) decided differently",
            ranges.len()
        )),
        "{t}"
    );
    for r in ranges {
        let from = match r.max_bytes {
            Some(h) => format!("{}..={h} ", r.min_bytes),
            None => format!("{}.. ", r.min_bytes),
        };
        let line = t
            .lines()
            .find(|l| l.trim_start().starts_with(&from))
            .unwrap_or_else(|| panic!("no line for {from}: {t}"));
        assert!(
            line.contains(&format!("A: {}", r.a)) && line.contains(&format!("B: {}", r.b)),
            "{line}"
        );
        match r.expected {
            Some(e) => assert!(
                line.contains(&format!("B/A expected time {:.2}x", e.ratio())),
                "{line}"
            ),
            None => assert!(!line.contains("expected time"), "{line}"),
        }
    }
    // A shape in one table only, and tables that decide alike.
    let other = table(&d, "other.yaml", 8, &[(0, "linear", "blocking", 1.0)]);
    let o = ct(&["diff", s(&a), s(&other)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(&format!(
            "bcast on 4 ranks (1 node(s) x 4 per node): only in {}",
            a.display()
        )) && t.contains(&format!(
            "bcast on 8 ranks (1 node(s) x 8 per node): only in {}",
            other.display()
        )),
        "{t}"
    );
    let o = ct(&["diff", s(&a), s(&a)]);
    assert!(
        o.status.success() && text(&o).contains("decide alike everywhere"),
        "{}",
        text(&o)
    );

    let o = ct(&["explain", s(&a), "--ranks", "4", "--bytes", "64K"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("table rule 2 covers 4096.. bytes")
            && t.contains("runner-up there: binomial:segment=0 [blocking], 10.0% slower"),
        "{t}"
    );
    assert!(t.contains("forcing it, e.g. COLLTUNE_BCAST="), "{t}");
    let o = ct(&["explain", s(&a), "--ranks", "6", "--bytes", "1"]);
    assert!(
        text(&o).contains("no bcast rules for this shape")
            && text(&o).contains("the MPI library's own collective"),
        "{}",
        text(&o)
    );
    let o = run({
        let mut c = Command::new(colltune());
        c.args(["explain", s(&a), "--ranks", "4", "--bytes", "1"])
            .env("COLLTUNE_BCAST", "binary");
        c
    });
    assert!(
        text(&o).contains("binary:segment=0 [blocking] (forced by the environment)"),
        "{}",
        text(&o)
    );
}

#[test]
fn validate_reports_every_problem_and_fails() {
    let d = scratch("validate");
    let p = d.join("bad.yaml");
    std::fs::write(
        &p,
        format!("{HEAD}bcast:\n- ranks: 4\n  ppn: 4\n  nodes: 1\n  rules:\n  - min_bytes: 0\n    max_bytes: 10\n    algorithm: linaer\n    execution: blocking\n  - min_bytes: 20\n    algorithm: binomial\n    execution: soon\n"),
    )
    .unwrap();
    let o = ct(&["validate", s(&p)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(&format!("{}:16", p.display()))
            && t.contains("unknown bcast algorithm `linaer`"),
        "{t}"
    );
    assert!(
        t.contains(&format!("{}:20", p.display())) && t.contains("11..=19 are covered by no rule"),
        "{t}"
    );
    assert!(t.contains("unknown execution `soon`"), "{t}");
    assert!(t.contains("3 problem(s)"), "{t}");
}

#[test]
fn bad_input_names_file_and_place() {
    let d = scratch("badinput");
    let garbled = d.join("garbled.yaml");
    std::fs::write(&garbled, "schema: 1\nprovenance: [\n").unwrap();
    let csv = d.join("bad.csv");
    std::fs::write(&csv, "collective,bytes\nbcast,1\n").unwrap();
    for args in [
        vec!["show", s(&garbled)],
        vec!["diff", s(&garbled), s(&garbled)],
        vec!["explain", s(&garbled), "--ranks", "4", "--bytes", "1"],
        vec!["export", s(&garbled), "--format", "openmpi"],
        vec!["show", "/nonexistent/t.yaml"],
    ] {
        let o = ct(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains(if args[1].starts_with("/nonexistent") {
                "cannot read"
            } else {
                "garbled.yaml:"
            }),
            "{args:?}: {}",
            text(&o)
        );
        assert!(!text(&o).contains("panicked"));
    }
    for args in [
        vec!["report", s(&csv)],
        vec!["plot", s(&csv), "-o", "/tmp/x.svg"],
    ] {
        let o = ct(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains("bad.csv: missing column(s)"),
            "{args:?}: {}",
            text(&o)
        );
    }
    let o = ct(&["plot", s(&csv), "-o", "/tmp/x.gif"]);
    assert!(
        text(&o).contains("name the image .svg or .png"),
        "{}",
        text(&o)
    );
    let good = table(&d, "g.yaml", 4, &[(0, "linear", "blocking", 1.0)]);
    let o = ct(&["export", s(&good), "--format", "lam-mpi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("[possible values: openmpi, openmpi-json, mpich]"),
        "{}",
        text(&o)
    );
}

/// A small measured CSV for report and plot.
fn measured(d: &Path) -> PathBuf {
    let csv = d.join("raw.csv");
    let mut c = mpirun(3);
    c.arg(colltune()).args([
        "bench",
        "--collective",
        "bcast",
        "-a",
        "linear",
        "-a",
        "binomial",
        "-a",
        "pipeline",
        "--sizes",
        "1,1K,64K,1M",
        "--runs",
        "2",
        "--budget-ms",
        "2",
        "--baseline",
        "mpi",
        "--csv",
    ]);
    c.arg(&csv);
    let o = run(c);
    assert!(o.status.success(), "{}", text(&o));
    csv
}

#[test]
fn report_and_plot_from_measurements() {
    let d = scratch("report");
    let csv = measured(&d);
    let o = ct(&["report", s(&csv)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("fastest at 4 measured sizes") && t.contains("% )") || t.contains("%)"),
        "{t}"
    );
    assert!(t.contains("peak MB/s"), "{t}");
    // `colltune report raw.csv | head`: the reader gone, no panic.
    reader_gone(&["report", s(&csv)]);
    let tbl = table(
        &d,
        "t.yaml",
        3,
        &[
            (0, "linear", "blocking", 1.0),
            (32768, "binomial", "nonblocking", 50.0),
        ],
    );
    for ext in ["svg", "png"] {
        let out = d.join(format!("plot.{ext}"));
        let o = ct(&["plot", s(&csv), s(&tbl), "-o", s(&out)]);
        assert!(o.status.success(), "{}", text(&o));
        let bytes = std::fs::read(&out).unwrap();
        assert!(bytes.len() > 5000, "{ext}: {} bytes", bytes.len());
        if ext == "svg" {
            let svg = String::from_utf8(bytes).unwrap();
            for needle in [
                "linear",
                "binomial",
                "MPI library",
                "message size",
                "time / best at size",
                "table",
            ] {
                assert!(svg.contains(needle), "svg lacks {needle}");
            }
        }
    }
}

/// Runs `colltune args` with a standard output whose reader has already
/// gone (`| head` once head has quit): every write fails with EPIPE (Rust
/// ignores SIGPIPE). The command must end quietly with success, not panic.
fn reader_gone(args: &[&str]) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills both descriptors, each owned once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(r);
    let o = Command::new(colltune())
        .args(args)
        .stdout(w)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        // What the command says on standard error (export's notes) stays.
        o.status.success() && !err.contains("panicked") && !err.contains("error"),
        "colltune {args:?} with its reader gone: {:?}\n{err}",
        o.status
    );
}

/// Output to a closed pipe ends quietly (exit 0); to a full device with a
/// clear error (exit 3); never a panic.
#[test]
fn output_to_a_closed_pipe_or_a_full_disk() {
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/tuning-tables/vm-2core.yaml");
    for args in [&["list"][..], &["show", shipped], &["validate", shipped]] {
        reader_gone(args);
    }
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let o = Command::new(colltune())
            .args(["show", shipped])
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{err}");
        assert!(
            err.contains("writing to standard output") && !err.contains("panicked"),
            "{err}"
        );
    }
}

/// Every command that prints ends quietly when its reader goes away
/// (`colltune X | head -1`), MPI-free: on a simulated measurement, the
/// shipped table and a network model.
#[test]
fn every_printing_command_ends_quietly_when_its_reader_goes() {
    let root = env!("CARGO_MANIFEST_DIR");
    let shipped = format!("{root}/tuning-tables/vm-2core.yaml");
    let model = format!("{root}/tuning-tables/models/test-ib.yaml");
    let d = scratch("reader-gone");
    let csv = d.join("sim.csv");
    let cluster = [
        "--model", &model, "--ranks", "8", "--ppn", "4", "--sizes", "1,64K",
    ];
    let sim = [&["simulate"][..], &cluster].concat();
    let o = ct(&[&sim[..], &["--csv", s(&csv), "--summary-only"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let (svg, tuned, tuned_csv) = (d.join("p.svg"), d.join("t.yaml"), d.join("t.csv"));
    let tune = [
        &["tune", "--collective", "bcast"][..],
        &cluster,
        &["--csv", s(&tuned_csv), "--table", s(&tuned)],
    ]
    .concat();
    let commands: [&[&str]; 13] = [
        &["list"],
        &["show", &shipped],
        &["validate", &shipped],
        &["diff", &shipped, &shipped],
        &["explain", &shipped, "--ranks", "2", "--bytes", "1K"],
        &["export", &shipped, "--format", "openmpi"],
        &["report", s(&csv)],
        &["report", s(&csv), "--comparison"],
        &["fit", s(&csv)],
        &["table", "build", s(&csv)],
        &["plot", s(&csv), "-o", s(&svg)],
        &sim,
        &tune,
    ];
    for args in commands {
        reader_gone(args);
    }
}

fn bench_library_median(rules: &Path) -> f64 {
    let mut c = mpirun(4);
    c.args(["-x", "OMPI_MCA_coll_tuned_use_dynamic_rules=1"])
        .args([
            "-x",
            &format!(
                "OMPI_MCA_coll_tuned_dynamic_rules_filename={}",
                rules.display()
            ),
        ])
        .arg(colltune())
        .args([
            "bench",
            "--collective",
            "bcast",
            "-a",
            "linear",
            "--executions",
            "blocking",
            "--baseline",
            "mpi",
            "--sizes",
            "1M",
            "--runs",
            "2",
            "--summary-only",
        ]);
    let o = run(c);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let line = t
        .lines()
        .find(|l| l.trim_start().starts_with("1048576 "))
        .unwrap_or_else(|| panic!("{t}"));
    line.split_whitespace().nth(4).unwrap().parse().unwrap()
}

/// The classic rules file is read by Open MPI and changes its algorithm:
/// a pipeline with 1 KiB segments is far slower at 1 MiB than a binomial tree.
#[test]
fn open_mpi_runs_what_the_exported_rules_say() {
    let d = scratch("ompi-export");
    let mut med = Vec::new();
    for (name, algo) in [("slow", "pipeline:segment=1024"), ("fast", "binomial")] {
        let t = table(
            &d,
            &format!("{name}.yaml"),
            4,
            &[(0, algo, "blocking", 1.0)],
        );
        let rules = d.join(format!("{name}.conf"));
        let o = ct(&["export", s(&t), "--format", "openmpi", "-o", s(&rules)]);
        assert!(o.status.success(), "{}", text(&o));
        med.push(bench_library_median(&rules));
    }
    assert!(
        med[0] > 3.0 * med[1],
        "Open MPI with the pipeline rules took {} us, with binomial {} us",
        med[0],
        med[1]
    );
    let j = d.join("rules.json");
    let t = table(
        &d,
        "j.yaml",
        4,
        &[
            (0, "knomial", "blocking", 1.0),
            (8192, "pipeline", "blocking", 1.0),
        ],
    );
    let o = ct(&["export", s(&t), "--format", "openmpi-json", "-o", s(&j)]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["collectives"]["bcast"][0]["rules"][1]["seg_size"], 65536);
}

/// MPICH (Debian's mpich) loads the exported selection JSON and broadcasts.
#[test]
fn mpich_loads_the_exported_json() {
    if Command::new("mpiexec.mpich")
        .arg("--version")
        .output()
        .is_err()
        || !Path::new("/usr/bin/mpicc.mpich").exists()
    {
        skip(
            "mpich",
            "MPICH is not installed (apt-get install mpich libmpich-dev; jobs/install-deps.sh does)",
        );
        return;
    }
    let d = scratch("mpich-export");
    let t = table(
        &d,
        "t.yaml",
        4,
        &[
            (0, "binomial", "blocking", 1.0),
            (4096, "scatter_allgather_ring", "blocking", 1.0),
            (1 << 20, "knomial", "nonblocking", 1.0),
        ],
    );
    let json = d.join("mpich.json");
    let o = ct(&["export", s(&t), "--format", "mpich", "-o", s(&json)]);
    assert!(o.status.success(), "{}", text(&o));
    let exe = d.join("plain");
    let st = Command::new("mpicc.mpich")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/c/plain_bcast.c"
        ))
        .status()
        .unwrap();
    assert!(st.success());
    for ranks in ["4", "5"] {
        let o = run({
            let mut c = Command::new("timeout");
            c.args(["120", "mpiexec.mpich", "-n", ranks])
                .env("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", &json)
                .arg(&exe)
                .args(["1", "100", "5000", "70000", "1048579"]);
            c
        });
        let t = text(&o);
        assert!(
            o.status.success() && t.contains("plain_bcast: all bytes correct"),
            "{ranks} ranks: {t}"
        );
    }
}

/// Raw samples of one size (1 KiB, 4 ranks): (spec, run, time) rows, five
/// repetitions each.
fn raw_csv(path: &Path, rows: &[(&str, u32, f64)]) {
    let mut t = String::from(
        "collective,algorithm,spec,execution,ranks,ppn,nodes,layout,bytes,root,cache,iterations,overlap_us,pattern,run,rep,time_us,outlier,mpi,host,source,colltune\n",
    );
    for (spec, run, us) in rows {
        let name = spec.split(':').next().unwrap();
        for rep in 1..=5 {
            t += &format!("bcast,{name},{spec},blocking,4,4,1,4,1024,0,warm,1,0.0,synchronized,{run},{rep},{us},0,Open MPI v4.1.4,test,measured,0.1.0\n");
        }
    }
    std::fs::write(path, t).unwrap();
}

/// Two tunes of one communicator (two launches, one CSV each) keep their
/// runs apart, four runs and not two pooled: binomial's runs disagree by
/// 8%, so linear, 1% slower than binomial's median and simpler, is within
/// that noise and chosen. Pooled run by run number, both "runs" would hold
/// 100 and 108 alike, no spread would show, and binomial would win at a
/// 0.1% tolerance.
#[test]
fn table_build_keeps_each_files_runs_apart() {
    let d = scratch("build-runs");
    let (a, b) = (d.join("a.csv"), d.join("b.csv"));
    let bin = "binomial:segment=0";
    // Binomial's runs 100 and 108 us, in either order; linear 105 in both.
    for (f, first, second) in [(&a, 100.0, 108.0), (&b, 108.0, 100.0)] {
        let lin = "linear";
        raw_csv(
            f,
            &[
                (bin, 1, first),
                (bin, 2, second),
                (lin, 1, 105.0),
                (lin, 2, 105.0),
            ],
        );
    }
    // The chosen algorithm of `table build FILES --no-evidence
    // --compact-tolerance 0.001` (the builder before schema 2).
    let chosen = |files: &[&Path]| {
        let out = d.join("t.yaml");
        let mut args = vec!["table", "build"];
        args.extend(files.iter().map(|p| s(p)));
        args.extend([
            "--no-evidence",
            "--compact-tolerance",
            "0.001",
            "-o",
            s(&out),
        ]);
        let o = ct(&args);
        assert!(o.status.success(), "{}", text(&o));
        let t = std::fs::read_to_string(&out).unwrap();
        t.lines()
            .find_map(|l| l.trim().strip_prefix("algorithm: "))
            .unwrap_or_else(|| panic!("no rule in {t}"))
            .to_string()
    };
    assert_eq!(chosen(&[&a, &b]), "linear");
    // One launch alone shows the same spread within itself and agrees.
    assert_eq!(chosen(&[&a]), "linear");
}

#[test]
fn explain_says_what_a_nonblocking_or_persistent_broadcast_runs() {
    let t = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/dropin/shm.yaml");
    let o = ct(&[
        "explain", t, "--ranks", "4", "--bytes", "100", "--call", "ibcast",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        out.contains("ibcast (MPI_Ibcast) of 100 bytes on 4 ranks"),
        "{out}"
    );
    assert!(
        out.contains("runs: ompi_libnbc:algorithm=3,name=chain [library]"),
        "{out}"
    );
    assert!(
        out.contains("colltune's own schedules are not offered for MPI_Ibcast"),
        "{out}"
    );
    // A shape without bcast_init rules: the library's own decision.
    let o = ct(&[
        "explain",
        t,
        "--ranks",
        "8",
        "--bytes",
        "100",
        "--call",
        "bcast_init",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("no bcast_init rule for this shape and size"),
        "{out}"
    );
    assert!(
        out.contains("MPI_Start and MPI_Wait are the library's"),
        "{out}"
    );
    // The blocking call is not a --call.
    let o = ct(&[
        "explain", t, "--ranks", "4", "--bytes", "1", "--call", "bcast",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--call takes ibcast or bcast_init"));
}
