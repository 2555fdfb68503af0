//! Helpers for tests that run colltune under mpirun.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Path of the colltune binary built for these tests.
pub fn colltune() -> &'static str {
    env!("CARGO_BIN_EXE_colltune")
}

/// `tune` arguments for tests whose point is not the decision (keys,
/// resume, a job's table): one screening run and one full run per
/// candidate, no further rounds at open sizes. With the default runs over
/// every candidate such tunes took up to 10 minutes on CI's 2 cores.
pub const ONE_RUN_EACH: &[&str] = &[
    "--screen-runs",
    "1",
    "--full-runs",
    "1",
    "--extra-rounds",
    "0",
];

/// `mpirun` with the flags of jobs/mpirun-flags.sh for this machine kind:
/// oversubscribed ranks pinned to cores, idle ranks yielding, and the
/// copy-in/copy-out shared-memory path (CMA is slower on these VMs).
pub fn mpirun(ranks: usize) -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .args(["-n", &ranks.to_string()])
        .args([
            "--oversubscribe",
            "--map-by",
            "core",
            "--bind-to",
            "core:overload-allowed",
        ])
        .args(["--mca", "mpi_yield_when_idle", "1"])
        .args(["--mca", "btl_vader_single_copy_mechanism", "none"])
        // A hung test fails instead of hanging CI.
        .args(["--timeout", "600"]);
    c
}

/// Runs and returns output; panics with both streams if it could not start.
pub fn run(mut c: Command) -> Output {
    c.output().unwrap_or_else(|e| {
        panic!("could not run {c:?}: {e} (is Open MPI installed? see jobs/install-deps.sh)")
    })
}

pub fn text(o: &Output) -> String {
    format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The release directory holding the colltune binary and shared libraries.
pub fn release_dir() -> std::path::PathBuf {
    std::path::Path::new(colltune())
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds the C ABI and interposition libraries and the Rust API example (a
/// no-op when up to date; `cargo test` alone does not build cdylibs, nor
/// examples when given a test filter) and returns the release dir.
pub fn shared_libs() -> std::path::PathBuf {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let profile = if release_dir().ends_with("release") {
            "--release"
        } else {
            "--quiet"
        };
        // Two builds: `--example` would apply to every package named.
        for args in [
            &["-p", "colltune-capi", "-p", "colltune-preload"][..],
            &["-p", "colltune", "--example", "select_check"][..],
        ] {
            let st = Command::new(&cargo)
                .args(["build", profile])
                .args(args)
                .status()
                .expect("run cargo build for the shared libraries");
            assert!(st.success(), "cargo build {args:?} failed");
        }
    });
    release_dir()
}

/// Compiles a C program with mpicc into `out`.
pub fn mpicc(src: &str, out: &std::path::Path, extra: &[&str]) {
    let o = Command::new("mpicc")
        .args(["-O2", "-o"])
        .arg(out)
        .arg(src)
        .args(extra)
        .output()
        .expect("mpicc (is libopenmpi-dev installed? see jobs/install-deps.sh)");
    assert!(o.status.success(), "mpicc {src} failed:\n{}", text(&o));
}

/// A scratch directory for one test.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("colltune-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Says why a test cannot run here and returns, so the caller can return:
/// a skip is loud, and where the environment promises the feature (its name
/// in `COLLTUNE_REQUIRE`, a comma-separated list, or `all`; `jobs/test.sh`
/// sets it in CI to what CI installs) it fails instead, so a test expected
/// to run can never pass by not running.
pub fn skip(feature: &str, why: &str) {
    let required = std::env::var("COLLTUNE_REQUIRE").unwrap_or_default();
    if required
        .split(',')
        .map(str::trim)
        .any(|r| r == feature || r == "all")
    {
        panic!("`{feature}` is required here (COLLTUNE_REQUIRE={required}) but cannot run: {why}");
    }
    eprintln!("SKIPPED ({feature}): {why}");
}
