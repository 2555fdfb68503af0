//! The emulated cluster (jobs/emucluster): node-aware algorithms verified
//! across emulated nodes (2 and 3 nodes, equal and unequal ranks per node),
//! and a short tune whose table carries the node count in its keys. Needs
//! root and network namespaces; skipped, saying why, where they are missing.

mod common;
use common::*;
use std::process::Command;
use std::sync::Mutex;

/// One emulated cluster at a time.
static CLUSTER: Mutex<()> = Mutex::new(());

fn emu() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/jobs/emucluster/emucluster").into()
}

/// Whether this machine can host an emulated cluster; why not otherwise.
/// Probed once per test binary (tests run in parallel threads), under a
/// name of this process's own.
fn unavailable() -> Option<String> {
    static PROBED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PROBED.get_or_init(probe).clone()
}

fn probe() -> Option<String> {
    if unsafe_uid() != 0 {
        return Some("not root".into());
    }
    let name = format!("ctprobe{}", std::process::id());
    let probe = Command::new("ip").args(["netns", "add", &name]).output();
    match probe {
        Ok(o) if o.status.success() => {
            let _ = Command::new("ip").args(["netns", "del", &name]).status();
            None
        }
        Ok(o) => Some(format!(
            "ip netns add fails: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("no ip command: {e}")),
    }
}

fn unsafe_uid() -> u32 {
    Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(1)
}

struct Up;

impl Up {
    fn new(nodes: usize) -> Up {
        let o = run({
            let mut c = Command::new(emu());
            c.arg("up").env("NODES", nodes.to_string());
            c
        });
        assert!(o.status.success(), "emucluster up: {}", text(&o));
        Up
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = Command::new(emu()).arg("down").output();
    }
}

fn emurun(hosts: &str, np: usize, args: &[&str]) -> std::process::Output {
    run({
        let mut c = Command::new(emu());
        c.args([
            "run",
            "-np",
            &np.to_string(),
            "--host",
            hosts,
            "--timeout",
            "600",
            colltune(),
        ])
        .args(args);
        c
    })
}

const HIER: &[&str] = &[
    "verify",
    "--collective",
    "bcast",
    "-a",
    "hierarchical",
    "-a",
    "hierarchical:inter=linear,intra=linear",
    "-a",
    "hierarchical:inter=pipeline(segment=16K),intra=knomial(radix=3)",
    "-a",
    "hierarchical:inter=scatter_allgather_ring,intra=binomial",
    "--sizes",
    "0,1,7,4095,65537,1048579",
];

#[test]
fn hierarchical_across_emulated_nodes() {
    if let Some(why) = unavailable() {
        skip("emucluster", &format!("no emulated cluster here ({why})"));
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    {
        let _c = Up::new(2);
        for (hosts, np, layout) in [
            ("ctnode1:2,ctnode2:2", 4, "2x2"),
            ("ctnode1:3,ctnode2:2", 5, "3+2"),
        ] {
            let o = emurun(hosts, np, HIER);
            let t = text(&o);
            assert!(
                o.status.success() && t.contains("all correct"),
                "{layout}: {t}"
            );
            // the node map found the emulated nodes by itself
            assert!(t.contains(&format!("nodes {layout}")), "{layout}: {t}");
        }
    }
    let _c = Up::new(3);
    let o = emurun("ctnode1:2,ctnode2:2,ctnode3:1", 5, HIER);
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("all correct") && t.contains("nodes 2+2+1"),
        "{t}"
    );
}

#[test]
fn a_tune_on_emulated_nodes_keys_its_table_by_node_count() {
    if let Some(why) = unavailable() {
        skip("emucluster", &format!("no emulated cluster here ({why})"));
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let _c = Up::new(2);
    let d = scratch("emutune");
    let (csv, table) = (d.join("raw.csv"), d.join("table.yaml"));
    let o = emurun(
        "ctnode1:2,ctnode2:2",
        4,
        &[
            "tune",
            "--collective",
            "bcast",
            "--sizes",
            "1,64K",
            "--budget-ms",
            "5",
            "--min-reps",
            "3",
            "--max-reps",
            "20",
            "--csv",
            csv.to_str().unwrap(),
            "--table",
            table.to_str().unwrap(),
        ]
        .iter()
        .chain(ONE_RUN_EACH)
        .copied()
        .collect::<Vec<_>>(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let t = colltune_core::tables::table::load(&table).unwrap();
    assert_eq!(
        (t.bcast[0].ranks, t.bcast[0].ppn, t.bcast[0].nodes),
        (4, 2, 2)
    );
    // node-aware candidates were measured
    let samples = colltune_core::measure::record::read(&csv).unwrap();
    assert!(samples
        .iter()
        .any(|s| s.algorithm == "hierarchical" && s.nodes == 2));
}
