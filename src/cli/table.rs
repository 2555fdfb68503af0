//! `colltune table build RAW.csv...`: a decision table from raw samples alone.

use std::path::PathBuf;

use super::{Code, UsageError};
use colltune_core::record;
use colltune_core::table::{self, build::build, Provenance, Sweep};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: TableCommand,
}

#[derive(clap::Subcommand, Debug)]
enum TableCommand {
    /// Build a table from raw CSVs (from `tune`, `bench` or `simulate`).
    Build {
        /// Raw sample files; samples of several runs (4 and 8 ranks, say) merge.
        #[arg(required = true)]
        csv: Vec<PathBuf>,
        /// Write the table here (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Cluster name for the provenance.
        #[arg(long)]
        cluster: Option<String>,
    },
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    match args.command {
        TableCommand::Build {
            csv,
            output,
            cluster,
        } => {
            let mut samples = Vec::new();
            for p in &csv {
                samples.extend(record::read(p).map_err(|e| UsageError(e.to_string()))?);
            }
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
                let mut v: Vec<&str> = samples.iter().map(f).collect();
                v.sort_unstable();
                v.dedup();
                v.join(", ")
            };
            let table = build(
                &samples,
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
                },
            );
            if table.bcast.is_empty() && table.swap.is_empty() {
                return Err(UsageError(
                    "the CSVs hold no colltune algorithm samples (only library baselines?)".into(),
                )
                .into());
            }
            match output {
                Some(p) => {
                    table.save(&p)?;
                    eprintln!("table: {}", p.display());
                }
                None => print!("{}", table.to_yaml()?),
            }
            Ok(Code::Ok)
        }
    }
}
