//! A real Slurm (jobs/slurm/localtest.sh): a one-node controller and daemon
//! on localhost, the tuning job submitted twice with sbatch (the second
//! resumes and measures nothing), the table it produced. Skipped, saying
//! why, where Slurm cannot run.

mod common;
use common::*;
use std::process::Command;

#[test]
fn the_slurm_job_tunes_and_resumes() {
    let _ = shared_libs(); // a release build exists
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/jobs/slurm/localtest.sh");
    let o = run({
        let mut c = Command::new(script);
        c.env("OUT", scratch("slurm").join("out"));
        c
    });
    let t = text(&o);
    if o.status.code() == Some(77) {
        skip(
            "slurm",
            t.lines()
                .find_map(|l| l.strip_prefix("SKIPPED: "))
                .unwrap_or("Slurm cannot run here"),
        );
        return;
    }
    assert!(o.status.success(), "{t}");
    assert!(t.contains("slurm local test: ok"), "{t}");
    assert!(
        t.contains("bcast on 4 ranks (1 node(s) x 4 per node)"),
        "{t}"
    );
    assert!(t.contains("0 points measured"), "{t}");
}
