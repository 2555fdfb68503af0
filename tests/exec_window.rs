//! The dataflow execution bounds the requests it keeps in flight per
//! channel (`transport::mpi::exec::window`); an op beyond its channel's
//! window waits for one of the channel's requests to complete, while other
//! channels' ops go ahead. With a window of one request
//! (`COLLTUNE_DATAFLOW_WINDOW=1`, every hold-back exercised), every
//! algorithm must still deliver every byte, without deadlock, and ready
//! sends must still find their receives posted: `colltune verify`
//! (nonblocking) on several rank counts and a node layout, with segments
//! small enough that every segmented variant has many of them.

mod common;
use common::*;

fn verify_window_1(ranks: usize, nodes: Option<&str>) {
    let mut c = mpirun(ranks);
    c.args(["-x", "COLLTUNE_DATAFLOW_WINDOW=1"]);
    if let Some(n) = nodes {
        c.args(["-x", &format!("COLLTUNE_NODES={n}")]);
    }
    c.arg(colltune()).args([
        "verify",
        "--executions",
        "nonblocking",
        "--segment",
        "4K",
        "--timeout",
        "60",
    ]);
    let o = run(c);
    let out = text(&o);
    assert!(
        o.status.success(),
        "verify with a window of 1 on {ranks} ranks ({nodes:?}) failed:\n{out}"
    );
    assert!(out.contains("all correct"), "{out}");
}

#[test]
fn a_window_of_one_request_per_channel_is_correct() {
    verify_window_1(2, None);
    verify_window_1(5, None);
    verify_window_1(7, Some("3+2+2"));
}
