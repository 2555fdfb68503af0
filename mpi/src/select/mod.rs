//! The runtime selector: loads a decision table once, and dispatches each
//! broadcast and swap to the table's choice for the call's communicator
//! shape and size.
//!
//! Precedence, written once ([`decide`]): a choice forced by the environment
//! (`COLLTUNE_BCAST=pipeline:segment=65536`, `COLLTUNE_SWAP=sendrecv`), then
//! the table, then colltune's built-in default (swap: `sendrecv`; broadcast
//! has none), and where nothing applies the MPI library's own collective.
//!
//! A broken table never stops an application: [`Selector::new`] warns once
//! (on rank 0, naming the file, the line and the problem) and falls back to
//! the library's collectives; `COLLTUNE_STRICT=1` makes it an error instead.
//! Every rank must decide alike, so `new` checks with one allreduce that all
//! ranks loaded the same table and settings; otherwise all fall back.
//!
//! Per communicator, [`CommSelector`] holds a private duplicate with its
//! node map (built once), the table's rules for its shape, and prepared
//! schedules per (choice, root, size), reused across calls.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use colltune_algorithms::{build_resolved, resolve, AlgoSpec, Collective, Execution, Plan, Shape};
use thiserror::Error;

use crate::transport::mpi::{execute, ffi, Buffers, Comm, Control, MpiError, Op, TransportError};
use colltune_core::table::{self, CommKey, Table, TableError};

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
    pub source: Source,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.algorithm {
            Some((s, e)) => format!("{s} [{e}]"),
            None => "the MPI library's own collective".into(),
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

#[derive(Debug, Error)]
pub enum SelectError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error("{var}={value}: {why}")]
    Env {
        var: &'static str,
        value: String,
        why: String,
    },
    #[error("the ranks disagree on the table or settings (different files or environment on different nodes?): using the MPI library's collectives")]
    Disagree,
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Mpi(#[from] MpiError),
}

/// Settings read from the environment once.
#[derive(Clone, Debug, Default)]
pub struct Settings {
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
) -> Result<(AlgoSpec, Execution), SelectError> {
    let env = |why: String| SelectError::Env {
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

impl Settings {
    /// `COLLTUNE_TABLE`, `COLLTUNE_BCAST`, `COLLTUNE_SWAP`, `COLLTUNE_STRICT`,
    /// `COLLTUNE_TRACE`.
    pub fn from_env() -> Result<Settings, SelectError> {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let flag = |k: &str| get(k).is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"));
        Ok(Settings {
            table: get("COLLTUNE_TABLE").map(PathBuf::from),
            forced_bcast: get("COLLTUNE_BCAST")
                .map(|v| parse_forced(Collective::Bcast, "COLLTUNE_BCAST", &v))
                .transpose()?,
            forced_swap: get("COLLTUNE_SWAP")
                .map(|v| parse_forced(Collective::Swap, "COLLTUNE_SWAP", &v))
                .transpose()?,
            strict: flag("COLLTUNE_STRICT"),
            trace: Settings::trace_from_env(),
        })
    }

    /// A digest every rank must share (table content and forced choices).
    fn digest(&self, table_text: &str) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |s: &str| {
            for b in s.bytes().chain(std::iter::once(0)) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x100_0000_01b3);
            }
        };
        eat(table_text);
        eat(&format!("{:?}{:?}", self.forced_bcast, self.forced_swap));
        h
    }
}

/// The process-wide selector: settings and the table, loaded once.
#[derive(Clone, Debug)]
pub struct Selector {
    pub settings: Settings,
    pub table: Option<Arc<Table>>,
    /// Why the table is not used, if it is not.
    pub fallback: Option<String>,
}

impl Selector {
    /// Loads settings and table; collective over `world` (two small
    /// allreduces check that every rank agrees). A bad table or setting is a
    /// warning (printed once, on rank 0) and the MPI library's collectives
    /// are used; with `COLLTUNE_STRICT=1` it is an error instead.
    pub fn new(world: &Comm) -> Result<Selector, SelectError> {
        match Settings::from_env() {
            Ok(s) => Self::with_settings(world, s, None),
            Err(e) => {
                let strict = std::env::var("COLLTUNE_STRICT").is_ok_and(|v| v != "0");
                if strict {
                    // Keep the collective agreement: every rank reads the same env.
                    return Err(e);
                }
                let s = Settings {
                    trace: Settings::trace_from_env(),
                    ..Default::default()
                };
                Self::with_settings(world, s, Some(e.to_string()))
            }
        }
    }

    /// As [`Selector::new`] with explicit settings; `problem` is a reason to
    /// fall back found before.
    pub fn with_settings(
        world: &Comm,
        mut settings: Settings,
        problem: Option<String>,
    ) -> Result<Selector, SelectError> {
        let mut table = None;
        let mut text = String::new();
        let mut error: Option<TableError> = None;
        if let Some(path) = &settings.table {
            match std::fs::read_to_string(path) {
                Err(source) => {
                    error = Some(TableError::Read {
                        path: path.clone(),
                        source,
                    })
                }
                Ok(t) => {
                    text = t;
                    match table::load_str(&text) {
                        Ok(tb) => table = Some(Arc::new(tb)),
                        Err(problems) => {
                            error = Some(TableError::Invalid {
                                path: path.clone(),
                                problems,
                            })
                        }
                    }
                }
            }
        }
        // Every rank must decide alike: the same table (or none) and settings.
        let broken = error.is_some() || problem.is_some();
        let mine = if broken {
            u64::MAX
        } else {
            settings.digest(&text)
        };
        let lo = world.allreduce(mine, Op::Min)?;
        let hi = world.allreduce(mine, Op::Max)?;
        let reason = match (error, problem) {
            (Some(e), _) => {
                if settings.strict {
                    return Err(e.into());
                }
                Some(e.to_string())
            }
            (None, Some(p)) => Some(p),
            (None, None) if lo != hi => {
                if settings.strict {
                    return Err(SelectError::Disagree);
                }
                Some(SelectError::Disagree.to_string())
            }
            _ => None,
        };
        if let Some(r) = &reason {
            warn_once(
                world,
                &format!("{r}\ncolltune: using the MPI library's own collectives"),
            );
            table = None;
            settings.forced_bcast = None;
            settings.forced_swap = None;
        }
        Ok(Selector {
            settings,
            table,
            fallback: reason,
        })
    }

    /// Every decision for one collective on one communicator shape,
    /// precomputed (no MPI): what [`CommSelector`] consults per call.
    pub fn decisions(&self, c: Collective, key: CommKey) -> Decisions {
        let forced = match c {
            Collective::Bcast => self.settings.forced_bcast.clone(),
            Collective::Swap => self.settings.forced_swap.clone(),
        };
        let rules: Vec<Decided> = self
            .table
            .as_ref()
            .and_then(|t| t.rules(c).iter().find(|r| r.key() == key))
            .map(|cr| {
                cr.rules
                    .iter()
                    .enumerate()
                    .filter_map(|(index, r)| {
                        // Validated tables resolve; anything else is skipped.
                        let spec = resolve(c, &r.spec().ok()?).ok()?;
                        Some(Decided {
                            min: r.min_bytes,
                            max: r.max_bytes,
                            choice: Choice {
                                algorithm: Some((spec, r.execution().ok()?)),
                                source: Source::Table {
                                    index,
                                    range: r.range(),
                                },
                            },
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        // The precedence rule decides which layer answers; for the table
        // layer, the rule is looked up per call.
        let (layer, _) = decide(
            forced.as_ref().map(|_| ()),
            (!rules.is_empty()).then_some(()),
            builtin_default(c).map(|_| ()),
        );
        Decisions {
            forced: match (layer, forced) {
                (Layer::Forced, Some(a)) => Some(Choice {
                    algorithm: Some(a),
                    source: Source::Forced,
                }),
                _ => None,
            },
            rules,
            fallback: match builtin_default(c) {
                Some(a) => Choice {
                    algorithm: Some(a),
                    source: Source::Builtin,
                },
                None => Choice {
                    algorithm: None,
                    source: Source::Library,
                },
            },
        }
    }

    /// The selector for one communicator (collective over it: duplicates it
    /// and finds its node map once).
    pub fn for_comm(self: &Arc<Self>, comm: Comm) -> CommSelector {
        CommSelector::new(Arc::clone(self), comm)
    }
}

impl Settings {
    fn trace_from_env() -> Trace {
        match std::env::var("COLLTUNE_TRACE").ok().as_deref() {
            None | Some("") | Some("0") => Trace::Off,
            Some("all") => Trace::All,
            Some(_) => Trace::Lead,
        }
    }
}

/// Prints a warning once per process, on rank 0 of `world`.
fn warn_once(world: &Comm, msg: &str) {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    if world.rank() == 0 {
        ONCE.call_once(|| eprintln!("colltune: warning: {msg}"));
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
        let i = self.rules.partition_point(|r| r.min <= bytes);
        if let Some(r) = i.checked_sub(1).map(|k| &self.rules[k]) {
            if r.max.is_none_or(|m| bytes <= m) {
                return (&r.choice, i - 1);
            }
        }
        (&self.fallback, usize::MAX - 1)
    }

    pub fn rules(&self) -> &[Decided] {
        &self.rules
    }
}

/// Dispatching on one communicator.
pub struct CommSelector {
    sel: Arc<Selector>,
    comm: Comm,
    key: CommKey,
    bcast: Decisions,
    swap: Decisions,
    /// Prepared schedules by (collective, choice id, pairing, root, bytes).
    plans: RefCell<HashMap<PlanKey, Arc<Plan>>>,
}

type PlanKey = (Collective, usize, u8, usize, u64);

/// Most prepared schedules kept per communicator.
const PLAN_CACHE: usize = 256;

impl CommSelector {
    fn new(sel: Arc<Selector>, comm: Comm) -> Self {
        let n = comm.nodes();
        let key = CommKey {
            ranks: comm.size() as u32,
            ppn: n.max_ppn() as u32,
            nodes: n.num_nodes() as u32,
        };
        CommSelector {
            bcast: sel.decisions(Collective::Bcast, key),
            swap: sel.decisions(Collective::Swap, key),
            sel,
            comm,
            key,
            plans: RefCell::new(HashMap::new()),
        }
    }

    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    pub fn key(&self) -> CommKey {
        self.key
    }

    /// The decision for a call of `bytes` (no MPI; what a trace shows).
    pub fn choose(&self, c: Collective, bytes: u64) -> &Choice {
        self.decisions(c).choose(bytes).0
    }

    pub fn decisions(&self, c: Collective) -> &Decisions {
        match c {
            Collective::Bcast => &self.bcast,
            Collective::Swap => &self.swap,
        }
    }

    /// The prepared schedule for `key`, built (from `spec()`) only when it
    /// is not cached.
    fn plan(
        &self,
        key: PlanKey,
        spec: impl FnOnce() -> AlgoSpec,
    ) -> Result<Arc<Plan>, TransportError> {
        let (c, _, _, root, bytes) = key;
        if let Some(p) = self.plans.borrow().get(&key) {
            return Ok(Arc::clone(p));
        }
        let s = build_resolved(
            c,
            &spec(),
            &Shape {
                rank: self.comm.rank(),
                size: self.comm.size(),
                root,
                bytes,
                nodes: self.comm.nodes(),
            },
        )?;
        let p = Arc::new(Plan::new(s));
        let mut plans = self.plans.borrow_mut();
        if plans.len() >= PLAN_CACHE {
            plans.clear();
        }
        plans.insert(key, Arc::clone(&p));
        Ok(p)
    }

    /// With `COLLTUNE_TRACE`, one line saying what a call of `bytes` ran
    /// (also used by [`capi`](crate::capi) for calls it hands to the
    /// library).
    pub(crate) fn trace(
        &self,
        what: &str,
        bytes: u64,
        root: Option<usize>,
        choice: &dyn fmt::Display,
    ) {
        let on = match self.sel.settings.trace {
            Trace::Off => false,
            Trace::Lead => self.comm.rank() == 0,
            Trace::All => true,
        };
        if on {
            use std::io::Write;
            let world = ffi::comm_rank(ffi::comm_world()).unwrap_or(0);
            // One write per line, so lines of several processes never interleave.
            let line = format!(
                "colltune trace: rank {world} (rank {} of {}) {what} {bytes} B{}: {choice}\n",
                self.comm.rank(),
                self.key,
                root.map(|r| format!(" root {r}")).unwrap_or_default(),
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }

    /// Broadcasts `buf` from `root` with the chosen algorithm.
    pub fn bcast(&self, buf: &mut [u8], root: usize) -> Result<&Choice, TransportError> {
        let bytes = buf.len() as u64;
        let (choice, id) = self.bcast.choose(bytes);
        self.trace("bcast", bytes, Some(root), choice);
        match &choice.algorithm {
            Some((spec, exec)) => {
                let plan = self.plan((Collective::Bcast, id, 0, root, bytes), || spec.clone())?;
                execute(&self.comm, &plan, *exec, Buffers::bcast(buf))?;
            }
            None => {
                self.comm.library_bcast(buf, root)?;
            }
        }
        Ok(choice)
    }

    /// Swaps `out` with the partner's (pairing `neighbors` or `halves`),
    /// receiving into `inn`; the odd rank out receives nothing.
    pub fn swap(
        &self,
        out: &mut [u8],
        inn: &mut [u8],
        pairing: &str,
    ) -> Result<&Choice, TransportError> {
        let bytes = out.len() as u64;
        if inn.len() < out.len() {
            return Err(TransportError::BufferTooSmall {
                buffer: "receive",
                have: inn.len(),
                need: bytes,
            });
        }
        let (choice, id) = self.swap.choose(bytes);
        self.trace("swap", bytes, None, choice);
        let exec = choice
            .algorithm
            .as_ref()
            .map_or(Execution::Blocking, |a| a.1);
        let halves = pairing == "halves";
        let plan = self.plan((Collective::Swap, id, u8::from(halves), 0, bytes), || {
            let mut spec = match &choice.algorithm {
                Some(a) => a.0.clone(),
                None => {
                    builtin_default(Collective::Swap)
                        .expect("swap has a built-in default")
                        .0
                }
            };
            // The call's pairing, not the table's, decides the partners.
            spec.params.insert(
                "pairing".into(),
                colltune_algorithms::ParamValue::Word(
                    if halves { "halves" } else { "neighbors" }.into(),
                ),
            );
            spec
        })?;
        execute(&self.comm, &plan, exec, Buffers::swap(out, inn))?;
        Ok(choice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence() {
        assert_eq!(decide(Some(1), Some(2), Some(3)), (Layer::Forced, Some(1)));
        assert_eq!(decide(None, Some(2), Some(3)), (Layer::Table, Some(2)));
        assert_eq!(decide(None, None, Some(3)), (Layer::Builtin, Some(3)));
        assert_eq!(decide::<u8>(None, None, None), (Layer::Library, None));
    }

    #[test]
    fn forced_settings_parse() {
        let (s, e) = parse_forced(
            Collective::Bcast,
            "COLLTUNE_BCAST",
            "pipeline:segment=65536@nonblocking",
        )
        .unwrap();
        assert_eq!(s.to_string(), "pipeline:segment=65536");
        assert_eq!(e, Execution::Nonblocking);
        assert!(parse_forced(Collective::Bcast, "COLLTUNE_BCAST", "warp").is_err());
        assert!(parse_forced(Collective::Bcast, "COLLTUNE_BCAST", "linear@sometimes").is_err());
    }
}
