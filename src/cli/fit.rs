//! `colltune fit RAW.csv`: latency/bandwidth fit and knees per series.

use std::path::PathBuf;

use super::{Code, UsageError};
use colltune_core::measure::fit::fit_table;
use colltune_core::measure::record;
use colltune_core::measure::report::series;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Raw samples written by `colltune bench` (or `simulate`).
    csv: PathBuf,
    /// Only this collective (bcast or swap).
    #[arg(long)]
    collective: Option<colltune_algorithms::Collective>,
    /// Only series whose algorithm spec contains this text.
    #[arg(long)]
    only: Option<String>,
    /// A knee is a bandwidth drop larger than this fraction between two
    /// consecutive sizes.
    #[arg(long, default_value_t = 0.2)]
    knee_drop: f64,
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    if !(0.0..1.0).contains(&args.knee_drop) {
        return Err(UsageError("--knee-drop must be in [0, 1)".into()).into());
    }
    let samples = record::read(&args.csv).map_err(|e| UsageError(e.to_string()))?;
    let all = series(&samples);
    let text = fit_table(
        &all,
        |k| {
            args.collective.is_none_or(|c| k.collective == c.name())
                && args.only.as_deref().is_none_or(|o| k.spec.contains(o))
        },
        args.knee_drop,
    );
    if text.trim().is_empty() {
        return Err(UsageError(format!(
            "{}: no series match the filters",
            args.csv.display()
        ))
        .into());
    }
    out!("{text}");
    Ok(Code::Ok)
}
