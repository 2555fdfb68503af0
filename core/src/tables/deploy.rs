//! Which route a table needs at run time (`colltune deploy`): where every
//! rule of every communicator shape is one of the MPI library's own
//! algorithms that its own rules file can run, the library runs the table
//! by itself (Open MPI's coll/tuned rules file, MPICH's JSON selection):
//! no interposition at all, so not even the floor of one (an `LD_PRELOAD`
//! library's `MPI_Bcast` in front of `PMPI_Bcast`) is paid. Otherwise the
//! drop-in (`LD_PRELOAD=libcolltune_preload.so`), which hands the library
//! rules to Open MPI's rules file itself at `MPI_Init` and runs colltune's
//! own algorithms where the table chose them.
//!
//! What a rules file cannot say (each a reason for the drop-in):
//! - a rule of colltune's own algorithms;
//! - on Open MPI, a coll/adapt rule (its rules file is coll/tuned's), or an
//!   MPICH rule; on MPICH, an Open MPI rule;
//! - rules for one communicator size that differ by node layout (both
//!   libraries key their rules by communicator size alone).
//!
//! Swap rules are for programs calling `colltune_swap` (`libcolltune.so`),
//! which neither route involves: a note says so.

use std::collections::BTreeMap;

use crate::libraries::library::LibraryChoice;
use crate::tables::export::{self, ExportError, MpichBase};
use crate::tables::table::{CommRules, Rule, Table};

/// The MPI library a deployment is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Library {
    OpenMpi,
    Mpich,
}

impl Library {
    /// From a name (`openmpi`, `mpich`, `intelmpi`, ...) or a table's
    /// provenance (`Open MPI v4.1.4`, `MPICH 4.0.2`); None: not one of
    /// them.
    pub fn from_name(name: &str) -> Option<Library> {
        let n: String = name
            .to_ascii_lowercase()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        if n.starts_with("openmpi") || n.starts_with("ompi") {
            Some(Library::OpenMpi)
        } else if n.starts_with("mpich") || n.starts_with("mvapich") {
            Some(Library::Mpich)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Library::OpenMpi => "Open MPI",
            Library::Mpich => "MPICH",
        }
    }
}

/// How a table is deployed.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// The library's own rules file, no interposition: `text` is the file
    /// (Open MPI's classic coll/tuned rules, or MPICH's JSON selection).
    RulesFile { library: Library, text: String },
    /// The drop-in. `why`: the rules a rules file cannot run, one line
    /// each; `handed`: per communicator size, the byte ranges the drop-in
    /// hands to Open MPI's rules file at `MPI_Init` (none on MPICH).
    Preload {
        why: Vec<String>,
        handed: Vec<(u32, Vec<(u64, u64)>)>,
    },
}

/// A deployment: its route and notes.
#[derive(Clone, Debug, PartialEq)]
pub struct Deployment {
    pub route: Route,
    pub notes: Vec<String>,
}

/// The shape of a communicator's rules, for messages.
fn shape(cr: &CommRules) -> String {
    format!(
        "{} ranks ({} per node, {} node{})",
        cr.ranks,
        cr.ppn,
        cr.nodes,
        if cr.nodes == 1 { "" } else { "s" }
    )
}

/// Why `library`'s rules file cannot run `rule` (None: it can).
fn unfit(rule: &Rule, ranks: u32, library: Library) -> Result<Option<String>, ExportError> {
    let choice = rule
        .library()
        .transpose()
        .map_err(|why| ExportError::Rule {
            ranks,
            range: rule.range(),
            why,
        })?;
    let spec = || {
        rule.spec()
            .map_or_else(|_| rule.algorithm.clone(), |s| s.to_string())
    };
    Ok(match (choice, library) {
        (None, _) => Some(format!("{} is colltune's", spec())),
        (Some(LibraryChoice::Tuned(_)), Library::OpenMpi) => None,
        (Some(LibraryChoice::Mpich(_)), Library::Mpich) => None,
        (Some(LibraryChoice::Adapt(a)), Library::OpenMpi) => Some(format!(
            "{a} is coll/adapt's, and Open MPI's rules file is coll/tuned's"
        )),
        (Some(c), l) => Some(format!("{c} is not one of {}'s algorithms", l.name())),
    })
}

/// Decides how `table` is deployed on `library` (MPI-free). `mpich_base`:
/// for MPICH's rules file, MPICH's own rules for the other collectives
/// (see [`export::mpich_json`]).
pub fn deploy(
    table: &Table,
    library: Library,
    mpich_base: Option<MpichBase>,
) -> Result<Deployment, ExportError> {
    let mut notes = Vec::new();
    if table.bcast.is_empty() {
        return Err(ExportError::Base(
            "the table has no broadcast rules: nothing to deploy".into(),
        ));
    }
    if !table.swap.is_empty() {
        notes.push(
            "the table's swap rules are for programs calling colltune_swap (libcolltune.so, COLLTUNE_TABLE): neither route involves them".into(),
        );
    }
    let mut why = Vec::new();
    for cr in &table.bcast {
        for r in &cr.rules {
            if let Some(w) = unfit(r, cr.ranks, library)? {
                why.push(format!("{}: {} B: {w}", shape(cr), r.range()));
            }
        }
    }
    let mut per_size: BTreeMap<u32, Vec<&CommRules>> = BTreeMap::new();
    for cr in &table.bcast {
        per_size.entry(cr.ranks).or_default().push(cr);
    }
    for (size, layouts) in &per_size {
        let first = &layouts[0].rules;
        if layouts.iter().any(|cr| &cr.rules != first) {
            let shapes: Vec<String> = layouts.iter().map(|cr| shape(cr)).collect();
            why.push(format!(
                "{size} ranks: the rules differ by node layout ({}), and {}'s rules are keyed by communicator size alone",
                shapes.join(", "),
                library.name()
            ));
        }
    }
    if !why.is_empty() {
        let handed = match library {
            Library::OpenMpi => export::openmpi_handoff(table)?.map_or(Vec::new(), |h| h.ranges),
            Library::Mpich => Vec::new(),
        };
        return Ok(Deployment {
            route: Route::Preload { why, handed },
            notes,
        });
    }
    // One rule set per size from here on (identical layouts kept once).
    let mut single = table.clone();
    let mut seen = std::collections::BTreeSet::new();
    single.bcast.retain(|cr| seen.insert(cr.ranks));
    single.swap.clear();
    let text = match library {
        Library::OpenMpi => {
            export::openmpi_handoff(&single)?
                .ok_or_else(|| {
                    ExportError::Base("no rule names one of Open MPI's algorithms".into())
                })?
                .rules
        }
        Library::Mpich => {
            let (text, more) = export::mpich_json(&single, mpich_base)?;
            notes.extend(more);
            text
        }
    };
    Ok(Deployment {
        route: Route::RulesFile { library, text },
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::table;

    fn table_of(shapes: &[(u32, u32, u32, &str)]) -> Table {
        let mut t = String::from(
            "schema: 1\nprovenance: {host: t, mpi: Open MPI, date: now, command: x, colltune: 0.1.0, source: hand-written, sweep: {mode: hand-written}}\nbcast:\n",
        );
        for (ranks, ppn, nodes, rules) in shapes {
            t += &format!("- ranks: {ranks}\n  ppn: {ppn}\n  nodes: {nodes}\n  rules:\n{rules}");
        }
        table::load_str(&t).unwrap_or_else(|e| panic!("{e:?}\n{t}"))
    }

    const LIBRARY: &str = "  - {min_bytes: 0, max_bytes: 1023, algorithm: ompi_tuned, params: {algorithm: 1}, execution: library}\n  - {min_bytes: 1024, algorithm: ompi_tuned, params: {algorithm: 6}, execution: library}\n";
    const MIXED: &str = "  - {min_bytes: 0, max_bytes: 1023, algorithm: ompi_tuned, params: {algorithm: 1}, execution: library}\n  - {min_bytes: 1024, algorithm: binomial, execution: blocking}\n";
    const ADAPT: &str =
        "  - {min_bytes: 0, algorithm: ompi_adapt, params: {algorithm: 1}, execution: library}\n";

    #[test]
    fn library_rules_only_go_to_open_mpis_rules_file() {
        let d = deploy(
            &table_of(&[(4, 4, 1, LIBRARY), (8, 4, 2, LIBRARY)]),
            Library::OpenMpi,
            None,
        )
        .unwrap();
        let Route::RulesFile { library, text } = d.route else {
            panic!("{:?}", d.route)
        };
        assert_eq!(library, Library::OpenMpi);
        // both sizes' rules, each followed by the fixed decision
        assert!(text.contains("4 # communicator size"), "{text}");
        assert!(text.contains("8 # communicator size"), "{text}");
        assert!(text.contains("0 1 0 0 # basic_linear"), "{text}");
        assert!(text.contains("1024 6 0 0 # binomial"), "{text}");
        assert!(d.notes.is_empty(), "{:?}", d.notes);
    }

    #[test]
    fn any_rule_of_colltunes_needs_the_preload_and_says_which() {
        let d = deploy(
            &table_of(&[(4, 4, 1, LIBRARY), (3, 3, 1, MIXED)]),
            Library::OpenMpi,
            None,
        )
        .unwrap();
        let Route::Preload { why, handed } = d.route else {
            panic!("{:?}", d.route)
        };
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].starts_with("3 ranks (3 per node, 1 node): 1024.. B: binomial"),
            "{why:?}"
        );
        // the library rules still go to Open MPI's rules file, by the preload
        assert_eq!(handed, vec![(3, vec![(0, 1023)]), (4, vec![(0, u64::MAX)])]);
    }

    #[test]
    fn what_the_rules_file_cannot_say_needs_the_preload() {
        // coll/adapt on Open MPI
        let d = deploy(&table_of(&[(4, 4, 1, ADAPT)]), Library::OpenMpi, None).unwrap();
        assert!(
            matches!(&d.route, Route::Preload { why, .. } if why[0].contains("coll/adapt")),
            "{d:?}"
        );
        // Open MPI's rules on MPICH
        let d = deploy(&table_of(&[(4, 4, 1, LIBRARY)]), Library::Mpich, None).unwrap();
        assert!(
            matches!(&d.route, Route::Preload { why, handed } if why.len() == 2 && handed.is_empty()),
            "{d:?}"
        );
        // one size, two layouts, different rules
        let other = "  - {min_bytes: 0, algorithm: ompi_tuned, params: {algorithm: 7}, execution: library}\n";
        let d = deploy(
            &table_of(&[(8, 8, 1, LIBRARY), (8, 4, 2, other)]),
            Library::OpenMpi,
            None,
        )
        .unwrap();
        let Route::Preload { why, .. } = d.route else {
            panic!("{:?}", d.route)
        };
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("differ by node layout"), "{why:?}");
        // the same rules for both layouts: one rules file
        let d = deploy(
            &table_of(&[(8, 8, 1, LIBRARY), (8, 4, 2, LIBRARY)]),
            Library::OpenMpi,
            None,
        )
        .unwrap();
        assert!(matches!(d.route, Route::RulesFile { .. }), "{d:?}");
    }

    #[test]
    fn library_names_are_read_loosely() {
        assert_eq!(Library::from_name("openmpi5"), Some(Library::OpenMpi));
        assert_eq!(
            Library::from_name("Open MPI v4.1.4"),
            Some(Library::OpenMpi)
        );
        assert_eq!(Library::from_name("MPICH 4.0.2"), Some(Library::Mpich));
        assert_eq!(Library::from_name("intelmpi"), None);
    }
}
