//! `colltune report RAW.csv [TABLE] --html report.html`: one self-contained
//! page (inline SVG and CSS, no script, nothing fetched): provenance, the
//! decision map, per communicator the plot with the table's regimes and the
//! relative panel, how colltune's best compares with the MPI library
//! (default and best forced), who is fastest at how many sizes, the fit
//! table with knees, and the comparison table.

use std::fmt::Write;
use std::path::Path;

use colltune_algorithms::Collective;
use colltune_core::measure::figure::{
    self, decision_map, regimes, versus, wins, Line, LineKind, Selection,
};
use colltune_core::measure::fit::fit_table;
use colltune_core::measure::record::Sample;
use colltune_core::measure::report::{comparison, contexts, kept, Series, SeriesKey};
use colltune_core::tables::table::{CommKey, Table};

use crate::plot::{map_svg, map_title, plot_svg, plot_title, Panels, PlotInput};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page. `keep` selects the contexts (a collective).
pub fn page(
    csv: &Path,
    samples: &[Sample],
    all: &Series,
    table: Option<(&Path, &Table)>,
    keep: impl Fn(&SeriesKey) -> bool,
) -> anyhow::Result<String> {
    let mut h = String::new();
    let name = csv
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>colltune report: {}</title>\n<style>\
         body{{font-family:sans-serif;max-width:1440px;margin:1em auto;padding:0 1em;color:#222;background:#fff}}\
         h1{{font-size:1.5em}} h2{{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:1.6em}}\
         table{{border-collapse:collapse;margin:.5em 0}} td,th{{border:1px solid #ddd;padding:.2em .6em;text-align:left}}\
         th{{background:#f3f3f3}} td.n{{text-align:right}} pre{{background:#f8f8f8;padding:.6em;overflow-x:auto;font-size:.85em}}\
         svg{{max-width:100%;height:auto;display:block}} .headline{{font-size:1.1em;margin:.4em 0}}\
         </style></head><body>\n",
        esc(&name)
    );
    let _ = writeln!(h, "<h1>colltune report: {}</h1>", esc(&name));

    provenance(&mut h, csv, samples, table);

    let contexts = contexts(all, &keep);

    // Summary.
    let _ = writeln!(h, "<h2>Summary</h2>");
    let mut per_ctx = Vec::new();
    for ctx in &contexts {
        let ls = figure::lines(all, ctx, &Selection::default()).map_err(|e| anyhow::anyhow!(e))?;
        per_ctx.push((ctx.clone(), ls));
    }
    for (ctx, ls) in &per_ctx {
        summary(&mut h, ctx, ls);
    }

    // The decision map.
    if let Some((p, t)) = table {
        let _ = writeln!(h, "<h2>Decision map</h2>");
        let m = decision_map(t);
        if m.rows.is_empty() {
            let _ = writeln!(h, "<p>The table has no rules.</p>");
        } else {
            h.push_str(&map_svg(&m, &map_title(t, p))?);
            h.push('\n');
        }
    }

    // Per communicator.
    let _ = writeln!(h, "<h2>Per communicator</h2>");
    for (ctx, ls) in &per_ctx {
        let coll: Collective = match ctx.collective.parse() {
            Ok(c) => c,
            Err(_) => continue,
        };
        let key = CommKey::shape(ctx.ranks, ctx.ppn, ctx.nodes);
        let reg = table
            .map(|(_, t)| regimes(t, coll, key))
            .filter(|r| !r.is_empty());
        let input = PlotInput {
            title: plot_title(ctx, samples),
            collective: coll,
            lines: ls,
            regimes: reg,
            panels: Panels::Both,
        };
        h.push_str(&plot_svg(&input)?);
        h.push('\n');
    }

    // Fit, knees, comparison.
    let _ = writeln!(
        h,
        "<h2>Fit and knees</h2><p>T(n) = latency + n / bandwidth per series; knees where bandwidth drops by 20% or more as size grows.</p><pre>{}</pre>",
        esc(&fit_table(all, &keep, 0.2))
    );
    let _ = writeln!(
        h,
        "<h2>Best of colltune against the MPI library, per size</h2><pre>{}</pre>",
        esc(&comparison(&kept(all, &keep)))
    );
    let _ = writeln!(h, "</body></html>");
    Ok(h)
}

/// The provenance section: the samples' file, library, host, source and
/// version, and the table's where there is one.
fn provenance(h: &mut String, csv: &Path, samples: &[Sample], table: Option<(&Path, &Table)>) {
    let _ = writeln!(h, "<h2>Provenance</h2><table>");
    let row = |h: &mut String, k: &str, v: &str| {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    };
    row(
        h,
        "samples",
        &format!("{} ({} rows)", csv.display(), samples.len()),
    );
    let distinct = |f: fn(&Sample) -> &str| {
        let mut v: Vec<&str> = samples.iter().map(f).collect();
        v.sort_unstable();
        v.dedup();
        v.join(", ")
    };
    row(h, "MPI library", &distinct(|s| &s.mpi));
    row(h, "host", &distinct(|s| &s.host));
    row(h, "source", &distinct(|s| &s.source));
    row(h, "colltune", &distinct(|s| &s.colltune));
    if let Some((p, t)) = table {
        let pv = &t.provenance;
        row(h, "table", &p.display().to_string());
        row(
            h,
            "table made",
            &format!(
                "{} on {}{}, {} ({}, {} sweep) by colltune {}",
                pv.mpi,
                pv.host,
                pv.cluster
                    .as_deref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default(),
                pv.date,
                pv.source,
                pv.sweep.mode,
                pv.colltune
            ),
        );
        row(h, "table command", &pv.command);
    }
    let _ = writeln!(h, "</table>");
}

/// One communicator's summary: how often colltune's best beats the
/// library, and which algorithm was fastest at how many sizes.
fn summary(h: &mut String, ctx: &SeriesKey, ls: &[Line]) {
    let w = wins(ls, ctx);
    let _ = writeln!(
        h,
        "<h3>{} on {} ranks ({} node(s) x {})</h3>",
        esc(&ctx.collective),
        ctx.ranks,
        ctx.nodes,
        ctx.ppn
    );
    for (kind, what) in [
        (LineKind::Library, "the MPI library's own call"),
        (
            LineKind::LibraryForced,
            "the library's best forced algorithm",
        ),
    ] {
        if let Some(v) = versus(ls, kind) {
            let _ = writeln!(
                h,
                "<p class=\"headline\">colltune's best is faster than {what} at <b>{} of {} sizes ({:.0}%)</b>; \
                 time ratio colltune / library, geometric mean <b>{:.2}x</b>.</p>",
                v.faster,
                v.sizes,
                100.0 * v.faster as f64 / v.sizes.max(1) as f64,
                v.geomean
            );
        }
    }
    if ls.iter().all(|l| l.kind == LineKind::Algorithm) {
        let _ = writeln!(
            h,
            "<p>These samples have no MPI library line (bench with <code>--baseline mpi</code> adds one).</p>"
        );
    }
    let _ = writeln!(
        h,
        "<table><tr><th>fastest</th><th>at sizes</th><th>share</th><th>winning variant (most sizes)</th></tr>"
    );
    for (line, variant, n) in &w.rows {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{} of {}</td><td class=\"n\">{:.0}%</td><td>{}</td></tr>",
            esc(line),
            n,
            w.sizes,
            100.0 * *n as f64 / w.sizes.max(1) as f64,
            esc(variant)
        );
    }
    let _ = writeln!(h, "</table>");
}
