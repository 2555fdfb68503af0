//! The runtime decision, without MPI: the settings read from the
//! environment, the one precedence rule ([`decide`]: forced > table >
//! built-in > library), and every decision for one collective on one
//! communicator shape precomputed ([`Decisions`], a binary search per
//! call). `colltune explain` and the MPI selector (`colltune_mpi::select`)
//! both decide through [`Selector::decisions`], so what `explain` prints is
//! what a call runs.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use colltune_algorithms::{resolve, AlgoSpec, Collective, Execution};
use thiserror::Error;

use crate::libraries::library::{CallKind, LibraryChoice};
use crate::libraries::ompi::{self, Forced};
use crate::model::placed::Detected;
use crate::tables::table::{CommKey, Section, Table};

/// Where a decision came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// `COLLTUNE_BCAST` / `COLLTUNE_SWAP`.
    Forced,
    /// The table's rule (its index among the shape's rules, and its range).
    Table { index: usize, range: String },
    /// colltune's built-in default.
    Builtin,
    /// Nothing applies: the MPI library's own collective.
    Library,
}

/// What to run for one call.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// None: the MPI library's own collective.
    pub algorithm: Option<(AlgoSpec, Execution)>,
    /// With `algorithm` None: the library's own algorithm forced (a table's
    /// `ompi_tuned`, `ompi_adapt` or `mpich` rule: [`LibraryChoice`]); None:
    /// the library's default decision. Code that does not know this field
    /// still runs the library's collective, only without the forcing.
    pub library: Option<LibraryChoice>,
    pub source: Source,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, false)
    }
}

/// A [`Choice`] of the library's that Open MPI's rules file runs (the
/// handoff), for a trace line.
pub struct HandedOff<'a>(&'a Choice);

impl fmt::Display for HandedOff<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write(f, true)
    }
}

impl Choice {
    /// This choice as run by Open MPI's rules file, handed it at
    /// `MPI_Init`, not on a duplicate communicator.
    pub fn handed_off(&self) -> HandedOff<'_> {
        HandedOff(self)
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, handed_off: bool) -> fmt::Result {
        let what = match (&self.algorithm, &self.library) {
            (Some((s, e)), _) => colltune_algorithms::label(s, e),
            (None, Some(lib)) => {
                let how = if handed_off {
                    "Open MPI's rules file, handed it at MPI_Init"
                } else if lib.is_default() {
                    "on the application's communicator"
                } else {
                    match lib {
                        LibraryChoice::Tuned(_) => "forced on a duplicate communicator",
                        LibraryChoice::Adapt(_) => {
                            "on a duplicate coll/adapt serves, its algorithm and segment written around the call"
                        }
                        LibraryChoice::Mpich(_) => {
                            "MPIR_CVAR_BCAST_INTRA_ALGORITHM written around the call"
                        }
                        LibraryChoice::Libnbc(_) => {
                            "coll_libnbc_ibcast_algorithm written around the call"
                        }
                        LibraryChoice::MpichIbcast(_) => {
                            "MPIR_CVAR_IBCAST_INTRA_ALGORITHM written around the call"
                        }
                    }
                };
                format!("{} [library] ({lib}, {how})", lib.spec())
            }
            (None, None) => "the MPI library's own collective".into(),
        };
        match &self.source {
            Source::Forced => write!(f, "{what} (forced by the environment)"),
            Source::Table { index, range } => {
                write!(f, "{what} (table rule {} for {range} bytes)", index + 1)
            }
            Source::Builtin => write!(f, "{what} (built-in default)"),
            Source::Library => write!(f, "{what} (no rule applies)"),
        }
    }
}

/// The layer of the precedence rule that answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// Forced by the environment.
    Forced,
    /// The table.
    Table,
    /// colltune's built-in default.
    Builtin,
    /// Nothing applies: the MPI library's own collective.
    Library,
}

/// The one precedence rule: forced > table > built-in > library. Returns
/// the layer that answers and its answer (none from [`Layer::Library`]).
pub fn decide<T>(forced: Option<T>, table: Option<T>, builtin: Option<T>) -> (Layer, Option<T>) {
    match (forced, table, builtin) {
        (Some(x), _, _) => (Layer::Forced, Some(x)),
        (None, Some(x), _) => (Layer::Table, Some(x)),
        (None, None, Some(x)) => (Layer::Builtin, Some(x)),
        (None, None, None) => (Layer::Library, None),
    }
}

/// colltune's built-in default per collective (used when the table has no
/// rule): swap exchanges with one `MPI_Sendrecv`; broadcast defers to the
/// library.
pub fn builtin_default(c: Collective) -> Option<(AlgoSpec, Execution)> {
    match c {
        Collective::Swap => resolve(c, &AlgoSpec::new("sendrecv"))
            .ok()
            .map(|s| (s, Execution::Blocking)),
        Collective::Bcast => None,
    }
}

/// A `COLLTUNE_*` variable that cannot be used.
#[derive(Debug, Error)]
#[error("{var}={value}: {why}")]
pub struct SettingsError {
    pub var: &'static str,
    pub value: String,
    pub why: String,
}

/// RuntimeSettings read from the environment once.
#[derive(Clone, Debug, Default)]
pub struct RuntimeSettings {
    pub table: Option<PathBuf>,
    pub forced_bcast: Option<(AlgoSpec, Execution)>,
    pub forced_swap: Option<(AlgoSpec, Execution)>,
    pub strict: bool,
    pub trace: Trace,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Trace {
    #[default]
    Off,
    /// Rank 0 of each communicator.
    Lead,
    /// Every rank.
    All,
}

/// Parses `pipeline:segment=65536` or `pipeline:segment=65536@nonblocking`.
pub fn parse_forced(
    c: Collective,
    var: &'static str,
    text: &str,
) -> Result<(AlgoSpec, Execution), SettingsError> {
    let env = |why: String| SettingsError {
        var,
        value: text.into(),
        why,
    };
    let (spec, exec) = match text.rsplit_once('@') {
        Some((s, e)) => (s, e.parse::<Execution>().map_err(env)?),
        None => (text, Execution::Blocking),
    };
    let spec = AlgoSpec::parse(spec).map_err(|e| env(e.to_string()))?;
    let spec = resolve(c, &spec).map_err(|e| env(e.to_string()))?;
    Ok((spec, exec))
}

impl RuntimeSettings {
    /// `COLLTUNE_TABLE`, `COLLTUNE_BCAST`, `COLLTUNE_SWAP`, `COLLTUNE_STRICT`,
    /// `COLLTUNE_TRACE`.
    pub fn from_env() -> Result<RuntimeSettings, SettingsError> {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let flag = |k: &str| get(k).is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"));
        Ok(RuntimeSettings {
            table: get("COLLTUNE_TABLE").map(PathBuf::from),
            forced_bcast: get("COLLTUNE_BCAST")
                .map(|v| parse_forced(Collective::Bcast, "COLLTUNE_BCAST", &v))
                .transpose()?,
            forced_swap: get("COLLTUNE_SWAP")
                .map(|v| parse_forced(Collective::Swap, "COLLTUNE_SWAP", &v))
                .transpose()?,
            strict: flag("COLLTUNE_STRICT"),
            trace: RuntimeSettings::trace_from_env(),
        })
    }

    /// A digest every rank must share: the forced choices. Not the table's
    /// path: every rank runs the table one rank read (`colltune_mpi::select`),
    /// wherever each node keeps its copy.
    pub fn digest(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |s: &str| {
            for b in s.bytes().chain(std::iter::once(0)) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x100_0000_01b3);
            }
        };
        eat(&format!("{:?}{:?}", self.forced_bcast, self.forced_swap));
        h
    }
}

/// The process-wide selector: settings and the table, loaded once (by
/// `colltune_mpi::select::load` at MPI initialisation, agreed by every rank).
#[derive(Clone, Debug)]
pub struct Selector {
    pub settings: RuntimeSettings,
    pub table: Option<Arc<Table>>,
    /// Why the table is not used, if it is not.
    pub fallback: Option<String>,
}

impl Selector {
    /// Every decision for one collective on one communicator shape,
    /// precomputed: what the MPI selector consults per call. `key.placement`
    /// is the communicator's placement as found (None: neither block nor
    /// cyclic over the nodes): of the table's entries for the shape, the
    /// one fitting it best decides ([`Table::placed_rules`]).
    pub fn decisions(&self, c: Collective, key: CommKey) -> Decisions {
        let forced = match c {
            Collective::Bcast => self.settings.forced_bcast.clone(),
            Collective::Swap => self.settings.forced_swap.clone(),
        };
        let rules = self.table_rules(Section::of(c), key);
        // The precedence rule decides which layer answers; for the table
        // layer, the rule is looked up per call.
        let (layer, _) = decide(
            forced.as_ref().map(|_| ()),
            (!rules.is_empty()).then_some(()),
            builtin_default(c).map(|_| ()),
        );
        // The rules' bounds side by side: the per-call search reads two
        // words per step, not the choices between them.
        let mins = rules.iter().map(|r| r.min).collect();
        let maxs = rules.iter().map(|r| r.max.unwrap_or(u64::MAX)).collect();
        Decisions {
            mins,
            maxs,
            forced: match (layer, forced) {
                (Layer::Forced, Some(a)) => Some(Choice {
                    algorithm: Some(a),
                    library: None,
                    source: Source::Forced,
                }),
                _ => None,
            },
            rules,
            fallback: match builtin_default(c) {
                Some(a) => Choice {
                    algorithm: Some(a),
                    library: None,
                    source: Source::Builtin,
                },
                None => Choice {
                    algorithm: None,
                    library: None,
                    source: Source::Library,
                },
            },
        }
    }
}

impl Selector {
    /// Every decision for `MPI_Ibcast` or `MPI_Bcast_init` (`s`) on one
    /// communicator shape: the table's rules, each one of the library's
    /// own nonblocking algorithms forced; else the library's own decision.
    /// colltune's own schedules are no choice here: the program's
    /// `MPI_Wait` and `MPI_Test` are the library's, which would have to
    /// progress them.
    pub fn call_decisions(&self, s: Section, key: CommKey) -> Decisions {
        let rules = self.table_rules(s, key);
        Decisions {
            mins: rules.iter().map(|r| r.min).collect(),
            maxs: rules.iter().map(|r| r.max.unwrap_or(u64::MAX)).collect(),
            forced: None,
            rules,
            fallback: Choice {
                algorithm: None,
                library: None,
                source: Source::Library,
            },
        }
    }

    /// The table's rules of section `s` for a communicator of shape `key`,
    /// resolved; a rule that does not resolve, or names another call's
    /// library algorithm, is skipped (validated tables have none).
    fn table_rules(&self, s: Section, key: CommKey) -> Vec<Decided> {
        let c = s.collective();
        self.table
            .as_ref()
            .and_then(|t| t.placed_section(s, key, &Detected::of(key.placement)))
            .map(|cr| {
                cr.rules
                    .iter()
                    .enumerate()
                    .filter_map(|(index, r)| {
                        let source = Source::Table {
                            index,
                            range: r.range(),
                        };
                        let (algorithm, library) = match r.library() {
                            Some(f) if c == Collective::Bcast => {
                                let f = f.ok()?;
                                if f.call() != s.library_call() {
                                    return None;
                                }
                                (None, Some(f))
                            }
                            Some(_) => return None,
                            None if s.library_call() == CallKind::Nonblocking => return None,
                            None => (
                                Some((resolve(c, &r.spec().ok()?).ok()?, r.execution().ok()?)),
                                None,
                            ),
                        };
                        Some(Decided {
                            min: r.min_bytes,
                            max: r.max_bytes,
                            choice: Choice {
                                algorithm,
                                library,
                                source,
                            },
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl RuntimeSettings {
    pub fn trace_from_env() -> Trace {
        match std::env::var("COLLTUNE_TRACE").ok().as_deref() {
            None | Some("") | Some("0") => Trace::Off,
            Some("all") => Trace::All,
            Some(_) => Trace::Lead,
        }
    }
}

/// One table rule, resolved.
#[derive(Clone, Debug)]
pub struct Decided {
    pub min: u64,
    pub max: Option<u64>,
    pub choice: Choice,
}

/// The decisions for one collective on one communicator shape:
/// forced > table > built-in > library, looked up per call without
/// allocating (a binary search over the rules).
#[derive(Clone, Debug)]
pub struct Decisions {
    forced: Option<Choice>,
    rules: Vec<Decided>,
    /// `rules[i].min`, and `rules[i].max` (u64::MAX: open), by index.
    mins: Vec<u64>,
    maxs: Vec<u64>,
    fallback: Choice,
}

impl Decisions {
    /// The choice for `bytes` and an id for it (stable for the life of
    /// these decisions; what schedule caches key on).
    #[inline]
    pub fn choose(&self, bytes: u64) -> (&Choice, usize) {
        if let Some(f) = &self.forced {
            return (f, usize::MAX);
        }
        let i = self.mins.partition_point(|&m| m <= bytes);
        if let Some(k) = i.checked_sub(1) {
            if bytes <= self.maxs[k] {
                return (&self.rules[k].choice, k);
            }
        }
        (&self.fallback, usize::MAX - 1)
    }

    /// [`choose`](Self::choose), trying rule `hint` first (the rule the
    /// caller's last call used; any value is safe): a size the last rule
    /// covers skips the search. The rules are disjoint, so a rule whose
    /// bounds hold `bytes` is the one the search would find.
    #[inline]
    pub fn choose_hinted(&self, bytes: u64, hint: usize) -> (&Choice, usize) {
        if self.forced.is_none() {
            if let (Some(&lo), Some(&hi)) = (self.mins.get(hint), self.maxs.get(hint)) {
                if lo <= bytes && bytes <= hi {
                    return (&self.rules[hint].choice, hint);
                }
            }
        }
        self.choose(bytes)
    }

    pub fn rules(&self) -> &[Decided] {
        &self.rules
    }

    /// The library algorithms these decisions can choose (each once): the
    /// forced duplicates a communicator may need.
    pub fn library_choices(&self) -> Vec<LibraryChoice> {
        let mut out: Vec<LibraryChoice> = Vec::new();
        for f in self.rules.iter().filter_map(|r| r.choice.library) {
            if !out.contains(&f) {
                out.push(f);
            }
        }
        out
    }

    /// Runs the library's algorithms that `f` maps to one of colltune's as
    /// that one instead (a rule that cannot run as the library's on every
    /// rank alike: the MPI runtime's `select::library::own_routes`).
    pub fn replace_library(&mut self, f: impl Fn(&LibraryChoice) -> Option<(AlgoSpec, Execution)>) {
        for r in &mut self.rules {
            if let (None, Some(lib)) = (&r.choice.algorithm, &r.choice.library) {
                if let Some(a) = f(lib) {
                    r.choice.algorithm = Some(a);
                    r.choice.library = None;
                }
            }
        }
    }

    /// Runs nothing through Open MPI's coll/tuned broadcast on a
    /// communicator of `ranks`: where the ranks of a job handed Open MPI
    /// different rules at `MPI_Init` (a node that could not read the table,
    /// or read another), the library's `MPI_Bcast` could run different
    /// algorithms on different ranks for this size, so every call takes
    /// colltune's own route, the same on every rank. A rule of one of
    /// coll/tuned's algorithms runs as its twin ([`Forced::twin`]); the
    /// library's own decision (a rule's, or where no rule applies) as the
    /// twin of what Open MPI 4.1's fixed decision picks for each byte range
    /// ([`ompi::tuned_bcast_decision_ranges`]). Other libraries' choices
    /// (coll/adapt, MPICH) are not coll/tuned's and stay.
    pub fn without_library(&mut self, ranks: usize) {
        let fixed = ompi::tuned_bcast_decision_ranges(ranks);
        let emulate = |lo: u64, hi: u64, source: &Source, out: &mut Vec<Decided>| {
            for &(a, b, id) in &fixed {
                let (from, to) = (a.max(lo), b.min(hi));
                if from > to {
                    continue;
                }
                out.push(Decided {
                    min: from,
                    max: (to != u64::MAX).then_some(to),
                    choice: Choice {
                        algorithm: Some(Forced { id, segment: 0 }.twin()),
                        library: None,
                        source: source.clone(),
                    },
                });
            }
        };
        let runs_tuned = |c: &Choice| {
            c.algorithm.is_none() && matches!(c.library, None | Some(LibraryChoice::Tuned(_)))
        };
        let mut rules: Vec<Decided> = Vec::new();
        let mut next = Some(0u64);
        let fallback_tuned = runs_tuned(&self.fallback);
        for r in std::mem::take(&mut self.rules) {
            if let (true, Some(from)) = (fallback_tuned, next) {
                if r.min > from {
                    emulate(from, r.min - 1, &self.fallback.source, &mut rules);
                }
            }
            let hi = r.max.unwrap_or(u64::MAX);
            next = hi.checked_add(1);
            match r.choice.library {
                _ if !runs_tuned(&r.choice) => rules.push(r),
                Some(LibraryChoice::Tuned(f)) if !f.is_default() => rules.push(Decided {
                    choice: Choice {
                        algorithm: Some(f.twin()),
                        library: None,
                        ..r.choice
                    },
                    ..r
                }),
                _ => emulate(r.min, hi, &r.choice.source, &mut rules),
            }
        }
        if let (true, Some(from)) = (fallback_tuned, next) {
            emulate(from, u64::MAX, &self.fallback.source, &mut rules);
        }
        if fallback_tuned {
            // Never reached (the rules now cover every size), but what a
            // reader of the fallback expects: colltune's own.
            self.fallback.algorithm = Some(
                Forced {
                    id: fixed[0].2,
                    segment: 0,
                }
                .twin(),
            );
        }
        self.mins = rules.iter().map(|r| r.min).collect();
        self.maxs = rules.iter().map(|r| r.max.unwrap_or(u64::MAX)).collect();
        self.rules = rules;
    }

    /// The forced choice (`COLLTUNE_BCAST` / `COLLTUNE_SWAP`), if any.
    pub fn forced(&self) -> Option<&Choice> {
        self.forced.as_ref()
    }

    /// The choice where no rule applies (built-in or the library).
    pub fn fallback(&self) -> &Choice {
        &self.fallback
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decisions(rules: Vec<Decided>) -> Decisions {
        Decisions {
            forced: None,
            mins: rules.iter().map(|r| r.min).collect(),
            maxs: rules.iter().map(|r| r.max.unwrap_or(u64::MAX)).collect(),
            rules,
            fallback: Choice {
                algorithm: None,
                library: None,
                source: Source::Library,
            },
        }
    }

    fn rule(min: u64, max: Option<u64>, algorithm: Option<&str>, tuned: Option<u32>) -> Decided {
        Decided {
            min,
            max,
            choice: Choice {
                algorithm: algorithm.map(|a| {
                    (
                        resolve(Collective::Bcast, &AlgoSpec::new(a)).unwrap(),
                        Execution::Blocking,
                    )
                }),
                library: tuned.map(|id| LibraryChoice::Tuned(Forced { id, segment: 0 })),
                source: Source::Table {
                    index: 0,
                    range: String::new(),
                },
            },
        }
    }

    fn name(c: &Choice) -> &str {
        c.algorithm
            .as_ref()
            .expect("colltune's own")
            .0
            .name
            .as_str()
    }

    #[test]
    fn without_library_every_call_takes_colltunes_own_route() {
        // rules: a forced coll/tuned binomial, colltune's linear, Open MPI's
        // own decision; gaps between and above them are the library's
        let mut d = decisions(vec![
            rule(0, Some(99), None, Some(6)),
            rule(100, Some(999), Some("linear"), None),
            rule(2000, Some(4999), None, Some(0)),
        ]);
        d.without_library(4);
        for bytes in [
            0,
            50,
            99,
            100,
            500,
            999,
            1000,
            1999,
            2000,
            4999,
            5000,
            1 << 20,
            u64::MAX,
        ] {
            let (c, _) = d.choose(bytes);
            assert!(c.library.is_none(), "{bytes} B still runs the library's");
            let want = match bytes {
                0..=99 => "binomial",
                100..=999 => "linear",
                _ => Forced {
                    id: ompi::tuned_bcast_decision(4, bytes),
                    segment: 0,
                }
                .twin()
                .0
                .name
                .leak(),
            };
            assert_eq!(name(c), want, "{bytes} B");
        }
        // the rules cover every size, disjoint and ascending
        let r = d.rules();
        assert_eq!(r[0].min, 0);
        assert_eq!(r.last().unwrap().max, None);
        for w in r.windows(2) {
            assert_eq!(w[0].max.unwrap() + 1, w[1].min);
        }
        // a rule of the library's own decision keeps its source
        assert!(matches!(d.choose(3000).0.source, Source::Table { .. }));
        assert_eq!(d.choose(1500).0.source, Source::Library);
    }

    #[test]
    fn without_library_emulates_the_fixed_decision_where_there_is_no_table() {
        for ranks in [1, 3, 4, 8, 17, 100, 300, 5000] {
            let mut d = decisions(Vec::new());
            d.without_library(ranks);
            for bytes in [0, 1, 7, 8, 63, 64, 2047, 2048, 65536, 1 << 20, 1 << 30] {
                let want = Forced {
                    id: ompi::tuned_bcast_decision(ranks, bytes),
                    segment: 0,
                }
                .twin();
                assert_eq!(
                    d.choose(bytes).0.algorithm,
                    Some(want),
                    "{ranks} ranks, {bytes} B"
                );
            }
        }
    }
}
