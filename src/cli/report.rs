//! `colltune report RAW.csv [TABLE]`: per algorithm, the share of measured
//! points where it was fastest, node-aware against flat, the fit table;
//! `--html` writes the one-page report (`report_html`).

use std::path::PathBuf;

use colltune_algorithms::Collective;
use colltune_core::measure::fit::{fit_table, human_bytes};
use colltune_core::measure::record;
use colltune_core::measure::report::{comparison, contexts, kept, series, SeriesKey};

use super::inspect::load;
use super::{Code, UsageError};

#[derive(clap::Args, Debug)]
pub struct Args {
    csv: PathBuf,
    /// A decision table: its map and regimes go into the --html page.
    table: Option<PathBuf>,
    #[arg(long)]
    collective: Option<Collective>,
    /// Also write a one-page, self-contained HTML report (inline SVG, no
    /// script, nothing fetched).
    #[arg(long)]
    html: Option<PathBuf>,
    /// Also print bench's comparison: per size, colltune's best against the
    /// library's default and its best forced algorithm, geometric means
    /// (for CSVs merged from several runs, as jobs/library-baselines.sh
    /// writes).
    #[arg(long)]
    comparison: bool,
}

/// Per algorithm, the share of measured points where it was fastest; then
/// the fit table.
pub fn run(a: Args) -> anyhow::Result<Code> {
    let samples = record::read(&a.csv).map_err(|e| UsageError(e.to_string()))?;
    let tbl = match &a.table {
        Some(p) => Some(load(p)?),
        None => None,
    };
    if let (Some(t), None) = (&a.table, &a.html) {
        return Err(UsageError(format!(
            "{}: a table is only used by the HTML page: add --html report.html",
            t.display()
        ))
        .into());
    }
    let all = series(&samples);
    let keep = |k: &SeriesKey| a.collective.is_none_or(|c| k.collective == c.name());
    if let Some(out) = &a.html {
        if out.extension().and_then(|e| e.to_str()) != Some("html") {
            return Err(
                UsageError(format!("--html {}: name the page .html", out.display())).into(),
            );
        }
        let page = crate::report_html::page(
            &a.csv,
            &samples,
            &all,
            a.table.as_deref().zip(tbl.as_ref()),
            keep,
        )?;
        std::fs::write(out, page).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
        eprintln!("colltune report: wrote {}", out.display());
    }
    if a.comparison {
        out!("{}", comparison(&kept(&all, keep)));
    }
    // Points: (context, bytes); each won by the subject with the lowest median.
    let mut wins: std::collections::BTreeMap<(SeriesKey, String), usize> = Default::default();
    let mut points: std::collections::BTreeMap<SeriesKey, usize> = Default::default();
    let contexts = contexts(&all, keep);
    for ctx in &contexts {
        let sizes: std::collections::BTreeSet<u64> = all
            .iter()
            .filter(|(k, _)| k.context() == *ctx)
            .flat_map(|(_, p)| p.keys().copied())
            .collect();
        for b in sizes {
            let best = all
                .iter()
                .filter(|(k, _)| k.context() == *ctx)
                .filter_map(|(k, p)| p.get(&b).map(|s| (k, s.median)))
                .min_by(|x, y| x.1.total_cmp(&y.1));
            if let Some((k, _)) = best {
                *wins.entry((ctx.clone(), k.label())).or_default() += 1;
                *points.entry(ctx.clone()).or_default() += 1;
            }
        }
    }
    for ctx in &contexts {
        let n = points.get(ctx).copied().unwrap_or(0);
        outln!(
            "== {} on {} ranks ({} node(s)), cache {}, {}, overlap {} us: fastest at {n} measured sizes",
            ctx.collective, ctx.ranks, ctx.nodes, ctx.cache, ctx.calls(), ctx.overlap
        );
        let mut rows: Vec<(&String, usize)> = wins
            .iter()
            .filter(|((c, _), _)| c == ctx)
            .map(|((_, l), &w)| (l, w))
            .collect();
        rows.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
        for (label, w) in rows {
            outln!(
                "  {:<56} fastest at {:>3} of {n} points ({:.0}%)",
                label,
                w,
                100.0 * w as f64 / n.max(1) as f64
            );
        }
    }
    // Node-aware against flat, where both were measured.
    for ctx in &contexts {
        let best = |b: u64, hier: bool| {
            all.iter()
                .filter(|(k, _)| {
                    k.context() == *ctx
                        && !k.is_library()
                        && k.spec.starts_with("hierarchical") == hier
                })
                .filter_map(|(k, p)| p.get(&b).map(|s| (k.label(), s.median)))
                .min_by(|x, y| x.1.total_cmp(&y.1))
        };
        let sizes: std::collections::BTreeSet<u64> = all
            .iter()
            .filter(|(k, _)| k.context() == *ctx)
            .flat_map(|(_, p)| p.keys().copied())
            .collect();
        let rows: Vec<String> = sizes
            .iter()
            .filter_map(|&b| {
                let (h, f) = (best(b, true)?, best(b, false)?);
                let r = h.1 / f.1;
                Some(format!(
                    "  {:>10}  hierarchical {:>9.2} us ({})  flat {:>9.2} us ({})  hierarchical/flat {:.2}x: {}",
                    human_bytes(b),
                    h.1,
                    h.0,
                    f.1,
                    f.0,
                    r,
                    if r < 1.0 { format!("hierarchical {:.2}x faster", 1.0 / r) } else { format!("hierarchical {r:.2}x slower") }
                ))
            })
            .collect();
        if !rows.is_empty() {
            outln!(
                "== hierarchical against the best flat algorithm, {} on {} ranks ({} nodes x {}):",
                ctx.collective,
                ctx.ranks,
                ctx.nodes,
                ctx.ppn
            );
            for r in rows {
                outln!("{r}");
            }
        }
    }
    out!("{}", fit_table(&all, keep, 0.2));
    Ok(Code::Ok)
}
