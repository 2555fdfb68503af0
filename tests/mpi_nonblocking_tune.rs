//! `colltune tune --calls ibcast,bcast_init` under mpirun at 3 and 4
//! ranks: the library's nonblocking and persistent broadcasts measured
//! under each of its nonblocking algorithms, and the table's `ibcast:` and
//! `bcast_init:` sections written from them, valid, naming only algorithms
//! the library offers, with the overlap each choice achieved; `table
//! build` from the CSV writes the same sections.

mod common;
use common::*;
use std::process::Command;

use colltune_core::libraries::library::LibraryChoice;
use colltune_core::tables::table::{self, Section};

fn tune_calls(ranks: usize, dir: &std::path::Path) -> Command {
    let mut c = mpirun(ranks);
    c.arg(colltune())
        .arg("tune")
        .args(["--calls", "ibcast,bcast_init", "--collective", "bcast"])
        .args(["--sizes", "1,4K,64K", "--budget-ms", "2", "--min-reps", "3"])
        .args(["--max-reps", "20", "--screen-runs", "1", "--full-runs", "1"])
        .arg("--csv")
        .arg(dir.join("raw.csv"))
        .arg("--table")
        .arg(dir.join("table.yaml"));
    c
}

fn sections(t: &table::Table) -> String {
    Section::NONBLOCKING
        .iter()
        .map(|s| serde_yaml::to_string(t.section(*s)).unwrap())
        .collect()
}

#[test]
fn tune_writes_valid_nonblocking_sections_at_3_and_4_ranks() {
    for ranks in [3, 4] {
        let dir = scratch(&format!("nbtune{ranks}"));
        let o = run(tune_calls(ranks, &dir));
        let out = text(&o);
        assert!(o.status.success(), "{out}");
        let path = dir.join("table.yaml");
        let o = run({
            let mut c = Command::new(colltune());
            c.arg("validate").arg(&path);
            c
        });
        assert!(o.status.success(), "{}", text(&o));
        let t = table::load(&path).unwrap();
        assert!(t.bcast.is_empty(), "no blocking search was asked for");
        for s in Section::NONBLOCKING {
            let comms = t.section(s);
            assert_eq!(comms.len(), 1, "{s} at {ranks} ranks: {out}");
            assert_eq!(comms[0].ranks, ranks as u32);
            for r in &comms[0].rules {
                let choice = LibraryChoice::from_spec(&r.spec().unwrap()).unwrap();
                // Open MPI here: coll/libnbc's schedules 0-4.
                assert!(
                    matches!(choice, LibraryChoice::Libnbc(f) if (0..=4).contains(&f.id)),
                    "{s}: {choice:?}"
                );
                assert!(r.time_us.is_some_and(|t| t > 0.0), "{r:?}");
                assert!(r.overlap.is_some_and(|o| (0.0..=1.0).contains(&o)), "{r:?}");
            }
        }
        // Both patterns per point, the overlap only with computation.
        let samples = colltune_core::measure::record::read(&dir.join("raw.csv")).unwrap();
        for call in ["ibcast", "bcast_init"] {
            let of: Vec<_> = samples.iter().filter(|s| s.call == call).collect();
            assert!(of
                .iter()
                .any(|s| s.overlap_us == 0.0 && s.overlap.is_none()));
            assert!(of
                .iter()
                .filter(|s| s.overlap_us > 0.0)
                .all(|s| s.overlap.is_some_and(|o| (0.0..=1.0).contains(&o))));
            assert!(of.iter().any(|s| s.overlap_us > 0.0));
            // Every algorithm of libnbc measured.
            for id in 0..=4 {
                let tag = format!("algorithm={id},");
                assert!(of.iter().any(|s| s.spec.contains(&tag)), "{call} {tag}");
            }
        }
        let rebuilt = dir.join("rebuilt.yaml");
        let o = run({
            let mut c = Command::new(colltune());
            c.args(["table", "build"])
                .arg(dir.join("raw.csv"))
                .arg("-o")
                .arg(&rebuilt);
            c
        });
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(sections(&table::load(&rebuilt).unwrap()), sections(&t));
    }
}
