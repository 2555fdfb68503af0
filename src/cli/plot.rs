//! `colltune plot RAW.csv [TABLE] -o FILE.svg|FILE.png` (time, the
//! table's regimes, time relative to the best) and `colltune plot TABLE -o
//! FILE` (the decision map).

use std::path::{Path, PathBuf};

use colltune_algorithms::Collective;

use super::{Code, UsageError};
use crate::plot::{draw_map, draw_plot, map_title, plot_title, Panels, PlotInput};
use colltune_core::measure::figure::{self, decision_map, regimes, Selection};
use colltune_core::measure::record;
use colltune_core::measure::report::{series, SeriesKey};
use colltune_core::tables::table::{self, CommKey, Table};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Raw samples (bench, tune, evaluate or simulate), or a decision table
    /// (.yaml) alone: then its decision map is drawn.
    input: PathBuf,
    /// A decision table whose regimes are drawn along the size axis.
    table: Option<PathBuf>,
    /// The image to write: .svg or .png.
    #[arg(short, long)]
    output: PathBuf,
    /// Which collective (default: the first in the CSV; for a map, all).
    #[arg(long)]
    collective: Option<Collective>,
    /// Which communicator size (default: the first in the CSV).
    #[arg(long)]
    ranks: Option<u32>,
    /// Which ranks per node, where a CSV has several layouts of one size.
    #[arg(long)]
    ppn: Option<u32>,
    /// One line per variant (every parameter setting) instead of one per
    /// algorithm family.
    #[arg(long)]
    all: bool,
    /// Only these algorithm families (the library's lines stay), e.g.
    /// `--algorithms binomial,pipeline`.
    #[arg(long, value_delimiter = ',')]
    algorithms: Vec<String>,
    /// Panels: both (time and relative), time, relative.
    #[arg(long, value_enum, default_value = "both")]
    panel: Panels,
}

fn is_table(p: &Path) -> bool {
    matches!(
        p.extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .as_deref(),
        Some("yaml") | Some("yml")
    )
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
    if is_table(&a.input) {
        if let Some(t) = &a.table {
            return Err(UsageError(format!(
                "{}: a table comes second: `colltune plot RAW.csv {}`, or draw the table alone \
                 with `colltune plot {} -o map.svg`",
                a.input.display(),
                a.input.display(),
                t.display()
            ))
            .into());
        }
        let mut t = table::load(&a.input).map_err(|e| UsageError(e.to_string()))?;
        if let Some(c) = a.collective {
            keep_only(&mut t, c);
        }
        let m = decision_map(&t);
        if m.rows.is_empty() {
            return Err(UsageError(format!(
                "{}: no rules to draw{}",
                a.input.display(),
                a.collective
                    .map(|c| format!(" for {c}"))
                    .unwrap_or_default()
            ))
            .into());
        }
        draw_map(&a.output, &m, &map_title(&t, &a.input))?;
        outln!(
            "plot: {} (decision map: {} communicator shape(s), {} rule(s))",
            a.output.display(),
            m.rows.len(),
            m.rows.iter().map(|r| r.cells.len()).sum::<usize>()
        );
        return Ok(Code::Ok);
    }
    let samples = record::read(&a.input).map_err(|e| UsageError(e.to_string()))?;
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
                && a.ppn.is_none_or(|r| k.ppn == r)
        })
        .ok_or_else(|| {
            UsageError(format!(
                "{}: no samples match the --collective/--ranks/--ppn given; it has {}",
                a.input.display(),
                contexts(&all)
            ))
        })?;
    let sel = Selection {
        all: a.all,
        algorithms: a.algorithms.clone(),
    };
    let ls = figure::lines(&all, &ctx, &sel)
        .map_err(|e| UsageError(format!("{}: {e}", a.input.display())))?;
    let coll: Collective = ctx.collective.parse().map_err(UsageError)?;
    let key = CommKey::shape(ctx.ranks, ctx.ppn, ctx.nodes);
    let reg = tbl.as_ref().map(|t| regimes(t, coll, key));
    if let (Some(t), Some(r)) = (&a.table, &reg) {
        if r.is_empty() {
            eprintln!(
                "colltune plot: note: {} has no {coll} rules for {key}: no table strip",
                t.display()
            );
        }
    }
    let input = PlotInput {
        title: plot_title(&ctx, &samples),
        collective: coll,
        lines: &ls,
        regimes: reg.filter(|r| !r.is_empty()),
        panels: a.panel,
    };
    draw_plot(&a.output, &input)?;
    outln!("plot: {} ({} lines)", a.output.display(), ls.len());
    Ok(Code::Ok)
}

/// Keeps one collective's rules.
pub fn keep_only(t: &mut Table, c: Collective) {
    for o in Collective::ALL {
        if o != c {
            t.rules_mut(o).clear();
        }
    }
}

pub fn contexts(all: &colltune_core::measure::report::Series) -> String {
    let mut v: Vec<String> = all
        .keys()
        .map(|k| format!("{} on {} ranks (ppn {})", k.collective, k.ranks, k.ppn))
        .collect();
    v.dedup();
    v.join(", ")
}
