//! Helpers for tests that run colltune under mpirun.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Path of the colltune binary built for these tests.
pub fn colltune() -> &'static str {
    env!("CARGO_BIN_EXE_colltune")
}

/// `mpirun` with the flags DEVELOPERS.md asks for on this machine kind:
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
