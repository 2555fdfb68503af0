//! The direct path of the runtime selector (issue 16): trees that fit one
//! segment (linear, binomial, k-nomial, binary, chain and pipeline below
//! their segment size) run as plain sends and receives, without a
//! schedule. `tests/c/direct_path.c` checks every byte (and guard bytes
//! after the data) from every root, counts 0, 1, odd and large, in bytes,
//! ints and a strided vector packed at the root, on the world, a duplicate
//! and a reversed split; here under the preload with each tree forced, on
//! 2 to 5 ranks (non-powers of two included), and the trace must show the
//! direct path taken (and, for segmented trees above their segment, the
//! general executor).

mod common;
use common::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn direct_path_moves_every_byte() {
    let libs = shared_libs();
    let dir = scratch("direct-path");
    let exe = dir.join("direct_path");
    mpicc(&format!("{ROOT}/tests/c/direct_path.c"), &exe, &[]);
    let pre = libs.join("libcolltune_preload.so");
    let forced = [
        ("linear", false),
        ("binomial", false),
        ("knomial:radix=3", false),
        ("knomial:radix=4@nonblocking", false),
        ("binary", false),
        // 300001 bytes exceed these segments: the general executor too.
        ("pipeline:segment=4096", true),
        ("chain:fanout=2,segment=65536@nonblocking", true),
    ];
    let mut failures = Vec::new();
    for ranks in 2..=5 {
        for (f, general_too) in forced {
            let mut c = mpirun(ranks);
            c.args(["-x", &format!("LD_PRELOAD={}", pre.display())])
                .args(["-x", &format!("COLLTUNE_BCAST={f}")])
                .args(["-x", "COLLTUNE_TRACE=1"])
                .arg(&exe);
            let o = run(c);
            let out = text(&o);
            let lines = |direct: bool| {
                out.lines()
                    .filter(|l| l.contains("colltune trace:") && l.contains(" bcast "))
                    .filter(|l| l.contains("; direct path") == direct)
                    .count()
            };
            let ok = o.status.success()
                && out.contains("direct_path: all bytes correct")
                && lines(true) > 0
                && (lines(false) > 0) == general_too;
            if !ok {
                failures.push(format!(
                    "{ranks} ranks, COLLTUNE_BCAST={f}: exit {:?}, {} direct and {} general calls traced\n{}",
                    o.status.code(),
                    lines(true),
                    lines(false),
                    out.lines().filter(|l| !l.contains("colltune trace:")).collect::<Vec<_>>().join("\n")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
