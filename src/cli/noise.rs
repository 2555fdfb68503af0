//! `colltune noise fit CSV...` (a machine's noise profile from its raw
//! samples) and `colltune noise bench` (the tuner on the simulator with a
//! profile's noise laid over it).

use std::path::{Path, PathBuf};

use super::{parse_sizes, Code, UsageError};
use colltune_core::measure::noise::{self, NoiseProfile};
use colltune_core::measure::record::{self, Sample};
use colltune_core::model::sim::Model;
use colltune_core::tune::noise_bench::{bench, truth, BenchConfig};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: NoiseCommand,
}

#[derive(clap::Subcommand, Debug)]
enum NoiseCommand {
    /// Fit a noise profile from raw samples: colltune CSVs (each one
    /// launch), or folders of per-call files (`<count>_<algo>_<lib>_int32.csv`
    /// with a `highest` header, nanoseconds; one folder one launch).
    Fit {
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The profile's name.
        #[arg(long, default_value = "fitted")]
        name: String,
        /// Write the profile here (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Ranks of the per-call files' runs (their names do not say).
        #[arg(long, default_value_t = 0)]
        ranks: u32,
    },
    /// K independent simulated tunes with a profile's noise: agreement
    /// between tunes, regret against the noise-free truth, tune time.
    Bench {
        /// A profile `noise fit` wrote, or `none` (no noise).
        #[arg(long)]
        profile: String,
        /// The network model (tuning-tables/models/).
        #[arg(long)]
        model: PathBuf,
        /// Layouts to run, e.g. 4, 8, 16x4 (nodes x ranks per node).
        #[arg(long, value_delimiter = ',', default_value = "4,8,16x4")]
        layouts: Vec<String>,
        #[arg(long, default_value = "1..4M")]
        sizes: String,
        /// Independent tunes (K).
        #[arg(long, default_value_t = 5)]
        tunes: usize,
        /// Launches per tune.
        #[arg(long, default_value_t = 3)]
        launches: usize,
        /// Further launches a tune may spend at the sizes whose decision is
        /// still open, each measuring only the subjects that decide it.
        #[arg(long, default_value_t = 2)]
        extra_launches: usize,
        #[arg(long, default_value_t = 3)]
        runs: u32,
        #[arg(long, default_value_t = 10)]
        reps: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = colltune_core::tables::table::evidence::DEFAULT_MIN_GAIN)]
        min_gain: f64,
        /// Per size: the truth's best and each tune's choice.
        #[arg(long)]
        verbose: bool,
        /// Write each tune's table here (`<layout>-tune<k>.yaml`).
        #[arg(long)]
        tables: Option<PathBuf>,
    },
}

/// The samples of one input: a colltune CSV, or a folder of per-call files.
fn read_input(p: &Path, ranks: u32) -> Result<Vec<Sample>, UsageError> {
    if p.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| UsageError(format!("{}: cannot read: {e}", p.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                f.extension().is_some_and(|x| x == "csv")
                    && f.file_name().is_some_and(|n| n != "alloc.csv")
            })
            .collect();
        files.sort();
        let mut out = Vec::new();
        for f in &files {
            out.extend(noise::read_per_call(f, ranks).map_err(UsageError)?);
        }
        if out.is_empty() {
            return Err(UsageError(format!(
                "{}: no per-call files (<count>_<algorithm>_<library>_int32.csv) in it",
                p.display()
            )));
        }
        return Ok(out);
    }
    record::read(p).map_err(|e| UsageError(e.to_string()))
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    match args.command {
        NoiseCommand::Fit {
            inputs,
            name,
            output,
            ranks,
        } => {
            let mut launches = Vec::new();
            for p in &inputs {
                launches.push(read_input(p, ranks)?);
            }
            let l: Vec<&[Sample]> = launches.iter().map(Vec::as_slice).collect();
            let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
            let (p, rep) = noise::fit(&name, &names.join(" "), &l);
            eprintln!(
                "fitted from {} launch(es), {} points, {} samples",
                rep.launches, rep.points, rep.samples
            );
            for n in &rep.notes {
                eprintln!("note: {n}");
            }
            let text = p.to_text(rep.launches);
            match output {
                Some(o) => {
                    std::fs::write(&o, text)?;
                    eprintln!("profile: {}", o.display());
                }
                None => out!("{text}"),
            }
            Ok(Code::Ok)
        }
        NoiseCommand::Bench {
            profile,
            model,
            layouts,
            sizes,
            tunes,
            launches,
            extra_launches,
            runs,
            reps,
            seed,
            min_gain,
            verbose,
            tables,
        } => {
            let p = if profile == "none" {
                NoiseProfile::none()
            } else {
                NoiseProfile::load(Path::new(&profile)).map_err(|e| UsageError(e.to_string()))?
            };
            if tunes < 2 || launches < 1 || runs < 1 || reps < 1 {
                return Err(UsageError(
                    "--tunes 2 or more, --launches, --runs and --reps 1 or more".into(),
                )
                .into());
            }
            let m = Model::load(&model).map_err(|e| UsageError(e.to_string()))?;
            let c = BenchConfig {
                sizes: parse_sizes(&sizes)?,
                tunes,
                launches,
                runs,
                reps,
                extra_launches,
                seed,
                min_gain,
            };
            outln!(
                "noise {} over model {}: {tunes} tunes x {launches} launches (+{extra_launches} at unresolved sizes) x {runs} runs x {reps} reps, min gain {:.1}%",
                p.name,
                m.name,
                100.0 * min_gain
            );
            outln!(
                "{:<10} {:>6} {:>9} {:>9} {:>8} {:>8} {:>8} {:>10} {:>9} {:>7} {:>10} {:>14}",
                "layout",
                "sizes",
                "agree",
                "agree5%",
                "regret",
                "worst",
                "library",
                "unresolved",
                "launches",
                "runs",
                "tune s",
                "noise-free same"
            );
            for l in &layouts {
                let nodes = match l.split_once('x') {
                    Some(_) => colltune_core::model::simulate::layout(None, None, Some(l)),
                    None => colltune_core::model::simulate::layout(
                        Some(l.parse().map_err(|_| {
                            UsageError(format!("--layouts: `{l}` is not N or NODESxPPN"))
                        })?),
                        None,
                        None,
                    ),
                }
                .map_err(|e| UsageError(e.to_string()))?;
                let t = truth(&m, &nodes, &c.sizes).map_err(UsageError)?;
                let r = bench(&t, &p, &c);
                outln!(
                    "{:<10} {:>6} {:>8.1}% {:>8.1}% {:>8.4} {:>8.3} {:>7.0}% {:>10.1} {:>9.1} {:>7.0} {:>10.2} {:>7.0}% ({:.4}/{:.4})",
                    l,
                    r.sizes,
                    100.0 * r.agree_same,
                    100.0 * r.agree_within5,
                    r.regret_geomean,
                    r.regret_worst,
                    100.0 * r.library_share,
                    r.unresolved_mean,
                    r.launches_mean,
                    r.runs_mean,
                    r.seconds_mean,
                    100.0 * r.noise_free_same,
                    r.noise_free_regret.0,
                    r.noise_free_regret.1
                );
                if let Some(dir) = &tables {
                    std::fs::create_dir_all(dir)?;
                    for (k, t) in r.tables.iter().enumerate() {
                        t.save(&dir.join(format!("{l}-tune{}.yaml", k + 1)))?;
                    }
                }
                if verbose {
                    for (b, (best, t), picks) in &r.per_size {
                        let p: Vec<String> =
                            picks.iter().map(|(l, x)| format!("{l} {x:.3}")).collect();
                        outln!("  {b:>9} B  best {best} {t:.2} us | {}", p.join(" | "));
                    }
                }
            }
            Ok(Code::Ok)
        }
    }
}
