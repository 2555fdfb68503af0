//! `colltune plot RAW.csv [TABLE] -o FILE.svg|FILE.png`.

use std::path::PathBuf;

use colltune_algorithms::Collective;

use super::{Code, UsageError};
use crate::plot::{draw, lines};
use colltune_core::record;
use colltune_core::report::{series, SeriesKey};
use colltune_core::table::{self, CommKey};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Raw samples (bench, tune or simulate).
    csv: PathBuf,
    /// A decision table whose choices are marked on the lines.
    table: Option<PathBuf>,
    /// The image to write: .svg or .png.
    #[arg(short, long)]
    output: PathBuf,
    /// Which collective (default: the first in the CSV).
    #[arg(long)]
    collective: Option<Collective>,
    /// Which communicator size (default: the first in the CSV).
    #[arg(long)]
    ranks: Option<u32>,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let ext = a
        .output
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext != "svg" && ext != "png" {
        return Err(UsageError(format!(
            "-o {}: name the image .svg or .png",
            a.output.display()
        ))
        .into());
    }
    let samples = record::read(&a.csv).map_err(|e| UsageError(e.to_string()))?;
    let tbl = match &a.table {
        Some(p) => Some(table::load(p).map_err(|e| UsageError(e.to_string()))?),
        None => None,
    };
    let all = series(&samples);
    let ctx: SeriesKey = all
        .keys()
        .map(SeriesKey::context)
        .find(|k| {
            a.collective.is_none_or(|c| k.collective == c.name())
                && a.ranks.is_none_or(|r| k.ranks == r)
        })
        .ok_or_else(|| {
            UsageError(format!(
                "{}: no samples match the --collective/--ranks given",
                a.csv.display()
            ))
        })?;
    let ls = lines(&all, &ctx);
    let key = CommKey {
        ranks: ctx.ranks,
        ppn: ctx.ppn,
        nodes: ctx.nodes,
    };
    let coll: Collective = ctx.collective.parse().map_err(UsageError)?;
    let title = format!(
        "{} on {} ranks ({} node(s) x {}), {}, overlap {} us{}",
        ctx.collective,
        ctx.ranks,
        ctx.nodes,
        ctx.ppn,
        ctx.calls(),
        ctx.overlap,
        samples
            .first()
            .map(|s| format!(" - {} on {}", s.mpi, s.host))
            .unwrap_or_default()
    );
    draw(&a.output, &title, &ls, tbl.as_ref().map(|t| (t, key, coll)))?;
    println!("plot: {} ({} lines)", a.output.display(), ls.len());
    Ok(Code::Ok)
}
