//! The MPI library's own algorithms as table choices (`algorithm:
//! ompi_tuned`), under mpirun: an unmodified C program under the drop-in
//! with a table whose rules force Open MPI coll/tuned algorithms checks every
//! byte from every root on 2, 3 and 4 ranks (the world and a split
//! communicator), with the rules handed to Open MPI's own rules file at
//! `MPI_Init` (the handoff) and without (`COLLTUNE_HANDOFF=0`: forced
//! duplicates); the trace shows which path was taken; ranks that handed Open
//! MPI different rules stop with a message instead of hanging; the forcing
//! variables are back at Open MPI's defaults afterwards; with forcing
//! unavailable (dynamic rules off) the same rules run as colltune's own
//! algorithms of the same family, said in the trace, every byte right; and
//! `tune` measures the library's algorithms as candidates (and leaves them
//! out when told).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Sizes on both sides of every rule boundary of [`table`].
const SIZES: &[&str] = &[
    "0", "1", "1023", "1024", "4095", "4096", "65535", "65536", "300001",
];

/// A table for 1-4 ranks on one node: Open MPI's k-nomial below 1 KiB,
/// colltune's binomial to 4 KiB, Open MPI's pipeline (1 KiB segments) to
/// 64 KiB, its split-binary tree (8 KiB segments) above.
fn table(dir: &Path) -> PathBuf {
    let rules = "  rules:
  - min_bytes: 0
    max_bytes: 1023
    algorithm: ompi_tuned
    params:
      algorithm: 7
      segment: 0
    execution: library
  - min_bytes: 1024
    max_bytes: 4095
    algorithm: binomial
    execution: blocking
  - min_bytes: 4096
    max_bytes: 65535
    algorithm: ompi_tuned
    params:
      algorithm: pipeline
      segment: 1024
    execution: library
  - min_bytes: 65536
    algorithm: ompi_tuned
    params:
      algorithm: 4
      segment: 8K
    execution: library
";
    let mut t = String::from(
        "schema: 1
provenance:
  host: test
  mpi: Open MPI
  date: 2026-12-01T00:00:00Z
  command: tests/mpi_library.rs
  colltune: 0.1.0
  source: measured
  sweep:
    mode: built
bcast:
",
    );
    for n in 1..=4 {
        t += &format!("- ranks: {n}\n  ppn: {n}\n  nodes: 1\n{rules}");
    }
    let p = dir.join("library.yaml");
    std::fs::write(&p, t).unwrap();
    p
}

fn program(dir: &Path) -> PathBuf {
    let exe = dir.join("library_bcast");
    mpicc(&format!("{ROOT}/tests/c/library_bcast.c"), &exe, &[]);
    exe
}

fn job(ranks: usize, exe: &Path, env: &[(&str, String)]) -> (bool, String, String) {
    let mut c = mpirun(ranks);
    for (k, v) in env {
        c.args(["-x", &format!("{k}={v}")]);
    }
    c.arg(exe).args(SIZES);
    let o = run(c);
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn is_open_mpi() -> bool {
    Command::new("ompi_info")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A test's set-up on Open MPI: its scratch folder `name`, the built
/// libraries' folder, the test program and the table there; None
/// (skipped, and said so) without Open MPI.
fn open_mpi_setup(name: &str) -> Option<(PathBuf, PathBuf, PathBuf, PathBuf)> {
    if !is_open_mpi() {
        skip(
            "openmpi",
            "ompi_info not found: ompi_tuned rules need Open MPI",
        );
        return None;
    }
    let (dir, libs) = (scratch(name), shared_libs());
    let (exe, table) = (program(&dir), table(&dir));
    Some((dir, libs, exe, table))
}

#[test]
fn forced_library_algorithms_move_every_byte_under_the_preload() {
    let Some((_, libs, exe, tbl)) = open_mpi_setup("library") else {
        return;
    };
    for ranks in [2, 3, 4] {
        let env = [
            (
                "LD_PRELOAD",
                libs.join("libcolltune_preload.so").display().to_string(),
            ),
            ("COLLTUNE_TABLE", tbl.display().to_string()),
            ("COLLTUNE_TRACE", "all".into()),
            // The duplicates: not the rules file (see the handoff test)
            ("COLLTUNE_HANDOFF", "0".into()),
        ];
        let (ok, out, err) = job(ranks, &exe, &env);
        let all = format!("{ranks} ranks\n--- stdout ---\n{out}\n--- stderr ---\n{err}");
        assert!(ok, "{all}");
        assert!(out.contains("library_bcast: all bytes correct"), "{all}");
        // The forcing variables are Open MPI's defaults again.
        assert!(out.contains("cvars: algorithm=0 segment=0"), "{all}");
        assert!(!err.contains("warning"), "{all}");
        assert!(!err.contains("unavailable"), "{all}");
        // Every rank traced each rule's path: the forced algorithms on
        // their duplicates, colltune's binomial in between.
        let traced = |size: &str, what: &str| {
            err.lines()
                .filter(|l| l.contains(&format!(" bcast {size} B ")) && l.contains(what))
                .count()
        };
        let forced = "forced on a duplicate communicator";
        for (size, what) in [
            (
                "0",
                "ompi_tuned:algorithm=7,name=knomial,segment=0 [library]",
            ),
            (
                "1023",
                "ompi_tuned:algorithm=7,name=knomial,segment=0 [library]",
            ),
            (
                "4096",
                "ompi_tuned:algorithm=3,name=pipeline,segment=1024 [library]",
            ),
            (
                "65536",
                "ompi_tuned:algorithm=4,name=split_binary_tree,segment=8192 [library]",
            ),
            (
                "300001",
                "ompi_tuned:algorithm=4,name=split_binary_tree,segment=8192 [library]",
            ),
        ] {
            // World: every rank, every root; the split halves likewise.
            let halves = ranks.div_ceil(2).pow(2) + (ranks / 2).pow(2);
            let want = ranks * ranks + halves;
            let got = err
                .lines()
                .filter(|l| {
                    l.contains(&format!(" bcast {size} B "))
                        && l.contains(what)
                        && l.contains(forced)
                })
                .count();
            assert_eq!(got, want, "{size} B: {what}\n{all}");
        }
        assert_eq!(
            traced("1024", "binomial:segment=0 [blocking]"),
            ranks * ranks + ranks.div_ceil(2).pow(2) + (ranks / 2).pow(2),
            "{all}"
        );
        assert_eq!(traced("1024", "ompi_tuned"), 0, "{all}");
    }
}

#[test]
fn library_rules_handed_to_open_mpi_move_every_byte() {
    let Some((dir, libs, exe, tbl)) = open_mpi_setup("handoff") else {
        return;
    };
    for ranks in [3, 4] {
        let env = [
            (
                "LD_PRELOAD",
                libs.join("libcolltune_preload.so").display().to_string(),
            ),
            ("COLLTUNE_TABLE", tbl.display().to_string()),
            ("COLLTUNE_TRACE", "all".into()),
            // A TMPDIR of the test's own: the rules file must be gone after.
            ("TMPDIR", dir.display().to_string()),
        ];
        let (ok, out, err) = job(ranks, &exe, &env);
        let all = format!("{ranks} ranks\n--- stdout ---\n{out}\n--- stderr ---\n{err}");
        assert!(ok, "{all}");
        assert!(out.contains("library_bcast: all bytes correct"), "{all}");
        assert!(out.contains("cvars: algorithm=0 segment=0"), "{all}");
        assert!(!err.contains("warning"), "{all}");
        // Said once, by world rank 0: what Open MPI was given.
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("handoff: Open MPI runs the table's library rules itself"))
            .collect();
        assert_eq!(said.len(), 1, "{all}");
        assert!(
            said[0].contains("4 ranks 0-1023 B, 4096 B and up"),
            "{}\n{all}",
            said[0]
        );
        // Each library rule's calls went to the rules file, on every rank
        // and root, in the world and the split halves; colltune's binomial
        // ran in between; no duplicate was made.
        let want = ranks * ranks + ranks.div_ceil(2).pow(2) + (ranks / 2).pow(2);
        let traced = |size: &str, what: &str| {
            err.lines()
                .filter(|l| l.contains(&format!(" bcast {size} B ")) && l.contains(what))
                .count()
        };
        for size in ["0", "1023", "4096", "65536", "300001"] {
            assert_eq!(
                traced(size, "Open MPI's rules file, handed it at MPI_Init"),
                want,
                "{size} B\n{all}"
            );
        }
        assert_eq!(
            traced("1024", "binomial:segment=0 [blocking]"),
            want,
            "{all}"
        );
        assert_eq!(
            traced("4095", "binomial:segment=0 [blocking]"),
            want,
            "{all}"
        );
        assert!(!err.contains("forced on a duplicate communicator"), "{all}");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("colltune-handoff-")
            })
            .collect();
        assert!(left.is_empty(), "rules files left behind: {left:?}");
    }
    // Without the trace, the same bytes (the per-call shortcut).
    let env = [
        (
            "LD_PRELOAD",
            libs.join("libcolltune_preload.so").display().to_string(),
        ),
        ("COLLTUNE_TABLE", tbl.display().to_string()),
    ];
    let (ok, out, err) = job(4, &exe, &env);
    assert!(
        ok && out.contains("library_bcast: all bytes correct"),
        "--- stdout ---\n{out}\n--- stderr ---\n{err}"
    );
}

/// A table whose decision at small sizes differs by communicator size:
/// odd sizes hand 0-1023 B to Open MPI's linear and run colltune's binomial
/// above; even sizes the other way round (colltune below, Open MPI's
/// k-nomial above); without `library_rules`, colltune's linear in place of
/// Open MPI's. A rank that applied a freed communicator's rules or state
/// (the drop-in's per-call cache) to a recycled handle of another size
/// would take another path than its peers.
fn parity_table(dir: &Path, library_rules: bool) -> PathBuf {
    let library = |lo: u64, hi: Option<u64>, alg: u32| {
        let max = hi.map_or(String::new(), |h| format!("    max_bytes: {h}\n"));
        format!(
            "  - min_bytes: {lo}\n{max}    algorithm: ompi_tuned\n    params:\n      algorithm: {alg}\n      segment: 0\n    execution: library\n"
        )
    };
    let ours = |lo: u64, hi: Option<u64>| {
        let max = hi.map_or(String::new(), |h| format!("    max_bytes: {h}\n"));
        format!("  - min_bytes: {lo}\n{max}    algorithm: binomial\n    execution: blocking\n")
    };
    // Without library rules: colltune's linear in their place.
    let library = |lo: u64, hi: Option<u64>, alg: u32| {
        if library_rules {
            library(lo, hi, alg)
        } else {
            let max = hi.map_or(String::new(), |h| format!("    max_bytes: {h}\n"));
            format!("  - min_bytes: {lo}\n{max}    algorithm: linear\n    execution: blocking\n")
        }
    };
    let mut t = String::from(
        "schema: 1\nprovenance:\n  host: test\n  mpi: Open MPI\n  date: 2026-12-01T00:00:00Z\n  command: tests/mpi_library.rs\n  colltune: 0.1.0\n  source: measured\n  sweep:\n    mode: built\nbcast:\n",
    );
    for n in 1..=5 {
        t += &format!("- ranks: {n}\n  ppn: {n}\n  nodes: 1\n  rules:\n");
        if n % 2 == 1 {
            t += &library(0, Some(1023), 1);
            t += &ours(1024, None);
        } else {
            t += &ours(0, Some(1023));
            t += &library(1024, None, 7);
        }
    }
    let p = dir.join(if library_rules {
        "parity-library.yaml"
    } else {
        "parity-ours.yaml"
    });
    std::fs::write(&p, t).unwrap();
    p
}

/// Runs tests/c/`name`.c (a program of recycled handles) under the drop-in
/// with each (ranks, table, what) of `runs` and `args`: every byte right, no
/// warning, and the case the test is for happened (some handle came back
/// for an object of another size: the program's "recycled handles: N").
fn recycled_handles(name: &str, runs: &[(usize, PathBuf, String)], args: &[&str]) {
    let dir = scratch(&format!("handoff-{name}"));
    let libs = shared_libs();
    let exe = dir.join(name);
    mpicc(&format!("{ROOT}/tests/c/{name}.c"), &exe, &[]);
    let pre = libs.join("libcolltune_preload.so").display().to_string();
    for (ranks, tbl, what) in runs {
        let mut c = mpirun(*ranks);
        c.args(["-x", &format!("LD_PRELOAD={pre}")])
            .args(["-x", &format!("COLLTUNE_TABLE={}", tbl.display())])
            .arg(&exe)
            .args(args);
        let o = run(c);
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        let all = format!("{ranks} ranks, {what}\n--- stdout ---\n{out}\n--- stderr ---\n{err}");
        assert!(o.status.success(), "{all}");
        assert!(out.contains(&format!("{name}: all bytes correct")), "{all}");
        assert!(!err.contains("warning"), "{all}");
        let recycled: usize = out
            .lines()
            .find_map(|l| l.strip_prefix("recycled handles: "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no recycled count\n{all}"));
        assert!(recycled > 0, "no handle came back for another size\n{all}");
    }
}

#[test]
fn recycled_communicator_handles_never_reuse_a_freed_ones_rules() {
    if !is_open_mpi() {
        return skip("openmpi", "ompi_info not found: the handoff needs Open MPI");
    }
    let dir = scratch("handoff-recycled");
    let runs: Vec<(usize, PathBuf, String)> = [(3, true), (5, true), (3, false), (5, false)]
        .into_iter()
        .map(|(ranks, library_rules)| {
            let what = format!("library rules {library_rules}");
            (ranks, parity_table(&dir, library_rules), what)
        })
        .collect();
    recycled_handles("recycled_comms", &runs, &["100", "1000", "3000"]);
}

/// Derived datatypes are remembered per handle too (the drop-in's per-call
/// lines), and their handles are reused once freed: the root describes its
/// data with a fresh type whose handle is often a freed one's of another
/// size, across the boundary between a handed-off rule and colltune's
/// (400 B / 6400 B), the others with MPI_BYTE. A line outliving its type
/// would send the root's call down another path than its peers'.
#[test]
fn recycled_datatype_handles_never_reuse_a_freed_ones_lines() {
    if !is_open_mpi() {
        return skip("openmpi", "ompi_info not found: the handoff needs Open MPI");
    }
    let tbl = parity_table(&scratch("handoff-recycled-types-table"), true);
    // (4 ranks: colltune's binomial below 1 KiB, Open MPI's above)
    let runs = [(4, tbl, "derived types".to_string())];
    recycled_handles("recycled_types", &runs, &["100", "64"]);
}

/// A node that cannot read the table (its file system not mounted), or
/// reads another: no abort, no hang. Rank 1's `COLLTUNE_TABLE` is changed
/// by a wrapper (to a missing file, or to another table); every rank runs
/// one route for every call (the table one rank read; colltune's own
/// algorithms where the library's would differ between ranks), every byte
/// right on the world and on split communicators, and rank 0 warns once,
/// naming who read what. At 3 and 4 ranks, with a table of library and
/// colltune rules, one of library rules alone, and `shm` forced.
#[test]
fn a_node_without_the_table_or_with_another_takes_one_route_on_every_rank() {
    let Some((dir, libs, exe, mixed)) = open_mpi_setup("handoff-differs") else {
        return;
    };
    let text = std::fs::read_to_string(&mixed).unwrap();
    // Library rules only: Open MPI's binomial in colltune's place.
    let library_only = dir.join("library-only.yaml");
    std::fs::write(
        &library_only,
        text.replace(
            "    algorithm: binomial\n    execution: blocking\n",
            "    algorithm: ompi_tuned\n    params:\n      algorithm: 6\n      segment: 0\n    execution: library\n",
        ),
    )
    .unwrap();
    assert_ne!(std::fs::read_to_string(&library_only).unwrap(), text);
    let pre = libs.join("libcolltune_preload.so").display().to_string();
    let mut failures = Vec::new();
    for (tbl, forced) in [(&mixed, None), (&library_only, None), (&mixed, Some("shm"))] {
        // Another table: the same rules with other algorithms.
        let other = dir.join(format!(
            "other-{}",
            tbl.file_name().unwrap().to_string_lossy()
        ));
        std::fs::write(
            &other,
            std::fs::read_to_string(tbl)
                .unwrap()
                .replace("algorithm: 7", "algorithm: 1")
                .replace("algorithm: 6", "algorithm: 5"),
        )
        .unwrap();
        let missing = dir.join("not-mounted/table.yaml");
        for (what, rank1) in [("no table", &missing), ("another table", &other)] {
            for ranks in [3, 4] {
                let script = format!(
                    "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then COLLTUNE_TABLE={}; export COLLTUNE_TABLE; fi; exec \"$0\" \"$@\"",
                    rank1.display()
                );
                let mut c = mpirun(ranks);
                c.args(["-x", &format!("LD_PRELOAD={pre}")])
                    .args(["-x", &format!("COLLTUNE_TABLE={}", tbl.display())]);
                if let Some(f) = forced {
                    c.args(["-x", &format!("COLLTUNE_BCAST={f}")]);
                }
                c.args(["sh", "-c", &script]).arg(&exe).args(SIZES);
                let o = run(c);
                let out = String::from_utf8_lossy(&o.stdout);
                let err = String::from_utf8_lossy(&o.stderr);
                let case = format!(
                    "{} ranks, {}{}, rank 1 with {what}",
                    ranks,
                    tbl.file_name().unwrap().to_string_lossy(),
                    forced.map_or(String::new(), |f| format!(", COLLTUNE_BCAST={f}"))
                );
                let warnings = err.matches("warning:").count();
                let named = err.contains("did not all read the same table")
                    && err.contains("1 rank (1; host")
                    && err.contains(&format!("{} ranks (", ranks - 1))
                    && err.contains("every rank runs the table rank 0 read");
                if !o.status.success()
                    || !out.contains("library_bcast: all bytes correct")
                    || warnings != 1
                    || !named
                {
                    failures.push(format!(
                        "{case}: exit {:?}, {warnings} warnings\n--- stdout ---\n{out}\n--- stderr ---\n{err}",
                        o.status.code()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Rank 0 is the one that cannot read the table: every rank runs the
/// table of the lowest rank that could, every byte right, one warning.
#[test]
fn rank_0_without_the_table_takes_the_next_ranks() {
    let Some((dir, libs, exe, tbl)) = open_mpi_setup("handoff-rank0-unread") else {
        return;
    };
    let pre = libs.join("libcolltune_preload.so").display().to_string();
    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then COLLTUNE_TABLE={}; export COLLTUNE_TABLE; fi; exec \"$0\" \"$@\"",
        dir.join("missing.yaml").display()
    );
    let mut c = mpirun(3);
    c.args(["-x", &format!("LD_PRELOAD={pre}")])
        .args(["-x", &format!("COLLTUNE_TABLE={}", tbl.display())])
        .args(["-x", "COLLTUNE_TRACE=1"])
        .args(["sh", "-c", &script])
        .arg(&exe)
        .args(SIZES);
    let o = run(c);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    let all = format!("--- stdout ---\n{out}\n--- stderr ---\n{err}");
    assert!(o.status.success(), "{all}");
    assert!(out.contains("library_bcast: all bytes correct"), "{all}");
    assert_eq!(err.matches("warning:").count(), 1, "{all}");
    assert!(
        err.contains("every rank runs the table rank 1 read"),
        "{all}"
    );
    // The table is in use: its colltune rule (binomial, 1-4 KiB) runs.
    assert!(all.contains("binomial"), "{all}");
}

/// The user turned Open MPI's dynamic rules off, so its algorithms cannot
/// be forced (nor handed off): the table's coll/tuned rules run as
/// colltune's algorithms of the same family on every rank, every byte
/// right, and colltune says why in its trace, with no warning (issue 26:
/// a warning where the plain run prints nothing is something an
/// application sees).
#[test]
fn unavailable_forcing_takes_colltunes_own_routes_and_says_why() {
    let Some((_, libs, exe, tbl)) = open_mpi_setup("library-off") else {
        return;
    };
    let env = [
        (
            "LD_PRELOAD",
            libs.join("libcolltune_preload.so").display().to_string(),
        ),
        ("COLLTUNE_TABLE", tbl.display().to_string()),
        ("COLLTUNE_TRACE", "1".into()),
        ("OMPI_MCA_coll_tuned_use_dynamic_rules", "0".into()),
    ];
    let (ok, out, err) = job(3, &exe, &env);
    let all = format!("--- stdout ---\n{out}\n--- stderr ---\n{err}");
    assert!(ok, "{all}");
    assert!(out.contains("library_bcast: all bytes correct"), "{all}");
    assert!(out.contains("cvars: algorithm=0 segment=0"), "{all}");
    assert!(!err.contains("warning"), "{all}");
    assert!(
        err.contains("run as colltune's own algorithms of the same family")
            && err.contains("coll_tuned_use_dynamic_rules=0"),
        "{all}"
    );
    // What ran instead: the same families, colltune's.
    for what in [
        "knomial:radix=4",
        "pipeline:segment=1024",
        "split_binary:segment=8192",
    ] {
        assert!(
            err.lines()
                .any(|l| l.starts_with("colltune trace:") && l.contains(what)),
            "{what} not in the trace\n{all}"
        );
    }
}

/// A table for 1-4 ranks whose rules name coll/adapt's and MPICH's
/// algorithms: neither can be forced on Open MPI 4.1 (adapt's variables are
/// read-only there; MPICH's do not exist), so each falls back to the
/// library's default with one warning, every byte still right.
fn adapt_mpich_table(dir: &Path) -> PathBuf {
    let rules = "  rules:
  - min_bytes: 0
    max_bytes: 4095
    algorithm: ompi_adapt
    params:
      algorithm: pipeline
      segment: 8192
    execution: library
  - min_bytes: 4096
    algorithm: mpich
    params:
      algorithm: scatter_ring_allgather
    execution: library
";
    let text = std::fs::read_to_string(table(dir)).unwrap();
    let head = &text[..text.find("- ranks: 1").unwrap()];
    let mut t = head.to_string();
    for n in 1..=4 {
        t += &format!("- ranks: {n}\n  ppn: {n}\n  nodes: 1\n{rules}");
    }
    let p = dir.join("adapt-mpich.yaml");
    std::fs::write(&p, t).unwrap();
    p
}

#[test]
fn adapt_and_mpich_rules_fall_back_once_where_they_cannot_be_forced() {
    if !is_open_mpi() {
        return skip(
            "openmpi",
            "ompi_info not found: the fallback checked is Open MPI's",
        );
    }
    let version = Command::new("ompi_info")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !version.contains("v4.") {
        // 5.0 lets MPI_T write adapt's variables: jobs/test-library-choices.sh.
        return skip("openmpi4", "coll/adapt can be forced on this Open MPI");
    }
    let dir = scratch("library-adapt-mpich");
    let libs = shared_libs();
    let exe = program(&dir);
    let tbl = adapt_mpich_table(&dir);
    colltune_core::tables::table::load(&tbl).unwrap();
    for ranks in [3, 4] {
        let env = [
            (
                "LD_PRELOAD",
                libs.join("libcolltune_preload.so").display().to_string(),
            ),
            ("COLLTUNE_TABLE", tbl.display().to_string()),
            ("COLLTUNE_TRACE", "all".into()),
        ];
        let (ok, out, err) = job(ranks, &exe, &env);
        let all = format!("--- stdout ---\n{out}\n--- stderr ---\n{err}");
        assert!(ok, "{all}");
        assert!(out.contains("library_bcast: all bytes correct"), "{all}");
        let warned = |what: &str| {
            err.lines()
                .filter(|l| l.contains("warning: cannot force") && l.contains(what))
                .count()
        };
        // Once per process that leads a communicator (world rank 0, and
        // rank 1 leading the other split half), per algorithm: never per call.
        for what in ["coll/adapt pipeline", "MPICH's scatter_ring_allgather"] {
            let n = warned(what);
            assert!((1..=2).contains(&n), "{what}: {n} warnings\n{all}");
        }
        assert!(err.contains("MPIR_CVAR_BCAST_INTRA_ALGORITHM"), "{all}");
        // The trace names the rule's choice and says it fell back.
        assert!(
            err.lines().any(|l| l
                .contains("ompi_adapt:algorithm=4,name=pipeline,segment=8192 [library]")
                && l.contains("forcing is unavailable here")),
            "{all}"
        );
        assert!(
            err.lines().any(
                |l| l.contains("mpich:algorithm=scatter_ring_allgather [library]")
                    && l.contains("forcing is unavailable here")
            ),
            "{all}"
        );
    }
}

/// The library's samples in a tune's CSV.
fn library_specs(csv: &Path) -> Vec<String> {
    let mut v: Vec<String> = colltune_core::measure::record::read(csv)
        .unwrap()
        .into_iter()
        .filter(|s| s.algorithm == "ompi_tuned")
        .map(|s| s.spec)
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn tune_measures_the_librarys_algorithms_beside_ours() {
    if !is_open_mpi() {
        return skip(
            "openmpi",
            "ompi_info not found: library candidates need Open MPI",
        );
    }
    let dir = scratch("library-tune");
    let tune = |csv: &str, extra: &[&str]| {
        let mut c = mpirun(2);
        c.arg(colltune())
            .arg("tune")
            .args(["--budget-ms", "1", "--min-reps", "2", "--max-reps", "5"])
            .args(["--sizes", "8,64K", "--collective", "bcast"])
            .args(["--executions", "blocking"])
            .args(ONE_RUN_EACH)
            .arg("--csv")
            .arg(dir.join(csv))
            .arg("--table")
            .arg(dir.join(format!("{csv}.yaml")))
            .args(extra);
        let o = run(c);
        assert!(o.status.success(), "{}", text(&o));
    };
    tune("with.csv", &[]);
    let specs = library_specs(&dir.join("with.csv"));
    // Every one of Open MPI's 9 algorithms was measured.
    for id in 1..=9 {
        assert!(
            specs
                .iter()
                .any(|s| s.starts_with(&format!("ompi_tuned:algorithm={id},"))),
            "algorithm {id} not measured: {specs:?}"
        );
    }
    assert!(
        specs.contains(&"ompi_tuned:algorithm=6,name=binomial,segment=1024".to_string()),
        "{specs:?}"
    );
    // The table is valid, whatever it chose.
    colltune_core::tables::table::load(&dir.join("with.csv.yaml")).unwrap();
    tune("without.csv", &["--no-library-candidates"]);
    assert!(library_specs(&dir.join("without.csv")).is_empty());
}

/// A table of one algorithm for 4 ranks, every size: Open MPI's `alg`
/// (coll/tuned id), or colltune's binomial (`None`).
fn one_rule_table(dir: &Path, name: &str, alg: Option<u32>) -> PathBuf {
    let rule = match alg {
        Some(a) => format!(
            "{{min_bytes: 0, algorithm: ompi_tuned, params: {{algorithm: {a}}}, execution: library}}"
        ),
        None => "{min_bytes: 0, algorithm: binomial, execution: blocking}".into(),
    };
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &p,
        format!(
            "schema: 1\nprovenance: {{host: test, mpi: Open MPI v4.1.4, date: now, command: tests/mpi_library.rs, colltune: 0.1.0, source: hand-written, sweep: {{mode: hand-written}}}}\nbcast:\n- ranks: 4\n  ppn: 4\n  nodes: 1\n  rules:\n  - {rule}\n"
        ),
    )
    .unwrap();
    p
}

/// `colltune deploy` of a table into `out`: its stdout and the variables of
/// the env.sh it wrote.
fn deployed(table: &Path, out: &Path) -> (String, Vec<(String, String)>) {
    let o = run({
        let mut c = Command::new(colltune());
        c.arg("deploy").arg(table).arg("-o").arg(out);
        c
    });
    assert!(o.status.success(), "{}", text(&o));
    let env = std::fs::read_to_string(out.join("env.sh")).unwrap();
    let vars = env
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
        .collect();
    (String::from_utf8_lossy(&o.stdout).into_owned(), vars)
}

/// A table whose rules are all Open MPI's goes to Open MPI's own rules
/// file, with no preload, and Open MPI runs the rules from it: under its
/// pml monitoring, a 1 MiB broadcast from rank 0 of 4 sends the whole
/// buffer to every other rank with the deployed basic linear (1), to two
/// of them with the deployed binomial (6). A table with a rule of
/// colltune's needs the drop-in, and says so.
#[test]
fn a_library_only_table_deploys_as_open_mpis_rules_file() {
    if !is_open_mpi() {
        return skip(
            "openmpi",
            "ompi_info not found: the rules file is Open MPI's",
        );
    }
    let dir = scratch("deploy");
    // the drop-in route names libcolltune_preload.so beside colltune
    shared_libs();
    let exe = dir.join("force_tuned");
    mpicc(&format!("{ROOT}/tests/c/force_tuned.c"), &exe, &[]);
    for (alg, full_peers) in [(1, 3), (6, 2)] {
        let out = dir.join(format!("deploy-{alg}"));
        let (said, vars) = deployed(&one_rule_table(&dir, &format!("t{alg}"), Some(alg)), &out);
        assert!(
            said.starts_with("route: Open MPI's own rules file, no preload"),
            "{said}"
        );
        assert!(out.join("bcast.rules").is_file(), "{said}");
        assert!(!vars.iter().any(|(k, _)| k == "LD_PRELOAD"), "{vars:?}");
        let mut c = mpirun(4);
        for (k, v) in &vars {
            c.args(["-x", &format!("{k}={v}")]);
        }
        // Each rank's output in a file of its own as well: rank 0's
        // monitoring records read from its file cannot be cut by another
        // rank's output (mpirun's merged stdout can split a line).
        let ranks_out = out.join("ranks");
        c.args(["--output-filename", &ranks_out.display().to_string()])
            .args(["--mca", "pml_monitoring_enable", "1"])
            .args(["--mca", "pml_monitoring_enable_output", "1"])
            .arg(&exe)
            .arg("-1");
        let o = run(c);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("force_tuned: all bytes correct"),
            "{}",
            text(&o)
        );
        // rank 0's point-to-point sends, printed at MPI_Finalize: "E\t0\t
        // <peer>\t<bytes> bytes\t<n> msgs sent ..." (every rank prints its
        // own, and not a line per write: another rank's output may precede
        // a record on its line, as in "DE\t0\t1\t10485776 bytes", so
        // records are found anywhere in the text)
        let mon =
            std::fs::read_to_string(ranks_out.join("1/rank.0/stdout")).unwrap_or_else(|_| text(&o));
        let peers = mon
            .match_indices("E\t0\t")
            .filter_map(|(i, m)| {
                let f: Vec<&str> = mon[i + m.len()..].split_whitespace().take(3).collect();
                (f.len() == 3 && f[2] == "bytes").then(|| f[1].parse::<u64>().ok())?
            })
            .filter(|&bytes| bytes >= 10 << 20)
            .count();
        assert_eq!(
            peers, full_peers,
            "algorithm {alg}: rank 0 sent all 10 broadcasts to {peers} ranks\n{mon}"
        );
    }
    let out = dir.join("deploy-ours");
    let (said, vars) = deployed(&one_rule_table(&dir, "ours", None), &out);
    assert!(
        said.starts_with("route: colltune's drop-in (LD_PRELOAD)"),
        "{said}"
    );
    assert!(
        said.contains("4 ranks (4 per node, 1 node): 0.. B: binomial"),
        "{said}"
    );
    let keys: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["LD_PRELOAD", "COLLTUNE_TABLE"], "{said}");
    assert!(out.join("table.yaml").is_file());
}

/// Device buffers (issue: a GPU buffer crashes a job): with a stand-in GPU
/// runtime whose "device" memory faults on any host access
/// (`tests/c/gpu/fake_cuda.c`, loaded by the program after `MPI_Init`) and a
/// stand-in GPU-aware library's broadcast (`fake_gpu_mpi.c`), broadcasts of
/// device memory under the drop-in, with `shm` or `binomial` forced and
/// with a table, as bytes and as a derived datatype, complete through the
/// library, every byte right. Without the GPU-aware stand-in the library
/// itself faults: the stand-in's memory is what the test claims.
#[test]
fn device_buffers_go_to_the_library_untouched() {
    if !is_open_mpi() {
        return skip(
            "openmpi",
            "ompi_info not found: the stand-ins are built with Open MPI's mpicc",
        );
    }
    let dir = scratch("device-buffers");
    let libs = shared_libs();
    let rt = dir.join("libcuda.so.1");
    mpicc(
        &format!("{ROOT}/tests/c/gpu/fake_cuda.c"),
        &rt,
        &["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1"],
    );
    let gpu_mpi = dir.join("libfakegpumpi.so");
    mpicc(
        &format!("{ROOT}/tests/c/gpu/fake_gpu_mpi.c"),
        &gpu_mpi,
        &["-shared", "-fPIC", "-ldl"],
    );
    let exe = dir.join("device_bcast");
    mpicc(&format!("{ROOT}/tests/c/device_bcast.c"), &exe, &["-ldl"]);
    let tbl = table(&dir);
    let pre = libs.join("libcolltune_preload.so").display().to_string();
    let sizes = ["1", "100", "2048", "4096", "70000"];
    let run_with = |ranks: usize, preload: &str, env: &[(&str, &str)]| {
        let mut c = mpirun(ranks);
        c.args(["-x", &format!("LD_PRELOAD={preload}")]);
        for (k, v) in env {
            c.args(["-x", &format!("{k}={v}")]);
        }
        c.arg(&exe).arg(&rt).args(sizes);
        let o = run(c);
        (
            o.status.success(),
            format!(
                "--- stdout ---\n{}\n--- stderr ---\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    // The stand-in's memory faults where the library is not GPU-aware.
    let (ok, all) = run_with(3, "", &[]);
    assert!(
        !ok,
        "a host access to the stand-in's device memory must fault:\n{all}"
    );
    let both = format!("{pre}:{}", gpu_mpi.display());
    let tbl = tbl.display().to_string();
    let mut failures = Vec::new();
    for ranks in [3, 4] {
        let plain = run_with(ranks, &gpu_mpi.display().to_string(), &[]);
        let cases: [(&str, Vec<(&str, &str)>); 4] = [
            ("shm forced", vec![("COLLTUNE_BCAST", "shm")]),
            ("binomial forced", vec![("COLLTUNE_BCAST", "binomial")]),
            ("a table", vec![("COLLTUNE_TABLE", tbl.as_str())]),
            (
                "a table, traced",
                vec![("COLLTUNE_TABLE", tbl.as_str()), ("COLLTUNE_TRACE", "1")],
            ),
        ];
        for (what, env) in cases {
            let (ok, all) = run_with(ranks, &both, &env);
            let traced_ok = !what.ends_with("traced") || all.contains("CUDA device memory");
            if !ok || !all.contains("device_bcast: all bytes correct") || !traced_ok {
                failures.push(format!("{ranks} ranks, {what}:\n{all}"));
            }
        }
        assert!(
            plain.0,
            "{ranks} ranks, the stand-in library alone:\n{}",
            plain.1
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
