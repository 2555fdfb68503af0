//! `colltune verify` under mpirun: every algorithm x execution x root in
//! {0, middle, last} x sizes {0, 1, 7, 64K - 1, 64K + 1, 1 MiB + 3}, every
//! byte checked, on 1, 2, 3, 4, 5, 7 and 8 ranks; node-aware algorithms on
//! equal and unequal node layouts.

mod common;
use common::*;

fn verify(ranks: usize, nodes: Option<&str>, extra: &[&str]) {
    let mut c = mpirun(ranks);
    if let Some(n) = nodes {
        c.args(["-x", &format!("COLLTUNE_NODES={n}")]);
    }
    c.arg(colltune()).arg("verify").args(extra);
    let o = run(c);
    let out = text(&o);
    assert!(o.status.success(), "verify on {ranks} ranks failed:\n{out}");
    assert!(out.contains("all correct"), "{out}");
    assert!(!out.contains("FAILED"), "{out}");
}

#[test]
fn verify_1_rank() {
    verify(1, None, &[]);
}

#[test]
fn verify_2_ranks() {
    verify(2, None, &[]);
}

#[test]
fn verify_3_ranks() {
    verify(3, None, &[]);
}

#[test]
fn verify_4_ranks() {
    verify(4, None, &[]);
}

#[test]
fn verify_5_ranks() {
    verify(5, None, &[]);
}

#[test]
fn verify_7_ranks() {
    verify(7, None, &[]);
}

#[test]
fn verify_8_ranks() {
    verify(8, None, &[]);
}

/// Node-aware algorithms over pretend node layouts (COLLTUNE_NODES):
/// equal (2x2, 2x4) and unequal (3+2, 3+2+2) ranks per node.
#[test]
fn verify_hierarchical_layouts() {
    for (ranks, layout) in [(4, "2x2"), (5, "3+2"), (7, "3+2+2"), (8, "2x4")] {
        verify(
            ranks,
            Some(layout),
            &[
                "--collective",
                "bcast",
                "-a",
                "hierarchical",
                "-a",
                "hierarchical:inter=pipeline(segment=8K),intra=linear",
                "-a",
                "hierarchical:inter=scatter_allgather,intra=chain(fanout=2)",
                "-a",
                "hierarchical:inter=bine_bdw,intra=bine",
                "-a",
                "hierarchical:inter=circulant(segment=8K),intra=linear",
            ],
        );
    }
}

/// The check itself can fail: a flipped byte is reported, naming the case,
/// and the exit code is 1.
#[test]
fn verify_reports_a_corrupted_byte() {
    let mut c = mpirun(3);
    c.arg(colltune()).args([
        "verify",
        "-a",
        "binomial",
        "-a",
        "sendrecv",
        "--inject-fault",
        "1",
    ]);
    let o = run(c);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAILED  bcast binomial:segment=0 blocking root 0 1 bytes"),
        "{out}"
    );
    assert!(out.contains("rank 1: byte 0"), "{out}");
    assert!(
        out.contains("FAILED  swap sendrecv:pairing=neighbors"),
        "{out}"
    );
}

/// Bad arguments are refused before MPI starts, with exit code 2.
#[test]
fn verify_refuses_unknown_algorithms() {
    let o = run({
        let mut c = std::process::Command::new(colltune());
        c.args(["verify", "-a", "quantum"]);
        c
    });
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("unknown bcast algorithm `quantum`"),
        "{}",
        text(&o)
    );
}
