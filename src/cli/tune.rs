//! `colltune tune`: the budgeted adaptive sweep that writes the decision
//! table and the raw CSV, measured under mpirun (`tune_mpi`) or over a
//! network model (`--model`, no MPI needed).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use colltune_algorithms::{Collective, Execution};

use super::{parse_sizes, Code, UsageError};
use crate::progress::Reporter;
use colltune_core::method::{RootPolicy, MAX_BYTES};
use colltune_core::record::Writer;
use colltune_core::table::{self, build::build_with, build::Compact, Provenance, Sweep};
use colltune_core::tune::{collectives_of, search_all, Settings};
use colltune_core::units::hms;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Collectives to tune: bcast, swap (default both).
    #[arg(long, value_delimiter = ',')]
    pub(super) collective: Vec<Collective>,
    /// Message sizes: the grid (default 1..4M, powers of two).
    #[arg(long)]
    pub(super) sizes: Option<String>,
    /// Sub-communicator sizes to tune besides the whole job (ranks 0..k-1).
    #[arg(long, value_delimiter = ',')]
    pub(super) comm_sizes: Vec<u32>,
    /// Executions: blocking, nonblocking (default both).
    #[arg(long, value_delimiter = ',')]
    pub(super) executions: Vec<Execution>,
    /// Swap pairing used while tuning swaps: neighbors or halves.
    #[arg(long, default_value = "neighbors")]
    pub(super) pairing: String,
    /// Wall-time budget in minutes; the sweep stops there and writes the
    /// table from what it measured.
    #[arg(long, default_value_t = 60.0)]
    pub(super) budget: f64,
    /// Measure every candidate and segment size at every size (reference).
    #[arg(long)]
    pub(super) exhaustive: bool,
    /// Raw samples (default results/<host>/tune-np<ranks>.csv).
    #[arg(long)]
    pub(super) csv: Option<PathBuf>,
    /// Decision table to write (default tuning-tables/<host>.yaml).
    #[arg(long)]
    pub(super) table: Option<PathBuf>,
    /// Continue the sweep recorded in --csv, measuring nothing twice.
    #[arg(long)]
    pub(super) resume: bool,
    /// Screening runs per point (cheap, a fraction of the budget).
    #[arg(long, default_value_t = 2)]
    pub(super) screen_runs: u32,
    /// Full-budget runs for the candidates that survive screening.
    #[arg(long, default_value_t = 2)]
    pub(super) full_runs: u32,
    /// Time budget per point and run, milliseconds.
    #[arg(long, default_value_t = 50)]
    pub(super) budget_ms: u64,
    /// A candidate is dominated when its best run median exceeds the
    /// leader's worst by more than this fraction.
    #[arg(long, default_value_t = 0.05)]
    pub(super) margin: f64,
    /// Coarse sizes are every this many grid sizes.
    #[arg(long, default_value_t = 4)]
    pub(super) stride: u32,
    #[arg(long, default_value_t = 5)]
    pub(super) min_reps: u32,
    #[arg(long, default_value_t = 300)]
    pub(super) max_reps: u32,
    /// Root: rotate or a rank.
    #[arg(long, default_value = "rotate")]
    pub(super) root: String,
    /// Cache: warm or off.
    #[arg(long, default_value = "warm")]
    pub(super) cache: String,
    /// Repetition start: `barrier` (MPI_Barrier) or `window` (synchronised
    /// clocks, one agreed start instant; see `colltune bench --help`).
    #[arg(long, default_value = "barrier")]
    pub(super) sync: colltune_core::method::SyncMode,
    /// Leave Open MPI's own broadcast algorithms (coll/tuned 1-9, forced on
    /// a duplicate communicator) out of the candidates. They are compared
    /// by default when the MPI library is Open MPI, so the table never
    /// loses to the library's best by more than the dispatch cost.
    #[arg(long)]
    pub(super) no_library_candidates: bool,
    /// Call pattern tuned for: `synchronized` (one call per repetition, the
    /// ranks started together, the slowest rank: an application calling
    /// between computation phases), `back-to-back` (blocks of calls in a
    /// row) or `imb` (IMB's and OSU's own measure: a barrier between calls,
    /// the mean over ranks of each rank's time in the call); see `colltune
    /// bench --help`. Recorded in the CSV and the table.
    #[arg(long, default_value = "synchronized")]
    pub(super) pattern: colltune_core::method::Pattern,
    /// Keep a rule for every change of the fastest median, even within the
    /// measurement's noise.
    #[arg(long)]
    pub(super) no_compact: bool,
    /// The floor of the noise band when merging rules (a fraction: 0.03 =
    /// 3%); each measured size's own run-to-run spread widens it, up to 10%.
    #[arg(long, default_value_t = colltune_core::table::build::DEFAULT_TOLERANCE)]
    pub(super) compact_tolerance: f64,
    /// A rule replaces the library's own decision only where the 95%
    /// interval of its gain over it clears this fraction (0.03 = 3%).
    #[arg(long, default_value_t = colltune_core::table::evidence::DEFAULT_MIN_GAIN)]
    pub(super) min_gain: f64,
    /// Decide by the fastest median merged within noise (before schema 2).
    #[arg(long)]
    pub(super) no_evidence: bool,
    /// Tune over a network model instead of measuring (no MPI needed);
    /// give the simulated cluster with --ranks/--ppn or --layout.
    #[arg(long)]
    pub(super) model: Option<PathBuf>,
    /// Simulated ranks (with --model).
    #[arg(long)]
    pub(super) ranks: Option<usize>,
    /// Simulated ranks per node (with --model).
    #[arg(long)]
    pub(super) ppn: Option<usize>,
    /// Simulated layout, e.g. 1024x4 (with --model).
    #[arg(long)]
    pub(super) layout: Option<String>,
}

impl Args {
    /// How the table's rules are merged.
    pub(super) fn compact(&self) -> Compact {
        Compact {
            min_gain: (!self.no_evidence).then_some(self.min_gain),
            enabled: !self.no_compact,
            tolerance: self.compact_tolerance,
            ..Compact::default()
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    let sizes = parse_sizes(args.sizes.as_deref().unwrap_or("1..4M"))?;
    if let Some(&b) = sizes.iter().find(|&&b| b > MAX_BYTES) {
        return Err(UsageError(format!(
            "--sizes: {b} bytes is more than one MPI message can carry"
        ))
        .into());
    }
    if args.budget.is_nan()
        || args.budget <= 0.0
        || args.screen_runs == 0
        || args.full_runs == 0
        || args.stride == 0
        || args.min_reps == 0
        || args.max_reps < args.min_reps
    {
        return Err(UsageError("--budget, --screen-runs, --full-runs, --stride and --min-reps must be positive, --max-reps at least --min-reps".into()).into());
    }
    if !["neighbors", "halves"].contains(&args.pairing.as_str()) {
        return Err(UsageError(format!(
            "--pairing `{}`: use neighbors or halves",
            args.pairing
        ))
        .into());
    }
    if !(args.compact_tolerance.is_finite() && (0.0..1.0).contains(&args.compact_tolerance)) {
        return Err(UsageError(format!(
            "--compact-tolerance {}: a fraction between 0 and 1 (0.03 = 3%)",
            args.compact_tolerance
        ))
        .into());
    }
    if !(args.min_gain.is_finite() && (0.0..1.0).contains(&args.min_gain)) {
        return Err(UsageError(format!(
            "--min-gain {}: a fraction between 0 and 1 (0.03 = 3%)",
            args.min_gain
        ))
        .into());
    }
    let root = super::args::parse_root(&args.root)?;
    if !["warm", "off"].contains(&args.cache.as_str()) {
        return Err(UsageError(format!("--cache `{}`: use warm or off", args.cache)).into());
    }
    let collectives = collectives_of(&args.collective);
    let executions = if args.executions.is_empty() {
        Execution::ALL.to_vec()
    } else {
        args.executions.clone()
    };
    if args.pattern == colltune_core::method::Pattern::Imb
        && args.sync != colltune_core::method::SyncMode::Barrier
    {
        return Err(UsageError(
            "--pattern imb with --sync window: IMB and OSU time each rank's call after a barrier; use --sync barrier".into(),
        )
        .into());
    }
    if let Some(model) = args.model.clone() {
        if args.pattern != colltune_core::method::Pattern::Synchronized {
            return Err(UsageError(
                "--pattern back-to-back or imb with --model: the simulator predicts one call that every rank starts at once (synchronized); measure back-to-back under mpirun".into(),
            )
            .into());
        }
        return run_model(&args, &model, sizes, collectives, executions, root);
    }
    #[cfg(feature = "mpi")]
    return super::tune_mpi::run_measured(&args, sizes, collectives, executions, root);
    #[cfg(not(feature = "mpi"))]
    run_measured(&args, sizes, collectives, executions, root)
}

/// Without MPI, only `tune --model`.
#[cfg(not(feature = "mpi"))]
fn run_measured(
    _: &Args,
    _: Vec<u64>,
    _: Vec<Collective>,
    _: Vec<Execution>,
    _: RootPolicy,
) -> anyhow::Result<Code> {
    Err(UsageError(
        "this colltune was built without MPI (--no-default-features): only `tune --model` works; build with the default features to measure".into(),
    )
    .into())
}

/// `tune --model`: the same search over a simulated cluster.
fn run_model(
    args: &Args,
    model: &std::path::Path,
    sizes: Vec<u64>,
    collectives: Vec<Collective>,
    executions: Vec<Execution>,
    root: RootPolicy,
) -> anyhow::Result<Code> {
    let m = colltune_core::sim::Model::load(model).map_err(|e| UsageError(e.to_string()))?;
    let world = colltune_core::simulate::layout(args.ranks, args.ppn, args.layout.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
    if let RootPolicy::Fixed(r) = root {
        if r >= world.size() {
            return Err(UsageError(format!(
                "--root {r}: the simulated communicator has ranks 0..{}",
                world.size() - 1
            ))
            .into());
        }
    }
    let mut comms = vec![world.clone()];
    for &k in &args.comm_sizes {
        if k == 0 || k as usize > world.size() {
            return Err(UsageError(format!(
                "--comm-sizes {k}: must be between 1 and {}",
                world.size()
            ))
            .into());
        }
        // ranks 0..k-1 of the simulated cluster
        let labels: Vec<usize> = (0..k as usize).map(|r| world.node_of(r)).collect();
        comms.push(colltune_algorithms::NodeMap::from_labels(&labels));
    }
    let csv = args
        .csv
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/sim/{}-{}.csv", m.name, world)));
    let table_path = args
        .table
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("tuning-tables/sim-{}-{}.yaml", m.name, world)));
    if csv.metadata().map(|x| x.len() > 0).unwrap_or(false) {
        return Err(UsageError(format!(
            "{} already holds samples: name a new file with --csv (nothing was overwritten)",
            csv.display()
        ))
        .into());
    }
    let writer = Writer::open(&csv, false)?;
    let started = Instant::now();
    // Simulation is deterministic: one run each, no screening fraction.
    let settings = Settings {
        sizes: sizes.clone(),
        screen_runs: 1,
        full_runs: 1,
        screen_scale: 1.0,
        margin: args.margin,
        stride: args.stride as usize,
        brent_iters: 6,
        exhaustive: args.exhaustive,
        deadline: Some(started + Duration::from_secs_f64(args.budget * 60.0)),
        // Open MPI's own algorithms are measured beside colltune's (forced
        // through MPI_T on a duplicate); a model cannot simulate them.
        library_candidates: Vec::new(),
    };
    let progress = Reporter::new(
        comms.len() as u64 * collectives.len() as u64 * 200,
        true,
        "simulations",
    );
    let mut oracle = colltune_core::tune::sim::SimOracle::new(
        &m,
        comms.clone(),
        root,
        Some(writer),
        Box::new(progress),
    );
    oracle.cutoff = !args.exhaustive;
    let on: Vec<(usize, bool)> = comms
        .iter()
        .enumerate()
        .map(|(ci, nodes)| (ci, nodes.num_nodes() > 1))
        .collect();
    let cut_short = search_all(
        &mut oracle,
        &settings,
        &on,
        &collectives,
        &executions,
        &args.pairing,
    )?;
    oracle.progress.finish();
    let seconds = started.elapsed().as_secs_f64();
    let table = build_with(
        &oracle.samples,
        Provenance::made_now(
            "simulator".into(),
            Some(format!("model {} ({})", m.name, world)),
            format!("model {}", m.name),
            format!("simulated:{}", m.name),
            Sweep {
                mode: if args.exhaustive {
                    "exhaustive"
                } else {
                    "adaptive"
                }
                .into(),
                sizes,
                runs: 1,
                budget_ms: 0,
                executions: executions.iter().map(|e| e.to_string()).collect(),
                cache: String::new(),
                root: args.root.clone(),
                raw: vec![csv.display().to_string()],
                seconds: Some((seconds * 10.0).round() / 10.0),
                points: Some(oracle.simulated),
            },
        ),
        &args.compact(),
    );
    table.save(&table_path)?;
    out!("{}", table::summary(&table));
    outln!(
        "\ntuned over model {} on {} ranks ({}) in {} ({} simulations{}){}",
        m.name,
        world.size(),
        world,
        hms(seconds),
        oracle.simulated,
        if oracle.abandoned > 0 {
            format!(
                ", {} candidate-sizes abandoned past {}x the best",
                oracle.abandoned,
                colltune_core::tune::sim::CUTOFF
            )
        } else {
            String::new()
        },
        if cut_short {
            "; STOPPED EARLY (budget)"
        } else {
            ""
        }
    );
    let mut skipped = oracle.skipped.clone();
    skipped.sort();
    skipped.dedup();
    for why in &skipped {
        outln!("not a candidate here: {why}");
    }
    outln!(
        "table: {}\nraw samples: {}",
        table_path.display(),
        csv.display()
    );
    Ok(Code::Ok)
}
