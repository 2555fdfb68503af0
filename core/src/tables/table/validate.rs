//! Loading a table and finding every problem in it, each with file:line and
//! what to do. Used by `colltune validate` (report all), by every command
//! that reads a table, and by the runtime selector (warn once, fall back).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use colltune_algorithms::resolve;

use super::{Param, Section, Table, SCHEMA_READ, SCHEMA_VERSION};

/// One problem in a table.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    pub line: Option<usize>,
    pub what: String,
    pub fix: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}; {}", self.what, self.fix),
            None => write!(f, "{}; {}", self.what, self.fix),
        }
    }
}

/// A table that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a regular file (a table must be a file, not a pipe or a device); point COLLTUNE_TABLE or the argument at a table file")]
    NotAFile { path: PathBuf },
    #[error("{path}: {bytes} bytes is larger than a table can be ({MAX_TABLE_BYTES} bytes at most); is this the right file?")]
    TooLarge { path: PathBuf, bytes: u64 },
    #[error("{}", fmt_problems(.path, .problems))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
}

fn fmt_problems(path: &Path, problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| match p.line {
            Some(l) => format!("{}:{l}: {}; {}", path.display(), p.what, p.fix),
            None => format!("{}: {}; {}", path.display(), p.what, p.fix),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl TableError {
    pub fn problems(&self) -> &[Problem] {
        match self {
            TableError::Invalid { problems, .. } => problems,
            TableError::Read { .. } | TableError::NotAFile { .. } | TableError::TooLarge { .. } => {
                &[]
            }
        }
    }
}

/// The largest table file colltune reads (4 MiB: a table of 1,024
/// communicator shapes of 20 rules each is under 3 MiB). A bigger file is
/// refused before it is read: a table is read inside `MPI_Init`.
pub const MAX_TABLE_BYTES: u64 = 4 << 20;

/// Reads and checks a table file: a regular file (not a FIFO or a device,
/// which could block or never end) of at most [`MAX_TABLE_BYTES`].
pub fn load(path: &Path) -> Result<Table, TableError> {
    let text = read_text(path)?;
    load_str(&text).map_err(|problems| TableError::Invalid {
        path: path.into(),
        problems,
    })
}

/// The text of a table file, refusing what is not a regular file of at
/// most [`MAX_TABLE_BYTES`].
pub fn read_text(path: &Path) -> Result<String, TableError> {
    use std::io::Read;
    let read = |source| TableError::Read {
        path: path.into(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read)?;
    if !meta.is_file() {
        return Err(TableError::NotAFile { path: path.into() });
    }
    if meta.len() > MAX_TABLE_BYTES {
        return Err(TableError::TooLarge {
            path: path.into(),
            bytes: meta.len(),
        });
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(read)?
        .take(MAX_TABLE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(read)?;
    if text.len() as u64 > MAX_TABLE_BYTES {
        return Err(TableError::TooLarge {
            path: path.into(),
            bytes: text.len() as u64,
        });
    }
    Ok(text)
}

/// Problems in a compact form for other processes (see `Table::to_wire`).
pub fn problems_to_wire(problems: &[Problem]) -> Vec<u8> {
    serde_json::to_vec(problems).unwrap_or_default()
}

/// The problems [`problems_to_wire`] wrote (none if garbled).
pub fn problems_from_wire(bytes: &[u8]) -> Vec<Problem> {
    serde_json::from_slice(bytes).unwrap_or_default()
}

/// Parses and checks table text; every problem found, not only the first.
pub fn load_str(text: &str) -> Result<Table, Vec<Problem>> {
    // The schema version first, so an old or future table gets the right
    // message rather than a field-by-field complaint.
    if let Some((line, v)) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.strip_prefix("schema:").map(|v| (i + 1, v.trim())))
    {
        let v = v.split(" #").next().unwrap_or(v).trim();
        if !SCHEMA_READ.iter().any(|s| v == s.to_string()) {
            return Err(vec![Problem {
                line: Some(line),
                what: format!(
                    "schema version {v} is not supported (this colltune reads {} and writes {SCHEMA_VERSION})",
                    SCHEMA_READ.map(|s| s.to_string()).join(" and ")
                ),
                fix: "rebuild the table from its raw CSV with `colltune table build`, or use the colltune that wrote it".into(),
            }]);
        }
    }
    let table: Table = serde_yaml::from_str(text).map_err(|e| {
        vec![Problem {
            line: e.location().map(|l| l.line()),
            what: e.to_string(),
            fix: "fix the YAML (see tuning-tables/README.md for the schema)".into(),
        }]
    })?;
    let problems = check(&table, text);
    if problems.is_empty() {
        Ok(table)
    } else {
        Err(problems)
    }
}

/// Where each communicator entry and rule starts:
/// (collective, comm index, rule index or None for the entry) -> line.
struct Lines {
    at: HashMap<(Section, usize, Option<usize>), usize>,
}

impl Lines {
    /// Scans block-style YAML as colltune writes it (hand edits in the same
    /// style keep their line numbers; other styles lose them, not validity).
    fn scan(text: &str) -> Lines {
        let mut at = HashMap::new();
        let mut coll: Option<Section> = None;
        let (mut comm, mut rule): (isize, isize) = (-1, -1);
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim_end();
            if !line.starts_with(' ') && !line.starts_with('-') && line.ends_with(':') {
                coll = line.trim_end_matches(':').parse().ok();
                comm = -1;
                continue;
            }
            let Some(c) = coll else { continue };
            let t = line.trim_start();
            let item = t.strip_prefix("- ").map(str::trim_start);
            match item {
                Some(rest) if rest.starts_with("ranks:") => {
                    comm += 1;
                    rule = -1;
                    at.entry((c, comm as usize, None)).or_insert(i + 1);
                }
                Some(rest) if rest.starts_with("min_bytes:") && comm >= 0 => {
                    rule += 1;
                    at.entry((c, comm as usize, Some(rule as usize)))
                        .or_insert(i + 1);
                }
                _ => {}
            }
        }
        Lines { at }
    }

    fn get(&self, c: Section, comm: usize, rule: Option<usize>) -> Option<usize> {
        self.at.get(&(c, comm, rule)).copied()
    }
}

/// Every semantic problem of a parsed table (lines found by scanning `text`).
pub fn check(table: &Table, text: &str) -> Vec<Problem> {
    let lines = Lines::scan(text);
    check_with(table, |c, ci, ri| lines.get(c, ci, ri))
}

/// A rule's algorithm as written: (collective, name, parameters).
type Seen<'t> = (Section, &'t str, &'t BTreeMap<String, Param>);

/// Every semantic problem of a parsed table; `line_of(collective, entry,
/// rule)` gives source lines.
pub fn check_with(
    table: &Table,
    line_of: impl Fn(Section, usize, Option<usize>) -> Option<usize>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    // Rules share few distinct algorithms: resolve each once.
    let mut resolved: HashMap<Seen, Option<String>> = HashMap::new();
    for c in Section::ALL {
        let entries = table.section(c);
        let mut keys = HashSet::new();
        for (ci, cr) in entries.iter().enumerate() {
            let at = line_of(c, ci, None);
            let key = cr.key();
            if cr.ranks == 0 || cr.ppn == 0 || cr.nodes == 0 {
                push(
                    &mut out,
                    at,
                    format!("{c} entry {key}: ranks, ppn and nodes must be at least 1"),
                    "correct the communicator key",
                );
            } else if u64::from(cr.ppn) * u64::from(cr.nodes) < u64::from(cr.ranks)
                || cr.nodes > cr.ranks
                || cr.ppn > cr.ranks
            {
                push(&mut out, at, format!("{c} entry {key}: impossible shape ({} nodes of at most {} ranks cannot hold {} ranks)", cr.nodes, cr.ppn, cr.ranks), "correct ranks, ppn or nodes");
            }
            if !keys.insert(key) {
                push(
                    &mut out,
                    at,
                    format!("{c} entry {key} appears twice"),
                    "merge the two entries or delete one",
                );
            }
            if cr.rules.is_empty() {
                push(
                    &mut out,
                    at,
                    format!("{c} entry {key} has no rules"),
                    "add rules or delete the entry",
                );
            }
            let mut expect_min = 0u64;
            let mut ended = false;
            for (ri, r) in cr.rules.iter().enumerate() {
                let at = line_of(c, ci, Some(ri)).or(at);
                let here = || format!("{c} {key} rule {} ({})", ri + 1, r.range());
                if ended {
                    push(&mut out, at, format!("{}: comes after a rule with no upper bound, so it is never used (overlapping ranges)", here()), "give the earlier rule a max_bytes or delete this one");
                } else if r.min_bytes > expect_min {
                    push(
                        &mut out,
                        at,
                        format!(
                            "{}: sizes {expect_min}..={} are covered by no rule (a gap)",
                            here(),
                            r.min_bytes - 1
                        ),
                        "make min_bytes follow the previous rule's max_bytes + 1",
                    );
                } else if r.min_bytes < expect_min {
                    push(
                        &mut out,
                        at,
                        format!(
                            "{}: overlaps the previous rule (which ends at {})",
                            here(),
                            expect_min - 1
                        ),
                        "make min_bytes follow the previous rule's max_bytes + 1",
                    );
                }
                match r.max_bytes {
                    Some(m) if m < r.min_bytes => {
                        push(
                            &mut out,
                            at,
                            format!(
                                "{}: max_bytes {m} is below min_bytes {}",
                                here(),
                                r.min_bytes
                            ),
                            "swap or correct the bounds",
                        );
                    }
                    Some(m) => expect_min = m.saturating_add(1),
                    None => ended = true,
                }
                check_choice(c, r, &here(), at, &mut resolved, &mut out);
            }
            if !cr.rules.is_empty() && !ended {
                // The last rule's end (expect_min is 0 when no rule had
                // valid bounds: then no rule covers anything).
                let end = match expect_min.checked_sub(1) {
                    Some(e) => format!("ends at {e} bytes"),
                    None => "covers no size".into(),
                };
                push(
                    &mut out,
                    at,
                    format!(
                        "{c} entry {key}: the last rule {end}, so larger messages have no rule"
                    ),
                    "remove max_bytes from the last rule",
                );
            }
        }
    }
    out
}

/// A rule's choice: a library algorithm only for a broadcast and one the
/// library has, else a registry algorithm and parameters (each distinct
/// one resolved once, in `resolved`); an execution; finite figures.
fn check_choice<'t>(
    c: Section,
    r: &'t super::Rule,
    here: &str,
    at: Option<usize>,
    resolved: &mut HashMap<Seen<'t>, Option<String>>,
    out: &mut Vec<Problem>,
) {
    use crate::libraries::library::CallKind;
    if let Some(lib) = r.library() {
        // The MPI library's own algorithm (broadcasts only), of the call
        // the section decides.
        match lib {
            _ if c == Section::Swap => push(
                out,
                at,
                format!("{here}: {} is a broadcast algorithm of the MPI library's; {c} has no library counterpart", r.algorithm),
                "choose a colltune algorithm (`colltune list`)",
            ),
            Err(e) => push(
                out,
                at,
                format!("{}: {e}", here),
                crate::libraries::library::LibraryChoice::reference(&r.algorithm),
            ),
            Ok(f) if f.call() != c.library_call() => push(
                out,
                at,
                match c.library_call() {
                    CallKind::Blocking => format!("{here}: {f} runs MPI_Ibcast and MPI_Bcast_init, not {}", c.mpi_call()),
                    CallKind::Nonblocking => format!("{here}: {f} is a blocking MPI_Bcast's algorithm, not one of {}'s", c.mpi_call()),
                },
                match c.library_call() {
                    CallKind::Blocking => "move the rule to the table's ibcast or bcast_init section, or choose ompi_tuned, ompi_adapt or mpich here",
                    CallKind::Nonblocking => "choose ompi_libnbc (Open MPI) or mpich_ibcast (MPICH) here",
                },
            ),
            Ok(_) => {}
        }
    } else if c.library_call() == CallKind::Nonblocking {
        push(
            out,
            at,
            format!("{here}: `{}` is none of the MPI library's nonblocking broadcasts; {} runs the library's own (colltune's schedules would need the library's MPI_Wait to progress them)", r.algorithm, c.mpi_call()),
            "choose ompi_libnbc (Open MPI) or mpich_ibcast (MPICH): see tuning-tables/README.md",
        );
    } else if let Some(e) = resolved
        .entry((c, &r.algorithm, &r.params))
        .or_insert_with(|| match r.spec() {
            Err(e) => Some(e.to_string()),
            Ok(spec) => resolve(c.collective(), &spec).err().map(|e| e.to_string()),
        })
        .clone()
    {
        push(
            out,
            at,
            format!("{}: {e}", here),
            "write a registry algorithm and parameters (`colltune list`)",
        );
    }
    if let (false, Err(e)) = (r.is_library(), r.execution()) {
        push(
            out,
            at,
            format!("{}: {e}", here),
            "use blocking or nonblocking",
        );
    }
    if r.time_us.is_some_and(|t| !(t.is_finite() && t >= 0.0))
        || r.margin.is_some_and(|m| !m.is_finite())
    {
        push(
            out,
            at,
            format!(
                "{}: time_us and margin must be finite, non-negative numbers",
                here
            ),
            "correct or delete them",
        );
    }
}

/// Adds a problem at `line`: what is wrong and what to do.
fn push(out: &mut Vec<Problem>, line: Option<usize>, what: String, fix: &str) {
    out.push(Problem {
        line,
        what,
        fix: fix.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::table::fixtures::{HEAD, SWAP_SENDRECV};
    use colltune_algorithms::Collective;

    /// `good()` with its broadcast rules replaced by `rules` (YAML, indented
    /// as rules are).
    fn with_bcast_rules(rules: &str) -> String {
        let good = good();
        let start = good.find("  - min_bytes: 0\n    max_bytes: 4095").unwrap();
        let end = good.find("swap:").unwrap();
        format!("{}{rules}{}", &good[..start], &good[end..])
    }

    #[test]
    fn library_rules_load_and_decide() {
        let text = with_bcast_rules(
            "  - min_bytes: 0
    max_bytes: 4095
    algorithm: ompi_tuned
    params:
      algorithm: 7
      segment: 0
    execution: library
  - min_bytes: 4096
    algorithm: ompi_tuned
    params:
      algorithm: binomial
      segment: 8K
    execution: library
",
        );
        let t = load_str(&text).unwrap();
        let key = super::super::CommKey::shape(4, 4, 1);
        let r = t.lookup(Collective::Bcast, key, 100).unwrap();
        assert_eq!(
            r.label(),
            "ompi_tuned:algorithm=7,name=knomial,segment=0 [library]"
        );
        let r = t.lookup(Collective::Bcast, key, 1 << 20).unwrap();
        assert_eq!(
            r.label(),
            "ompi_tuned:algorithm=6,name=binomial,segment=8192 [library]"
        );
        // What the runtime (and `explain`) decides: no colltune schedule,
        // the library's algorithm forced.
        let sel = crate::tables::decide::Selector {
            settings: Default::default(),
            table: Some(std::sync::Arc::new(t)),
            fallback: None,
        };
        let d = sel.decisions(Collective::Bcast, key);
        let (c, _) = d.choose(100);
        assert!(c.algorithm.is_none());
        assert_eq!(
            c.library,
            Some(crate::libraries::ompi::Forced { id: 7, segment: 0 }.into())
        );
        let (c, _) = d.choose(1 << 20);
        assert_eq!(
            c.library,
            Some(
                crate::libraries::ompi::Forced {
                    id: 6,
                    segment: 8192
                }
                .into()
            )
        );
        assert!(c.to_string().contains("Open MPI's binomial"), "{c}");
        assert_eq!(d.library_choices().len(), 2);
    }

    /// The good table with an `ibcast:` and a `bcast_init:` section of
    /// `rules` for 4 ranks on one node.
    fn with_call_rules(rules: &str) -> String {
        let mut t = good();
        for s in ["ibcast", "bcast_init"] {
            t.push_str(&format!(
                "{s}:\n- ranks: 4\n  ppn: 4\n  nodes: 1\n  rules:\n{rules}"
            ));
        }
        t
    }

    #[test]
    fn nonblocking_sections_load_and_decide_the_librarys_algorithms() {
        let text = with_call_rules(
            "  - min_bytes: 0
    max_bytes: 8191
    algorithm: ompi_libnbc
    params:
      algorithm: binomial
    execution: library
  - min_bytes: 8192
    algorithm: mpich_ibcast
    params:
      algorithm: tsp_ring
    execution: library
",
        );
        let t = load_str(&text).unwrap_or_else(|p| panic!("{p:?}"));
        assert_eq!((t.ibcast.len(), t.bcast_init.len()), (1, 1));
        // Written back, it reads the same.
        assert_eq!(load_str(&t.to_yaml().unwrap()).unwrap(), t);
        let sel = crate::tables::decide::Selector {
            settings: Default::default(),
            table: Some(std::sync::Arc::new(t)),
            fallback: None,
        };
        let key = super::super::CommKey::shape(4, 4, 1);
        for s in Section::NONBLOCKING {
            let d = sel.call_decisions(s, key);
            let (c, _) = d.choose(100);
            assert!(c.algorithm.is_none());
            assert_eq!(
                c.library.unwrap().spec().to_string(),
                "ompi_libnbc:algorithm=2,name=binomial"
            );
            let (c, _) = d.choose(1 << 20);
            assert_eq!(
                c.library.unwrap().spec().to_string(),
                "mpich_ibcast:algorithm=tsp_ring"
            );
            // Another shape: the library's own decision.
            let d = sel.call_decisions(s, super::super::CommKey::shape(8, 8, 1));
            let (c, _) = d.choose(100);
            assert!(c.algorithm.is_none() && c.library.is_none(), "{c}");
        }
        // The blocking call's decisions do not see them.
        let d = sel.decisions(Collective::Bcast, key);
        assert!(d.choose(100).0.library.is_none());
    }

    #[test]
    fn a_choice_of_the_wrong_call_is_refused_on_its_line() {
        for (rule, says, fix) in [
            (
                "    algorithm: binomial\n    execution: blocking\n",
                "none of the MPI library's nonblocking broadcasts",
                "ompi_libnbc",
            ),
            (
                "    algorithm: ompi_tuned\n    params:\n      algorithm: 6\n    execution: library\n",
                "a blocking MPI_Bcast's algorithm",
                "mpich_ibcast",
            ),
            (
                "    algorithm: ompi_libnbc\n    params:\n      algorithm: 9\n    execution: library\n",
                "unknown libnbc broadcast algorithm `9`",
                "ompi_info --param coll libnbc",
            ),
        ] {
            let text = with_call_rules(&format!("  - min_bytes: 0\n{rule}"));
            let problems = load_str(&text).unwrap_err();
            let p = problems
                .iter()
                .find(|p| p.what.contains(says))
                .unwrap_or_else(|| panic!("{rule}: {problems:?}"));
            assert!(p.line.is_some(), "{p:?}");
            assert!(p.fix.contains(fix), "{p:?}");
        }
        // A nonblocking algorithm among the blocking call's rules.
        let text = with_bcast_rules(
            "  - min_bytes: 0\n    algorithm: ompi_libnbc\n    params:\n      algorithm: 3\n    execution: library\n",
        );
        let problems = load_str(&text).unwrap_err();
        assert!(
            problems.iter().any(|p| p
                .what
                .contains("runs MPI_Ibcast and MPI_Bcast_init, not MPI_Bcast")
                && p.fix.contains("ibcast or bcast_init section")),
            "{problems:?}"
        );
    }

    #[test]
    fn bad_library_rules_name_the_line_and_the_fix() {
        for (params, execution, says) in [
            (
                "      algorithm: 12\n",
                "library",
                "unknown Open MPI broadcast algorithm 12",
            ),
            (
                "      algorithm: 10\n",
                "library",
                "unknown Open MPI broadcast algorithm 10",
            ),
            (
                "      algorithm: 6\n      segment: -1\n",
                "library",
                "segment -1 is negative",
            ),
            (
                "      algorithm: 1\n      segment: 1024\n",
                "library",
                "does not segment",
            ),
            (
                "      algorithm: 6\n",
                "blocking",
                "write `execution: library`",
            ),
            ("      segment: 0\n", "library", "needs `algorithm`"),
        ] {
            let text = with_bcast_rules(&format!(
                "  - min_bytes: 0
    algorithm: ompi_tuned
    params:
{params}    execution: {execution}
"
            ));
            let problems = load_str(&text).unwrap_err();
            assert_eq!(problems.len(), 1, "{params}: {problems:?}");
            let line = text
                .lines()
                .position(|l| l.contains("- min_bytes: 0") && !l.contains("max"))
                .map(|i| i + 1);
            let p = &problems[0];
            assert!(p.what.contains(says), "{params}: {p}");
            assert_eq!(p.line, line, "{p}");
            assert!(p.fix.contains("ompi_tuned"), "{p}");
        }
        // Not for swaps.
        let text = good().replace(
            "  - min_bytes: 0\n    algorithm: sendrecv\n    execution: blocking",
            "  - min_bytes: 0\n    algorithm: ompi_tuned\n    params:\n      algorithm: 6\n    execution: library",
        );
        let problems = load_str(&text).unwrap_err();
        assert!(
            problems[0].what.contains("no library counterpart"),
            "{problems:?}"
        );
    }

    #[test]
    fn adapt_and_mpich_rules_load_and_decide() {
        use crate::libraries::library::LibraryChoice;
        let text = with_bcast_rules(
            "  - min_bytes: 0
    max_bytes: 4095
    algorithm: ompi_adapt
    params:
      algorithm: in_order_binomial
      segment: 0
    execution: library
  - min_bytes: 4096
    max_bytes: 65535
    algorithm: mpich
    params:
      algorithm: scatter_ring_allgather
    execution: library
  - min_bytes: 65536
    algorithm: mpich
    params:
      algorithm: auto
    execution: library
",
        );
        let t = load_str(&text).unwrap();
        let key = super::super::CommKey::shape(4, 4, 1);
        assert_eq!(
            t.lookup(Collective::Bcast, key, 100).unwrap().label(),
            "ompi_adapt:algorithm=2,name=in_order_binomial,segment=0 [library]"
        );
        assert_eq!(
            t.lookup(Collective::Bcast, key, 5000).unwrap().label(),
            "mpich:algorithm=scatter_ring_allgather [library]"
        );
        let sel = crate::tables::decide::Selector {
            settings: Default::default(),
            table: Some(std::sync::Arc::new(t)),
            fallback: None,
        };
        let d = sel.decisions(Collective::Bcast, key);
        let (c, _) = d.choose(100);
        assert!(c.algorithm.is_none());
        assert_eq!(
            c.library,
            Some(LibraryChoice::Adapt(
                crate::libraries::ompi::adapt::Forced { id: 2, segment: 0 }
            ))
        );
        assert!(c.to_string().contains("coll/adapt serves"), "{c}");
        let (c, _) = d.choose(5000);
        assert!(
            matches!(c.library, Some(LibraryChoice::Mpich(m)) if m.name == "scatter_ring_allgather"),
            "{c}"
        );
        assert!(c.to_string().contains("written around the call"), "{c}");
        let (c, _) = d.choose(1 << 20);
        assert!(c.library.is_some_and(|l| l.is_default()), "{c}");
        assert_eq!(d.library_choices().len(), 3);
    }

    #[test]
    fn bad_adapt_and_mpich_rules_name_the_line_and_the_fix() {
        for (algorithm, params, execution, says, fix) in [
            (
                "ompi_adapt",
                "      algorithm: 0\n",
                "library",
                "not implemented",
                "coll adapt",
            ),
            (
                "ompi_adapt",
                "      algorithm: 9\n",
                "library",
                "unknown coll/adapt broadcast algorithm `9`",
                "coll adapt",
            ),
            (
                "ompi_adapt",
                "      algorithm: 1\n      name: chain\n",
                "library",
                "make them agree",
                "coll adapt",
            ),
            (
                "ompi_adapt",
                "      algorithm: 1\n",
                "blocking",
                "write `execution: library`",
                "coll adapt",
            ),
            (
                "mpich",
                "      algorithm: warp\n",
                "library",
                "unknown MPICH broadcast algorithm `warp`",
                "MPIR_CVAR_BCAST_INTRA_ALGORITHM",
            ),
            (
                "mpich",
                "      algorithm: tree\n      k: 4\n",
                "library",
                "no parameter `k`",
                "MPIR_CVAR_BCAST_INTRA_ALGORITHM",
            ),
            (
                "mpich",
                "      k: 4\n",
                "library",
                "no parameter `k`",
                "MPIR_CVAR_BCAST_INTRA_ALGORITHM",
            ),
        ] {
            let text = with_bcast_rules(&format!(
                "  - min_bytes: 0
    algorithm: {algorithm}
    params:
{params}    execution: {execution}
"
            ));
            let problems = load_str(&text).unwrap_err();
            assert_eq!(problems.len(), 1, "{params}: {problems:?}");
            let line = text
                .lines()
                .position(|l| l.contains("- min_bytes: 0") && !l.contains("max"))
                .map(|i| i + 1);
            let p = &problems[0];
            assert!(p.what.contains(says), "{params}: {p}");
            assert_eq!(p.line, line, "{p}");
            assert!(p.fix.contains(fix), "{p}");
        }
    }

    /// A valid table (its lines are counted in the tests below).
    fn good() -> String {
        [
            HEAD,
            "bcast:
- ranks: 4
  ppn: 4
  nodes: 1
  rules:
  - min_bytes: 0
    max_bytes: 4095
    algorithm: linear
    execution: blocking
  - min_bytes: 4096
    algorithm: pipeline
    params:
      segment: 65536
    execution: nonblocking
",
            SWAP_SENDRECV,
        ]
        .concat()
    }

    #[test]
    fn a_good_table_loads_and_looks_up() {
        let t = load_str(&good()).unwrap();
        let key = super::super::CommKey::shape(4, 4, 1);
        assert_eq!(
            t.lookup(Collective::Bcast, key, 100).unwrap().algorithm,
            "linear"
        );
        assert_eq!(
            t.lookup(Collective::Bcast, key, 1 << 30).unwrap().algorithm,
            "pipeline"
        );
        assert!(t
            .lookup(Collective::Bcast, super::super::CommKey::shape(5, 5, 1), 1)
            .is_none());
        // and survives a round trip
        let again = load_str(&t.to_yaml().unwrap()).unwrap();
        assert_eq!(again, t);
    }

    #[test]
    fn placed_entries_load_round_trip_and_the_best_fit_decides() {
        use crate::model::placed::{Detected, Placement};
        // The good table's entry holds for any placement; two more for the
        // same shape hold for round-robin nodes and for block/cyclic.
        let entry = |placement: &str, algorithm: &str| {
            format!("- ranks: 4\n  ppn: 4\n  nodes: 1\n  placement: {placement}\n  rules:\n  - min_bytes: 0\n    algorithm: {algorithm}\n    execution: blocking\n")
        };
        let text = good().replace(
            "swap:",
            &format!(
                "{}{}swap:",
                entry("cyclic", "binomial"),
                entry("block/cyclic", "binary")
            ),
        );
        let t = load_str(&text).unwrap();
        assert_eq!(load_str(&t.to_yaml().unwrap()).unwrap(), t);
        let key = super::super::CommKey::shape(4, 4, 1);
        let at = |p: &str| {
            let d = Detected::of(Placement::parse(p).ok());
            t.lookup_placed(Collective::Bcast, key, &d, 100)
                .unwrap()
                .algorithm
                .clone()
        };
        assert_eq!(at("cyclic/block"), "binomial");
        assert_eq!(at("block/cyclic"), "binary");
        assert_eq!(at("block/block"), "linear");
        assert_eq!(at("irregular"), "linear");
        // Exact lookups see each entry by its own key.
        let cyclic = super::super::CommKey {
            placement: Placement::parse("cyclic").ok(),
            ..key
        };
        assert_eq!(
            t.lookup(Collective::Bcast, cyclic, 1).unwrap().algorithm,
            "binomial"
        );
        // The runtime's decisions take the communicator's placement from its key.
        let sel = crate::tables::decide::Selector {
            settings: Default::default(),
            table: Some(std::sync::Arc::new(t.clone())),
            fallback: None,
        };
        let placed = super::super::CommKey {
            placement: Placement::parse("block/cyclic").ok(),
            ..key
        };
        let d = sel.decisions(Collective::Bcast, placed);
        assert_eq!(d.choose(100).0.algorithm.as_ref().unwrap().0.name, "binary");
        // An entry for the same shape and placement twice is a problem.
        let twice = text.replace("placement: cyclic\n", "placement: block/cyclic\n");
        let p = load_str(&twice).unwrap_err();
        assert!(
            p[0].what.contains("placed block/cyclic appears twice"),
            "{p:?}"
        );
        // A placement the selector does not know: the line and the words it knows.
        let bad = text.replace("placement: cyclic\n", "placement: round-robin\n");
        let p = load_str(&bad).unwrap_err();
        // The entry's line (YAML reports the map the field is in).
        let line = bad.lines().position(|l| l.contains("round-robin")).unwrap() - 2;
        assert_eq!(p[0].line, Some(line), "{p:?}");
        assert!(
            p[0].what.contains("unknown placement `round-robin`")
                && p[0].what.contains("block/cyclic"),
            "{p:?}"
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_line() {
        let bad = good()
            .replace(
                "    max_bytes: 4095\n    algorithm: linear",
                "    max_bytes: 4000\n    algorithm: lineer",
            )
            .replace("execution: nonblocking", "execution: eventually")
            .replace(
                "  - min_bytes: 0\n    algorithm: sendrecv",
                "  - min_bytes: 0\n    max_bytes: 10\n    algorithm: sendrecv",
            );
        let problems = load_str(&bad).unwrap_err();
        let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        let all = text.join("\n");
        assert!(
            all.contains("line 16") && all.contains("unknown bcast algorithm `lineer`"),
            "{all}"
        );
        assert!(
            all.contains("line 20") && all.contains("4001..=4095 are covered by no rule"),
            "{all}"
        );
        assert!(all.contains("unknown execution `eventually`"), "{all}");
        assert!(all.contains("larger messages have no rule"), "{all}");
        assert_eq!(problems.len(), 4, "{all}");
    }

    #[test]
    fn syntax_and_schema_errors() {
        let e = load_str("schema: 1\nprovenance: [\n").unwrap_err();
        assert!(e[0].line.is_some(), "{:?}", e);
        let e = load_str(&good().replace("schema: 1", "schema: 7")).unwrap_err();
        assert!(e[0].what.contains("schema version 7"), "{:?}", e);
        assert_eq!(e[0].line, Some(1));
        let e = load_str(&good().replace(
            "  nodes: 1\n  rules:",
            "  nodes: 1\n  colour: red\n  rules:",
        ))
        .unwrap_err();
        assert!(e[0].what.contains("colour"), "{:?}", e);
        let e = load_str(&good().replace("max_bytes: 4095", "max_bytes: 5000")).unwrap_err();
        assert!(e[0].what.contains("overlaps"), "{:?}", e);
        let e = load_str(&good().replace(
            "  ppn: 4\n  nodes: 1\n  rules:\n  - min_bytes: 0\n    max_bytes: 4095",
            "  ppn: 1\n  nodes: 1\n  rules:\n  - min_bytes: 0\n    max_bytes: 4095",
        ))
        .unwrap_err();
        assert!(e[0].what.contains("impossible shape"), "{:?}", e);
    }

    #[test]
    fn what_yaml_refuses_is_refused_with_a_line() {
        // a key twice inside one rule
        let dup_key = good().replace(
            "    algorithm: linear\n",
            "    algorithm: linear\n    algorithm: binomial\n",
        );
        let p = load_str(&dup_key).unwrap_err();
        assert!(p[0].what.contains("duplicate"), "{p:?}");
        assert!(p[0].line.is_some(), "{p:?}");
        // a collective's section twice
        let dup_section = format!("{}bcast: []\n", good());
        assert!(load_str(&dup_section).is_err());
        // two documents
        let two = format!("{}---\n{}", good(), good());
        assert!(load_str(&two).is_err());
    }

    #[test]
    fn a_last_rule_with_no_valid_bounds_is_reported_not_a_panic() {
        let t = good().replace(
            "  - min_bytes: 0\n    algorithm: sendrecv",
            "  - min_bytes: 5\n    max_bytes: 2\n    algorithm: sendrecv",
        );
        let p = load_str(&t).unwrap_err();
        let all: Vec<String> = p.iter().map(|p| p.what.clone()).collect();
        assert!(all.iter().any(|w| w.contains("covers no size")), "{all:?}");
        assert!(
            all.iter().all(|w| !w.contains("18446744073709551615")),
            "{all:?}"
        );
    }

    #[test]
    fn only_regular_files_of_bounded_size_are_read() {
        let dir = std::env::temp_dir().join(format!("colltune-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // a directory, a device: refused before reading
        assert!(matches!(load(&dir), Err(TableError::NotAFile { .. })));
        assert!(matches!(
            load(Path::new("/dev/zero")),
            Err(TableError::NotAFile { .. })
        ));
        // too large: refused, whatever it holds
        let big = dir.join("big.yaml");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_TABLE_BYTES + 1).unwrap();
        let e = load(&big).unwrap_err();
        assert!(matches!(e, TableError::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains("big.yaml"), "{e}");
        let good = dir.join("good.yaml");
        std::fs::write(&good, self::good()).unwrap();
        assert!(load(&good).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn many_rules_validate_with_every_problem_on_its_line() {
        // 2,000 entries of 3 rules, each rule its own (algorithm, params):
        // lookups by key, not scans (this once took quadratic time).
        let good = good();
        let head = good.split("bcast:").next().unwrap();
        let mut t = format!("{head}bcast:\n");
        for e in 0..2000u32 {
            t += &format!(
                "- ranks: {r}\n  ppn: {r}\n  nodes: 1\n  rules:\n  - min_bytes: 0\n    max_bytes: 99\n    algorithm: pipeline\n    params:\n      segment: {s}\n    execution: blocking\n  - min_bytes: 100\n    max_bytes: 199\n    algorithm: knomial\n    params:\n      radix: {k}\n    execution: blocking\n  - min_bytes: 200\n    algorithm: nosuch\n    execution: blocking\n",
                r = e + 2,
                s = 4096 + e,
                k = 2 + e % 7
            );
        }
        let p = load_str(&t).unwrap_err();
        assert_eq!(
            p.len(),
            2000,
            "one unknown algorithm per entry: {:?}",
            &p[..1]
        );
        // entry e (19 lines) starts 19 e lines after the first, its third rule 16 lines in
        let at = head.lines().count() + 2;
        for (e, p) in p.iter().enumerate() {
            assert_eq!(p.line, Some(at + 19 * e + 16), "{p:?}");
        }
    }
}
