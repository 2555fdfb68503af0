//! What is measured and how: the subjects of a measurement (colltune's
//! algorithms under an execution, the MPI library's own collective, a forced
//! library algorithm) and the timing method. The MPI benchmark
//! (`colltune_mpi::bench`) measures them; the simulator predicts them; both
//! write the same [`crate::measure::record::Sample`] rows.

use std::time::Duration;

use colltune_algorithms::{
    algorithms, lookup, resolve, AlgoSpec, Collective, Execution, ParamKind, ParamValue,
    Restriction, SpecError, Variant,
};

use crate::libraries::ompi::TunedBcast;

/// Largest message colltune measures or runs as one MPI message: a count
/// of bytes is a C int.
pub const MAX_BYTES: u64 = (1 << 31) - 1;

/// The broadcast call a sample timed (its `call` column), and the table
/// section its rules go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Call {
    /// `MPI_Bcast` (and colltune's own algorithms, and swaps).
    Bcast,
    /// `MPI_Ibcast`, then `MPI_Wait`.
    Ibcast,
    /// `MPI_Start`, then `MPI_Wait`, on a request `MPI_Bcast_init` made once.
    BcastInit,
}

impl Call {
    pub const ALL: [Call; 3] = [Call::Bcast, Call::Ibcast, Call::BcastInit];
    /// The column's (and the table section's) name.
    pub fn name(self) -> &'static str {
        match self {
            Call::Bcast => "bcast",
            Call::Ibcast => "ibcast",
            Call::BcastInit => "bcast_init",
        }
    }
    /// Whether the call is the library's nonblocking or persistent one.
    pub fn is_nonblocking(self) -> bool {
        self != Call::Bcast
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Call {
    type Err = String;
    fn from_str(s: &str) -> Result<Call, String> {
        Call::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("`{s}` is not a call (bcast, ibcast, bcast_init)"))
    }
}

/// What is measured.
#[derive(Clone, Debug)]
pub enum Subject {
    /// One of colltune's algorithms under one execution.
    Ours(Variant),
    /// The MPI library's own `MPI_Bcast`, as its default decision picks.
    Library,
    /// An Open MPI coll/tuned algorithm forced through its MCA variables on a
    /// communicator of its own.
    OmpiTuned {
        tuned: &'static TunedBcast,
        segment: u64,
    },
    /// One of an MPICH-derived library's broadcast algorithms, forced
    /// through `MPIR_CVAR_BCAST_INTRA_ALGORITHM` (`MPI_T`, process-wide,
    /// read per call) for the duration of each point.
    Mpich {
        choice: crate::libraries::mpich::Choice,
    },
    /// One of Open MPI's coll/adapt broadcast algorithms: adapt selected on
    /// a communicator of its own (its priority raised through `MPI_T` while
    /// the communicator is made), the algorithm and segment written
    /// through `MPI_T` for the duration of each point (read per call).
    OmpiAdapt {
        choice: crate::libraries::ompi::adapt::Choice,
        segment: u64,
    },
    /// One of Open MPI 5.0's coll/han broadcasts, across nodes: han
    /// selected on a communicator of its own (as [`Subject::OmpiAdapt`]),
    /// the algorithm and, for the segmented ones, the segment written
    /// through `MPI_T` for the duration of each point (read per call);
    /// `modules` are the components of its steps as `MPI_Init` set them
    /// (recorded, not forced).
    OmpiHan {
        choice: crate::libraries::ompi::han::Choice,
        segment: u64,
        modules: crate::libraries::ompi::han::Modules,
    },
    /// The library's own `MPI_Bcast` under an algorithm chosen outside the
    /// process (an environment variable read at `MPI_Init`, as Intel MPI's
    /// `I_MPI_ADJUST_BCAST`), recorded under `label`
    /// (`impi:I_MPI_ADJUST_BCAST=3,name=ring`; checked by
    /// [`crate::libraries::mpich::check_label`]).
    LibraryLabelled { label: String },
    /// `MPI_Bcast` called through its `MPI_` symbol, as an application
    /// calls it, where every other library subject calls `PMPI_Bcast`: a
    /// PMPI tool in the process intercepts it. Under `LD_PRELOAD` of
    /// colltune's drop-in it is the drop-in itself, measured beside the
    /// library's forced algorithms in one run; without one, the library's
    /// default call again.
    Interposed,
    /// The library's nonblocking (`MPI_Ibcast`) or persistent
    /// (`MPI_Bcast_init`, then `MPI_Start` / `MPI_Wait`) broadcast under
    /// one of its nonblocking algorithms (`ompi_libnbc`, `mpich_ibcast`;
    /// the default: its own decision), forced through `MPI_T` around the
    /// call that builds the schedule. Measured post then wait, and post,
    /// compute for the call's own time, wait (`colltune_mpi::bench`).
    LibraryCall {
        call: Call,
        choice: crate::libraries::library::LibraryChoice,
    },
}

/// The spec (and algorithm) [`Subject::Interposed`] is recorded under.
pub const INTERPOSED: &str = "interposed";

impl Subject {
    pub fn collective(&self) -> Collective {
        match self {
            Subject::Ours(v) => v.collective,
            _ => Collective::Bcast,
        }
    }
    pub fn algorithm(&self) -> String {
        match self {
            Subject::Ours(v) => v.spec.name.clone(),
            Subject::Library => "mpi".into(),
            Subject::Interposed => INTERPOSED.into(),
            Subject::OmpiTuned { .. } => "ompi_tuned".into(),
            Subject::Mpich { .. } => crate::libraries::mpich::TABLE_NAME.into(),
            Subject::OmpiAdapt { .. } => crate::libraries::ompi::adapt::TABLE_NAME.into(),
            Subject::OmpiHan { .. } => crate::libraries::ompi::han::TABLE_NAME.into(),
            Subject::LibraryLabelled { label } => {
                label.split(':').next().unwrap_or(label).to_string()
            }
            Subject::LibraryCall { choice, .. } => choice.spec().name.clone(),
        }
    }
    pub fn spec(&self) -> String {
        match self {
            Subject::Ours(v) => v.spec.to_string(),
            Subject::Library => "mpi".into(),
            Subject::Interposed => INTERPOSED.into(),
            Subject::OmpiTuned { tuned, segment } => {
                format!(
                    "ompi_tuned:algorithm={},name={},segment={segment}",
                    tuned.id, tuned.name
                )
            }
            Subject::Mpich { choice } => choice.spec(),
            Subject::OmpiAdapt { choice, segment } => choice.spec(*segment),
            Subject::OmpiHan {
                choice,
                segment,
                modules,
            } => choice.spec(*segment, modules),
            Subject::LibraryLabelled { label } => label.clone(),
            Subject::LibraryCall { choice, .. } => choice.spec().to_string(),
        }
    }

    /// The call timed (the `call` column).
    pub fn call(&self) -> Call {
        match self {
            Subject::LibraryCall { call, .. } => *call,
            _ => Call::Bcast,
        }
    }
    pub fn execution(&self) -> &'static str {
        match self {
            Subject::Ours(v) => v.exec.name(),
            _ => "library",
        }
    }
    pub fn label(&self) -> String {
        match self {
            Subject::LibraryCall { call, .. } => format!(
                "{} {}",
                call,
                colltune_algorithms::label(self.spec(), self.execution())
            ),
            _ => colltune_algorithms::label(self.spec(), self.execution()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootPolicy {
    Rotate,
    Fixed(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    Warm,
    /// Rotate buffers over a region of this many bytes.
    Off(u64),
}

/// How the ranks of a repetition start together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncMode {
    /// `MPI_Barrier`, each rank timing from leaving it (IMB, OSU).
    #[default]
    Barrier,
    /// Synchronised clocks and one agreed start instant per repetition
    /// (SKaMPI, ReproMPI): what a simulated call, all ranks starting at
    /// time 0, predicts.
    Window,
}

impl SyncMode {
    pub const ALL: [SyncMode; 2] = [SyncMode::Barrier, SyncMode::Window];

    /// How the mode is written (CLI, tune's configuration).
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Barrier => "barrier",
            SyncMode::Window => "window",
        }
    }

    /// The `source` column of samples measured this way.
    pub fn source(self) -> &'static str {
        match self {
            SyncMode::Barrier => "measured",
            SyncMode::Window => "measured:window",
        }
    }
}

impl std::fmt::Display for SyncMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SyncMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "barrier" => Ok(SyncMode::Barrier),
            "window" => Ok(SyncMode::Window),
            _ => Err(format!("`{s}`: write `barrier` or `window`")),
        }
    }
}

/// The call pattern a repetition times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pattern {
    /// One call per repetition, the ranks started together ([`SyncMode`]):
    /// the latency of a call that every rank enters at once (OSU). What an
    /// application pays when it broadcasts between computation phases and
    /// needs the data before computing on.
    #[default]
    Synchronized,
    /// A block of calls in a row after one start, timed as a block on each
    /// rank (IMB-MPI1 with `-sync 0`): the time per call is the block's time over its calls,
    /// and successive calls may overlap (a root returns while its last call
    /// is still being delivered), so this is a throughput.
    BackToBack,
    /// One call per repetition after a barrier, each rank timing only its
    /// own call, the sample the **mean over the ranks**: what IMB-MPI1
    /// (2019 and later, its default `-sync 1`) reports as `t_avg` and OSU as
    /// its average latency. A rank that leaves the call early counts for
    /// little, so this favours algorithms that release ranks early (a
    /// linear broadcast whose root only posts eager sends), where
    /// `synchronized` (the slowest rank) measures when the data is
    /// everywhere.
    Imb,
}

impl Pattern {
    pub const ALL: [Pattern; 3] = [Pattern::Synchronized, Pattern::BackToBack, Pattern::Imb];

    /// How the pattern is written (CSV `pattern` column, provenance, CLI).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Synchronized => "synchronized",
            Pattern::BackToBack => "back-to-back",
            Pattern::Imb => "imb",
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Pattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "synchronized" | "synchronised" | "sync" => Ok(Pattern::Synchronized),
            "back-to-back" | "back_to_back" | "backtoback" => Ok(Pattern::BackToBack),
            "imb" | "osu" | "imb-avg" => Ok(Pattern::Imb),
            other => Err(format!(
                "`{other}`: write `synchronized` (one call per repetition, ranks started together, the slowest rank), `back-to-back` (blocks of calls in a row) or `imb` (a barrier between calls, each rank timing its own call, the mean over ranks: IMB's t_avg, OSU's average)"
            )),
        }
    }
}

/// Calls in one back-to-back block: about a tenth of the per-point budget
/// (`budget_s`) at the measured cost of one call (`call_s`), at most 1000
/// (IMB's usual `-iter`), at least one, and a whole number of root
/// rotations (`roots` calls) so every block meets every root alike.
pub fn block_calls(budget_s: f64, call_s: f64, roots: usize) -> u32 {
    let roots = roots.max(1) as u64;
    let want = if call_s > 0.0 && call_s.is_finite() {
        (budget_s / 10.0 / call_s).floor()
    } else {
        1000.0
    };
    let want = if want.is_finite() { want } else { 1000.0 };
    let want = (want as u64).clamp(1, 1000);
    let cap = (1000 / roots * roots).max(roots);
    (want.div_ceil(roots) * roots).min(cap) as u32
}

/// How points are timed.
#[derive(Clone, Debug)]
pub struct Method {
    pub budget: Duration,
    pub min_reps: u32,
    pub max_reps: u32,
    pub warmup: u32,
    pub root: RootPolicy,
    pub cache: CacheMode,
    pub sync: SyncMode,
    pub pattern: Pattern,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            budget: Duration::from_millis(50),
            min_reps: 5,
            max_reps: 300,
            warmup: 2,
            root: RootPolicy::Rotate,
            cache: CacheMode::Warm,
            sync: SyncMode::Barrier,
            pattern: Pattern::Synchronized,
        }
    }
}

/// Where and with what the samples were taken (repeated in every row).
#[derive(Clone, Debug)]
pub struct Origin {
    pub mpi: String,
    pub host: String,
    pub source: String,
}

/// `rotate` or a rank number.
impl std::str::FromStr for RootPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "rotate" => Ok(RootPolicy::Rotate),
            r => r
                .parse()
                .map(RootPolicy::Fixed)
                .map_err(|_| format!("`{r}`: write `rotate` or a rank number")),
        }
    }
}

/// What to measure cannot be expanded into subjects.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    #[error(transparent)]
    Unknown(#[from] SpecError),
    #[error("{what}: {error}")]
    Spec { what: String, error: SpecError },
    #[error("`{sweep}`: {why}")]
    Sweep { sweep: String, why: String },
}

/// Expands the requested algorithms (every algorithm of the collective at
/// its defaults when none is named; node-aware ones only on several nodes,
/// shared-memory ones only on one)
/// by the parameter sweeps, under each execution: the subjects to measure
/// or simulate, each once.
pub fn expand(
    collective: Collective,
    requested: &[AlgoSpec],
    sweeps: &[(String, Vec<String>)],
    execs: &[Execution],
    multi_node: bool,
) -> Result<Vec<Subject>, SelectionError> {
    let mut specs: Vec<AlgoSpec> = if requested.is_empty() {
        algorithms(collective)
            .filter(|a| {
                // Node-aware ones only on several nodes, shared-memory ones
                // only on one.
                if multi_node {
                    !a.has(Restriction::SharedMemory)
                } else {
                    !a.has(Restriction::NodeAware)
                }
            })
            .map(|a| AlgoSpec::new(a.name))
            .collect()
    } else {
        requested.to_vec()
    };
    for (key, values) in sweeps {
        let mut next = Vec::new();
        for spec in &specs {
            let info = lookup(collective, &spec.name)?;
            let Some(p) = info.param(key) else {
                next.push(spec.clone());
                continue;
            };
            for v in values {
                let value = match p.kind {
                    ParamKind::Segment { .. } | ParamKind::Count { .. } => {
                        ParamValue::Int(colltune_algorithms::parse_size(v).map_err(|e| {
                            SelectionError::Sweep {
                                sweep: key.clone(),
                                why: e,
                            }
                        })?)
                    }
                    ParamKind::Choice(_) => ParamValue::Word(v.clone()),
                    ParamKind::Algorithm(_) => {
                        ParamValue::Algo(AlgoSpec::parse(v).map_err(|e| SelectionError::Sweep {
                            sweep: key.clone(),
                            why: e.to_string(),
                        })?)
                    }
                };
                next.push(spec.clone().with(key, value));
            }
        }
        specs = next;
    }
    let mut out = Vec::new();
    for spec in specs {
        let r = resolve(collective, &spec).map_err(|e| SelectionError::Spec {
            what: format!("{collective} {spec}"),
            error: e,
        })?;
        for &exec in execs {
            let s = Subject::Ours(Variant {
                collective,
                spec: r.clone(),
                exec,
            });
            if !out.iter().any(|o: &Subject| o.label() == s.label()) {
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// Parses `key=value,value` sweeps (`segment=8K,64K`).
pub fn parse_sweeps(sweeps: &[String]) -> Result<Vec<(String, Vec<String>)>, SelectionError> {
    sweeps
        .iter()
        .map(|s| {
            let (k, v) = s.split_once('=').ok_or_else(|| SelectionError::Sweep {
                sweep: s.clone(),
                why: "write key=value,value (e.g. segment=8K,64K)".into(),
            })?;
            let values: Vec<String> = v
                .split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect();
            if values.is_empty() {
                return Err(SelectionError::Sweep {
                    sweep: s.clone(),
                    why: "no values".into(),
                });
            }
            Ok((k.trim().to_string(), values))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_print() {
        for p in [Pattern::Synchronized, Pattern::BackToBack, Pattern::Imb] {
            assert_eq!(p.to_string().parse::<Pattern>(), Ok(p));
        }
        assert_eq!("back-to-back".parse(), Ok(Pattern::BackToBack));
        assert_eq!("osu".parse(), Ok(Pattern::Imb));
        assert_eq!(Pattern::default(), Pattern::Synchronized);
        let e = "skampi".parse::<Pattern>().unwrap_err();
        assert!(
            e.contains("`skampi`") && e.contains("back-to-back") && e.contains("imb"),
            "{e}"
        );
    }

    #[test]
    fn library_subjects_are_named_as_their_library_documents() {
        let m = Subject::Mpich {
            choice: crate::libraries::mpich::Choice {
                value: 5,
                name: "scatter_ring_allgather".into(),
            },
        };
        assert_eq!(m.algorithm(), "mpich");
        assert_eq!(m.spec(), "mpich:algorithm=scatter_ring_allgather");
        assert_eq!(
            m.label(),
            "mpich:algorithm=scatter_ring_allgather [library]"
        );
        assert_eq!(m.collective(), Collective::Bcast);
        let i = Subject::LibraryLabelled {
            label: "impi:I_MPI_ADJUST_BCAST=3,name=ring".into(),
        };
        assert_eq!(i.algorithm(), "impi");
        assert_eq!(i.spec(), "impi:I_MPI_ADJUST_BCAST=3,name=ring");
        assert_eq!(i.execution(), "library");
        // The default call keeps its name.
        assert_eq!(Subject::Library.spec(), "mpi");
        let d = Subject::Interposed;
        assert_eq!(
            (d.spec().as_str(), d.execution()),
            ("interposed", "library")
        );
    }

    #[test]
    fn blocks_are_whole_rotations_within_bounds() {
        // 1 us calls, 50 ms budget: capped at 1000, a multiple of 3 roots
        assert_eq!(block_calls(0.05, 1e-6, 4), 1000);
        assert_eq!(block_calls(0.05, 1e-6, 3), 999);
        // 2 ms calls: 2.5 wanted, rounded up to one rotation of 4
        assert_eq!(block_calls(0.05, 2e-3, 4), 4);
        // a slow call still gets one rotation; nonsense costs are bounded
        assert_eq!(block_calls(0.05, 1.0, 1), 1);
        assert_eq!(block_calls(0.05, 0.0, 2), 1000);
        assert_eq!(block_calls(0.05, f64::NAN, 2), 1000);
        for roots in 1..=9 {
            let n = block_calls(0.05, 3e-5, roots);
            assert_eq!(n as usize % roots, 0);
            assert!((1..=1000).contains(&n));
        }
    }
}
