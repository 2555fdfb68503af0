//! The decision table: which algorithm to run for each collective,
//! communicator shape and message-size range. One schema module, read and
//! written with serde (YAML), documented in `tuning-tables/README.md`.

pub mod build;
pub mod diff;
pub mod evidence;
#[cfg(test)]
mod evidence_tests;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use colltune_algorithms::{AlgoSpec, Collective, Execution, ParamValue};
use serde::{Deserialize, Serialize};

pub use crate::model::placed::Placement;

pub use validate::{load, load_str, read_text, Problem, TableError, MAX_TABLE_BYTES};

/// The schema version this colltune writes: 2 added each rule's
/// `evidence` and the provenance's `evidence` ([`evidence`]).
pub const SCHEMA_VERSION: u32 = 2;

/// The schema versions this colltune reads: 1 is 2 without the evidence
/// (every field it adds is optional).
pub const SCHEMA_READ: [u32; 2] = [1, 2];

/// A decision table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    pub schema: u32,
    pub provenance: Provenance,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bcast: Vec<CommRules>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swap: Vec<CommRules>,
    /// `MPI_Ibcast`'s rules: the library's nonblocking algorithms
    /// (`ompi_libnbc`, `mpich_ibcast`), forced per call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ibcast: Vec<CommRules>,
    /// `MPI_Bcast_init`'s rules (decided once, when the request is made).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bcast_init: Vec<CommRules>,
}

/// A section of the table: the rules of one collective call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// `MPI_Bcast` (colltune's algorithms or the library's).
    Bcast,
    /// colltune's swap.
    Swap,
    /// `MPI_Ibcast`: the library's nonblocking algorithms.
    Ibcast,
    /// `MPI_Bcast_init`: the library's persistent ones.
    BcastInit,
}

impl Section {
    pub const ALL: [Section; 4] = [
        Section::Bcast,
        Section::Swap,
        Section::Ibcast,
        Section::BcastInit,
    ];

    /// The calls whose choices are the library's nonblocking algorithms.
    pub const NONBLOCKING: [Section; 2] = [Section::Ibcast, Section::BcastInit];

    /// The section's key in the YAML (`bcast_init`).
    pub fn name(self) -> &'static str {
        match self {
            Section::Bcast => "bcast",
            Section::Swap => "swap",
            Section::Ibcast => "ibcast",
            Section::BcastInit => "bcast_init",
        }
    }

    /// The MPI call it decides (`MPI_Bcast_init`).
    pub fn mpi_call(self) -> &'static str {
        match self {
            Section::Bcast => "MPI_Bcast",
            Section::Swap => "colltune_swap",
            Section::Ibcast => "MPI_Ibcast",
            Section::BcastInit => "MPI_Bcast_init",
        }
    }

    /// The collective it moves.
    pub fn collective(self) -> Collective {
        match self {
            Section::Swap => Collective::Swap,
            _ => Collective::Bcast,
        }
    }

    /// The section of a blocking collective.
    pub fn of(c: Collective) -> Section {
        match c {
            Collective::Bcast => Section::Bcast,
            Collective::Swap => Section::Swap,
        }
    }

    /// Which kind of library choice its rules may name (None: colltune's
    /// algorithms too, and for `bcast` the library's blocking ones).
    pub fn library_call(self) -> crate::libraries::library::CallKind {
        match self {
            Section::Ibcast | Section::BcastInit => {
                crate::libraries::library::CallKind::Nonblocking
            }
            _ => crate::libraries::library::CallKind::Blocking,
        }
    }
}

impl std::fmt::Display for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Section {
    type Err = String;
    fn from_str(s: &str) -> Result<Section, String> {
        Section::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                format!("`{s}` is none of the table's sections (bcast, swap, ibcast, bcast_init)")
            })
    }
}

/// Where, when and how the table was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Host rank 0 ran on (or the cluster, for tables built from several runs).
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// MPI library and version.
    pub mpi: String,
    /// ISO 8601, UTC.
    pub date: String,
    /// The command line that produced the table.
    pub command: String,
    pub colltune: String,
    /// `measured`, or `simulated:<model>`.
    pub source: String,
    /// The call pattern measured: `synchronized` (one call per repetition,
    /// ranks started together) or `back-to-back` (blocks of calls in a row,
    /// IMB). Tables from before this field were all `synchronized`.
    #[serde(default = "synchronized")]
    pub pattern: String,
    pub sweep: Sweep,
    /// How neighbouring rules within measurement noise were merged; absent
    /// when they were not (`--no-compact`, or an older table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// The evidence rules had to clear, and the sizes left unresolved
    /// (schema 2; absent in tables built without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<evidence::EvidenceSummary>,
}

fn synchronized() -> String {
    "synchronized".into()
}

/// What merging rules within noise did (`table::build`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compaction {
    /// The smallest relative difference treated as noise (the floor under
    /// each point's measured run-to-run spread).
    pub tolerance: f64,
    /// Rules with the fastest median at every measured size.
    pub rules_before: u32,
    /// Rules after merging.
    pub rules_after: u32,
    /// Largest (chosen - fastest) / fastest over the measured sizes.
    pub max_loss: f64,
    /// Mean of the same over the measured sizes.
    pub mean_loss: f64,
}

impl Provenance {
    /// The provenance of a table this process makes now: the date, its
    /// command line and colltune's version filled in.
    pub fn made_now(
        host: String,
        cluster: Option<String>,
        mpi: String,
        source: String,
        sweep: Sweep,
    ) -> Provenance {
        Provenance {
            host,
            cluster,
            mpi,
            date: now_iso8601(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            colltune: env!("CARGO_PKG_VERSION").into(),
            source,
            pattern: synchronized(),
            sweep,
            compaction: None,
            evidence: None,
        }
    }
}

/// The settings of the sweep behind the table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// `adaptive`, `exhaustive`, or `built` (from raw CSVs).
    pub mode: String,
    #[serde(default)]
    pub sizes: Vec<u64>,
    #[serde(default)]
    pub runs: u32,
    #[serde(default)]
    pub budget_ms: u64,
    #[serde(default)]
    pub executions: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cache: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub root: String,
    /// Raw sample files the table was built from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raw: Vec<String>,
    /// Wall time of the sweep, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Points measured (subject x size x run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<u64>,
}

/// The rules for one communicator shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommRules {
    pub ranks: u32,
    /// Ranks per node (the largest node's count).
    pub ppn: u32,
    pub nodes: u32,
    /// The placement the rules hold for (`block`, `cyclic/block`, ...:
    /// [`Placement`]); absent: any placement. Where several entries of one
    /// shape hold for a communicator, the one saying most wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    pub rules: Vec<Rule>,
}

impl CommRules {
    pub fn key(&self) -> CommKey {
        CommKey {
            ranks: self.ranks,
            ppn: self.ppn,
            nodes: self.nodes,
            placement: self.placement,
        }
    }
}

/// (ranks, ranks per node, nodes) and the placement, where one is said.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommKey {
    pub ranks: u32,
    pub ppn: u32,
    pub nodes: u32,
    pub placement: Option<Placement>,
}

impl CommKey {
    /// The shape alone, any placement.
    pub fn shape(ranks: u32, ppn: u32, nodes: u32) -> CommKey {
        CommKey {
            ranks,
            ppn,
            nodes,
            placement: None,
        }
    }

    /// The communicator a sample was taken on, with its placement where the
    /// sample says it.
    pub fn of(s: &crate::measure::record::Sample) -> CommKey {
        CommKey {
            placement: s.placement(),
            ..CommKey::shape(s.ranks, s.ppn, s.nodes)
        }
    }

    /// The same shape, any placement.
    pub fn unplaced(self) -> CommKey {
        CommKey {
            placement: None,
            ..self
        }
    }
}

impl fmt::Display for CommKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ranks ({} node(s) x {} per node)",
            self.ranks, self.nodes, self.ppn
        )?;
        if let Some(p) = self.placement {
            write!(f, " placed {p}")?;
        }
        Ok(())
    }
}

/// A parameter value as a table stores it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Param {
    Int(u64),
    /// A negative number: never valid, kept so validation can say so.
    Signed(i64),
    Text(String),
}

/// One contiguous size range and its choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Smallest message size (bytes) this rule covers.
    pub min_bytes: u64,
    /// Largest (inclusive); absent for the last rule: no upper bound.
    #[serde(default)]
    pub max_bytes: Option<u64>,
    pub algorithm: String,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "unique_keys"
    )]
    pub params: BTreeMap<String, Param>,
    pub execution: String,
    /// The winner's measured median time at `at_bytes`, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_us: Option<f64>,
    /// The measured size the figures come from (the most contested one when
    /// a rule spans several measured sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_bytes: Option<u64>,
    /// The second-best subject there, `spec [execution]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_up: Option<String>,
    /// runner-up median / winner median - 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
    /// The gain over the library's own decision and its interval (schema
    /// 2, [`evidence::RuleEvidence`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<evidence::RuleEvidence>,
    /// `ibcast` and `bcast_init` rules: the overlap the choice achieved
    /// at `at_bytes` (post, compute for the call's own time, wait: the
    /// median of `1 - (t - t_compute) / t_alone`, in [0, 1]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<f64>,
}

impl Rule {
    pub fn covers(&self, bytes: u64) -> bool {
        bytes >= self.min_bytes && self.max_bytes.is_none_or(|m| bytes <= m)
    }

    /// The algorithm as a specification (not yet resolved).
    pub fn spec(&self) -> Result<AlgoSpec, colltune_algorithms::SpecError> {
        let mut spec = AlgoSpec::parse(&self.algorithm)?;
        for (k, v) in &self.params {
            let value = match v {
                Param::Int(i) => ParamValue::Int(*i),
                // Resolving reports it (no parameter takes a negative number).
                Param::Signed(i) => ParamValue::Word(i.to_string()),
                // A nested algorithm with parameters is written `name(k=v)`;
                // a bare word stays a word (resolving turns an algorithm
                // parameter's word into that algorithm).
                Param::Text(t) if t.contains('(') => ParamValue::Algo(AlgoSpec::parse(t)?),
                // "65536" or "64K" written as text is still a number.
                Param::Text(t) => match colltune_algorithms::parse_size(t) {
                    Ok(n) => ParamValue::Int(n),
                    Err(_) => ParamValue::Word(t.clone()),
                },
            };
            spec.params.insert(k.clone(), value);
        }
        Ok(spec)
    }

    pub fn execution(&self) -> Result<Execution, String> {
        self.execution.parse()
    }

    /// Whether the rule chooses one of the MPI library's own algorithms
    /// (`algorithm: ompi_tuned`, `ompi_adapt` or `mpich`), whatever its
    /// parameters.
    pub fn is_library(&self) -> bool {
        crate::libraries::library::is_table_name(&self.algorithm)
    }

    /// The library algorithm the rule forces (`algorithm: ompi_tuned`,
    /// `params: {algorithm: 6, segment: 0}`, `execution: library`; or
    /// `ompi_adapt`, `mpich`); None for colltune's algorithms, an error
    /// saying what is wrong for a bad one.
    pub fn library(&self) -> Option<Result<crate::libraries::library::LibraryChoice, String>> {
        if !self.is_library() {
            return None;
        }
        let forced = self
            .spec()
            .map_err(|e| e.to_string())
            .and_then(|s| crate::libraries::library::LibraryChoice::from_spec(&s));
        Some(forced.and_then(|f| {
            if self.execution == crate::libraries::ompi::LIBRARY_EXECUTION {
                Ok(f)
            } else {
                Err(format!(
                    "{}: execution `{}`: the library runs its own algorithms; write `execution: {}`",
                    self.algorithm,
                    self.execution,
                    crate::libraries::ompi::LIBRARY_EXECUTION
                ))
            }
        }))
    }

    /// `pipeline:segment=65536 [nonblocking]`: the canonical spec (defaults
    /// filled) when the algorithm resolves.
    pub fn label(&self) -> String {
        if let Some(Ok(f)) = self.library() {
            return colltune_algorithms::label(f.spec(), &self.execution);
        }
        let spec = match self.spec() {
            Ok(s) => Collective::ALL
                .iter()
                .find_map(|&c| colltune_algorithms::resolve(c, &s).ok())
                .unwrap_or(s)
                .to_string(),
            Err(_) => self.algorithm.clone(),
        };
        colltune_algorithms::label(spec, &self.execution)
    }

    /// `0..=4095`, `4096..`.
    pub fn range(&self) -> String {
        match self.max_bytes {
            Some(m) => format!("{}..={m}", self.min_bytes),
            None => format!("{}..", self.min_bytes),
        }
    }
}

/// Splits a resolved spec into a table's `algorithm` and `params`.
/// A map that refuses a key given twice (a plain map keeps the last one
/// silently: `radix: 2` then `radix: 4` would run radix 4).
fn unique_keys<'de, D, V>(d: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Unique<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Unique<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of parameter names to values")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((k, v)) = m.next_entry::<String, V>()? {
                if out.contains_key(&k) {
                    return Err(serde::de::Error::custom(format_args!(
                        "duplicate parameter `{k}`"
                    )));
                }
                out.insert(k, v);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Unique(std::marker::PhantomData))
}

pub fn spec_to_fields(spec: &AlgoSpec) -> (String, BTreeMap<String, Param>) {
    let params = spec
        .params
        .iter()
        .map(|(k, v)| {
            let p = match v {
                ParamValue::Int(i) => Param::Int(*i),
                ParamValue::Word(w) => Param::Text(w.clone()),
                ParamValue::Algo(a) => Param::Text(nested(a)),
            };
            (k.clone(), p)
        })
        .collect();
    (spec.name.clone(), params)
}

/// A nested spec as `name(k=v,...)`.
fn nested(a: &AlgoSpec) -> String {
    ParamValue::Algo(a.clone()).to_string()
}

impl Table {
    pub fn rules(&self, c: Collective) -> &[CommRules] {
        match c {
            Collective::Bcast => &self.bcast,
            Collective::Swap => &self.swap,
        }
    }

    /// The rules of one section (`ibcast`, ...).
    pub fn section(&self, s: Section) -> &[CommRules] {
        match s {
            Section::Bcast => &self.bcast,
            Section::Swap => &self.swap,
            Section::Ibcast => &self.ibcast,
            Section::BcastInit => &self.bcast_init,
        }
    }

    /// As [`Table::section`], to change.
    pub fn section_mut(&mut self, s: Section) -> &mut Vec<CommRules> {
        match s {
            Section::Bcast => &mut self.bcast,
            Section::Swap => &mut self.swap,
            Section::Ibcast => &mut self.ibcast,
            Section::BcastInit => &mut self.bcast_init,
        }
    }

    pub fn rules_mut(&mut self, c: Collective) -> &mut Vec<CommRules> {
        match c {
            Collective::Bcast => &mut self.bcast,
            Collective::Swap => &mut self.swap,
        }
    }

    /// The rule for an exact communicator shape (placement included) and size.
    pub fn lookup(&self, c: Collective, key: CommKey, bytes: u64) -> Option<&Rule> {
        self.rules(c)
            .iter()
            .find(|r| r.key() == key)
            .and_then(|r| r.rules.iter().find(|rule| rule.covers(bytes)))
    }

    /// The rule set a communicator of shape `key` placed as `d` uses: of
    /// the entries of its shape, the most specific whose placement holds
    /// (an entry without a placement holds for any).
    pub fn placed_rules(
        &self,
        c: Collective,
        key: CommKey,
        d: &crate::model::placed::Detected,
    ) -> Option<&CommRules> {
        self.placed_section(Section::of(c), key, d)
    }

    /// As [`Table::placed_rules`], for any section.
    pub fn placed_section(
        &self,
        s: Section,
        key: CommKey,
        d: &crate::model::placed::Detected,
    ) -> Option<&CommRules> {
        let all = self.section(s);
        let shape = key.unplaced();
        crate::model::placed::best(
            all.iter()
                .enumerate()
                .filter(|(_, r)| r.key().unplaced() == shape)
                .map(|(i, r)| (i, r.placement.as_ref())),
            d,
        )
        .map(|i| &all[i])
    }

    /// The table as a communicator placed as `d` sees it: per collective and
    /// shape, the entry it would use alone (none where no entry holds).
    pub fn for_placement(&self, d: &crate::model::placed::Detected) -> Table {
        let mut t = self.clone();
        for c in Section::ALL {
            let kept: Vec<CommRules> = self
                .section(c)
                .iter()
                .filter(|cr| {
                    self.placed_section(c, cr.key(), d)
                        .is_some_and(|best| std::ptr::eq(best, *cr))
                })
                .cloned()
                .collect();
            *t.section_mut(c) = kept;
        }
        t
    }

    /// The rule a call of `bytes` on a communicator of shape `key` placed as
    /// `d` takes ([`Table::placed_rules`]).
    pub fn lookup_placed(
        &self,
        c: Collective,
        key: CommKey,
        d: &crate::model::placed::Detected,
        bytes: u64,
    ) -> Option<&Rule> {
        self.placed_rules(c, key, d)
            .and_then(|r| r.rules.iter().find(|rule| rule.covers(bytes)))
    }

    /// A compact form for sending a validated table to other processes
    /// (JSON: parsed several times faster than the YAML, and not checked
    /// again: the sender validated it).
    pub fn to_wire(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The table [`Table::to_wire`] wrote.
    pub fn from_wire(bytes: &[u8]) -> Result<Table, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("a table received from rank 0: {e}"))
    }

    /// YAML text, with a comment header pointing at the schema.
    pub fn to_yaml(&self) -> Result<String, serde_yaml::Error> {
        let body = serde_yaml::to_string(self)?;
        Ok(format!(
            "# colltune decision table (schema {SCHEMA_VERSION}; see tuning-tables/README.md)\n\
             # Rules: per collective and communicator shape, contiguous size ranges\n\
             # [min_bytes, max_bytes] and the algorithm to run there.\n{body}"
        ))
    }

    /// Writes the table as YAML (through a temporary file, so a crash never
    /// leaves half a table).
    pub fn save(&self, path: &Path) -> Result<(), SaveError> {
        let io = |what: &Path| {
            let what = what.to_path_buf();
            move |source| SaveError::Io { path: what, source }
        };
        let text = self.to_yaml().map_err(SaveError::Serialise)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let tmp = path.with_extension("yaml.tmp");
        std::fs::write(&tmp, text).map_err(io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io(path))?;
        Ok(())
    }
}

/// Why a table could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("serialising the table: {0}")]
    Serialise(serde_yaml::Error),
    #[error("writing {}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// A provenance for tests: measured on Open MPI 4.1.4 by host `test`.
#[cfg(test)]
pub(crate) fn test_provenance() -> Provenance {
    Provenance::made_now(
        "test".into(),
        None,
        "Open MPI v4.1.4".into(),
        "measured".into(),
        Default::default(),
    )
}

/// Now, as ISO 8601 UTC (`2026-11-30T14:05:09Z`).
pub fn now_iso8601() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    iso8601(secs)
}

/// Unix seconds as ISO 8601 UTC (civil-from-days, proleptic Gregorian).
pub fn iso8601(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// `18 rules -> 5 (within 3% or the measured spread; loss max 1.2%, mean 0.3%)`.
pub fn compaction_line(c: &Compaction) -> String {
    format!(
        "{} rules -> {} (merged within {:.0}% or the measured spread; time lost max {:.1}%, mean {:.2}%)",
        c.rules_before,
        c.rules_after,
        100.0 * c.tolerance,
        100.0 * c.max_loss,
        100.0 * c.mean_loss
    )
}

/// `rules replace the library's decision only where the 95% interval of
/// their gain clears 3% (3 launches); 4 rules (12 by fastest median); time
/// left to the fastest max 2.1%, mean 0.4%`.
pub fn evidence_line(e: &evidence::EvidenceSummary) -> String {
    format!(
        "rules replace the library's decision only where the {:.0}% interval of their gain clears {:.1}% ({} launch(es)); {} rules ({} by fastest median); time left to the fastest median max {:.1}%, mean {:.2}%",
        100.0 * e.confidence,
        100.0 * e.min_gain,
        e.launches,
        e.rules,
        e.rules_fastest,
        100.0 * e.max_loss,
        100.0 * e.mean_loss
    )
}

/// `evidence: clears: +12.0% [+8.1%, +16.0%] over ...` under a rule.
pub fn rule_evidence_line(e: &evidence::RuleEvidence) -> String {
    // a model's rule is a prediction, never shown as evidence measured
    let what = if e.predicted() {
        "prediction"
    } else {
        "evidence"
    };
    if e.verdict == "clears" {
        format!("{what}: {}", e.line())
    } else {
        format!(
            "{what}: {} (best other: {} {})",
            e.verdict,
            e.candidate,
            e.line()
        )
    }
}

/// A readable summary: provenance, then per collective and communicator the
/// size ranges with their choice, time and margin over the runner-up.
pub fn summary(t: &Table) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let p = &t.provenance;
    let _ = writeln!(
        out,
        "table schema {}: {} on {}{}, {}",
        t.schema,
        p.mpi,
        p.host,
        p.cluster
            .as_deref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default(),
        p.date
    );
    let _ = writeln!(
        out,
        "made by colltune {} ({}, {} sweep): {}",
        p.colltune, p.source, p.sweep.mode, p.command
    );
    let _ = writeln!(out, "pattern: {}", p.pattern);
    if let Some(m) = build::model_of(&p.source) {
        let _ = writeln!(
            out,
            "predicted by {m}, not measured: the times and gains below are the model's"
        );
    }
    match (&p.evidence, &p.compaction) {
        (Some(e), _) => {
            let _ = writeln!(out, "evidence: {}", evidence_line(e));
            if !e.unresolved.is_empty() {
                let _ = writeln!(
                    out,
                    "unresolved ({} sizes: a candidate's interval straddles the minimum gain, so the reference, the library's decision where measured, was kept; or, `over the choice`, a candidate seems faster than the choice by more than it, unshown):",
                    e.unresolved.len()
                );
                for u in &e.unresolved {
                    let _ = writeln!(out, "  {}", u.line());
                }
            }
            if let Some(f) = &e.further {
                let _ = writeln!(out, "further runs where decisions were open: {}", f.line());
            }
            for l in &e.partial_launches {
                let _ = writeln!(out, "partial launch: {l}");
            }
        }
        (None, c) => {
            let _ = writeln!(
                out,
                "compaction: {}",
                match c {
                    Some(c) => compaction_line(c),
                    None => "none (rules are the fastest median at each measured size)".into(),
                }
            );
        }
    }
    for c in Section::ALL {
        for cr in t.section(c) {
            let _ = writeln!(out, "\n{c} on {}:", cr.key());
            let _ = writeln!(
                out,
                "  {:<24} {:<58} {:>10} {:>10}  runner-up (margin)",
                "bytes", "algorithm [execution]", "time us", "at"
            );
            for r in &cr.rules {
                let _ = writeln!(
                    out,
                    "  {:<24} {:<58} {:>10} {:>10}  {}",
                    r.range(),
                    r.label(),
                    r.time_us
                        .map(|x| format!("{x:.2}"))
                        .unwrap_or_else(|| "-".into()),
                    r.at_bytes
                        .map(crate::units::human_bytes)
                        .unwrap_or_else(|| "-".into()),
                    match (&r.runner_up, r.margin) {
                        (Some(u), Some(m)) => format!("{u} ({:+.1}%)", 100.0 * m),
                        (Some(u), None) => u.clone(),
                        _ => "-".into(),
                    }
                );
                if let Some(e) = &r.evidence {
                    let _ = writeln!(out, "  {:<24} {}", "", rule_evidence_line(e));
                }
                if let Some(o) = r.overlap {
                    let _ = writeln!(
                        out,
                        "  {:<24} overlap achieved {:.0}% (computing for the call's own time while it runs)",
                        "",
                        100.0 * o
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(1_796_050_800), "2026-11-30T15:00:00Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn specs_round_trip_through_fields() {
        for text in [
            "pipeline:segment=65536",
            "linear",
            "hierarchical:inter=knomial(radix=4,segment=0),intra=linear",
            "ordered:pairing=halves",
        ] {
            let c = if text.contains("pairing") {
                Collective::Swap
            } else {
                Collective::Bcast
            };
            let spec = colltune_algorithms::resolve(c, &AlgoSpec::parse(text).unwrap()).unwrap();
            let (algorithm, params) = spec_to_fields(&spec);
            let rule = Rule {
                min_bytes: 0,
                max_bytes: None,
                algorithm,
                params,
                execution: "blocking".into(),
                time_us: None,
                at_bytes: None,
                runner_up: None,
                margin: None,
                evidence: None,
                overlap: None,
            };
            let back = colltune_algorithms::resolve(c, &rule.spec().unwrap()).unwrap();
            assert_eq!(back, spec, "{text}");
        }
    }
}
