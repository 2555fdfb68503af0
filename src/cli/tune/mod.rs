//! `colltune tune`: the budgeted adaptive sweep that writes the decision
//! table and the raw CSV, measured under mpirun (`measured`) or over a
//! network model (`--model`, no MPI needed).

#[cfg(feature = "mpi")]
mod calls;
#[cfg(feature = "mpi")]
mod launch;
#[cfg(feature = "mpi")]
mod library;
#[cfg(feature = "mpi")]
mod measured;
mod model;

use std::path::PathBuf;

use colltune_algorithms::{Collective, Execution};

use super::args::{Cluster, Timing};
use super::{parse_sizes, Code, UsageError};
use colltune_core::measure::method::MAX_BYTES;
use colltune_core::tables::table::build::Compact;
use colltune_core::tune::{collectives_of, Campaign};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Collectives to tune: bcast, swap (default both).
    #[arg(long, value_delimiter = ',')]
    pub collective: Vec<Collective>,
    /// Message sizes: the grid (default 1..4M, powers of two).
    #[arg(long)]
    pub sizes: Option<String>,
    /// Sub-communicator sizes to tune besides the whole job (ranks 0..k-1).
    #[arg(long, value_delimiter = ',')]
    pub comm_sizes: Vec<u32>,
    /// Executions: blocking, nonblocking (default both).
    #[arg(long, value_delimiter = ',')]
    pub executions: Vec<Execution>,
    /// Broadcast calls to tune: bcast (`MPI_Bcast`), ibcast (`MPI_Ibcast`),
    /// bcast_init (`MPI_Bcast_init` + `MPI_Start`/`MPI_Wait`). Default:
    /// bcast only, since each nonblocking call adds two timed phases per
    /// point and algorithm (post then wait; post, compute, wait) to the
    /// tune. ibcast and bcast_init measure the library's own nonblocking
    /// algorithms (Open MPI coll/libnbc, MPICH's ibcast variable) and
    /// write the table's `ibcast:` / `bcast_init:` sections.
    #[arg(long, value_delimiter = ',', default_value = "bcast")]
    pub calls: Vec<colltune_core::measure::record::Call>,
    /// Swap pairing used while tuning swaps.
    #[arg(long, value_enum, default_value_t = Pairing::Neighbors)]
    pub pairing: Pairing,
    /// Wall-time budget in minutes; the sweep stops there and writes the
    /// table from what it measured.
    #[arg(long, default_value_t = 60.0)]
    pub budget: f64,
    /// Measure every candidate and segment size at every size (reference).
    #[arg(long)]
    pub exhaustive: bool,
    /// Raw samples (default results/<host>/tune-np<ranks>.csv).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Decision table to write (default tuning-tables/<host>.yaml).
    #[arg(long)]
    pub table: Option<PathBuf>,
    /// Continue the sweep recorded in --csv, measuring nothing twice.
    #[arg(long)]
    pub resume: bool,
    /// Screening runs per point (cheap, a fraction of the budget).
    #[arg(long, default_value_t = 2)]
    pub screen_runs: u32,
    /// Full-budget runs for the candidates that survive screening.
    #[arg(long, default_value_t = 2)]
    pub full_runs: u32,
    /// A candidate is dominated when its best run median exceeds the
    /// leader's worst by more than this fraction.
    #[arg(long, default_value_t = 0.05)]
    pub margin: f64,
    /// Coarse sizes are every this many grid sizes.
    #[arg(long, default_value_t = 4)]
    pub stride: u32,
    #[command(flatten)]
    pub timing: Timing,
    /// Leave Open MPI's own broadcast algorithms (coll/tuned 1-9, forced on
    /// a duplicate communicator) out of the candidates. They are compared
    /// by default when the MPI library is Open MPI, so the table never
    /// loses to the library's best by more than the dispatch cost.
    #[arg(long)]
    pub no_library_candidates: bool,
    /// Keep a rule for every change of the fastest median, even within the
    /// measurement's noise.
    #[arg(long)]
    pub no_compact: bool,
    /// The floor of the noise band when merging rules (a fraction: 0.03 =
    /// 3%); each measured size's own run-to-run spread widens it, up to 10%.
    #[arg(long, default_value_t = colltune_core::tables::table::build::DEFAULT_TOLERANCE)]
    pub compact_tolerance: f64,
    /// A rule replaces the library's own decision only where the 95%
    /// interval of its gain over it clears this fraction (0.03 = 3%).
    #[arg(long, default_value_t = colltune_core::tables::table::evidence::DEFAULT_MIN_GAIN)]
    pub min_gain: f64,
    /// Decide by the fastest median merged within noise (before schema 2).
    #[arg(long)]
    pub no_evidence: bool,
    /// After the sweep, at most this many further rounds at the sizes whose
    /// decision is still open (a gain's interval straddles --min-gain): each
    /// gives the candidates that decide it --full-runs more runs; 0: none.
    /// The --budget stops them too.
    #[arg(long, default_value_t = colltune_core::tune::DEFAULT_EXTRA_ROUNDS)]
    pub extra_rounds: u32,
    /// A further launch of a tune: measure only the sizes these earlier
    /// launches' CSVs leave open (judged as `table build` judges them, with
    /// --min-gain), and at each only the subjects that decide it: the
    /// library's decision, the choice, the candidates whose interval is
    /// open. No screening, no segment search, no new sizes. The job scripts'
    /// later launches run this way.
    #[arg(long, num_args = 1.., value_name = "CSV", conflicts_with_all = ["sizes", "exhaustive", "model", "no_evidence"])]
    pub focus: Vec<PathBuf>,
    /// Tune over a network model instead of measuring (no MPI needed);
    /// give the simulated cluster with --ranks/--ppn or --layout.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// The simulated cluster (with --model).
    #[command(flatten)]
    pub cluster: Cluster,
}

/// The partners of a swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Pairing {
    /// 0-1, 2-3, ...
    Neighbors,
    /// i with i + p/2.
    Halves,
}

impl Pairing {
    /// As a swap's `pairing` parameter writes it.
    pub fn name(self) -> &'static str {
        match self {
            Pairing::Neighbors => "neighbors",
            Pairing::Halves => "halves",
        }
    }
}

impl Args {
    /// The minimum gain the further rounds judge by (none without
    /// evidence).
    pub fn min_gain_setting(&self) -> Option<f64> {
        (!self.no_evidence).then_some(self.min_gain)
    }

    /// How the table's rules are merged.
    pub fn compact(&self) -> Compact {
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
    {
        return Err(UsageError(
            "--budget, --screen-runs, --full-runs and --stride must be positive".into(),
        )
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
    let root = args.timing.check()?;
    let collectives = collectives_of(&args.collective);
    let executions = if args.executions.is_empty() {
        Execution::ALL.to_vec()
    } else {
        args.executions.clone()
    };
    if let Some(model) = args.model.clone() {
        if args.timing.pattern != colltune_core::measure::method::Pattern::Synchronized {
            return Err(UsageError(
                "--pattern back-to-back or imb with --model: the simulator predicts one call that every rank starts at once (synchronized); measure back-to-back under mpirun".into(),
            )
            .into());
        }
        return model::run(&args, &model, sizes, collectives, executions, root);
    }
    #[cfg(feature = "mpi")]
    return measured::run(&args, sizes, collectives, executions, root);
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
    _: colltune_core::measure::method::RootPolicy,
) -> anyhow::Result<Code> {
    Err(UsageError(
        "this colltune was built without MPI (--no-default-features): only `tune --model` works; build with the default features to measure".into(),
    )
    .into())
}

/// Records the campaign's further rounds in the table's provenance and
/// says on screen what they did (the sizes left open are listed by the
/// table's summary, under `unresolved`).
pub fn record_further(table: &mut colltune_core::tables::table::Table, campaign: &Campaign) {
    let Some(f) = campaign.further() else {
        return;
    };
    outln!("where decisions were open after the sweep: {}", f.line());
    if let Some(e) = table.provenance.evidence.as_mut() {
        e.further = Some(f);
    }
}
