//! `colltune table build RAW.csv...`: a decision table from raw samples alone.

use std::path::PathBuf;

use super::{Code, UsageError};
use colltune_core::record;
use colltune_core::table::build::{build_launches, patterns, Compact};
use colltune_core::table::evidence::partial_launches;
use colltune_core::table::{self, Provenance, Sweep};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: TableCommand,
}

#[derive(clap::Subcommand, Debug)]
enum TableCommand {
    /// Build a table from raw CSVs (from `tune`, `bench` or `simulate`).
    Build {
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
        #[arg(long, default_value_t = colltune_core::table::build::DEFAULT_TOLERANCE)]
        compact_tolerance: f64,
        /// A rule replaces the library's own decision only where the 95%
        /// interval of its gain over it (each CSV one launch) clears this
        /// fraction (0.03 = 3%).
        #[arg(long, default_value_t = colltune_core::table::evidence::DEFAULT_MIN_GAIN)]
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
    },
    /// List a table's unresolved sizes (its provenance's), one
    /// `collective ranks ppn nodes bytes` per line: where job scripts
    /// spend further launches.
    Unresolved {
        table: PathBuf,
        /// Print only the distinct sizes, comma-separated on one line (for
        /// `tune --sizes`); nothing when every size is resolved.
        #[arg(long)]
        sizes: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    match args.command {
        TableCommand::Build {
            csv,
            output,
            cluster,
            no_compact,
            compact_tolerance,
            min_gain,
            no_evidence,
            keep_unforced,
        } => {
            for (flag, v) in [
                ("--compact-tolerance", compact_tolerance),
                ("--min-gain", min_gain),
            ] {
                if !(v.is_finite() && (0.0..1.0).contains(&v)) {
                    return Err(UsageError(format!(
                        "{flag} {v}: a fraction between 0 and 1 (0.03 = 3%)"
                    ))
                    .into());
                }
            }
            let mut pattern_of: Vec<(String, &PathBuf)> = Vec::new();
            // Each file is one launch of the tune: two tunes of one
            // communicator (hours apart) stay apart, so that a choice must
            // hold in both (`build_launches`).
            let mut launches: Vec<Vec<record::Sample>> = Vec::new();
            let mut cut_off = Vec::new();
            for p in &csv {
                let (got, cut) = record::read_launch(p).map_err(|e| UsageError(e.to_string()))?;
                cut_off.extend(cut);
                for pat in patterns(&got) {
                    pattern_of.push((pat, p));
                }
                launches.push(got);
            }
            let every: Vec<record::Sample> = launches.iter().flatten().cloned().collect();
            for al in colltune_core::predict::unforced(&every) {
                let b = al.b;
                if keep_unforced {
                    eprintln!("colltune: warning: {al}: algorithm {b}'s runs most likely did not force it; kept (--keep-unforced)");
                    continue;
                }
                eprintln!("colltune: warning: {al}: algorithm {b}'s runs most likely did not force it (coll_tuned_use_dynamic_rules true is needed), and a rule naming it would force the real one; its samples are left out (--keep-unforced keeps them)");
                for l in &mut launches {
                    l.retain(|s| !colltune_core::predict::is_forced(s, b));
                }
            }
            let samples: Vec<&record::Sample> = launches.iter().flatten().collect();
            // One table is for one call pattern: medians of both would
            // decide for neither.
            let mut all_patterns: Vec<&str> = pattern_of.iter().map(|(p, _)| p.as_str()).collect();
            all_patterns.sort_unstable();
            all_patterns.dedup();
            if all_patterns.len() > 1 {
                let list: Vec<String> = pattern_of
                    .iter()
                    .map(|(pat, p)| format!("{}: {pat}", p.display()))
                    .collect();
                return Err(UsageError(format!(
                    "the CSVs mix call patterns ({}): build one table per pattern from the CSVs of that pattern",
                    list.join("; ")
                ))
                .into());
            }
            refuse_mixed(&csv, &launches, cluster.is_some())?;
            // Sweep settings recorded beside tuner CSVs carry over.
            let configs: Vec<colltune_core::tune::resume::TuneConfig> = csv
                .iter()
                .filter_map(|p| {
                    std::fs::read_to_string(colltune_core::tune::resume::TuneConfig::sidecar(p))
                        .ok()
                })
                .filter_map(|t| serde_yaml::from_str(&t).ok())
                .collect();
            let distinct = |f: fn(&record::Sample) -> &str| {
                let mut v: Vec<&str> = samples.iter().map(|s| f(s)).collect();
                v.sort_unstable();
                v.dedup();
                v.join(", ")
            };
            let per_launch: Vec<&[record::Sample]> = launches.iter().map(Vec::as_slice).collect();
            let table = build_launches(
                &per_launch,
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
                                if configs.len() == csv.len()
                                    && configs.iter().all(|x| x.mode == c.mode) =>
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
                },
                &Compact {
                    min_gain: (!no_evidence).then_some(min_gain),
                    enabled: !no_compact,
                    tolerance: compact_tolerance,
                    ..Compact::default()
                },
            );
            let mut table = table;
            if let Some(e) = table.provenance.evidence.as_mut() {
                let names: Vec<String> = csv.iter().map(|p| p.display().to_string()).collect();
                e.partial_launches = cut_off;
                // What each launch's tuner recorded: a sidecar without the
                // marker finished what it was asked (a later launch asks for
                // the open sizes alone).
                let stopped: Vec<Option<bool>> = csv
                    .iter()
                    .map(|p| {
                        use colltune_core::tune::resume::TuneConfig;
                        TuneConfig::sidecar(p)
                            .exists()
                            .then(|| TuneConfig::incomplete_marker(p).exists())
                    })
                    .collect();
                e.partial_launches
                    .extend(partial_launches(&per_launch, &names, &stopped));
            }
            if table.bcast.is_empty() && table.swap.is_empty() {
                return Err(UsageError(
                    "the CSVs hold no colltune algorithm samples (only library baselines?)".into(),
                )
                .into());
            }
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
            match output {
                Some(p) => {
                    table.save(&p)?;
                    eprintln!("table: {}", p.display());
                }
                None => out!("{}", table.to_yaml()?),
            }
            Ok(Code::Ok)
        }
        TableCommand::Unresolved { table, sizes } => {
            let t = table::load(&table).map_err(|e| UsageError(e.to_string()))?;
            let open = t.provenance.evidence.iter().flat_map(|e| &e.unresolved);
            if sizes {
                let b: std::collections::BTreeSet<u64> = open.map(|u| u.bytes).collect();
                if !b.is_empty() {
                    let v: Vec<String> = b.iter().map(u64::to_string).collect();
                    outln!("{}", v.join(","));
                }
                return Ok(Code::Ok);
            }
            for u in open {
                outln!(
                    "{} {} {} {} {}",
                    u.collective,
                    u.ranks,
                    u.ppn,
                    u.nodes,
                    u.bytes
                );
            }
            Ok(Code::Ok)
        }
    }
}

/// Refuses CSVs of different machines, libraries or sources in one build
/// (the pattern is checked apart): one table is for one of each. Several
/// hosts are one machine only when `--cluster` names it.
fn refuse_mixed(
    csv: &[PathBuf],
    launches: &[Vec<record::Sample>],
    cluster: bool,
) -> Result<(), UsageError> {
    type Field = fn(&record::Sample) -> String;
    let checks: [(&str, Field, &str); 3] = [
        (
            "MPI libraries",
            |s| s.mpi.clone(),
            "build one table per library, from that library's CSVs",
        ),
        (
            "sources",
            |s| s.source.split(':').next().unwrap_or("").to_string(),
            "measured and simulated samples do not mix: build one table from each",
        ),
        (
            "hosts",
            |s| s.host.clone(),
            "build one table per machine, or give --cluster NAME if these are nodes of one cluster",
        ),
    ];
    for (what, field, fix) in checks {
        if what == "hosts" && cluster {
            continue;
        }
        let mut seen: Vec<(String, &PathBuf)> = Vec::new();
        for (p, l) in csv.iter().zip(launches) {
            let mut v: Vec<String> = l.iter().map(field).collect();
            v.sort_unstable();
            v.dedup();
            seen.extend(v.into_iter().map(|x| (x, p)));
        }
        let mut distinct: Vec<&str> = seen.iter().map(|(x, _)| x.as_str()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() > 1 {
            let list: Vec<String> = seen
                .iter()
                .map(|(x, p)| format!("{}: {x}", p.display()))
                .collect();
            return Err(UsageError(format!(
                "the CSVs mix {what} ({}): {fix}",
                list.join("; ")
            )));
        }
    }
    Ok(())
}
