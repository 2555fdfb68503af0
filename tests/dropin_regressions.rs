//! Regressions of the drop-in interposition library (`LD_PRELOAD`
//! `libcolltune_preload.so`): one test per defect of the drop-in
//! transparency issue ("same data, same error classes, same completion as
//! the MPI library's own MPI_Bcast"), each failing on the code before its
//! fix. The programs are in `tests/c/regress_*` (self-checking; a watchdog
//! in each names the case a rank hangs in), run under mpirun with pinned
//! ranks and a hard time limit.
//!
//! 1. mixed datatypes with one signature took different paths and hung;
//!    per-rank set-up failures did too (`mixed_datatypes_take_one_path`,
//!    `failed_setup_is_agreed`);
//! 2. permuted datatypes were moved as raw bytes
//!    (`permuted_datatypes_move_by_signature`);
//! 3. messages of 2 GiB or more aborted even on the library fallback
//!    (`two_gib_goes_to_the_library`);
//! 4. a failed set-up skipped the broadcast (`failed_setup_is_agreed`);
//! 7. Fortran programs were not intercepted
//!    (`fortran_calls_go_through_colltune`);
//! 11. the wrong function named after MPI_Finalize, later warnings
//!     swallowed, internal traffic through MPI_ instead of PMPI_
//!     (`errors_are_the_librarys`, `failed_setup_is_agreed`,
//!     `internal_traffic_goes_through_pmpi`);
//!
//! A shared window the library refuses falls back to the library's
//! broadcast, agreed and warned once (`refused_shared_window_falls_back_once`).
//!
//! The C shims only forward (`c_shims_only_forward`).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One mpirun at a time (2 cores).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn table() -> String {
    format!("{ROOT}/tuning-tables/vm-2core.yaml")
}

fn preload_lib() -> String {
    shared_libs()
        .join("libcolltune_preload.so")
        .display()
        .to_string()
}

/// Compiles `tests/c/NAME.c` (or `.f90` with mpif90) once per test run.
fn program(name: &str) -> PathBuf {
    let dir = scratch_dir();
    let exe = dir.join(name);
    if exe.exists() {
        return exe;
    }
    let c = format!("{ROOT}/tests/c/{name}.c");
    if Path::new(&c).exists() {
        mpicc(&c, &exe, &[&format!("-I{ROOT}/tests/c")]);
    } else {
        let f = format!("{ROOT}/tests/c/{name}.f90");
        let o = Command::new("mpif90")
            .args(["-O1", "-o"])
            .arg(&exe)
            .arg(&f)
            .output()
            .expect("mpif90");
        assert!(o.status.success(), "mpif90 {f} failed:\n{}", text(&o));
    }
    exe
}

fn scratch_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| scratch("dropin-regress")).clone()
}

fn have_mpif90() -> bool {
    Command::new("mpif90")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

struct Run {
    ok: bool,
    out: String,
    stdout: String,
    stderr: String,
}

/// `exe args` under mpirun on `ranks` ranks with `-x` settings, killed
/// after `limit` seconds (mpirun's own --timeout first).
fn mpi_job(ranks: usize, env: &[(&str, String)], exe: &Path, args: &[&str], limit: u64) -> Run {
    let mut c = mpirun(ranks);
    c.args(["--timeout", &limit.to_string()]);
    for (k, v) in env {
        c.args(["-x", &format!("{k}={v}")]);
    }
    c.arg(exe).args(args);
    let n = JOBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch_dir();
    let (o, e) = (dir.join(format!("{n}.out")), dir.join(format!("{n}.err")));
    c.stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap());
    let mut child = c
        .spawn()
        .unwrap_or_else(|err| panic!("could not run mpirun: {err} (see jobs/install-deps.sh)"));
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > Duration::from_secs(limit + 30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(&o).unwrap_or_default();
    let stderr = std::fs::read_to_string(&e).unwrap_or_default();
    Run {
        ok: status.is_some_and(|s| s.success()),
        out: format!(
            "{exe:?} {args:?} on {ranks} ranks, {env:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
        ),
        stdout,
        stderr,
    }
}

static JOBS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The interposition library and these settings.
fn preloaded<'a>(settings: &[(&'a str, &str)]) -> Vec<(&'a str, String)> {
    let mut v = vec![("LD_PRELOAD", preload_lib())];
    v.extend(settings.iter().map(|(k, val)| (*k, val.to_string())));
    v
}

fn assert_line(r: &Run, line: &str) {
    assert!(
        r.ok && r.stdout.lines().any(|l| l.trim() == line),
        "expected `{line}`:\n{}",
        r.out
    );
}

#[test]
fn mixed_datatypes_take_one_path() {
    let exe = program("regress_mixed");
    let _g = serial();
    let t = table();
    for (ranks, settings) in [
        (4, vec![("COLLTUNE_TABLE", t.as_str())]),
        (4, vec![("COLLTUNE_BCAST", "binomial")]),
        (
            3,
            vec![("COLLTUNE_BCAST", "pipeline:segment=4096@nonblocking")],
        ),
    ] {
        let r = mpi_job(ranks, &preloaded(&settings), &exe, &["40"], 90);
        assert_line(&r, "regress_mixed: ok");
    }
}

#[test]
fn permuted_datatypes_move_by_signature() {
    let exe = program("regress_permuted");
    let _g = serial();
    let t = table();
    for (ranks, settings) in [
        (4, vec![("COLLTUNE_TABLE", t.as_str())]),
        (3, vec![("COLLTUNE_BCAST", "binomial")]),
    ] {
        let r = mpi_job(ranks, &preloaded(&settings), &exe, &["40"], 90);
        assert_line(&r, "regress_permuted: ok");
    }
}

#[test]
fn two_gib_goes_to_the_library() {
    let exe = program("regress_2gib");
    let _g = serial();
    // no table: the library's collective; forced: colltune's choice, but
    // above 2^31 - 1 bytes the library again
    for settings in [vec![], vec![("COLLTUNE_BCAST", "pipeline:segment=65536")]] {
        let r = mpi_job(2, &preloaded(&settings), &exe, &["300"], 400);
        if r.stdout.contains("regress_2gib: skipped (memory)") {
            skip(
                "memory",
                "about 5 GiB of available memory needed for two 2 GiB buffers",
            );
            return;
        }
        assert_line(&r, "regress_2gib: ok");
        assert!(!r.stderr.contains("exceed one MPI message"), "{}", r.out);
    }
}

/// A script that runs `PROG` with the interposition library and
/// `COLLTUNE_NODES=VALUE` on world rank 1 only.
fn rank1_wrapper() -> PathBuf {
    let p = scratch_dir().join("rank1_nodes.sh");
    std::fs::write(
        &p,
        "#!/bin/sh\nv=$1; shift\nif [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then export COLLTUNE_NODES=$v; fi\nexport LD_PRELOAD=$PRE\nexec \"$@\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn failed_setup_is_agreed() {
    let exe = program("regress_setup");
    let exe_s = exe.display().to_string();
    let wrap = rank1_wrapper();
    let _g = serial();
    // Every rank fails to set up the halves (2 ranks) and the first three
    // ranks (3) against a 4-rank layout: the library's broadcast, and
    // errors never reach the error handler. The lowest rank of each such
    // communicator says why, each distinct warning once: world rank 0
    // warns twice (its half, the first three), rank 1 once (its half).
    let r = mpi_job(
        4,
        &preloaded(&[("COLLTUNE_BCAST", "binomial"), ("COLLTUNE_NODES", "4")]),
        &exe,
        &["40"],
        90,
    );
    assert_line(&r, "regress_setup: ok");
    for (rank, n) in [(0, 2), (1, 2), (0, 3)] {
        let w = format!(
            "rank {rank} could not set up a communicator of {n} ranks: COLLTUNE_NODES=4: it lays out 4 ranks, the communicator has {n}"
        );
        assert_eq!(
            r.stderr.matches(&w).count(),
            1,
            "`{w}` once (every distinct warning, once per process):\n{}",
            r.out
        );
    }
    assert_eq!(r.stderr.matches("could not set up").count(), 3, "{}", r.out);
    // Only rank 1 fails, on its half (a 4-rank layout) or already at
    // MPI_Init (a 3-rank layout): every rank must take the same path.
    for nodes in ["4", "3"] {
        let env = vec![
            ("PRE", preload_lib()),
            ("COLLTUNE_BCAST", "binomial".to_string()),
        ];
        let r = mpi_job(4, &env, &wrap, &[nodes, &exe_s, "40"], 90);
        assert_line(&r, "regress_setup: ok");
        assert!(
            r.stderr.contains(&format!("COLLTUNE_NODES={nodes}")),
            "rank 1 says why:\n{}",
            r.out
        );
    }
}

#[test]
fn errors_are_the_librarys() {
    let exe = program("regress_errors");
    let _g = serial();
    let r = mpi_job(
        3,
        &preloaded(&[("COLLTUNE_BCAST", "binomial")]),
        &exe,
        &["classes"],
        90,
    );
    assert_line(&r, "regress_errors: ok");
    // After MPI_Finalize: the library's own report, naming MPI_Bcast.
    let r = mpi_job(
        2,
        &preloaded(&[("COLLTUNE_BCAST", "binomial")]),
        &exe,
        &["finalize"],
        90,
    );
    assert!(
        r.stderr
            .contains("MPI_Bcast() function was called after MPI_FINALIZE"),
        "{}",
        r.out
    );
    assert!(!r.stderr.contains("MPI_Type_size"), "{}", r.out);
}

#[test]
fn internal_traffic_goes_through_pmpi() {
    let exe = program("regress_pmpi");
    let shim = scratch_dir().join("regress_pmpi_shim.so");
    mpicc(
        &format!("{ROOT}/tests/c/regress_pmpi_shim.c"),
        &shim,
        &["-shared", "-fPIC"],
    );
    let _g = serial();
    let t = table();
    for (ranks, extra) in [
        (3, ("COLLTUNE_BCAST", "binomial".to_string())),
        (4, ("COLLTUNE_TABLE", t.clone())),
    ] {
        let env = vec![
            (
                "LD_PRELOAD",
                format!("{}:{}", shim.display(), preload_lib()),
            ),
            extra,
        ];
        let r = mpi_job(ranks, &env, &exe, &[], 90);
        assert!(r.ok, "{}", r.out);
        for k in 0..ranks {
            assert!(
                r.stdout.contains(&format!("regress_pmpi: rank {k} ok")),
                "{}",
                r.out
            );
        }
        assert_eq!(
            r.stderr.matches("pmpi_shim: 0 calls").count(),
            ranks,
            "the profiling tool saw colltune's own calls:\n{}",
            r.out
        );
    }
}

#[test]
fn fortran_calls_go_through_colltune() {
    if !have_mpif90() {
        skip("fortran", "mpif90 not found (libopenmpi-dev provides it)");
        return;
    }
    for (name, sizes) in [
        ("regress_fortran", &[4000u64, 24, 2000][..]),
        ("regress_fortran_f08", &[4000, 2000][..]),
    ] {
        let exe = program(name);
        let _g = serial();
        let r = mpi_job(
            3,
            &preloaded(&[("COLLTUNE_BCAST", "binomial"), ("COLLTUNE_TRACE", "1")]),
            &exe,
            &[],
            90,
        );
        assert_line(&r, "case fortran_bcast: ok");
        for root in 0..3 {
            for n in sizes {
                let want = format!("bcast {n} B root {root}: binomial");
                assert!(
                    r.stderr.contains(&want),
                    "{name}: no trace `{want}` (the call did not go through colltune):\n{}",
                    r.out
                );
            }
        }
        // Handed to Open MPI's rules at MPI_Init (every size a library
        // rule), untraced: from the second call on, each goes from its
        // Fortran line straight to PMPI_Bcast (C handles, MPI_BOTTOM as
        // C's), every element still right. (mpif.h / `use mpi` and mpi_f08
        // reach the same entry: one program is enough here.)
        if name != "regress_fortran" {
            continue;
        }
        let r = mpi_job(
            3,
            &preloaded(&[("COLLTUNE_TABLE", &handoff_table(3))]),
            &exe,
            &[],
            90,
        );
        assert_line(&r, "case fortran_bcast: ok");
        assert!(!r.stderr.contains("warning"), "{name}:\n{}", r.out);
    }
}

/// A table whose one rule, for `ranks` ranks, gives every size to Open
/// MPI's linear broadcast: handed to its rules file at MPI_Init.
fn handoff_table(ranks: usize) -> String {
    let p = scratch_dir().join(format!("handoff-{ranks}.yaml"));
    std::fs::write(
        &p,
        format!(
            "schema: 1\nprovenance: {{host: test, mpi: Open MPI, date: now, command: tests/dropin_regressions.rs, colltune: 0.1.0, source: hand-written, sweep: {{mode: hand-written}}}}\nbcast:\n- ranks: {ranks}\n  ppn: {ranks}\n  nodes: 1\n  rules:\n  - {{min_bytes: 0, algorithm: ompi_tuned, params: {{algorithm: 1}}, execution: library}}\n"
        ),
    )
    .unwrap();
    p.display().to_string()
}

/// The bodies of the `extern "C" fn`s in `text`.
fn shim_bodies(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("extern \"C\" fn ") {
        let after = &rest[at + "extern \"C\" fn ".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        // the body: from the first `{` after the parameter list to its match
        let close = after.find(')').unwrap_or(0);
        let Some(open) = after[close..].find('{').map(|o| close + o) else {
            break;
        };
        let mut depth = 0;
        let mut end = open;
        for (i, ch) in after[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((name, after[open + 1..end].trim().to_string()));
        rest = &after[end..];
    }
    out
}

/// Issue 32: where the library cannot allocate `shm`'s shared window
/// (Open MPI without its shared-memory one-sided component,
/// `OMPI_MCA_osc=^sm`, as a full /dev/shm would), every rank agrees, the
/// library's broadcast runs instead, and each communicator's rank 0 warns
/// (once per process): every byte
/// arrives, from every root, on world and a split communicator, small
/// (ring) and segmented sizes. Before the fix the call failed with
/// MPI_Win_allocate_shared's error.
#[test]
fn refused_shared_window_falls_back_once() {
    let exe = program("plain_bcast");
    let _g = serial();
    let warning = "could not allocate colltune's shared-memory window";
    let sizes = ["1", "100", "1024", "1025", "70000", "300000"];
    for ranks in [3, 4] {
        let env = preloaded(&[("COLLTUNE_BCAST", "shm"), ("OMPI_MCA_osc", "^sm")]);
        let r = mpi_job(ranks, &env, &exe, &sizes, 120);
        assert_line(&r, "plain_bcast: all bytes correct");
        // Once per process that leads a communicator meeting it: world
        // rank 0 (world, then the even half) and, at 4 ranks, world rank 1
        // (the odd half; at 3 ranks that half is one rank, which shares
        // nothing and asks for no window).
        assert_eq!(
            r.stderr.matches(warning).count(),
            if ranks == 3 { 1 } else { 2 },
            "one warning per leading process:\n{}",
            r.out
        );
        assert!(
            r.stderr.contains("MPI_Win_allocate_shared")
                && r.stderr
                    .contains("the MPI library's broadcast runs instead"),
            "the warning names the call that failed and what runs instead:\n{}",
            r.out
        );
    }
    // With the window available, shm itself runs: no warning.
    let env = preloaded(&[("COLLTUNE_BCAST", "shm")]);
    let r = mpi_job(3, &env, &exe, &sizes, 120);
    assert_line(&r, "plain_bcast: all bytes correct");
    assert!(!r.stderr.contains(warning), "{}", r.out);
}

#[test]
fn c_shims_only_forward() {
    for file in ["preload/src/lib.rs", "capi/src/lib.rs"] {
        let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let bodies = shim_bodies(&code);
        assert!(!bodies.is_empty(), "{file}: no exported functions found");
        for (name, body) in bodies {
            let call = body.strip_prefix("unsafe {").unwrap_or(&body).trim();
            let single = call.starts_with("runtime::")
                && call.matches(';').count() <= 1
                && !call.contains("ffi::");
            assert!(
                single,
                "{file}: `{name}` must only forward to colltune_mpi::runtime, its body is:\n{body}"
            );
        }
    }
}
