//! `colltune table build RAW.csv...`: a decision table from raw samples
//! alone, the tuner's own builder over them.
//!
//! ```text
//! CSVs (one launch each) -> unforced algorithms left out
//!     -> one pattern, library, source and host (or --cluster)
//!     -> provenance (sidecars' settings carry over) -> build
//!     -> partial launches named -> evidence/compaction line -> YAML
//! ```

use std::path::PathBuf;

use super::refuse::{refuse_mixed, refuse_patterns};
use crate::cli::{Code, UsageError};
use colltune_core::measure::record::{self, Sample};
use colltune_core::tables::table::build::{build_launches, patterns, Compact};
use colltune_core::tables::table::evidence::partial_launches;
use colltune_core::tables::table::{self, Provenance, Section, Sweep, Table};
use colltune_core::tune::resume::TuneConfig;

// (No doc comment: the subcommand's help is the variant's.)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Raw sample files; samples of several runs (4 and 8 ranks, say)
    /// merge, and two tunes of the same communicator count as separate
    /// runs (a choice must then hold in both launches).
    #[arg(required = true)]
    csv: Vec<PathBuf>,
    /// Write the table here (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Cluster name for the provenance.
    #[arg(long)]
    cluster: Option<String>,
    /// Keep a rule for every change of the fastest median, even within
    /// the measurement's noise.
    #[arg(long)]
    no_compact: bool,
    /// The floor of the noise band when merging rules (0.03 = 3%); each
    /// measured size's own run-to-run spread widens it, up to 10%.
    #[arg(long, default_value_t = colltune_core::tables::table::build::DEFAULT_TOLERANCE)]
    compact_tolerance: f64,
    /// A rule replaces the library's own decision only where the 95%
    /// interval of its gain over it (each CSV one launch) clears this
    /// fraction (0.03 = 3%).
    #[arg(long, default_value_t = colltune_core::tables::table::evidence::DEFAULT_MIN_GAIN)]
    min_gain: f64,
    /// Decide by the fastest median merged within noise (the builder
    /// before schema 2), not on the evidence; no gains recorded.
    #[arg(long)]
    no_evidence: bool,
    /// Keep an Open MPI algorithm measured as the library's default
    /// where the two run different code (by default its samples are
    /// left out, with a warning: its runs most likely did not force it,
    /// and a rule naming it would force the real one).
    #[arg(long)]
    keep_unforced: bool,
    /// Where the samples are a model's predictions (`predict --csv`,
    /// `simulate`, `tune --model`): the model's fit error (0.25 = its
    /// times 25% off, the median `predict` prints), the half-width of each
    /// predicted gain's interval; a rule replaces the library's decision
    /// only where the predicted gain clears --min-gain beyond it.
    #[arg(long)]
    fit_error: Option<f64>,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    for (flag, v) in [
        ("--compact-tolerance", a.compact_tolerance),
        ("--min-gain", a.min_gain),
    ] {
        if !(v.is_finite() && (0.0..1.0).contains(&v)) {
            return Err(UsageError(format!(
                "{flag} {v}: a fraction between 0 and 1 (0.03 = 3%)"
            ))
            .into());
        }
    }
    if let Some(e) = a
        .fit_error
        .filter(|e| !(e.is_finite() && (0.0..10.0).contains(e)))
    {
        return Err(UsageError(format!(
            "--fit-error {e}: the model's relative time error, 0 or more (0.25 = 25%)"
        ))
        .into());
    }
    let (mut launches, cut_off, pattern_of) = read_launches(&a.csv)?;
    drop_unforced(&mut launches, a.keep_unforced);
    refuse_patterns(&pattern_of)?;
    refuse_mixed(&a.csv, &launches, a.cluster.is_some())?;
    let per_launch: Vec<&[Sample]> = launches.iter().map(Vec::as_slice).collect();
    let mut table = build_launches(
        &per_launch,
        provenance(&a.csv, &launches, a.cluster.clone()),
        &Compact {
            min_gain: (!a.no_evidence).then_some(a.min_gain),
            enabled: !a.no_compact,
            tolerance: a.compact_tolerance,
            fit_error: a.fit_error,
            ..Compact::default()
        },
    );
    if let Some(e) = table.provenance.evidence.as_mut() {
        let names: Vec<String> = a.csv.iter().map(|p| p.display().to_string()).collect();
        e.partial_launches = cut_off;
        // What each launch's tuner recorded: a sidecar without the
        // marker finished what it was asked (a later launch asks for
        // the open sizes alone).
        let stopped: Vec<Option<bool>> = a
            .csv
            .iter()
            .map(|p| {
                TuneConfig::sidecar(p)
                    .exists()
                    .then(|| TuneConfig::incomplete_marker(p).exists())
            })
            .collect();
        e.partial_launches
            .extend(partial_launches(&per_launch, &names, &stopped));
    }
    if Section::ALL.iter().all(|s| table.section(*s).is_empty()) {
        return Err(UsageError(
            "the CSVs hold no colltune algorithm samples (only library baselines?)".into(),
        )
        .into());
    }
    report(&table);
    match a.output {
        Some(p) => {
            table.save(&p)?;
            eprintln!("table: {}", p.display());
        }
        None => out!("{}", table.to_yaml()?),
    }
    Ok(Code::Ok)
}

/// Each file one launch of the tune: two tunes of one communicator (hours
/// apart) stay apart, so that a choice must hold in both
/// (`build_launches`); the launches cut off before their end; each file's
/// call patterns.
#[allow(clippy::type_complexity)]
fn read_launches(
    csv: &[PathBuf],
) -> Result<(Vec<Vec<Sample>>, Vec<String>, Vec<(String, &PathBuf)>), UsageError> {
    let mut pattern_of: Vec<(String, &PathBuf)> = Vec::new();
    let mut launches: Vec<Vec<Sample>> = Vec::new();
    let mut cut_off = Vec::new();
    for p in csv {
        let (got, cut) = record::read_launch(p).map_err(|e| UsageError(e.to_string()))?;
        cut_off.extend(cut);
        for pat in patterns(&got) {
            pattern_of.push((pat, p));
        }
        launches.push(got);
    }
    Ok((launches, cut_off, pattern_of))
}

/// Leaves out the samples of an Open MPI algorithm measured as the
/// library's default (its runs most likely did not force it), with a
/// warning; `keep` keeps them (warned all the same).
fn drop_unforced(launches: &mut [Vec<Sample>], keep: bool) {
    let every: Vec<Sample> = launches.iter().flatten().cloned().collect();
    for al in colltune_core::model::predict::unforced(&every) {
        let b = al.b;
        if keep {
            eprintln!("colltune: warning: {al}: algorithm {b}'s runs most likely did not force it; kept (--keep-unforced)");
            continue;
        }
        eprintln!("colltune: warning: {al}: algorithm {b}'s runs most likely did not force it (coll_tuned_use_dynamic_rules true is needed), and a rule naming it would force the real one; its samples are left out (--keep-unforced keeps them)");
        for l in launches.iter_mut() {
            l.retain(|s| !colltune_core::model::predict::is_forced(s, b));
        }
    }
}

/// The built table's provenance: the samples' hosts, libraries and
/// sources, and the sweep settings recorded beside tuner CSVs.
fn provenance(csv: &[PathBuf], launches: &[Vec<Sample>], cluster: Option<String>) -> Provenance {
    let samples: Vec<&Sample> = launches.iter().flatten().collect();
    let configs: Vec<TuneConfig> = csv
        .iter()
        .filter_map(|p| std::fs::read_to_string(TuneConfig::sidecar(p)).ok())
        .filter_map(|t| serde_yaml::from_str(&t).ok())
        .collect();
    let distinct = |f: fn(&Sample) -> &str| {
        let mut v: Vec<&str> = samples.iter().map(|s| f(s)).collect();
        v.sort_unstable();
        v.dedup();
        v.join(", ")
    };
    Provenance {
        host: distinct(|s| &s.host),
        cluster,
        mpi: distinct(|s| &s.mpi),
        date: table::now_iso8601(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        colltune: env!("CARGO_PKG_VERSION").into(),
        source: distinct(|s| &s.source),
        sweep: Sweep {
            mode: match configs.first() {
                Some(c)
                    if configs.len() == csv.len() && configs.iter().all(|x| x.mode == c.mode) =>
                {
                    format!("built from {} tunes", c.mode)
                }
                _ => "built".into(),
            },
            runs: configs
                .first()
                .map(|c| c.screen_runs + c.full_runs)
                .unwrap_or(0),
            budget_ms: configs.first().map(|c| c.budget_ms).unwrap_or(0),
            root: configs.first().map(|c| c.root.clone()).unwrap_or_default(),
            sizes: {
                let mut v: Vec<u64> = samples.iter().map(|s| s.bytes).collect();
                v.sort_unstable();
                v.dedup();
                v
            },
            executions: distinct(|s| &s.execution)
                .split(", ")
                .map(String::from)
                .collect(),
            cache: distinct(|s| &s.cache),
            raw: csv.iter().map(|p| p.display().to_string()).collect(),
            ..Default::default()
        },
        // set from the samples by build_launches
        pattern: String::new(),
        compaction: None,
        evidence: None,
    }
}

/// What the build decided, on standard error: the evidence (and the
/// sizes left open, the launches cut off) or the compaction.
fn report(table: &Table) {
    match (&table.provenance.evidence, &table.provenance.compaction) {
        (Some(e), _) => {
            eprintln!("evidence: {}", table::evidence_line(e));
            for u in &e.unresolved {
                eprintln!("unresolved: {}", u.line());
            }
            for l in &e.partial_launches {
                eprintln!("partial launch: {l}");
            }
        }
        (None, Some(c)) => eprintln!("compaction: {}", table::compaction_line(c)),
        (None, None) => eprintln!("compaction: off (--no-compact)"),
    }
}
