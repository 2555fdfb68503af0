//! Argument groups shared by several subcommands: what to measure or
//! simulate ([`Selection`]) and how each point is timed ([`Timing`]),
//! parsed into what the libraries take; [`one_of`], the parser of options
//! that take one of a few words.

use colltune_core::model::placement::{Layout, Mapping};
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use colltune_algorithms::{lookup, AlgoSpec, Collective, Execution};
use colltune_core::measure::method::{
    parse_sweeps, CacheMode, Method, Pattern, RootPolicy, SyncMode,
};

use super::{parse_sizes, UsageError};

/// What to time (bench) or simulate (simulate): collectives, algorithms,
/// parameter sweeps, executions and sizes.
#[derive(clap::Args, Debug)]
pub struct Selection {
    /// Collectives: bcast, swap (default both).
    #[arg(long, value_delimiter = ',')]
    collective: Vec<Collective>,
    /// Algorithms (repeatable), e.g. `pipeline:segment=8K`; default every
    /// algorithm at its default parameters (node-aware ones only when the
    /// ranks span several nodes).
    #[arg(long = "algorithm", short = 'a')]
    algorithms: Vec<String>,
    /// Vary a parameter over values for every algorithm that has it
    /// (repeatable): `segment=8K,64K`, `radix=2,4,8`, `fanout=1,2`,
    /// `inter=binomial,pipeline`, `pairing=neighbors,halves`.
    #[arg(long = "sweep")]
    sweeps: Vec<String>,
    /// Executions: blocking, nonblocking (default both).
    #[arg(long, value_delimiter = ',')]
    executions: Vec<Execution>,
    /// Message sizes: a list (`1,7,64K`) or a range of powers of two
    /// (`1..4M`, the default).
    #[arg(long)]
    pub sizes: Option<String>,
}

/// A [`Selection`], parsed and checked.
pub struct Selected {
    pub sizes: Vec<u64>,
    /// Per collective, the requested algorithms that belong to it (empty:
    /// every algorithm); only collectives with some, when any was named.
    pub per_coll: Vec<(Collective, Vec<AlgoSpec>)>,
    pub sweeps: Vec<(String, Vec<String>)>,
    pub execs: Vec<Execution>,
}

impl Selection {
    /// Parses and checks everything; an algorithm no selected collective
    /// has is an error naming it.
    pub fn resolve(&self) -> Result<Selected, UsageError> {
        let sizes = parse_sizes(self.sizes.as_deref().unwrap_or("1..4M"))?;
        let collectives = if self.collective.is_empty() {
            Collective::ALL.to_vec()
        } else {
            self.collective.clone()
        };
        let execs = if self.executions.is_empty() {
            Execution::ALL.to_vec()
        } else {
            self.executions.clone()
        };
        let requested: Vec<AlgoSpec> = self
            .algorithms
            .iter()
            .map(|t| AlgoSpec::parse(t).map_err(|e| UsageError(format!("--algorithm: {e}"))))
            .collect::<Result<_, _>>()?;
        let sweeps = parse_sweeps(&self.sweeps).map_err(|e| UsageError(format!("--sweep {e}")))?;
        let mut per_coll: Vec<(Collective, Vec<AlgoSpec>)> = Vec::new();
        for &c in &collectives {
            let mine: Vec<AlgoSpec> = requested
                .iter()
                .filter(|s| lookup(c, &s.name).is_ok())
                .cloned()
                .collect();
            per_coll.push((c, mine));
        }
        for s in &requested {
            if !collectives.iter().any(|&c| lookup(c, &s.name).is_ok()) {
                let e = lookup(collectives[0], &s.name).expect_err("unknown");
                return Err(UsageError(format!("--algorithm {s}: {e}")));
            }
        }
        if !requested.is_empty() {
            per_coll.retain(|(_, specs)| !specs.is_empty());
        }
        Ok(Selected {
            sizes,
            per_coll,
            sweeps,
            execs,
        })
    }
}

/// `--root`: `rotate` or a rank.
pub fn parse_root(r: &str) -> Result<RootPolicy, UsageError> {
    r.parse().map_err(|e| UsageError(format!("--root {e}")))
}

/// The simulated cluster (simulate, tune --model): `--ranks` and `--ppn`,
/// or `--layout`.
#[derive(clap::Args, Debug)]
pub struct Cluster {
    /// Ranks of the simulated communicator.
    #[arg(long)]
    pub ranks: Option<usize>,
    /// Ranks per node (default: all on one node).
    #[arg(long)]
    pub ppn: Option<usize>,
    /// Or an explicit layout: `256x64`, `3+2`, or each rank's node
    /// `0,1,0,1`.
    #[arg(long)]
    pub layout: Option<String>,
    /// How ranks are dealt to the nodes, as `mpirun --map-by` (with
    /// --ranks/--ppn): `core` (blocks, the default) or `node`
    /// (round-robin). Given, the samples and the table's rules say the
    /// placement (`block` or `cyclic` over nodes: the model has no
    /// sockets), and the selector uses them where a communicator is so
    /// placed.
    #[arg(long)]
    pub mapping: Option<String>,
}

impl Cluster {
    /// The node map these options give.
    pub fn nodes(&self) -> Result<colltune_algorithms::NodeMap, UsageError> {
        let nodes =
            colltune_core::model::simulate::layout(self.ranks, self.ppn, self.layout.as_deref())
                .map_err(|e| UsageError(e.to_string()))?;
        match self.mapping()? {
            None | Some(Mapping::Core) => Ok(nodes),
            Some(Mapping::Node) if self.layout.is_none() => Ok(
                colltune_algorithms::NodeMap::round_robin(nodes.size(), nodes.num_nodes()),
            ),
            Some(m) => Err(UsageError(format!(
                "--mapping {m}: the simulated cluster has no sockets, and --layout lays ranks out itself; give --mapping core or node with --ranks and --ppn"
            ))),
        }
    }

    /// The --mapping given, if any.
    pub fn mapping(&self) -> Result<Option<Mapping>, UsageError> {
        self.mapping
            .as_deref()
            .map(Mapping::parse)
            .transpose()
            .map_err(UsageError)
    }
}

/// A parser for an option that takes one of `all`, each written as `name`
/// writes it: a bad value gets clap's message listing the valid ones (for
/// the libraries' own enums, which know nothing of clap).
pub fn one_of<T: Clone + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(&T) -> &'static str,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(name)).map(move |s| {
        all.iter()
            .find(|v| name(v) == s)
            .expect("clap passes only a possible value")
            .clone()
    })
}

/// The cache state a point is timed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Cache {
    /// One buffer, warm in the cache.
    Warm,
    /// Buffers rotated over twice the last-level cache.
    Off,
}

impl std::fmt::Display for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cache::Warm => "warm",
            Cache::Off => "off",
        })
    }
}

/// How each point is timed (bench and tune).
#[derive(clap::Args, Debug, Clone)]
pub struct Timing {
    /// Time budget per point and run, in milliseconds.
    #[arg(long, default_value_t = 50)]
    pub budget_ms: u64,
    /// Fewest repetitions per point and run.
    #[arg(long, default_value_t = 5)]
    pub min_reps: u32,
    /// Most repetitions per point and run.
    #[arg(long, default_value_t = 300)]
    pub max_reps: u32,
    /// Root: `rotate` (repetition i uses root i mod p; IMB-MPI1 before
    /// 2019) or a rank (IMB 2019 and later and OSU keep root 0).
    #[arg(long, default_value = "rotate")]
    pub root: String,
    /// Cache: `warm` (one buffer) or `off` (buffers rotated over twice the
    /// last-level cache).
    #[arg(long, value_enum, default_value_t = Cache::Warm)]
    pub cache: Cache,
    /// How the ranks of a repetition start together: `barrier` (each after
    /// MPI_Barrier, timing from leaving it: IMB, OSU) or `window` (clocks
    /// synchronised to rank 0's, one agreed start instant per repetition:
    /// SKaMPI, ReproMPI; what `simulate` predicts).
    #[arg(long, default_value = "barrier", value_parser = one_of(&SyncMode::ALL, |m| m.name()))]
    pub sync: SyncMode,
    /// Call pattern: `synchronized` (each repetition one call, the ranks
    /// started together, the slowest rank's time: when the data is
    /// everywhere; what an application between computation phases pays),
    /// `back-to-back` (each repetition a block of calls in a row with the
    /// root rotating per call, timed as a block on each rank, the slowest
    /// rank's time per call: throughput) or `imb` (a barrier before each
    /// call, each rank timing its own call, the mean over ranks: exactly
    /// what IMB-MPI1 reports as t_avg and OSU as its average latency; use
    /// `--root 0` for their default fixed root). Recorded in the CSV and
    /// the table.
    #[arg(long, default_value = "synchronized", value_parser = one_of(&Pattern::ALL, |p| p.name()))]
    pub pattern: Pattern,
}

impl Timing {
    /// Checks what can be checked before MPI starts; the root policy.
    pub fn check(&self) -> Result<RootPolicy, UsageError> {
        if self.min_reps == 0 || self.max_reps < self.min_reps {
            return Err(UsageError(
                "--min-reps must be at least 1, --max-reps at least --min-reps".into(),
            ));
        }
        if self.pattern == Pattern::Imb && self.sync != SyncMode::Barrier {
            return Err(UsageError(
                "--pattern imb with --sync window: IMB and OSU time each rank's call after a barrier; use --sync barrier".into(),
            ));
        }
        parse_root(&self.root)
    }

    /// The method: `warmup` untimed calls, a cold cache rotated over
    /// twice `llc_bytes` (the last-level cache).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn method(&self, root: RootPolicy, warmup: u32, llc_bytes: u64) -> Method {
        Method {
            budget: Duration::from_millis(self.budget_ms),
            min_reps: self.min_reps,
            max_reps: self.max_reps,
            warmup,
            root,
            cache: match self.cache {
                Cache::Warm => CacheMode::Warm,
                Cache::Off => CacheMode::Off(2 * llc_bytes),
            },
            sync: self.sync,
            pattern: self.pattern,
        }
    }
}

/// `--layout` with `--alloc ARG --group-by RULE` laid on it (`predict`,
/// `calibrate --collectives`): the allocation's nodes and groups replace
/// the layout's; a grouping rule without an allocation is an error.
pub fn placed_layout(
    layout: &str,
    alloc: Option<&str>,
    group_by: Option<&str>,
) -> Result<Layout, UsageError> {
    let l = Layout::parse(layout).map_err(UsageError)?;
    match (alloc, group_by) {
        (Some(a), g) => l.with_alloc_arg(a, g).map_err(UsageError),
        (None, Some(_)) => Err(UsageError(
            "--group-by needs --alloc (the allocation whose nodes it groups)".into(),
        )),
        (None, None) => Ok(l),
    }
}
