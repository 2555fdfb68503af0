//! Drop-in conformance: under `LD_PRELOAD=libcolltune_preload.so` every
//! valid MPI program must behave exactly as without it (same data, same
//! error classes, same completion as the MPI library's own `MPI_Bcast`).
//!
//! `tests/c/dropin/dropin.c` holds the cases (datatype matrix, mixed
//! datatypes with one signature, counts 0 / 1 / odd / >= 2 GiB,
//! communicators of every kind, threads, erroneous arguments under
//! `MPI_ERRORS_RETURN`, fatal error handlers, `MPI_Bcast` after
//! `MPI_Finalize`); each prints one deterministic line per case. This file
//! runs them under mpirun with 2, 3 and 4 ranks, plain and preloaded (no
//! table; the shipped table; each algorithm family forced; a node layout
//! that fails the setup of every sub-communicator), every job under a hard
//! timeout, and asserts that every preloaded outcome equals the plain one,
//! listing all the differences at once. One exception, for erroneous
//! programs only: where the ranks pass different byte counts (`err_count_*`,
//! undefined in MPI) under a forced segmented family, the reference is the
//! library's own algorithm of that family, run plain with it forced (see
//! `as_the_library_family`): Open MPI's pipeline and scatter-allgather
//! themselves hang or crash there. Under `shm` (forced, or a table's
//! rules), a rank passing fewer bytes than the root gets MPI_SUCCESS
//! instead of MPI_ERR_TRUNCATE (`shm_short_receive`).
//!
//! Knobs (environment):
//! - `DROPIN_RANKS=2,3,4`: rank counts;
//! - `DROPIN_SETTINGS=a,b`: only the preloaded settings whose name contains one of these;
//! - `DROPIN_CASES=a,b`: only the cases whose name starts with one of these;
//! - `DROPIN_TIMEOUT_S=6`: how long one case (or one guarded group) may take
//!   before it counts as hung (big cases 15 times that);
//! - `DROPIN_BIG_RANKS=2`: rank counts that run the >= 2 GiB cases (they
//!   need about 2.3 GiB per rank and skip themselves when memory is short);
//! - `DROPIN_BIG_SETTINGS=no table,pipeline`: preloaded settings (by name)
//!   that run them; `DROPIN_BIG_CASES=big_2gib_double`: which of them;
//! - `DROPIN_ALONE_RANKS=3`: rank counts that run the one-per-job cases
//!   (fatal handlers, after MPI_Finalize, crashes);
//! - `DROPIN_FULL=1`: every case at every rank count and setting;
//! - `DROPIN_REPORT=path`: also write the full comparison there;
//! - `DROPIN_PRELOAD=path`: preload that library instead of this build's
//!   (to show that a test fails on an older build).
//!
//! Part two (`tests/c/dropin/unseen.c`, the last three tests): what a
//! program can see of colltune besides its broadcasts: attribute callbacks
//! and error handlers run for colltune's private communicators, how many
//! communicators a program can keep, MPI_T variables read back, the
//! program's own MPI_T pairing, other collectives' results with settings
//! left dormant (environment, a parameter file), and MPI_T initialised
//! before `MPI_Init` on one rank or all.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Tests in this file run mpirun jobs; one at a time on 2 cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn env_list(k: &str, default: &str) -> Vec<String> {
    std::env::var(k)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn timeout_s() -> u64 {
    std::env::var("DROPIN_TIMEOUT_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

/// How the program is run: plain, or preloaded with some environment.
#[derive(Clone, Debug)]
struct Setting {
    name: String,
    /// None: plain (no LD_PRELOAD).
    env: Option<Vec<(String, String)>>,
    /// MCA parameters for mpirun (plain runs of a forced library algorithm).
    mca: Vec<(String, String)>,
    /// For a forced colltune family: the MCA parameters that force the
    /// library's own algorithm of the same family (see `twin_outcomes`).
    twin: Option<(String, Vec<(String, String)>)>,
}

fn table() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tuning-tables/vm-2core.yaml").to_string()
}

fn settings(ranks: usize) -> Vec<Setting> {
    let pre = |name: &str, env: &[(&str, String)]| Setting {
        name: name.into(),
        env: Some(
            env.iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        ),
        mca: Vec::new(),
        twin: None,
    };
    let mut v = vec![
        pre("preload, no table", &[]),
        pre("preload, table vm-2core", &[("COLLTUNE_TABLE", table())]),
    ];
    // Each family, with Open MPI coll/tuned's algorithm of the same family
    // (algorithm id, segment size, k-nomial radix).
    for (f, twin) in [
        ("linear", ("basic_linear", 1, 0, 0)),
        ("binomial", ("binomial", 6, 0, 0)),
        ("knomial:radix=4", ("knomial radix 4", 7, 0, 4)),
        (
            "pipeline:segment=4096",
            ("pipeline segment 4096", 3, 4096, 0),
        ),
        ("scatter_allgather", ("scatter_allgather", 8, 0, 0)),
    ] {
        let mut s = pre(
            &format!("preload, COLLTUNE_BCAST={f}"),
            &[("COLLTUNE_BCAST", f.into())],
        );
        let (name, id, segment, radix) = twin;
        let mut mca = vec![
            ("coll_tuned_use_dynamic_rules".to_string(), "1".to_string()),
            ("coll_tuned_bcast_algorithm".into(), id.to_string()),
            (
                "coll_tuned_bcast_algorithm_segmentsize".into(),
                segment.to_string(),
            ),
        ];
        if radix > 0 {
            mca.push((
                "coll_tuned_bcast_algorithm_knomial_radix".into(),
                radix.to_string(),
            ));
        }
        s.twin = Some((format!("plain, Open MPI forced to {name}"), mca));
        v.push(s);
    }
    // The shared-memory broadcast, forced and named by a table's rules (no
    // library twin: Open MPI 4.1's coll/tuned has no shared-memory one).
    v.push(pre(
        "preload, COLLTUNE_BCAST=shm",
        &[("COLLTUNE_BCAST", "shm".into())],
    ));
    v.push(pre(
        "preload, table shm.yaml",
        &[(
            "COLLTUNE_TABLE",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/dropin/shm.yaml").to_string(),
        )],
    ));
    // A node layout that fits MPI_COMM_WORLD only: the per-communicator
    // setup of every other communicator fails (defect 4).
    v.push(pre(
        &format!("preload, table, COLLTUNE_NODES={ranks}"),
        &[
            ("COLLTUNE_TABLE", table()),
            ("COLLTUNE_NODES", ranks.to_string()),
        ],
    ));
    let only = env_list("DROPIN_SETTINGS", "");
    if !only.is_empty() {
        v.retain(|s| only.iter().any(|o| s.name.contains(o.as_str())));
    }
    v
}

/// What one job did.
struct Job {
    stdout: String,
    stderr: String,
    /// Exit code, or 128 + signal.
    code: i32,
    killed: bool,
    secs: f64,
}

/// Runs `exe args` under mpirun with `setting`; mpirun's own --timeout and
/// a kill from here after `limit`.
fn job(ranks: usize, setting: &Setting, exe: &Path, args: &[String], limit: u64) -> Job {
    let libs = shared_libs();
    let mut c = mpirun(ranks);
    c.args(["--timeout", &(limit + 5).to_string()]).args([
        "--mca",
        "orte_base_help_aggregate",
        "0",
    ]);
    for (k, v) in &setting.mca {
        c.args(["--mca", k, v]);
    }
    if let Some(env) = &setting.env {
        // DROPIN_PRELOAD: another build's library (to show that a test
        // fails on it).
        let lib = std::env::var("DROPIN_PRELOAD")
            .unwrap_or_else(|_| libs.join("libcolltune_preload.so").display().to_string());
        c.args(["-x", &format!("LD_PRELOAD={lib}")]);
        for (k, v) in env {
            c.args(["-x", &format!("{k}={v}")]);
        }
    }
    c.arg(exe).args(args);
    let dir = scratch_dir();
    let n = JOBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (out_p, err_p) = (dir.join(format!("{n}.out")), dir.join(format!("{n}.err")));
    c.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_p).unwrap())
        .stderr(std::fs::File::create(&err_p).unwrap());
    let t0 = Instant::now();
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("could not run mpirun: {e} (see jobs/install-deps.sh)"));
    let hard = Duration::from_secs(limit + 20);
    let mut killed = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > hard && !killed {
            // mpirun takes its ranks down on SIGTERM; SIGKILL if it does not.
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            killed = true;
            let t1 = Instant::now();
            while t1.elapsed() < Duration::from_secs(5) {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let stderr = std::fs::read_to_string(&err_p).unwrap_or_default();
    let timed_out = killed || stderr.contains("time limit for job execution has been reached");
    Job {
        stdout: std::fs::read_to_string(&out_p).unwrap_or_default(),
        stderr,
        code,
        killed: timed_out,
        secs: t0.elapsed().as_secs_f64(),
    }
}

static JOBS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn scratch_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| scratch("dropin")).clone()
}

/// One case's outcome: what must match exactly, and details of an abort
/// compared only where both runs have them: the name of the MPI function
/// the error was reported in (Open MPI 4.1 sometimes loses these messages
/// when the job is torn down) and the exit status (it sometimes crashes
/// while aborting, and the error class in the exit code is lost).
#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    what: String,
    /// `exit N` or `signal N` where the job ended abnormally.
    exit: Option<String>,
    reported_in: Option<String>,
}

impl Outcome {
    fn new(what: impl Into<String>) -> Self {
        Outcome {
            what: what.into(),
            exit: None,
            reported_in: None,
        }
    }
    fn same(&self, other: &Outcome) -> bool {
        let both = |a: &Option<String>, b: &Option<String>, keep: fn(&str) -> bool| match (a, b) {
            (Some(a), Some(b)) if keep(a) && keep(b) => a == b,
            _ => true,
        };
        self.what == other.what
            && both(&self.exit, &other.exit, |e| e.starts_with("exit"))
            && both(&self.reported_in, &other.reported_in, |_| true)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.what)?;
        if let Some(e) = &self.exit {
            write!(f, " ({e})")?;
        }
        if let Some(r) = &self.reported_in {
            write!(f, " [error reported in {r}]")?;
        }
        Ok(())
    }
}

/// The MPI functions Open MPI's fatal messages name.
fn reported_in(stderr: &str) -> Option<String> {
    let mut names: Vec<String> = stderr
        .lines()
        .filter_map(|l| {
            l.split("An error occurred in ")
                .nth(1)
                .map(|s| s.trim().to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    (!names.is_empty()).then(|| names.join(","))
}

/// `MPI_Bcast` for "*** The MPI_Bcast() function was called after
/// MPI_FINALIZE was invoked." (printed by each process itself: reliable).
fn called_after_finalize(stderr: &str) -> Option<String> {
    let mut names: Vec<String> = stderr
        .lines()
        .filter_map(|l| {
            let i = l.find("function was called after MPI_FINALIZE")?;
            let head = l[..i].trim().trim_end_matches("()");
            Some(head.rsplit(' ').next()?.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    (!names.is_empty()).then(|| names.join(","))
}

/// How a job ended without printing a case's line.
fn ending(j: &Job, limit: u64) -> Outcome {
    if j.killed {
        return Outcome::new(format!("hang (job killed after {limit} s)"));
    }
    // A crash while aborting is an abort: Open MPI 4.1 itself sometimes
    // dies of a signal in its error handler's teardown.
    let mut what = "ended abnormally".to_string();
    if let Some(f) = called_after_finalize(&j.stderr) {
        write!(what, ", MPI_FINALIZE error names {f}").unwrap();
    }
    Outcome {
        what,
        exit: Some(match j.code {
            c if c > 128 => format!("signal {}", c - 128),
            c => format!("exit {c}"),
        }),
        reported_in: reported_in(&j.stderr),
    }
}

fn case_lines(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("case ")?;
            let (name, res) = rest.split_once(": ")?;
            Some((name.to_string(), res.trim().to_string()))
        })
        .collect()
}

struct Program {
    exe: PathBuf,
    /// (case, group) in the program's order.
    cases: Vec<(String, String)>,
}

fn program() -> Program {
    let dir = scratch_dir();
    let exe = dir.join("dropin");
    mpicc(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/dropin/dropin.c"),
        &exe,
        &["-lpthread"],
    );
    let mut c = mpirun(1);
    c.arg(&exe).arg("--list");
    let o = run(c);
    assert!(o.status.success(), "dropin --list:\n{}", text(&o));
    let only = env_list("DROPIN_CASES", "");
    let cases = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.trim().to_string()))
        .filter(|(n, _)| only.is_empty() || only.iter().any(|o| n.starts_with(o.as_str())))
        .collect();
    Program { exe, cases }
}

fn full() -> bool {
    std::env::var("DROPIN_FULL").is_ok_and(|v| v == "1")
}

fn numbers(k: &str, default: &str) -> Vec<usize> {
    env_list(k, default)
        .iter()
        .map(|r| r.parse().unwrap_or_else(|_| panic!("{k}: numbers")))
        .collect()
}

/// Whether `case` (of `group`) runs at this rank count and setting. The
/// cases that move data run everywhere; those that end the job run one per
/// job, so at one rank count only (their outcome is decided by argument
/// checks that precede any algorithm); the >= 2 GiB cases (about 15 s
/// each on the 2-core VMs, mostly page faults) at 2 ranks, plain, without
/// a table (the library's algorithm through colltune) and with a
/// segmented algorithm. `DROPIN_FULL=1`: everything everywhere.
fn eligible(case: &str, group: &str, ranks: usize, setting: &Setting) -> bool {
    let within = |k: &str, default: &str| full() || numbers(k, default).contains(&ranks);
    if case.starts_with("big_") {
        let names = env_list("DROPIN_BIG_SETTINGS", "no table,pipeline");
        return within("DROPIN_BIG_RANKS", "2")
            && (full()
                || env_list("DROPIN_BIG_CASES", "big_2gib_double")
                    .iter()
                    .any(|c| c == case))
            && (full()
                || setting.env.is_none()
                || names.iter().any(|n| setting.name.contains(n.as_str())));
    }
    if group == "alone" {
        return within("DROPIN_ALONE_RANKS", "3");
    }
    true
}

/// Runs the cases of one rank count and setting; returns every outcome
/// and the seconds spent. `plain`: what the plain run must cover (every
/// case any setting runs at this rank count).
fn run_setting(
    p: &Program,
    ranks: usize,
    s: &Setting,
    plain: &[Setting],
) -> (BTreeMap<String, Outcome>, f64) {
    let t = timeout_s();
    let mut out = BTreeMap::new();
    let mut secs = 0.0;
    let of = |g: &str| -> Vec<String> {
        p.cases
            .iter()
            .filter(|(n, grp)| {
                grp == g
                    && if s.env.is_none() && !plain.is_empty() {
                        plain.iter().any(|x| eligible(n, grp, ranks, x))
                    } else {
                        eligible(n, grp, ranks, s)
                    }
            })
            .map(|(n, _)| n.clone())
            .collect()
    };

    // Cases one after another in one job; a job that ends early (abort,
    // crash, hang) is blamed on the first case without a line, and the
    // rest run again in a new job.
    let mut sequential = |cases: Vec<String>, one_per_job: bool| {
        let mut left = cases;
        while !left.is_empty() {
            let batch: Vec<String> = if one_per_job {
                vec![left[0].clone()]
            } else {
                left.clone()
            };
            let limit = if batch.iter().any(|c| c.starts_with("big_")) {
                15 * t + 60
            } else {
                t * batch.len() as u64 + 30
            };
            let mut args = vec!["--alarm".to_string(), t.to_string()];
            args.extend(batch.iter().cloned());
            let j = job(ranks, s, &p.exe, &args, limit);
            secs += j.secs;
            let lines = case_lines(&j.stdout);
            let mut done = 0;
            for c in &batch {
                match lines.get(c) {
                    Some(r) => {
                        done += 1;
                        let mut o = Outcome::new(r.clone());
                        if r == "hang" {
                            o.what = format!("hang (no result after {t} s)");
                            out.insert(c.clone(), o);
                            break;
                        }
                        if done == batch.len() && j.code != 0 && !j.killed {
                            // all printed, yet the job failed (at MPI_Finalize?)
                            let e = ending(&j, limit);
                            o.what = format!("{r}; then the job {}", e.what);
                            o.exit = e.exit;
                            o.reported_in = e.reported_in;
                        }
                        out.insert(c.clone(), o);
                    }
                    None => {
                        done += 1;
                        out.insert(c.clone(), ending(&j, limit));
                        break;
                    }
                }
            }
            left.drain(..done.min(left.len()));
        }
    };
    sequential(of("direct"), false);
    sequential(of("alone"), true);

    // Cases at once, each in its own thread, under --guard.
    let mut guarded = |cases: Vec<String>| {
        if cases.is_empty() {
            return;
        }
        let limit = t + 40;
        let mut args = vec!["--guard".to_string(), t.to_string()];
        args.extend(cases.iter().cloned());
        let j = job(ranks, s, &p.exe, &args, limit);
        secs += j.secs;
        let lines = case_lines(&j.stdout);
        // (the program's own "some cases hung" line can be lost when it
        // exits without MPI_Finalize)
        let hung =
            j.stdout.contains("some cases hung") || lines.values().any(|r| r.contains("hang"));
        for c in &cases {
            let o = match lines.get(c) {
                Some(r) if r == "hang" => Outcome::new(format!("hang (no result after {t} s)")),
                Some(r) if j.code != 0 && !hung => {
                    let e = ending(&j, limit);
                    Outcome {
                        what: format!("{r}; then the job {}", e.what),
                        ..e
                    }
                }
                Some(r) => Outcome::new(r.clone()),
                None => ending(&j, limit),
            };
            out.insert(c.clone(), o);
        }
    };
    guarded(of("guarded"));
    for c in of("guarded_alone") {
        guarded(vec![c]);
    }
    (out, secs)
}

/// Cases whose plain outcome must be `ok` (valid programs): the others
/// are erroneous on purpose (their plain outcome is the reference).
fn must_be_ok(case: &str) -> bool {
    !["err_", "fatal_", "after_finalize"]
        .iter()
        .any(|p| case.starts_with(p))
}

struct Diff {
    case: String,
    setting: String,
    ranks: usize,
    plain: Outcome,
    got: Outcome,
}

/// What kind of difference: H hang, W wrong data, C crash, A abort where
/// the library completes, E another error class or return, or no abort
/// where the library aborts.
fn kind(d: &Diff) -> char {
    let (got, plain) = (&d.got.what, &d.plain.what);
    if got.contains("hang") {
        'H'
    } else if got.contains("wrong data") || got.contains("wrote outside") {
        'W'
    } else if d.got.what != d.plain.what
        && d.got
            .exit
            .as_deref()
            .is_some_and(|e| e.starts_with("signal"))
    {
        'C'
    } else if got.contains("ended abnormally") && !plain.contains("ended abnormally") {
        'A'
    } else {
        'E'
    }
}

/// One row per case, one column per setting: the kinds of difference and
/// the rank counts they were seen at.
fn matrix(diffs: &[Diff], settings: &[String]) -> String {
    let short = |s: &str| -> String {
        let s = s.trim_start_matches("preload, ");
        let s = s.trim_start_matches("COLLTUNE_BCAST=");
        let s = s
            .replace("table vm-2core", "table")
            .replace("table, COLLTUNE_NODES=", "nodes=")
            .replace(":radix=", "")
            .replace(":segment=4096", "4k")
            .replace("scatter_allgather", "scatter_ag");
        s.chars().take(12).collect()
    };
    let mut rows: BTreeMap<&str, BTreeMap<String, BTreeMap<char, Vec<usize>>>> = BTreeMap::new();
    for d in diffs {
        let col = short(&d.setting);
        let col = if col.starts_with("nodes=") {
            "nodes=N".into()
        } else {
            col
        };
        rows.entry(&d.case)
            .or_default()
            .entry(col)
            .or_default()
            .entry(kind(d))
            .or_default()
            .push(d.ranks);
    }
    let mut cols: Vec<String> = Vec::new();
    for s in settings {
        let c = short(s);
        let c = if c.starts_with("nodes=") {
            "nodes=N".into()
        } else {
            c
        };
        if !cols.contains(&c) {
            cols.push(c);
        }
    }
    let w = rows.keys().map(|k| k.len()).max().unwrap_or(4).max(4);
    let cw = 12;
    let mut s = format!("{:w$}", "case");
    for c in &cols {
        write!(s, " {c:cw$}").unwrap();
    }
    s.push('\n');
    for (case, row) in &rows {
        write!(s, "{case:w$}").unwrap();
        for c in &cols {
            let cell = row
                .get(c)
                .map(|k| {
                    k.iter()
                        .map(|(kind, r)| {
                            let mut r = r.clone();
                            r.sort_unstable();
                            r.dedup();
                            let r: Vec<String> = r.iter().map(|x| x.to_string()).collect();
                            format!("{kind}{}", r.join(""))
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_else(|| ".".into());
            write!(s, " {cell:cw$}").unwrap();
        }
        s.push('\n');
    }
    s + "(H hang, W wrong data, C crash (a signal) where the library completes, A abort where the library completes, E another error class, return or abort message; digits: rank counts; .: same as plain)\n"
}

fn format_diffs(diffs: &[Diff]) -> String {
    // One line per (case, setting, plain, got) with the rank counts it holds for.
    let mut groups: BTreeMap<(String, String, String, String), Vec<usize>> = BTreeMap::new();
    for d in diffs {
        groups
            .entry((
                d.case.clone(),
                d.setting.clone(),
                d.plain.to_string(),
                d.got.to_string(),
            ))
            .or_default()
            .push(d.ranks);
    }
    let mut s = String::new();
    let mut last = String::new();
    for ((case, setting, plain, got), ranks) in groups {
        if case != last {
            writeln!(s, "\n{case}:").unwrap();
            last = case.clone();
        }
        let r: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
        writeln!(
            s,
            "  {setting}, {} ranks:\n      plain:     {plain}\n      preloaded: {got}",
            r.join("/")
        )
        .unwrap();
    }
    s
}

/// Whether an outcome is a completed call on every rank (no hang, crash
/// or abort).
fn completes(o: &Outcome) -> bool {
    o.exit.is_none() && !o.what.contains("hang") && !o.what.contains("ended abnormally")
}

/// Whether every rank completed the call and its next correct calls on
/// the communicator were right ("then ok").
fn usable(o: &Outcome) -> bool {
    completes(o) && o.what.split("; ").all(|r| r.ends_with(", then ok"))
}

/// An erroneous program whose ranks pass different byte counts
/// (`err_count_*`) has no defined outcome in MPI: each algorithm does what
/// its schedule does with mismatched segments. Under a forced family, the
/// reference is therefore also the library's own algorithm of that family
/// (besides the default decision's outcome): colltune's outcome is
/// accepted when it equals the library family's, or when the library's
/// own algorithm leaves the communicator unusable (hangs, crashes, or its
/// next correct calls get wrong data): there is no reference to meet.
/// Where the library's algorithm completes and stays usable, colltune's
/// must do the same, with the same error classes.
fn as_the_library_family(got: &Outcome, twin: &Outcome) -> bool {
    got.same(twin) || !usable(twin)
}

/// The one accepted difference of the shared-memory broadcast, in an
/// erroneous program only: a rank passing fewer bytes than the root
/// (`err_count_short*`, undefined in MPI) copies its own count out of the
/// root's slots and returns MPI_SUCCESS, where a message-based broadcast's
/// receive reports MPI_ERR_TRUNCATE (no message, nothing truncated; Open
/// MPI 4.1 has no shared-memory broadcast to compare with).
fn shm_short_receive(s: &Setting, case: &str, got: &Outcome) -> bool {
    may_run_shm(s)
        && case.starts_with("err_count_short")
        && got.what == "MPI_SUCCESS, then ok"
        && got.exit.is_none()
}

/// Whether a setting's broadcasts may run `shm`: forced, or a table with a
/// rule that chooses it (the shipped table's do, as a site's may).
fn may_run_shm(s: &Setting) -> bool {
    let table_chooses_shm = || {
        s.env.iter().flatten().any(|(k, v)| {
            k == "COLLTUNE_TABLE"
                && std::fs::read_to_string(v).is_ok_and(|t| t.contains("algorithm: shm"))
        })
    };
    s.name.contains("shm") || table_chooses_shm()
}

/// For a forced family (`s.twin`), runs the erroneous count cases that
/// differ from the plain run once more, plain, with the library forced to
/// its algorithm of the same family; their outcomes by case.
fn twin_outcomes(
    p: &Program,
    n: usize,
    s: &Setting,
    got: &BTreeMap<String, Outcome>,
    plain: &BTreeMap<String, Outcome>,
    report: &mut String,
) -> BTreeMap<String, Outcome> {
    let Some((name, mca)) = &s.twin else {
        return BTreeMap::new();
    };
    let cases: Vec<(String, String)> = p
        .cases
        .iter()
        .filter(|(c, _)| {
            c.starts_with("err_count_")
                && got
                    .get(c)
                    .zip(plain.get(c))
                    .is_some_and(|(g, w)| !g.same(w))
        })
        .cloned()
        .collect();
    if cases.is_empty() {
        return BTreeMap::new();
    }
    let sub = Program {
        exe: p.exe.clone(),
        cases,
    };
    let forced = Setting {
        name: name.clone(),
        env: None,
        mca: mca.clone(),
        twin: None,
    };
    let (out, secs) = run_setting(&sub, n, &forced, &[]);
    writeln!(report, "== {n} ranks, {name} ({secs:.1} s)").unwrap();
    for (c, o) in &out {
        writeln!(report, "case {c}: {o}").unwrap();
    }
    out
}

#[test]
fn preloaded_outcomes_equal_plain_outcomes() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let t0 = Instant::now();
    shared_libs();
    let p = program();
    let ranks: Vec<usize> = env_list("DROPIN_RANKS", "2,3,4")
        .iter()
        .map(|r| r.parse().expect("DROPIN_RANKS: numbers"))
        .collect();
    let mut diffs = Vec::new();
    let mut bad_plain = Vec::new();
    let mut full_report = String::new();
    let mut compared = 0;
    let mut uncompared = Vec::new();
    for &n in &ranks {
        let plain_setting = Setting {
            name: "plain".into(),
            env: None,
            mca: Vec::new(),
            twin: None,
        };
        let all = settings(n);
        let (plain, secs) = run_setting(&p, n, &plain_setting, &all);
        writeln!(full_report, "== {n} ranks, plain ({secs:.1} s)").unwrap();
        for (c, o) in &plain {
            writeln!(full_report, "case {c}: {o}").unwrap();
            if must_be_ok(c) && o.what != "ok" && !o.what.starts_with("skipped") {
                bad_plain.push(format!("{n} ranks: case {c}: {o}"));
            }
        }
        for s in all {
            let (got, secs) = run_setting(&p, n, &s, &[]);
            writeln!(full_report, "== {n} ranks, {} ({secs:.1} s)", s.name).unwrap();
            // Erroneous count cases that differ from the plain run: what
            // the library's own algorithm of the same family does there.
            let twin = twin_outcomes(&p, n, &s, &got, &plain, &mut full_report);
            for (c, g) in &got {
                let want = plain.get(c).expect("the plain run covers every case");
                compared += 1;
                if let Some(t) = twin.get(c) {
                    if !g.same(want) && as_the_library_family(g, t) {
                        let how = if g.same(t) {
                            "the same as"
                        } else {
                            "not compared: the library's own algorithm leaves the communicator unusable:"
                        };
                        writeln!(
                            full_report,
                            "case {c}: {g}   (erroneous; {how} {}: {t})",
                            s.twin.as_ref().map_or("", |(n, _)| n.as_str())
                        )
                        .unwrap();
                        if !g.same(t) {
                            uncompared.push(format!("{n} ranks, {}: {c}", s.name));
                        }
                        continue;
                    }
                }
                if !g.same(want) && shm_short_receive(&s, c, g) {
                    writeln!(
                        full_report,
                        "case {c}: {g}   (erroneous; shm: a shorter receive is not detected)"
                    )
                    .unwrap();
                    continue;
                }
                writeln!(
                    full_report,
                    "case {c}: {g}{}",
                    if g.same(want) { "" } else { "   <-- differs" }
                )
                .unwrap();
                if !g.same(want) {
                    diffs.push(Diff {
                        case: c.clone(),
                        setting: s.name.clone(),
                        ranks: n,
                        plain: want.clone(),
                        got: g.clone(),
                    });
                }
            }
        }
    }
    let report = scratch_dir().join("report.txt");
    std::fs::write(&report, &full_report).unwrap();
    if let Ok(dest) = std::env::var("DROPIN_REPORT") {
        std::fs::write(&dest, &full_report).unwrap();
    }
    eprintln!(
        "drop-in conformance: {compared} comparisons, {} differ, {:.0} s; full report: {}",
        diffs.len(),
        t0.elapsed().as_secs_f64(),
        report.display()
    );
    assert!(
        bad_plain.is_empty(),
        "the plain runs (no preload) fail valid cases: the test or the MPI installation is wrong:\n{}",
        bad_plain.join("\n")
    );
    let mut names: Vec<String> = Vec::new();
    for &n in &ranks {
        for s in settings(n) {
            if !names.contains(&s.name) {
                names.push(s.name);
            }
        }
    }
    if !uncompared.is_empty() {
        eprintln!(
            "drop-in conformance: {} erroneous case runs without a reference (the library's own algorithm of the family leaves the communicator unusable):\n  {}",
            uncompared.len(),
            uncompared.join("\n  ")
        );
    }
    let mut cases: Vec<&str> = diffs.iter().map(|d| d.case.as_str()).collect();
    cases.sort_unstable();
    cases.dedup();
    assert!(
        diffs.is_empty(),
        "under LD_PRELOAD=libcolltune_preload.so {} of {compared} case runs differ from the plain run ({} cases):\n\n{}\nthe differences:\n{}\nfull report: {}",
        diffs.len(),
        cases.len(),
        matrix(&diffs, &names),
        format_diffs(&diffs),
        report.display()
    );
}

/// Open MPI's Fortran bindings call `PMPI_Bcast` themselves: a Fortran
/// program's broadcasts must reach colltune too (defect 7). The trace
/// (`COLLTUNE_TRACE=1`) shows whether they did; a C program under the same
/// settings shows that the trace works.
#[test]
fn fortran_broadcasts_are_intercepted() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if Command::new("mpif90").arg("--version").output().is_err() {
        return skip("fortran", "no mpif90 (libopenmpi-dev ships it)");
    }
    shared_libs();
    let dir = scratch_dir();
    // The drop-in regression's program (the same broadcasts, and one at
    // absolute addresses), in the drop-in's case format.
    let fexe = dir.join("regress_fortran");
    let o = Command::new("mpif90")
        .args(["-O2", "-o"])
        .arg(&fexe)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/c/regress_fortran.f90"
        ))
        .output()
        .expect("mpif90");
    if !o.status.success() {
        return skip("fortran", &format!("mpif90 cannot build:\n{}", text(&o)));
    }
    let p = program();
    let plain = Setting {
        name: "plain".into(),
        env: None,
        mca: Vec::new(),
        twin: None,
    };
    let mut problems = Vec::new();
    for ranks in [2, 3] {
        let j = job(ranks, &plain, &fexe, &[], 60);
        let want = case_lines(&j.stdout);
        assert_eq!(
            want.get("fortran_bcast").map(String::as_str),
            Some("ok"),
            "plain Fortran run:\n{}\n{}",
            j.stdout,
            j.stderr
        );
        for s in settings(ranks).into_iter().filter(|s| {
            s.name.ends_with("no table")
                || s.name.contains("pipeline")
                || s.name.contains("table vm")
        }) {
            let mut s = s.clone();
            s.env
                .as_mut()
                .unwrap()
                .push(("COLLTUNE_TRACE".into(), "1".into()));
            let j = job(ranks, &s, &fexe, &[], 60);
            let got = case_lines(&j.stdout);
            if got != want {
                problems.push(format!(
                    "{ranks} ranks, {}: Fortran result {:?}, plain {:?}",
                    s.name,
                    got.get("fortran_bcast"),
                    want.get("fortran_bcast")
                ));
            }
            let traced = j
                .stderr
                .lines()
                .filter(|l| l.contains("colltune trace:") && l.contains(" bcast "))
                .count();
            // the control: a C program's broadcasts under the same settings
            let c = job(
                ranks,
                &s,
                &p.exe,
                &[
                    "--alarm".into(),
                    timeout_s().to_string(),
                    "bytes_12345".into(),
                ],
                60,
            );
            let c_traced = c
                .stderr
                .lines()
                .filter(|l| l.contains("colltune trace:"))
                .count();
            assert!(
                c_traced > 0,
                "{ranks} ranks, {}: the C control printed no colltune trace:\n{}",
                s.name,
                c.stderr
            );
            if traced == 0 {
                problems.push(format!(
                    "{ranks} ranks, {}: the Fortran program's MPI_BCAST calls were not intercepted (no `colltune trace: ... bcast` line; the C program under the same settings printed {c_traced})",
                    s.name
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------- part two: what else a program can see ----------

/// `tests/c/dropin/unseen.c`, compiled once.
fn unseen() -> PathBuf {
    static EXE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        let exe = scratch_dir().join("unseen");
        mpicc(
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/dropin/unseen.c"),
            &exe,
            &[],
        );
        exe
    })
    .clone()
}

/// A table whose rules name Open MPI's own algorithms (k-nomial, pipeline)
/// around a rule of colltune's (binomial), for 2-4 ranks.
fn library_table() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/dropin/library.yaml").to_string()
}

/// A run: plain (`env` None) or preloaded, with MCA parameters (which
/// mpirun hands the ranks as `OMPI_MCA_*` in their environment).
fn unseen_setting(name: &str, env: Option<&[(&str, String)]>, mca: &[(&str, &str)]) -> Setting {
    Setting {
        name: name.into(),
        env: env.map(|e| e.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()),
        mca: mca
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        twin: None,
    }
}

/// The `name: value` lines rank 0 printed, and how the job ended.
fn unseen_lines(j: &Job) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = j
        .stdout
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if j.stdout.lines().any(|l| l == "hang") || j.killed {
        m.insert("end".into(), "hung".into());
    } else {
        m.insert("end".into(), format!("exit {}", j.code));
    }
    m
}

/// What [`unseen_differences`] ran: the plain run's lines, and per
/// preloaded setting its name, lines and stderr.
struct Unseen {
    plain: BTreeMap<String, String>,
    runs: Vec<(String, BTreeMap<String, String>, String)>,
}

/// Runs `args` plain and under each preloaded setting on `ranks` ranks and
/// lists every line that differs from the plain run's (`except`: lines a
/// setting may change, checked by the caller), with the job's stderr.
fn unseen_differences(
    ranks: usize,
    args: &[&str],
    plain: &Setting,
    preloaded: &[Setting],
    except: &[&str],
    problems: &mut Vec<String>,
) -> Unseen {
    let exe = unseen();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let p = job(ranks, plain, &exe, &args, 30);
    let want = unseen_lines(&p);
    assert_eq!(
        want.get("end").map(String::as_str),
        Some("exit 0"),
        "plain run of unseen {args:?} on {ranks} ranks:\n{}\n{}",
        p.stdout,
        p.stderr
    );
    let mut out = Vec::new();
    for s in preloaded {
        let j = job(ranks, s, &exe, &args, 30);
        let got = unseen_lines(&j);
        for (k, v) in &want {
            if except.contains(&k.as_str()) {
                continue;
            }
            if got.get(k) != Some(v) {
                problems.push(format!(
                    "unseen {} on {ranks} ranks, {}: `{k}` is {:?}, plain {v:?}{}",
                    args.join(" "),
                    s.name,
                    got.get(k),
                    if j.stderr.trim().is_empty() {
                        String::new()
                    } else {
                        format!("\n    stderr: {}", j.stderr.trim().replace('\n', "\n    "))
                    }
                ));
            }
        }
        out.push((s.name.clone(), got, j.stderr));
    }
    Unseen {
        plain: want,
        runs: out,
    }
}

/// colltune's private communicators are not duplicates of the program's:
/// no attribute copy or delete callback of the program's runs for them, a
/// copy callback that refuses never stops a broadcast (under
/// `MPI_ERRORS_ARE_FATAL` the old `MPI_Comm_dup` aborted the job; under an
/// error handler of the program's, that handler was called), and a
/// program keeps about as many communicators alive as without colltune
/// (the old code made one duplicate per communicator broadcast on, and one
/// more per forced library algorithm: the Fortran handle of a new
/// communicator, which counts every communicator alive, was twice and
/// four times the plain run's).
#[test]
fn private_communicators_are_unseen() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    shared_libs();
    let plain = unseen_setting("plain", None, &[]);
    let lib = library_table();
    let binomial = unseen_setting(
        "preload, COLLTUNE_BCAST=binomial",
        Some(&[("COLLTUNE_BCAST", "binomial".into())]),
        &[],
    );
    let forced = unseen_setting(
        "preload, library table, COLLTUNE_HANDOFF=0",
        Some(&[
            ("COLLTUNE_TABLE", lib.clone()),
            ("COLLTUNE_HANDOFF", "0".into()),
        ]),
        &[],
    );
    let handoff = unseen_setting(
        "preload, library table",
        Some(&[("COLLTUNE_TABLE", lib.clone())]),
        &[],
    );
    let vm = unseen_setting(
        "preload, table vm-2core",
        Some(&[("COLLTUNE_TABLE", table())]),
        &[],
    );
    let mut problems = Vec::new();
    // Callbacks: 3 ranks (the halves are 2 and 1 ranks), and 4 (the
    // shipped table's rules).
    let p = job(3, &plain, &unseen(), &["attrs".into()], 30);
    assert_eq!(
        unseen_lines(&p).get("attrs").map(String::as_str),
        Some("copies 1, deletes 3, refusals 0, handler calls 0, every byte right"),
        "plain attrs:\n{}\n{}",
        p.stdout,
        p.stderr
    );
    unseen_differences(
        3,
        &["attrs"],
        &plain,
        &[binomial.clone(), forced.clone(), handoff],
        &[],
        &mut problems,
    );
    unseen_differences(4, &["attrs"], &plain, &[vm], &[], &mut problems);
    // Communicators kept alive: 30 duplicates of the world and 30 of half
    // of it, each broadcast on.
    let comms = unseen_differences(
        3,
        &["comms", "30"],
        &plain,
        &[binomial, forced],
        &["handle index"],
        &mut problems,
    );
    let base: i64 = comms.plain["handle index"].parse().expect("a handle index");
    for (name, got, _) in comms.runs {
        let n: Option<i64> = got.get("handle index").and_then(|v| v.parse().ok());
        // colltune's own: the world's private communicator, the halves',
        // and per forced algorithm one each.
        if n.is_none_or(|n| n > base + 6) {
            problems.push(format!(
                "unseen comms 30 on 3 ranks, {name}: a new communicator's Fortran handle is {n:?}, plain {base}: colltune holds more than 6 communicators of its own"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// MPI_T reads what it reads without colltune (`coll_tuned_use_dynamic_rules`
/// stays off unless a table's rule names one of coll/tuned's algorithms;
/// then, with the handoff, it is on and the rules file is colltune's: the
/// documented difference, docs/transparency.md); the program's own
/// `MPI_T_init_thread` / `MPI_T_finalize` leave MPI_T finalised (colltune's
/// sessions are paired); and settings left dormant, in the environment or
/// in a parameter file, stay dormant: `MPI_Allreduce` of doubles gives the
/// same bits as without colltune (where waking `coll_tuned_allreduce_algorithm=1`
/// changes them, which the plain control shows).
#[test]
fn mpi_t_and_other_collectives_are_unseen() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    shared_libs();
    let lib = library_table();
    let mut problems = Vec::new();
    let plain = unseen_setting("plain", None, &[]);
    let pre = |name: &str, env: &[(&str, String)], mca: &[(&str, &str)]| {
        unseen_setting(name, Some(env), mca)
    };
    let lib_env = [("COLLTUNE_TABLE", lib.clone())];
    // The shipped table, where it has no rule of coll/tuned's, leaves MPI_T
    // as plain; with one, it is handed off as the library table below.
    let shipped = pre(
        "preload, table vm-2core",
        &[("COLLTUNE_TABLE", table())],
        &[],
    );
    let shipped_hands_off = std::fs::read_to_string(table())
        .unwrap()
        .contains("algorithm: ompi_tuned");
    let mut clean = vec![
        pre("preload, no table", &[], &[]),
        pre(
            "preload, COLLTUNE_BCAST=binomial",
            &[("COLLTUNE_BCAST", "binomial".into())],
            &[],
        ),
    ];
    let mut handed = vec![
        pre("preload, library table", &lib_env, &[]),
        pre(
            "preload, library table, COLLTUNE_HANDOFF=0",
            &[
                ("COLLTUNE_TABLE", lib.clone()),
                ("COLLTUNE_HANDOFF", "0".into()),
            ],
            &[],
        ),
    ];
    if shipped_hands_off {
        handed.push(shipped);
    } else {
        clean.push(shipped);
    }
    let a = unseen_differences(3, &["mpit"], &plain, &clean, &[], &mut problems).plain;
    // A rule naming one of coll/tuned's algorithms: dynamic rules on, and
    // with the handoff colltune's rules file: the documented differences.
    let dynamic = "coll_tuned_use_dynamic_rules";
    let file = "coll_tuned_dynamic_rules_filename";
    for (name, got, _) in unseen_differences(
        3,
        &["mpit"],
        &plain,
        &handed,
        &[dynamic, file],
        &mut problems,
    )
    .runs
    {
        let handoff = !name.contains("HANDOFF=0");
        let file_ok = match got.get(file) {
            Some(f) if handoff => {
                f.matches("colltune-handoff-").count() == 3 && f.starts_with("r0=")
            }
            Some(f) => f == "''",
            None => false,
        };
        if got.get(dynamic).map(String::as_str) != Some("1") || !file_ok {
            problems.push(format!(
                "{name}: MPI_T should read {dynamic}=1 and {}, got {:?} and {:?}",
                if handoff {
                    "colltune's rules file"
                } else {
                    "no rules file"
                },
                got.get(dynamic),
                got.get(file)
            ));
        }
    }
    // Dormant: a forced allreduce algorithm in the environment, and in a
    // parameter file; the table needs dynamic rules.
    let conf = scratch_dir().join("site-mca-params.conf");
    std::fs::write(
        &conf,
        "# a site's settings\ncoll_tuned_allreduce_algorithm = 1\n",
    )
    .unwrap();
    let conf = conf.display().to_string();
    for mca in [
        [("coll_tuned_allreduce_algorithm", "1")],
        [("mca_base_param_files", conf.as_str())],
    ] {
        let name = format!("preload, library table, --mca {}", mca[0].0);
        let plain = unseen_setting(&format!("plain, --mca {}", mca[0].0), None, &mca);
        unseen_differences(
            3,
            &["mpit"],
            &plain,
            &[pre(&name, &lib_env, &mca)],
            &[],
            &mut problems,
        );
    }
    // A site's own rules file, active (dynamic rules on by its choice):
    // allreduce forced to basic linear, broadcast to basic linear for
    // every size. The handoff's file merges it: allreduce's bits and every
    // broadcast byte as plain, MPI_T names colltune's (merged) file, and
    // the trace says which of the site's broadcast rules the table's
    // supersede (2, 3, 4 ranks: library.yaml's sizes).
    let rules = scratch_dir().join("site.rules");
    std::fs::write(
        &rules,
        "# a site's coll/tuned rules\n2\n2 # allreduce\n1\n0 # ranks\n1\n0 1 0 0\n7 # bcast\n1\n0\n1\n0 1 0 0\n",
    )
    .unwrap();
    let rules = rules.display().to_string();
    let site_mca = [
        ("coll_tuned_use_dynamic_rules", "1"),
        ("coll_tuned_dynamic_rules_filename", rules.as_str()),
    ];
    let site_plain = unseen_setting("plain, the site's rules file", None, &site_mca);
    let traced = [
        ("COLLTUNE_TABLE", lib.clone()),
        ("COLLTUNE_TRACE", "1".into()),
    ];
    let merged = unseen_differences(
        3,
        &["mpit"],
        &site_plain,
        &[pre(
            "preload, library table, the site's rules file",
            &traced,
            &site_mca,
        )],
        &[file],
        &mut problems,
    );
    for (name, got, stderr) in &merged.runs {
        if got
            .get(file)
            .is_none_or(|f| f.matches("colltune-handoff-").count() != 3)
        {
            problems.push(format!(
                "{name}: {file} should name colltune's merged file, got {:?}",
                got.get(file)
            ));
        }
        let said = format!(
            "merged: its rules for other collectives and other communicator sizes kept, its broadcast rules superseded for 2 ranks (its entry for 0 ranks, {rules}:10), 3 ranks"
        );
        if !stderr.contains(&said) {
            problems.push(format!(
                "{name}: the trace should say `{said}`; stderr:\n{stderr}"
            ));
        }
    }
    assert_ne!(
        merged.plain.get("allreduce"),
        a.get("allreduce"),
        "the control: the site's rules file should change the sum's bits"
    );
    // The same file dormant (dynamic rules left unset): the handoff's own
    // file takes its place, so it stays dormant: allreduce's bits as plain
    // (Open MPI's fixed decision), MPI_T reads dynamic rules on and
    // colltune's file (the documented differences).
    let dormant_mca = [("coll_tuned_dynamic_rules_filename", rules.as_str())];
    for (name, got, _) in unseen_differences(
        3,
        &["mpit"],
        &unseen_setting("plain, the site's rules file dormant", None, &dormant_mca),
        &[pre(
            "preload, library table, the site's rules file dormant",
            &lib_env,
            &dormant_mca,
        )],
        &[dynamic, file],
        &mut problems,
    )
    .runs
    {
        if got.get(dynamic).map(String::as_str) != Some("1")
            || got
                .get(file)
                .is_none_or(|f| f.matches("colltune-handoff-").count() != 3)
        {
            problems.push(format!(
                "{name}: MPI_T should read {dynamic}=1 and colltune's rules file, got {:?} and {:?}",
                got.get(dynamic),
                got.get(file)
            ));
        }
    }
    // The control: waking the setting does change the sum.
    let woke = unseen_setting(
        "plain, allreduce forced",
        None,
        &[
            ("coll_tuned_allreduce_algorithm", "1"),
            ("coll_tuned_use_dynamic_rules", "1"),
        ],
    );
    let b = unseen_lines(&job(3, &woke, &unseen(), &["mpit".into()], 30));
    assert_ne!(
        a.get("allreduce"),
        b.get("allreduce"),
        "the control: coll_tuned_allreduce_algorithm=1 woken should change the sum's bits"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// MPI_T initialised before `MPI_Init` (on world rank 0 only, and on every
/// rank): Open MPI then reads its variables before the drop-in sets them,
/// so the rules handed to it take effect on some ranks only. The old code
/// hung at the first broadcast of a handed-off size; now every rank agrees
/// on what Open MPI really loaded and runs the table's coll/tuned rules as
/// colltune's own algorithms, saying so in the trace and nowhere else (no
/// warning on stderr, no claim that the handoff took place).
#[test]
fn mpi_t_before_mpi_init_does_not_hang() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    shared_libs();
    let lib = library_table();
    let plain = unseen_setting("plain", None, &[]);
    let traced = unseen_setting(
        "preload, library table, COLLTUNE_TRACE=1",
        Some(&[("COLLTUNE_TABLE", lib), ("COLLTUNE_TRACE", "1".into())]),
        &[],
    );
    let mut problems = Vec::new();
    for (ranks, who) in [(3, "one"), (3, "all"), (2, "one")] {
        let runs = unseen_differences(
            ranks,
            &["early", who],
            &plain,
            std::slice::from_ref(&traced),
            &[],
            &mut problems,
        )
        .runs;
        let stderr = &runs[0].2;
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("colltune") && !l.starts_with("colltune trace:"))
            .collect();
        let honest = said
            .iter()
            .all(|l| !l.contains("warning") && !l.contains("handoff:"))
            && said.iter().any(|l| l.contains("colltune's own algorithms"));
        if !honest {
            problems.push(format!(
                "early {who} on {ranks} ranks: colltune should say once, in its trace, that the library rules run as its own algorithms (and warn of nothing); it said:\n    {}",
                said.join("\n    ")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
