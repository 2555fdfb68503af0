//! `colltune tune` end to end under mpirun: the table and CSV it writes,
//! resuming after a SIGKILL without re-measuring, refusing to overwrite or
//! to resume from another configuration, and rebuilding the table from the
//! CSV alone.

mod common;
use common::*;
use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// (The library's own algorithms as candidates are covered by
/// tests/mpi_library.rs; here they would triple the time.)
/// One screening run and two full runs: what these tests check (keys,
/// resume, refusals, the table the CSV rebuilds) needs no more, and the
/// default runs over every candidate took minutes on 2 cores.
const SMALL: &[&str] = &[
    "--budget-ms",
    "2",
    "--min-reps",
    "3",
    "--max-reps",
    "20",
    "--no-library-candidates",
    "--screen-runs",
    "1",
    "--full-runs",
    "2",
];

/// A small tune; `extra` may replace the default sizes.
fn tune(ranks: usize, dir: &std::path::Path, extra: &[&str]) -> Command {
    let mut c = mpirun(ranks);
    c.arg(colltune()).arg("tune").args(SMALL);
    if !extra.contains(&"--sizes") {
        c.args(["--sizes", "1,64,4K,64K,256K"]);
    }
    c.arg("--csv")
        .arg(dir.join("raw.csv"))
        .arg("--table")
        .arg(dir.join("table.yaml"))
        .args(extra);
    c
}

fn rules_only(path: &std::path::Path) -> (String, String) {
    let t = colltune_core::tables::table::load(path).unwrap();
    (
        serde_yaml::to_string(&t.bcast).unwrap(),
        serde_yaml::to_string(&t.swap).unwrap(),
    )
}

#[test]
fn tune_writes_a_valid_table_that_the_csv_rebuilds() {
    let dir = scratch("tune");
    let o = run(tune(3, &dir, &[]));
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("bcast on 3 ranks") && out.contains("swap on 3 ranks"),
        "{out}"
    );
    let t = colltune_core::tables::table::load(&dir.join("table.yaml")).unwrap();
    assert_eq!(t.bcast[0].ranks, 3);
    assert_eq!(t.provenance.sweep.mode, "adaptive");
    assert!(t.provenance.mpi.contains("Open MPI"));
    let rebuilt = dir.join("rebuilt.yaml");
    let o = run({
        let mut c = Command::new(colltune());
        c.args(["table", "build"])
            .arg(dir.join("raw.csv"))
            .arg("-o")
            .arg(&rebuilt);
        c
    });
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(rules_only(&rebuilt), rules_only(&dir.join("table.yaml")));
}

/// Sample groups of a raw CSV: (spec, execution, bytes, run) -> rep numbers.
fn groups(csv: &std::path::Path) -> HashMap<(String, String, u64, u32), Vec<u32>> {
    let mut g: HashMap<_, Vec<u32>> = HashMap::new();
    for s in colltune_core::measure::record::read(csv).unwrap() {
        g.entry((s.spec, s.execution, s.bytes, s.run))
            .or_default()
            .push(s.rep);
    }
    g
}

#[test]
fn a_killed_tune_resumes_without_remeasuring() {
    let dir = scratch("resume");
    let csv = dir.join("raw.csv");
    // long enough to be cut in the middle
    let args = ["--collective", "bcast", "--sizes", "1..1M"];
    let mut c = mpirun(2);
    c.arg(colltune())
        .args(RESUMED)
        .args(ONE_RUN_EACH)
        .args(args)
        .arg("--csv")
        .arg(&csv)
        .arg("--table")
        .arg(dir.join("table.yaml"));
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let t0 = Instant::now();
    let before = loop {
        std::thread::sleep(Duration::from_millis(100));
        let n = std::fs::read_to_string(&csv)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if n > 200 || t0.elapsed() > Duration::from_secs(60) {
            break n;
        }
    };
    assert!(
        child.try_wait().unwrap().is_none(),
        "the tune finished before it could be killed"
    );
    // SIGKILL the whole job mid-sweep: mpirun and every rank (ranks are
    // not in mpirun's process group; their command lines name the CSV).
    kill_all(&csv.display().to_string());
    let _ = child.wait();
    assert!(before > 50, "the tune never got going");
    let measured_before = groups(&csv);

    let mut c = mpirun(2);
    c.arg(colltune())
        .args(RESUMED)
        .args(ONE_RUN_EACH)
        .args(args)
        .arg("--csv")
        .arg(&csv)
        .arg("--table")
        .arg(dir.join("table.yaml"))
        .arg("--resume");
    let o = run(c);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let reused: u64 = out
        .split(" reused from the CSV")
        .next()
        .and_then(|s| s.rsplit(", ").next())
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no reuse count in {out}"));
    assert!(reused > 0, "{out}");
    // every point-run was measured exactly once: no repetition number twice
    let after = groups(&csv);
    for (k, reps) in &after {
        let mut r = reps.clone();
        r.sort_unstable();
        r.dedup();
        assert_eq!(r.len(), reps.len(), "{k:?} measured twice");
    }
    // nothing measured before the kill was lost or re-measured
    for (k, reps) in &measured_before {
        assert_eq!(after.get(k), Some(reps), "{k:?} changed");
    }
    assert!(
        after.len() > measured_before.len(),
        "resume measured nothing new: {} point-runs before, {} after (kill at {before} lines)\n{out}",
        measured_before.len(),
        after.len()
    );
    assert!(colltune_core::tables::table::load(&dir.join("table.yaml")).is_ok());
}

/// The tune the resume test kills and resumes (the same both times).
const RESUMED: &[&str] = &[
    "tune",
    "--budget-ms",
    "20",
    "--min-reps",
    "10",
    "--max-reps",
    "100",
];

fn kill_all(pattern: &str) {
    let _ = Command::new("pkill").args(["-9", "-f", pattern]).status();
}

#[test]
fn never_overwrites_and_refuses_foreign_resumes() {
    let dir = scratch("refuse");
    let o = run(tune(2, &dir, &["--collective", "swap", "--sizes", "1,4K"]));
    assert!(o.status.success(), "{}", text(&o));
    let csv = dir.join("raw.csv");
    let before = std::fs::read(&csv).unwrap();

    let o = run(tune(2, &dir, &["--collective", "swap", "--sizes", "1,4K"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("already holds samples"), "{}", text(&o));

    let o = run(tune(
        2,
        &dir,
        &["--collective", "swap", "--sizes", "1,8K", "--resume"],
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("different configuration") && text(&o).contains("sizes"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read(&csv).unwrap(), before, "the CSV was changed");
}

/// `tune --pattern back-to-back`: the samples, the sidecar and the table's
/// provenance record it; `table build` keeps it and refuses to mix patterns.
#[test]
fn a_back_to_back_tune_records_its_pattern() {
    let dir = scratch("tune-b2b");
    let o = run(tune(
        2,
        &dir,
        &[
            "--collective",
            "bcast",
            "--sizes",
            "1,4K",
            "--pattern",
            "back-to-back",
        ],
    ));
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("pattern: back-to-back"), "{out}");
    assert!(out.contains("evidence: "), "{out}");
    let t = colltune_core::tables::table::load(&dir.join("table.yaml")).unwrap();
    assert_eq!(t.provenance.pattern, "back-to-back");
    let e = t
        .provenance
        .evidence
        .clone()
        .expect("decided on the evidence by default");
    assert_eq!((e.launches, e.min_gain), (1, 0.03), "{e:?}");
    let csv = dir.join("raw.csv");
    let s = colltune_core::measure::record::read(&csv).unwrap();
    assert!(s.iter().all(|x| x.pattern == "back-to-back"));
    let side = std::fs::read_to_string(dir.join("raw.csv.tune.yaml")).unwrap();
    assert!(side.contains("pattern: back-to-back"), "{side}");

    // table build keeps the recorded pattern
    let o = run({
        let mut c = Command::new(colltune());
        c.args(["table", "build"]).arg(&csv);
        c
    });
    assert!(o.status.success(), "{}", text(&o));
    let built = String::from_utf8_lossy(&o.stdout);
    assert!(built.contains("pattern: back-to-back"), "{built}");

    // ... and refuses a mixture, naming the files
    let old = dir.join("synchronized.csv");
    let mut w = colltune_core::measure::record::Writer::open(&old, false).unwrap();
    w.write(&[colltune_core::measure::record::sample(
        "linear", "blocking", 1, 1, 1.0,
    )])
    .unwrap();
    drop(w);
    let o = run({
        let mut c = Command::new(colltune());
        c.args(["table", "build"]).arg(&csv).arg(&old);
        c
    });
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = text(&o);
    assert!(
        e.contains("mix call patterns") && e.contains("synchronized.csv: synchronized"),
        "{e}"
    );
}

/// `tune --focus`: a further launch measures only the sizes the earlier
/// launch left open (those `table unresolved` lists, and choices waiting
/// for a second launch), at each only subjects the earlier launch measured
/// there, the library's decision among them, and crossovers between
/// swept sizes with at most three subjects; its sidecar says `further`.
/// A CSV of another library is refused, naming it; --focus with --sizes
/// is a usage error.
#[test]
fn a_further_launch_measures_only_what_is_open() {
    let dir = scratch("tune-focus");
    let first = [
        "--collective",
        "bcast",
        "--sizes",
        "1,4K,64K",
        "--budget-ms",
        "2",
        "--max-reps",
        "20",
        "--extra-rounds",
        "0",
    ];
    let mut c = mpirun(3);
    c.arg(colltune()).arg("tune").args(first);
    c.arg("--csv").arg(dir.join("l1.csv"));
    c.arg("--table").arg(dir.join("l1.yaml"));
    let o = run(c);
    assert!(o.status.success(), "{}", text(&o));
    let o = run({
        let mut c = Command::new(colltune());
        c.args(["table", "unresolved", "--sizes"])
            .arg(dir.join("l1.yaml"));
        c
    });
    assert!(o.status.success(), "{}", text(&o));
    let unresolved: Vec<u64> = String::from_utf8_lossy(&o.stdout)
        .trim()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();

    let further = |csv: &str, extra: &[&str]| {
        let mut c = mpirun(3);
        c.arg(colltune())
            .args(["tune", "--collective", "bcast", "--budget-ms", "2"])
            .args(["--max-reps", "20", "--extra-rounds", "0", "--focus"])
            .arg(dir.join(csv))
            .arg("--csv")
            .arg(dir.join(format!("from-{csv}")))
            .arg("--table")
            .arg(dir.join(format!("from-{csv}.yaml")))
            .args(extra);
        run(c)
    };
    let o = further("l1.csv", &[]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("a further launch at"), "{out}");
    let one = colltune_core::measure::record::read(&dir.join("l1.csv")).unwrap();
    let two = colltune_core::measure::record::read(&dir.join("from-l1.csv")).unwrap();
    let sizes: std::collections::BTreeSet<u64> = two.iter().map(|s| s.bytes).collect();
    for b in &unresolved {
        assert!(
            sizes.contains(b),
            "unresolved {b} B not measured: {sizes:?}"
        );
    }
    let swept: std::collections::BTreeSet<u64> = one.iter().map(|s| s.bytes).collect();
    // A size beyond the sweep is a crossover (`tune::focus::crossover`):
    // between two swept sizes, with the library's decision and at most
    // the two choices.
    for &b in sizes.difference(&swept) {
        assert!(
            swept.iter().any(|&x| x < b) && swept.iter().any(|&x| x > b),
            "{b} B: not between swept sizes {swept:?}"
        );
        let who: std::collections::BTreeSet<_> = two
            .iter()
            .filter(|s| s.bytes == b)
            .map(|s| (s.spec.clone(), s.execution.clone()))
            .collect();
        assert!(
            who.len() <= 3 && who.iter().any(|(s, _)| s.contains("name=default")),
            "{b} B: {who:?}"
        );
    }
    // (At a size where every subject's interval straddles, all of them
    // are measured again; not at every size.)
    let anywhere: std::collections::BTreeSet<_> = one
        .iter()
        .map(|s| (s.spec.clone(), s.execution.clone()))
        .collect();
    let (mut measured_now, mut measured_before) = (0, 0);
    for &b in sizes.intersection(&swept) {
        let subjects = |v: &[colltune_core::measure::record::Sample]| {
            v.iter()
                .filter(|s| s.bytes == b)
                .map(|s| (s.spec.clone(), s.execution.clone()))
                .collect::<std::collections::BTreeSet<_>>()
        };
        let (before, now) = (subjects(&one), subjects(&two));
        // What was measured there, or a subject the first launch measured
        // at another size: a neighbour's choice never measured here
        // (`tune::focus::crossover`).
        let new: Vec<_> = now.difference(&before).collect();
        assert!(
            new.iter().all(|x| anywhere.contains(*x)),
            "{b} B: {new:?} measured nowhere before"
        );
        (measured_now, measured_before) =
            (measured_now + now.len(), measured_before + before.len());
        assert!(
            now.iter().any(|(s, _)| s.contains("name=default")),
            "{b} B: the library's decision not measured: {now:?}"
        );
    }
    assert!(
        measured_now < measured_before,
        "{measured_now} of {measured_before}"
    );
    let side = std::fs::read_to_string(dir.join("from-l1.csv.tune.yaml")).unwrap();
    assert!(side.contains("mode: further"), "{side}");

    // Another library's CSV.
    let text1 = std::fs::read_to_string(dir.join("l1.csv")).unwrap();
    std::fs::write(
        dir.join("foreign.csv"),
        text1.replace("Open MPI v4.1.4", "MPICH 4.0.2"),
    )
    .unwrap();
    if text1.contains("Open MPI v4.1.4") {
        let o = further("foreign.csv", &[]);
        assert!(!o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("--focus") && text(&o).contains("foreign.csv"),
            "{}",
            text(&o)
        );
    }
    let o = further("l1.csv", &["--sizes", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    // Nothing open: a launch with nothing to measure writes nothing.
    let mut quiet = one.clone();
    for s in &mut quiet {
        s.ranks = 5;
    }
    let f = std::fs::File::create(dir.join("other-ranks.csv")).unwrap();
    colltune_core::measure::record::write_to(f, &quiet).unwrap();
    let o = further("other-ranks.csv", &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("nothing is open"), "{}", text(&o));
    assert!(!dir.join("from-other-ranks.csv").exists());
}
