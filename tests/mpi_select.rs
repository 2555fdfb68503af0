//! The runtime selector through its three faces (Rust API, C ABI,
//! LD_PRELOAD interposition) under mpirun: data identical to MPI_Bcast for
//! every rule of a table that routes size ranges to every algorithm; bad
//! tables warn once and fall back (or stop the job with COLLTUNE_STRICT=1);
//! forced choices and traces.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// Range boundaries; rule k covers [B[k], B[k+1] - 1], the last is open.
const B: &[u64] = &[
    0, 1, 2, 8, 100, 1000, 3000, 5000, 10000, 40000, 70000, 150000, 300000, 600000, 1000000,
];

const BCAST: &[&str] = &[
    "linear",
    "binomial",
    "knomial:radix=3",
    "binary:segment=4096",
    "split_binary",
    "chain:fanout=2,segment=8192",
    "pipeline:segment=16384",
    "scatter_allgather",
    "scatter_allgather_ring",
    "hierarchical:inter=pipeline(segment=4096),intra=linear",
    "knomial:radix=5,segment=65536",
    "split_binary:segment=32768",
    "binomial:segment=65536",
    "pipeline:segment=0",
    "linear",
];

const SWAP: &[&str] = &[
    "ordered",
    "sendrecv",
    "isend_recv",
    "irecv_send",
    "isend_irecv",
    "rsend",
    "put_fence",
    "put_pscw",
];

/// YAML rules for one shape: every range routed to the next algorithm,
/// executions alternating.
fn rules(algos: &[&str]) -> String {
    let mut out = String::new();
    for (k, &min) in B.iter().enumerate() {
        let spec = colltune_algorithms::AlgoSpec::parse(algos[k % algos.len()]).unwrap();
        let (name, params) = (spec.name.clone(), spec.params.clone());
        out += &format!("  - min_bytes: {min}\n");
        if let Some(next) = B.get(k + 1) {
            out += &format!("    max_bytes: {}\n", next - 1);
        }
        out += &format!("    algorithm: {name}\n");
        if !params.is_empty() {
            out += "    params:\n";
            for (p, v) in params {
                out += &format!("      {p}: \"{v}\"\n");
            }
        }
        out += &format!(
            "    execution: {}\n",
            if k % 2 == 0 {
                "blocking"
            } else {
                "nonblocking"
            }
        );
    }
    out
}

/// A table covering communicators of these sizes (one node each).
fn coverage_table(dir: &Path, sizes: &[usize]) -> PathBuf {
    let mut y = String::from(
        "schema: 1\nprovenance:\n  host: test\n  mpi: any\n  date: 2026-11-30T00:00:00Z\n  command: test\n  colltune: test\n  source: test\n  sweep:\n    mode: built\n",
    );
    for (coll, algos) in [("bcast", BCAST), ("swap", SWAP)] {
        y += &format!("{coll}:\n");
        for &n in sizes {
            y += &format!(
                "- ranks: {n}\n  ppn: {n}\n  nodes: 1\n  rules:\n{}",
                rules(algos)
            );
        }
    }
    let p = dir.join("coverage.yaml");
    std::fs::write(&p, y).unwrap();
    colltune_core::tables::table::load(&p)
        .unwrap_or_else(|e| panic!("coverage table invalid: {e}"));
    p
}

/// Sizes inside every range: each boundary and the size before the next.
fn test_sizes() -> Vec<String> {
    let mut v: Vec<u64> = B
        .iter()
        .copied()
        .chain(B.iter().skip(1).map(|b| b - 1))
        .collect();
    v.push(1_048_579);
    v.sort_unstable();
    v.dedup();
    v.iter().map(|s| s.to_string()).collect()
}

/// Distinct (algorithm, rule) pairs reported (by `ran:` or trace lines).
fn distinct_table_rules(out: &str) -> usize {
    let mut rules: Vec<(&str, &str)> = out
        .lines()
        .filter_map(|l| {
            let at = l.find("(table rule ")?;
            let label = l[..at].rsplit(": ").next()?;
            let rule = l[at..].split(" for ").next()?;
            Some((label, rule))
        })
        .collect();
    rules.sort_unstable();
    rules.dedup();
    rules.len()
}

#[test]
fn rust_api_every_rule_every_byte() {
    let dir = scratch("sel-rust");
    let table = coverage_table(&dir, &[3, 4, 5]);
    let exe = shared_libs().join("examples/select_check");
    assert!(
        exe.exists(),
        "{} missing: cargo builds examples with the tests",
        exe.display()
    );
    for ranks in [3, 4, 5] {
        let mut c = mpirun(ranks);
        c.args(["-x", &format!("COLLTUNE_TABLE={}", table.display())])
            .arg(&exe)
            .args(test_sizes());
        let o = run(c);
        let out = text(&o);
        assert!(
            o.status.success() && out.contains("rust API: all bytes correct"),
            "{ranks} ranks:\n{out}"
        );
        // every bcast rule and every swap rule ran
        assert_eq!(
            distinct_table_rules(&out),
            2 * B.len(),
            "{ranks} ranks:\n{out}"
        );
    }
}

#[test]
fn c_abi_every_rule_every_byte() {
    let libs = shared_libs();
    let dir = scratch("sel-c");
    let table = coverage_table(&dir, &[3, 5]);
    let exe = dir.join("bcast_check");
    let inc = format!("-I{}/capi/include", env!("CARGO_MANIFEST_DIR"));
    let lib = format!("-L{}", libs.display());
    let rpath = format!("-Wl,-rpath,{}", libs.display());
    mpicc(
        concat!(env!("CARGO_MANIFEST_DIR"), "/capi/examples/bcast_check.c"),
        &exe,
        &[&inc, &lib, "-lcolltune", &rpath],
    );
    for ranks in [3, 5] {
        let mut c = mpirun(ranks);
        c.args([
            "-x",
            &format!("COLLTUNE_TABLE={}", table.display()),
            "-x",
            "COLLTUNE_TRACE=1",
        ])
        .arg(&exe)
        .args(test_sizes());
        let o = run(c);
        let out = text(&o);
        assert!(
            o.status.success() && out.contains("colltune C ABI: all bytes correct"),
            "{ranks} ranks:\n{out}"
        );
        assert_eq!(
            distinct_table_rules(&out),
            2 * B.len(),
            "{ranks} ranks:\n{out}"
        );
    }
}

fn plain_program(dir: &Path) -> PathBuf {
    let exe = dir.join("plain_bcast");
    mpicc(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/plain_bcast.c"),
        &exe,
        &[],
    );
    exe
}

fn preloaded(ranks: usize, exe: &Path, env: &[(&str, String)], sizes: &[String]) -> (bool, String) {
    let libs = shared_libs();
    let mut c = mpirun(ranks);
    c.args([
        "-x",
        &format!(
            "LD_PRELOAD={}",
            libs.join("libcolltune_preload.so").display()
        ),
    ]);
    for (k, v) in env {
        c.args(["-x", &format!("{k}={v}")]);
    }
    c.arg(exe).args(sizes);
    let o = run(c);
    (o.status.success(), text(&o))
}

#[test]
fn interposition_routes_an_unmodified_program() {
    let dir = scratch("sel-preload");
    // world shapes and the split halves' shapes
    let table = coverage_table(&dir, &[2, 3, 4, 5]);
    let exe = plain_program(&dir);
    for ranks in [4, 5] {
        let (ok, out) = preloaded(
            ranks,
            &exe,
            &[
                ("COLLTUNE_TABLE", table.display().to_string()),
                ("COLLTUNE_TRACE", "1".into()),
            ],
            &test_sizes(),
        );
        assert!(
            ok && out.contains("plain_bcast: all bytes correct"),
            "{ranks} ranks:\n{out}"
        );
        assert_eq!(distinct_table_rules(&out), B.len(), "{ranks} ranks:\n{out}");
        assert!(!out.contains("warning"), "{out}");
    }
}

#[test]
fn bad_tables_warn_once_and_fall_back() {
    let dir = scratch("sel-bad");
    let exe = plain_program(&dir);
    let good = std::fs::read_to_string(coverage_table(&dir, &[3])).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("missing", String::new(), "cannot read"),
        ("syntax", "schema: 1\nbcast: [\n".into(), ":3:"),
        (
            "schema",
            good.replace("schema: 1", "schema: 9"),
            "schema version 9",
        ),
        (
            "algorithm",
            good.replacen("algorithm: binomial", "algorithm: binomail", 1),
            "unknown bcast algorithm `binomail`",
        ),
        (
            "gap",
            good.replacen("min_bytes: 2\n", "min_bytes: 3\n", 1),
            "covered by no rule",
        ),
    ];
    for (name, text_, needle) in cases {
        let path = dir.join(format!("{name}.yaml"));
        if name != "missing" {
            std::fs::write(&path, &text_).unwrap();
        }
        let env = vec![("COLLTUNE_TABLE", path.display().to_string())];
        let (ok, out) = preloaded(3, &exe, &env, &["1".into(), "3000".into(), "70000".into()]);
        assert!(
            ok && out.contains("plain_bcast: all bytes correct"),
            "{name}:\n{out}"
        );
        assert_eq!(
            out.matches("colltune: warning").count(),
            1,
            "{name}: one warning:\n{out}"
        );
        assert!(
            out.contains(&path.display().to_string()) && out.contains(needle),
            "{name}:\n{out}"
        );
        if name != "missing" && name != "syntax" {
            assert!(
                out.contains(&format!("{}:", path.display())),
                "{name}: file:line\n{out}"
            );
        }
        // strict: the job stops, naming the problem
        let mut env = env.clone();
        env.push(("COLLTUNE_STRICT", "1".into()));
        let (ok, out) = preloaded(3, &exe, &env, &["1".into()]);
        assert!(!ok, "{name}: strict must fail:\n{out}");
        assert!(
            out.contains("COLLTUNE_STRICT=1") && out.contains(needle),
            "{name}:\n{out}"
        );
    }
}

#[test]
fn forced_choices_and_bad_settings() {
    let dir = scratch("sel-forced");
    let exe = plain_program(&dir);
    let (ok, out) = preloaded(
        3,
        &exe,
        &[
            (
                "COLLTUNE_BCAST",
                "chain:fanout=2,segment=4096@nonblocking".into(),
            ),
            ("COLLTUNE_TRACE", "1".into()),
        ],
        &["1".into(), "100000".into()],
    );
    assert!(ok && out.contains("all bytes correct"), "{out}");
    assert!(
        out.contains("chain:fanout=2,segment=4096 [nonblocking] (forced by the environment)"),
        "{out}"
    );
    // a bad forced value: one warning, the library's collectives, right data
    let (ok, out) = preloaded(
        3,
        &exe,
        &[
            ("COLLTUNE_BCAST", "warp_drive".into()),
            ("COLLTUNE_TRACE", "1".into()),
        ],
        &["100".into()],
    );
    assert!(ok && out.contains("all bytes correct"), "{out}");
    assert_eq!(out.matches("colltune: warning").count(), 1, "{out}");
    assert!(
        out.contains("COLLTUNE_BCAST=warp_drive")
            && out.contains("the MPI library's own collective"),
        "{out}"
    );
}

#[test]
fn a_table_with_rules_per_placement_runs_the_communicators_own() {
    // Two emulated nodes of 2 ranks: in blocks (--map-by core) or dealt
    // round-robin (--map-by node); the table has an entry for each.
    let dir = scratch("sel-placed");
    let entry = |placement: &str, algorithm: &str| {
        format!("- ranks: 4\n  ppn: 2\n  nodes: 2\n  placement: {placement}\n  rules:\n  - min_bytes: 0\n    algorithm: {algorithm}\n    execution: blocking\n")
    };
    let y = format!(
        "schema: 2\nprovenance:\n  host: test\n  mpi: any\n  date: 2026-12-02T00:00:00Z\n  command: test\n  colltune: test\n  source: test\n  sweep:\n    mode: built\nbcast:\n{}{}",
        entry("block", "binomial"),
        entry("cyclic", "linear")
    );
    let table = dir.join("placed.yaml");
    std::fs::write(&table, y).unwrap();
    let exe = shared_libs().join("examples/select_check");
    for (nodes, placed, runs) in [
        ("2x2", "placed block", "binomial"),
        ("0,1,0,1", "placed cyclic", "linear"),
    ] {
        let mut c = mpirun(4);
        c.args([
            "-x",
            &format!("COLLTUNE_TABLE={}", table.display()),
            "-x",
            &format!("COLLTUNE_NODES={nodes}"),
            "-x",
            "COLLTUNE_TRACE=1",
        ])
        .arg(&exe)
        .args(["1", "4099"]);
        let o = run(c);
        let out = text(&o);
        assert!(
            o.status.success() && out.contains("rust API: all bytes correct"),
            "{nodes}:\n{out}"
        );
        let bcasts: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("colltune trace:") && l.contains(" bcast "))
            .collect();
        assert!(!bcasts.is_empty(), "{nodes}:\n{out}");
        for l in &bcasts {
            assert!(
                l.contains(placed)
                    && l.contains(&format!(": {runs}"))
                    && l.contains("[blocking] (table rule 1 "),
                "{nodes}: {l}"
            );
        }
    }
}

#[test]
fn shm_straight_paths_mixed_with_the_segmented_one() {
    // `shm`'s straight paths (the small ring; one slot of the ring) and the
    // general executor's segmented ring, back to back on one window, every
    // root, on the world and a split communicator: every byte checked.
    let dir = scratch("sel-shm");
    let exe = plain_program(&dir);
    let sizes: Vec<String> = [1, 1024, 1025, 4096, 4097, 65536, 65537, 300000, 7, 2048]
        .map(|s: u64| s.to_string())
        .into();
    for ranks in [3, 4] {
        // Default segment (64 KiB, 4 slots): one slot up to 64 KiB; the
        // whole message in one slot; 4 KiB slots: one up to 4 KiB.
        for forced in ["shm", "shm:segment=0,slots=2", "shm:segment=4096,slots=2"] {
            let (ok, out) = preloaded(ranks, &exe, &[("COLLTUNE_BCAST", forced.into())], &sizes);
            assert!(
                ok && out.contains("all bytes correct"),
                "{ranks} ranks, {forced}:\n{out}"
            );
        }
    }
}
