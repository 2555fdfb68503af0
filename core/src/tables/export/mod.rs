//! Exporting a decision table to the formats the MPI libraries read
//! themselves, so a site can use its tuning without colltune at run time:
//!
//! - `openmpi`: Open MPI's classic coll/tuned dynamic rules file (4.1
//!   syntax: collective id, communicator sizes, and per size
//!   `message-size algorithm fan-in/out segment-size` lines). Loaded with
//!   `--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE`.
//! - `openmpi-json`: the JSON rules of Open MPI 6.0 (`rule_file_version` 3).
//! - `mpich`: MPICH's JSON collective selection tree
//!   (`MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE`). MPICH reads such a file
//!   *instead of* its built-in rules, so the export takes the rules for every
//!   other collective from a base (MPICH's own selection file, or the copy
//!   built into an installed `libmpich.so`) and replaces the broadcast part.
//!
//! Each library has its own algorithm set; where it lacks colltune's, the
//! nearest one is used and a note says so. Swaps have no library
//! counterpart and are left out (noted).

use std::collections::BTreeMap;
use std::fmt::Write;

use colltune_algorithms::{resolve, AlgoSpec, Collective, Execution};
use serde_json::{json, Map, Value};
use thiserror::Error;

use crate::libraries::library::LibraryChoice;
use crate::libraries::ompi::{Forced, TUNED_BCAST};
use crate::tables::table::{CommRules, Rule, Table};

mod mpich;

pub use mpich::{find_libmpich, mpich_base, mpich_json, MpichBase};

#[derive(Debug, Error)]
pub enum ExportError {
    #[error("{0}")]
    Base(String),
    #[error("rule {range} of {ranks} ranks: {why}")]
    Rule {
        ranks: u32,
        range: String,
        why: String,
    },
}

/// What a library runs for one of our rules.
#[derive(Clone, Debug, PartialEq)]
struct Mapped {
    /// Open MPI algorithm id, or MPICH leaf name.
    id: u32,
    name: String,
    faninout: u32,
    segment: u64,
    /// MPICH algorithm parameters (`key=value`).
    params: Vec<String>,
}

fn resolved(rule: &Rule, ranks: u32) -> Result<(AlgoSpec, Execution), ExportError> {
    let err = |why: String| ExportError::Rule {
        ranks,
        range: rule.range(),
        why,
    };
    let spec = rule
        .spec()
        .map_err(|e| err(e.to_string()))
        .and_then(|s| resolve(Collective::Bcast, &s).map_err(|e| err(e.to_string())))?;
    let exec = rule.execution().map_err(err)?;
    Ok((spec, exec))
}

/// The library algorithm an `ompi_tuned`, `ompi_adapt` or `mpich` rule
/// forces; None for colltune's.
fn library(rule: &Rule, ranks: u32) -> Result<Option<LibraryChoice>, ExportError> {
    rule.library().transpose().map_err(|why| ExportError::Rule {
        ranks,
        range: rule.range(),
        why,
    })
}

/// A nonblocking broadcast's choice where a blocking one's belongs (the
/// table's checks refuse it there; a table made by hand may still).
pub(super) fn not_blocking(c: LibraryChoice, rule: &Rule, ranks: u32) -> ExportError {
    ExportError::Rule {
        ranks,
        range: rule.range(),
        why: format!("{c} runs MPI_Ibcast and MPI_Bcast_init; a bcast rule must choose a blocking broadcast (move it to the table's ibcast or bcast_init rules)"),
    }
}

/// Notes, each said once.
#[derive(Default)]
pub struct Notes(Vec<String>);

impl Notes {
    fn add(&mut self, s: String) {
        if !self.0.contains(&s) {
            self.0.push(s);
        }
    }
    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

/// Open MPI coll/tuned equivalent of a colltune broadcast.
fn to_ompi(spec: &AlgoSpec, notes: &mut Notes) -> Mapped {
    let seg = spec.int("segment").unwrap_or(0);
    let by_name = |n: &str| TUNED_BCAST.iter().find(|t| t.ours == n);
    let (ours, faninout) = match spec.name.as_str() {
        "chain" => ("chain", spec.int("fanout").unwrap_or(4) as u32),
        "knomial" => {
            let radix = spec.int("radix").unwrap_or(4);
            if radix != 4 {
                notes.add(format!(
                    "knomial radix {radix}: Open MPI takes the k-nomial radix from coll_tuned_bcast_knomial_radix (default 4), not from the rules file; set it with --mca coll_tuned_bcast_knomial_radix {radix}"
                ));
            }
            ("knomial", 0)
        }
        "hierarchical" => {
            notes.add(
                "hierarchical: coll/tuned has no node-aware broadcast (Open MPI's is the separate coll/han component); its rules use binomial instead".into(),
            );
            ("binomial", 0)
        }
        "bine" => {
            notes.add("bine: Open MPI has no Bine tree; its binomial tree (the same rounds, other partners) is the nearest".into());
            ("binomial", 0)
        }
        "bine_bdw" => {
            notes.add("bine_bdw: Open MPI has no Bine scatter-allgather; its scatter_allgather (binomial scatter, recursive-doubling allgather) is the nearest".into());
            ("scatter_allgather", 0)
        }
        "circulant" => {
            notes.add("circulant: Open MPI has no circulant-graph broadcast; its pipeline (segments down one chain, also each block sent once per rank) is the nearest".into());
            ("pipeline", 0)
        }
        "shm" => {
            notes.add("shm: Open MPI's coll/tuned has no shared-memory broadcast (Open MPI's are other components: coll/sm, off by default in 4.1; coll/xhc in 5.0); its basic linear (every rank takes the message from the root, as every rank copies it out of the root's segment) is the nearest".into());
            ("linear", 0)
        }
        other => (other, 0),
    };
    let t = match by_name(ours) {
        Some(t) => t,
        None => {
            notes.add(format!("{ours}: no coll/tuned equivalent; binomial used"));
            by_name("binomial").expect("coll/tuned has a binomial broadcast")
        }
    };
    if !t.segmented && seg > 0 {
        notes.add(format!(
            "{}: Open MPI does not segment it; segment {seg} dropped",
            t.name
        ));
    }
    Mapped {
        id: t.id,
        name: t.name.into(),
        faninout,
        segment: if t.segmented { seg } else { 0 },
        params: Vec::new(),
    }
}

/// The broadcast entries Open MPI can use: one per communicator size (Open
/// MPI keys rules by size only); several shapes of one size keep the one
/// with the most nodes (noted).
fn by_size<'t>(table: &'t Table, notes: &mut Notes) -> Vec<&'t CommRules> {
    let mut m: BTreeMap<u32, &CommRules> = BTreeMap::new();
    for cr in &table.bcast {
        match m.get(&cr.ranks) {
            Some(prev) => {
                notes.add(format!(
                    "{} ranks: the table has rules for several node layouts or placements; MPI libraries key rules by communicator size only, so the layout with the most nodes (the first listed of equals) was kept; `export --placement` picks a placement's",
                    cr.ranks
                ));
                if cr.nodes > prev.nodes {
                    m.insert(cr.ranks, cr);
                }
            }
            None => {
                m.insert(cr.ranks, cr);
            }
        }
    }
    if !table.swap.is_empty() {
        notes.add("swap rules have no MPI library counterpart and are left out".into());
    }
    m.into_values().collect()
}

/// Merged (min_bytes, mapped) message-size rules of one communicator size.
fn ompi_rules(
    cr: &CommRules,
    notes: &mut Notes,
) -> Result<Vec<(u64, Option<u64>, Mapped)>, ExportError> {
    let mut out: Vec<(u64, Option<u64>, Mapped)> = Vec::new();
    for r in &cr.rules {
        let tuned = |f: Forced| Mapped {
            id: f.id,
            name: f.tuned().name.into(),
            // A forced chain ran with coll/tuned's chain fanout (4); a rule
            // saying 0 would make Open MPI run one chain (a pipeline).
            faninout: if f.id == 2 { OMPI_CHAIN_FANOUT } else { 0 },
            segment: u64::from(f.segment),
            params: Vec::new(),
        };
        let m = match library(r, cr.ranks)? {
            // Open MPI's own algorithm: its id and segment, as they are.
            Some(LibraryChoice::Tuned(f)) => tuned(f),
            Some(c @ (LibraryChoice::Libnbc(_) | LibraryChoice::MpichIbcast(_))) => {
                return Err(not_blocking(c, r, cr.ranks))
            }
            // coll/adapt is another component: coll/tuned's rules file
            // cannot choose it, so coll/tuned's algorithm of its shape
            // stands in (said once per algorithm).
            Some(LibraryChoice::Adapt(a)) => {
                let f = a.tuned_shape();
                notes.add(format!(
                    "{} ranks, {} bytes: the rule chooses {a}; coll/tuned's rules file cannot choose coll/adapt (another component), so coll/tuned's {} of the same shape is written instead (colltune's runtime runs coll/adapt itself)",
                    cr.ranks,
                    r.range(),
                    f.tuned().name
                ));
                tuned(f)
            }
            Some(LibraryChoice::Mpich(m)) if m.is_default() => {
                notes.add(format!(
                    "{} ranks, {} bytes: the rule chooses MPICH's own decision; Open MPI's own decision (algorithm 0) is written",
                    cr.ranks,
                    r.range()
                ));
                tuned(Forced { id: 0, segment: 0 })
            }
            Some(LibraryChoice::Mpich(m)) => {
                notes.add(format!(
                    "{} ranks, {} bytes: the rule chooses {m}, which Open MPI does not have; Open MPI's nearest to colltune's {} stands in",
                    cr.ranks,
                    r.range(),
                    m.ours()
                ));
                to_ompi(&mpich_stand_in(m, r, cr.ranks)?, notes)
            }
            None => to_ompi(&resolved(r, cr.ranks)?.0, notes),
        };
        match out.last_mut() {
            Some(last) if last.2 == m => last.1 = r.max_bytes,
            _ => out.push((r.min_bytes, r.max_bytes, m)),
        }
    }
    Ok(out)
}

/// colltune's algorithm of the nearest shape to MPICH's `m`, resolved.
fn mpich_stand_in(
    m: crate::libraries::mpich::Forced,
    rule: &Rule,
    ranks: u32,
) -> Result<AlgoSpec, ExportError> {
    AlgoSpec::parse(m.ours())
        .map_err(|e| e.to_string())
        .and_then(|s| resolve(Collective::Bcast, &s).map_err(|e| e.to_string()))
        .map_err(|why| ExportError::Rule {
            ranks,
            range: rule.range(),
            why,
        })
}

const OMPI_BCAST_ID: u32 = 7;

/// Open MPI's classic dynamic rules file (the syntax Open MPI 4.1 reads).
pub fn openmpi_classic(table: &Table) -> Result<(String, Vec<String>), ExportError> {
    let mut notes = Notes::default();
    let mut entries = Vec::new();
    for cr in by_size(table, &mut notes) {
        let rules = ompi_rules(cr, &mut notes)?;
        entries.push((
            cr.ranks,
            rules.into_iter().map(|(min, _, m)| (min, m)).collect(),
        ));
    }
    let first = format!(
        "made by colltune {} from a table of {}, {}",
        env!("CARGO_PKG_VERSION"),
        table.provenance.host,
        table.provenance.date
    );
    let out = classic_file(
        &first,
        &entries,
        "no colltune rule: Open MPI's fixed decision",
    );
    Ok((out, notes.into_vec()))
}

/// The classic rules file's text: a broadcast section with each size's
/// `(from-byte, algorithm)` lines. Open MPI applies the rules of the largest
/// listed size not above the communicator's; a size right after each
/// listed one, with algorithm 0 (Open MPI's fixed decision, commented
/// `fixed`), keeps each rule set to its own size.
/// One communicator size's lines of a classic rules file.
type SizeLines = (u32, Vec<(u64, Mapped)>);

fn classic_file(first: &str, entries: &[SizeLines], fixed: &str) -> String {
    let mut sizes: Vec<(u32, Option<&SizeLines>)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let size = entry.0;
        sizes.push((size, Some(entry)));
        if entries.get(i + 1).map(|n| n.0) != Some(size + 1) {
            sizes.push((size + 1, None));
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "1 # number of collectives ({first})");
    let _ = writeln!(out, "{OMPI_BCAST_ID} # collective id: bcast");
    let _ = writeln!(out, "{} # number of communicator sizes", sizes.len());
    for (size, lines) in sizes {
        let _ = writeln!(out, "{size} # communicator size");
        match lines {
            Some((_, lines)) => {
                let _ = writeln!(out, "{} # number of message sizes", lines.len());
                for (min, m) in lines {
                    let _ = writeln!(
                        out,
                        "{min} {} {} {} # {}",
                        m.id, m.faninout, m.segment, m.name
                    );
                }
            }
            None => {
                let _ = writeln!(out, "1 # number of message sizes");
                let _ = writeln!(out, "0 0 0 0 # {fixed}");
            }
        }
    }
    out
}

/// Open MPI's `chain_fanout` default (`coll_tuned_bcast_algorithm_chain_fanout`):
/// what a forced chain runs with, so the handoff's chain rules run the same.
const OMPI_CHAIN_FANOUT: u32 = 4;

/// The part of a table Open MPI runs by itself: a rules file handed to it
/// before `MPI_Init` (the "handoff"), so that calls a rule gives to one of
/// Open MPI's own algorithms (or to its default decision) go straight to
/// `PMPI_Bcast`, with no per-call work of colltune's but one check.
///
/// Open MPI keys rules by communicator size only, so a size for which the
/// table has several node layouts is left to colltune (its rules file entry
/// keeps Open MPI's fixed decision). Rules of colltune's own algorithms are
/// written as algorithm 0 (Open MPI's fixed decision): those calls never
/// reach the library's broadcast, and where colltune does hand one of them
/// to the library (a communicator it could not set up), that is what it
/// would run anyway.
#[derive(Clone, Debug, PartialEq)]
pub struct Handoff {
    /// The classic rules file (`coll_tuned_dynamic_rules_filename`).
    pub rules: String,
    /// Per communicator size, the byte ranges (inclusive) Open MPI's rules
    /// decide; ascending, disjoint, neighbours merged.
    pub ranges: Vec<(u32, Vec<(u64, u64)>)>,
}

impl Handoff {
    /// A digest of the rules: every rank must have handed Open MPI the same.
    pub fn digest(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in self.rules.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        h
    }
}

/// The handoff of a table's broadcast rules to Open MPI (see [`Handoff`]);
/// None where no rule names one of Open MPI's algorithms or its default.
pub fn openmpi_handoff(table: &Table) -> Result<Option<Handoff>, ExportError> {
    let mut per_size: BTreeMap<u32, Vec<&CommRules>> = BTreeMap::new();
    for cr in &table.bcast {
        per_size.entry(cr.ranks).or_default().push(cr);
    }
    // Per handed-off size: the rules file's lines (from-byte, algorithm)
    // and the byte ranges Open MPI decides.
    type Entry = (u32, Vec<(u64, Forced)>, Vec<(u64, u64)>);
    let mut entries: Vec<Entry> = Vec::new();
    for (size, layouts) in per_size {
        let [cr] = layouts[..] else { continue };
        let mut lines: Vec<(u64, Forced)> = Vec::new();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        let fixed = Forced { id: 0, segment: 0 };
        if cr.rules.first().is_some_and(|r| r.min_bytes > 0) {
            lines.push((0, fixed));
        }
        for r in &cr.rules {
            // Only coll/tuned's algorithms are the rules file's to run; a
            // coll/adapt rule (another component) is written as the fixed
            // decision and runs on colltune's duplicate, an MPICH one
            // cannot run on Open MPI (colltune falls back, warned).
            let f = match library(r, cr.ranks)? {
                Some(LibraryChoice::Tuned(f)) => Some(f),
                _ => None,
            };
            let line = f.unwrap_or(fixed);
            if lines.last().map(|l| l.1) != Some(line) {
                lines.push((r.min_bytes, line));
            }
            if f.is_some() {
                let max = r.max_bytes.unwrap_or(u64::MAX);
                match ranges.last_mut() {
                    Some(last) if last.1.checked_add(1) == Some(r.min_bytes) => last.1 = max,
                    _ => ranges.push((r.min_bytes, max)),
                }
            }
        }
        if !ranges.is_empty() {
            entries.push((size, lines, ranges));
        }
    }
    if entries.is_empty() {
        return Ok(None);
    }
    const FIXED: &str = "Open MPI's fixed decision";
    let mapped = |f: Forced| Mapped {
        id: f.id,
        name: if f.is_default() {
            FIXED
        } else {
            f.tuned().name
        }
        .into(),
        faninout: if f.id == 2 { OMPI_CHAIN_FANOUT } else { 0 },
        segment: u64::from(f.segment),
        params: Vec::new(),
    };
    let files: Vec<SizeLines> = entries
        .iter()
        .map(|(size, lines, _)| {
            (
                *size,
                lines.iter().map(|&(min, f)| (min, mapped(f))).collect(),
            )
        })
        .collect();
    let first = format!(
        "colltune's handoff of the library rules in a table of {}, {}",
        table.provenance.host, table.provenance.date
    );
    let out = classic_file(&first, &files, FIXED);
    Ok(Some(Handoff {
        rules: out,
        ranges: entries.into_iter().map(|(s, _, r)| (s, r)).collect(),
    }))
}

/// Open MPI 6.0's JSON rules (`rule_file_version` 3).
pub fn openmpi_json(table: &Table) -> Result<(String, Vec<String>), ExportError> {
    let mut notes = Notes::default();
    let mut comms = Vec::new();
    for cr in by_size(table, &mut notes) {
        let rules: Vec<Value> = ompi_rules(cr, &mut notes)?
            .into_iter()
            .map(|(min, max, m)| {
                let mut r = Map::new();
                r.insert("msg_size_min".into(), json!(min));
                r.insert(
                    "msg_size_max".into(),
                    max.map_or(json!("inf"), |m| json!(m)),
                );
                r.insert("alg".into(), json!(m.name));
                if m.faninout > 0 {
                    r.insert("faninout".into(), json!(m.faninout));
                }
                if m.segment > 0 {
                    r.insert("seg_size".into(), json!(m.segment));
                }
                Value::Object(r)
            })
            .collect();
        comms.push(json!({"comm_size_min": cr.ranks, "comm_size_max": cr.ranks, "rules": rules}));
    }
    let v = json!({
        "rule_file_version": 3,
        "module": "tuned",
        "collectives": {"bcast": comms},
    });
    Ok((
        serde_json::to_string_pretty(&v).expect("JSON"),
        notes.into_vec(),
    ))
}

#[cfg(test)]
mod tests {
    use super::mpich::*;
    use super::*;
    use crate::tables::table::fixtures::{yaml, SWAP_SENDRECV};
    use crate::tables::table::load_str;

    /// A table for 4 ranks on one node whose first rule is coll/tuned's
    /// knomial (0-1023 B), then `rules`.
    fn knomial_then(rules: &str) -> Table {
        let first = "bcast:
- ranks: 4
  ppn: 4
  nodes: 1
  rules:
  - min_bytes: 0
    max_bytes: 1023
    algorithm: ompi_tuned
    params:
      algorithm: 7
      segment: 0
    execution: library
";
        load_str(&yaml(&format!("{first}{rules}"))).unwrap()
    }

    fn library_table() -> Table {
        knomial_then(
            "  - min_bytes: 1024
    max_bytes: 65535
    algorithm: linear
    execution: blocking
  - min_bytes: 65536
    algorithm: ompi_tuned
    params:
      algorithm: split_binary_tree
      segment: 8192
    execution: library
",
        )
    }

    #[test]
    fn every_registered_broadcast_exports_to_each_format() {
        // One rule per algorithm of the registry (hierarchical's phases are
        // its defaults); each lands in every format as some library
        // algorithm, and the ones a library does not have are said.
        for a in colltune_algorithms::registry::algorithms(colltune_algorithms::Collective::Bcast) {
            let t = knomial_then(&format!(
                "  - min_bytes: 1024\n    algorithm: {}\n    execution: blocking\n",
                a.name
            ));
            // (its line may be merged into the knomial rule's before it)
            let (text, notes) = openmpi_classic(&t).unwrap();
            assert!(
                text.lines().any(|l| l.starts_with("0 7 ")),
                "{}: {text}",
                a.name
            );
            let native = TUNED_BCAST.iter().any(|x| x.ours == a.name);
            assert!(
                native || notes.iter().any(|n| n.starts_with(a.name)),
                "{}: {text} {notes:?}",
                a.name
            );
            openmpi_json(&t).unwrap();
            let (json, _) = mpich_json(&t, None).unwrap();
            assert!(
                json.contains("algorithm=MPIR_Bcast_intra_"),
                "{}: {json}",
                a.name
            );
        }
    }

    #[test]
    fn library_rules_export_to_their_own_ids() {
        let (text, notes) = openmpi_classic(&library_table()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&"0 7 0 0 # knomial"), "{text}");
        assert!(lines.contains(&"1024 1 0 0 # basic_linear"), "{text}");
        assert!(
            lines.contains(&"65536 4 0 8192 # split_binary_tree"),
            "{text}"
        );
        assert!(notes.is_empty(), "{notes:?}");
        let (json, _) = openmpi_json(&library_table()).unwrap();
        assert!(json.contains("\"alg\": \"knomial\""), "{json}");
        assert!(json.contains("\"seg_size\": 8192"), "{json}");
        // MPICH has no Open MPI algorithms: a stand-in, and a note saying so.
        let (_, notes) = mpich_json(&library_table(), None).unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("Open MPI's knomial") && n.contains("MPICH does not have")),
            "{notes:?}"
        );
    }

    #[test]
    fn the_handoff_gives_open_mpi_only_its_own_rules() {
        let h = openmpi_handoff(&library_table()).unwrap().unwrap();
        let lines: Vec<&str> = h.rules.lines().collect();
        assert_eq!(lines[1], "7 # collective id: bcast", "{}", h.rules);
        assert_eq!(lines[2], "2 # number of communicator sizes", "{}", h.rules);
        assert_eq!(
            lines[3..],
            [
                "4 # communicator size",
                "3 # number of message sizes",
                "0 7 0 0 # knomial",
                // colltune's own linear: Open MPI's fixed decision, not its linear
                "1024 0 0 0 # Open MPI's fixed decision",
                "65536 4 0 8192 # split_binary_tree",
                "5 # communicator size",
                "1 # number of message sizes",
                "0 0 0 0 # Open MPI's fixed decision",
            ],
            "{}",
            h.rules
        );
        assert_eq!(h.ranges, vec![(4, vec![(0, 1023), (65536, u64::MAX)])]);
        // No rule of the library's: nothing to hand off.
        assert_eq!(openmpi_handoff(&table()).unwrap(), None);
    }

    /// A table of coll/adapt and MPICH rules beside a coll/tuned one.
    fn adapt_mpich_table() -> Table {
        knomial_then(
            "  - min_bytes: 1024
    max_bytes: 65535
    algorithm: ompi_adapt
    params:
      algorithm: pipeline
      segment: 8192
    execution: library
  - min_bytes: 65536
    max_bytes: 262143
    algorithm: mpich
    params:
      algorithm: scatter_ring_allgather
    execution: library
  - min_bytes: 262144
    max_bytes: 1048575
    algorithm: mpich
    params:
      algorithm: pipelined_tree
    execution: library
  - min_bytes: 1048576
    algorithm: mpich
    params:
      algorithm: auto
    execution: library
",
        )
    }

    #[test]
    fn adapt_and_mpich_rules_export_natively_or_say_what_stands_in() {
        let t = adapt_mpich_table();
        // Open MPI's rules file: coll/tuned's pipeline for adapt's, with a
        // note; MPICH's by colltune's nearest, with a note.
        let (text, notes) = openmpi_classic(&t).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&"0 7 0 0 # knomial"), "{text}");
        assert!(lines.contains(&"1024 3 0 8192 # pipeline"), "{text}");
        assert!(
            lines.contains(&"65536 9 0 0 # scatter_allgather_ring"),
            "{text}"
        );
        assert!(lines.contains(&"1048576 0 0 0 # default"), "{text}");
        for says in [
            "coll/tuned's rules file cannot choose coll/adapt",
            "MPICH's scatter_ring_allgather (MPIR_CVAR_BCAST_INTRA_ALGORITHM), which Open MPI does not have",
            "MPICH's own decision",
        ] {
            assert!(notes.iter().any(|n| n.contains(says)), "{says}: {notes:?}");
        }
        // MPICH's file names its own algorithms; auto keeps MPICH's rules.
        let base = MpichBase {
            rules: json!({"collective=bcast": {"comm_type=intra": {"algorithm=MPIR_Bcast_intra_smp": {}}}}),
            known: vec![
                "MPIR_Bcast_intra_scatter_ring_allgather".into(),
                "MPIR_Bcast_intra_pipelined_tree".into(),
                "MPIR_Bcast_intra_tree".into(),
            ],
        };
        let (json, notes) = mpich_json(&t, Some(base)).unwrap();
        let v: Value = serde_json::from_str(&json).unwrap();
        let four = &v["collective=bcast"]["comm_type=intra"]["comm_size<=4"];
        assert_eq!(
            four["avg_msg_size<=262143"],
            json!({"algorithm=MPIR_Bcast_intra_scatter_ring_allgather": {}}),
            "{json}"
        );
        assert!(
            four["avg_msg_size<=1048575"]["algorithm=MPIR_Bcast_intra_pipelined_tree"]
                .get("chunk_size=8192")
                .is_some(),
            "{json}"
        );
        assert_eq!(
            four["avg_msg_size=any"],
            json!({"algorithm=MPIR_Bcast_intra_smp": {}}),
            "{json}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("coll/adapt pipeline") && n.contains("MPICH does not have")),
            "{notes:?}"
        );
        assert!(
            !notes.iter().any(|n| n.contains("scatter_ring_allgather")),
            "{notes:?}"
        );
    }

    #[test]
    fn the_handoff_leaves_adapt_and_mpich_rules_to_colltune() {
        let h = openmpi_handoff(&adapt_mpich_table()).unwrap().unwrap();
        let lines: Vec<&str> = h.rules.lines().collect();
        assert_eq!(
            lines[3..7],
            [
                "4 # communicator size",
                "2 # number of message sizes",
                "0 7 0 0 # knomial",
                // adapt and MPICH rules: the fixed decision, not covered
                "1024 0 0 0 # Open MPI's fixed decision",
            ],
            "{}",
            h.rules
        );
        // Only the coll/tuned rule is the rules file's to run.
        assert_eq!(h.ranges, vec![(4, vec![(0, 1023)])]);
    }

    #[test]
    fn the_handoff_skips_sizes_with_several_layouts_and_merges_ranges() {
        let t = load_str(&yaml(
            "bcast:
- ranks: 4
  ppn: 2
  nodes: 2
  rules:
  - min_bytes: 0
    algorithm: ompi_tuned
    params:
      algorithm: 1
    execution: library
- ranks: 4
  ppn: 4
  nodes: 1
  rules:
  - min_bytes: 0
    algorithm: ompi_tuned
    params:
      algorithm: 6
    execution: library
- ranks: 6
  ppn: 6
  nodes: 1
  rules:
  - min_bytes: 0
    max_bytes: 99
    algorithm: knomial
    execution: blocking
  - min_bytes: 100
    max_bytes: 199
    algorithm: ompi_tuned
    params:
      algorithm: chain
      segment: 1024
    execution: library
  - min_bytes: 200
    max_bytes: 299
    algorithm: ompi_tuned
    params:
      algorithm: default
    execution: library
  - min_bytes: 300
    algorithm: binomial
    execution: blocking
- ranks: 7
  ppn: 7
  nodes: 1
  rules:
  - min_bytes: 0
    algorithm: ompi_tuned
    params:
      algorithm: 0
    execution: library
",
        ))
        .unwrap();
        let h = openmpi_handoff(&t).unwrap().unwrap();
        // 4 ranks has two layouts: left to colltune; 6 and 7 are handed
        // off, 7 followed by its own end (8: the fixed decision).
        assert_eq!(
            h.ranges,
            vec![(6, vec![(100, 299)]), (7, vec![(0, u64::MAX)])],
            "{}",
            h.rules
        );
        let text = &h.rules;
        assert!(text.contains("3 # number of communicator sizes"), "{text}");
        assert!(
            text.contains("6 # communicator size\n3 # number of message sizes\n0 0 0 0 # Open MPI's fixed decision\n100 2 4 1024 # chain\n200 0 0 0 # Open MPI's fixed decision\n7 # communicator size\n1 # number of message sizes\n0 0 0 0 # Open MPI's fixed decision\n8 # communicator size"),
            "{text}"
        );
        assert!(!text.contains("4 # communicator size"), "{text}");
    }

    fn table() -> Table {
        load_str(&yaml(
            &[
                "bcast:
- ranks: 4
  ppn: 4
  nodes: 1
  rules:
  - min_bytes: 0
    max_bytes: 999
    algorithm: linear
    execution: blocking
  - min_bytes: 1000
    max_bytes: 1999
    algorithm: linear
    execution: nonblocking
  - min_bytes: 2000
    max_bytes: 99999
    algorithm: knomial
    params:
      radix: 3
    execution: blocking
  - min_bytes: 100000
    algorithm: pipeline
    params:
      segment: 65536
    execution: nonblocking
- ranks: 8
  ppn: 8
  nodes: 1
  rules:
  - min_bytes: 0
    algorithm: chain
    params:
      fanout: 2
    execution: blocking
",
                SWAP_SENDRECV,
            ]
            .concat(),
        ))
        .unwrap()
    }

    #[test]
    fn classic_open_mpi_rules() {
        let (text, notes) = openmpi_classic(&table()).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .map(|l| l.split('#').next().unwrap().trim())
            .collect();
        assert_eq!(&lines[..3], &["1", "7", "4"], "{text}");
        // 4 ranks: linear merged across executions, knomial, pipeline
        assert_eq!(
            &lines[3..8],
            &["4", "3", "0 1 0 0", "2000 7 0 0", "100000 3 0 65536"],
            "{text}"
        );
        // 5 ranks: back to Open MPI's fixed decision
        assert_eq!(&lines[8..11], &["5", "1", "0 0 0 0"], "{text}");
        assert_eq!(&lines[11..14], &["8", "1", "0 2 2 65536"], "{text}");
        assert!(
            notes
                .iter()
                .any(|n| n.contains("coll_tuned_bcast_knomial_radix 3")),
            "{notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains("swap")), "{notes:?}");
    }

    #[test]
    fn open_mpi_json_rules() {
        let (text, _) = openmpi_json(&table()).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["rule_file_version"], 3);
        let c4 = &v["collectives"]["bcast"][0];
        assert_eq!(c4["comm_size_min"], 4);
        assert_eq!(c4["rules"][2]["alg"], "pipeline");
        assert_eq!(c4["rules"][2]["seg_size"], 65536);
        assert_eq!(c4["rules"][2]["msg_size_max"], "inf");
        assert_eq!(c4["rules"][0]["msg_size_max"], 1999);
    }

    #[test]
    fn mpich_rules_replace_only_bcast() {
        let base = json!({
            "collective=bcast": {"comm_type=intra": {"algorithm=MPIR_Bcast_intra_binomial": {}}, "comm_type=inter": {"algorithm=X": {}}},
            "collective=barrier": {"algorithm=MPIR_Barrier_intra_dissemination": {}}
        });
        let known = vec![
            "MPIR_Bcast_intra_binomial".to_string(),
            "MPIR_Bcast_intra_tree".to_string(),
        ];
        let (text, notes) = mpich_json(
            &table(),
            Some(MpichBase {
                rules: base.clone(),
                known,
            }),
        )
        .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(v["collective=barrier"].is_object());
        let intra = &v["collective=bcast"]["comm_type=intra"];
        let keys: Vec<&String> = intra.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "comm_size<=3",
                "comm_size<=4",
                "comm_size<=7",
                "comm_size<=8",
                "comm_size=any"
            ]
        );
        let four = &intra["comm_size<=4"];
        assert!(
            four["avg_msg_size<=1999"]["algorithm=MPIR_Bcast_intra_tree"]["k=3"].is_object(),
            "{text}"
        );
        assert!(
            four["avg_msg_size=any"]["algorithm=MPIR_Bcast_intra_pipelined_tree"]
                ["chunk_size=65536"]
                .is_object(),
            "{text}"
        );
        assert!(intra["comm_size=any"]["algorithm=MPIR_Bcast_intra_binomial"].is_object());
        assert!(notes.iter().any(|n| n.contains("linear")));
        // MPICH 4.0 has no tree broadcast: binomial instead, said so
        let old = MpichBase {
            rules: base,
            known: vec!["MPIR_Bcast_intra_binomial".into()],
        };
        let (text, notes) = mpich_json(&table(), Some(old)).unwrap();
        assert!(!text.contains("MPIR_Bcast_intra_tree"), "{text}");
        assert!(
            notes.iter().any(|n| n.contains("arrived after 4.0")),
            "{notes:?}"
        );
    }

    #[test]
    fn library_json_is_found_between_other_bytes() {
        let mut blob = b"\x00junk{\"collective=x\":{}}\x00".to_vec();
        blob.extend_from_slice(
            b"{\"collective=bcast\":{\"algorithm=MPIR_Bcast_intra_binomial\":{}}}\x00more",
        );
        let p = std::env::temp_dir().join(format!("fake-libmpich-{}.so", std::process::id()));
        std::fs::write(&p, &blob).unwrap();
        let v = mpich_base(&p).unwrap();
        assert!(v.rules["collective=bcast"].is_object());
        assert_eq!(v.known, vec!["MPIR_Bcast_intra_binomial".to_string()]);
        std::fs::write(&p, b"nothing here").unwrap();
        assert!(mpich_base(&p).is_err());
    }
}
