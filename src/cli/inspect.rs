//! Reading tables: `show`, `validate`, `diff`, `explain`, `export`, and
//! `report` for raw samples.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use colltune_algorithms::Collective;

use super::{Code, UsageError};
use colltune_core::decide::{parse_forced, RuntimeSettings, Selector, Source};
use colltune_core::export;
use colltune_core::fit::{fit_table, human_bytes};
use colltune_core::record;
use colltune_core::report::{series, SeriesKey};
use colltune_core::table::diff::{Kind, Side};
use colltune_core::table::{self, CommKey, Table, TableError};

fn load(path: &Path) -> Result<Table, UsageError> {
    table::load(path).map_err(|e| UsageError(e.to_string()))
}

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    table: PathBuf,
}

pub fn show(a: ShowArgs) -> anyhow::Result<Code> {
    let t = load(&a.table)?;
    out!("{}", table::summary(&t));
    Ok(Code::Ok)
}

#[derive(clap::Args, Debug)]
pub struct ValidateArgs {
    /// Tables to check.
    #[arg(required = true)]
    tables: Vec<PathBuf>,
}

/// Every problem of every table, `file:line: what; what to do`; exit 1 if any.
pub fn validate(a: ValidateArgs) -> anyhow::Result<Code> {
    let mut bad = 0;
    for p in &a.tables {
        match table::load(p) {
            Ok(t) => {
                let rules: usize = Collective::ALL
                    .iter()
                    .map(|&c| t.rules(c).iter().map(|r| r.rules.len()).sum::<usize>())
                    .sum();
                outln!("{}: ok ({rules} rules)", p.display());
            }
            Err(e @ TableError::Read { .. }) => {
                outln!("{e}");
                bad += 1;
            }
            Err(e) => {
                let n = e.problems().len();
                outln!("{e}");
                outln!("{}: {n} problem(s)", p.display());
                bad += 1;
            }
        }
    }
    Ok(if bad == 0 { Code::Ok } else { Code::Failed })
}

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    a: PathBuf,
    b: PathBuf,
    /// Raw CSVs to judge the differences by (each table's own tune, say):
    /// at each size of the tables' grids, the time of A's choice against
    /// B's in every CSV holding both; prints how much of the grid agrees.
    #[arg(long)]
    measured: Vec<PathBuf>,
    /// With --measured: two choices agree when the 95% interval of their
    /// time ratio (each CSV one launch) lies within this fraction either
    /// way, differ when it lies wholly beyond; otherwise unresolved.
    #[arg(long, default_value_t = 0.05)]
    within: f64,
}

/// Where two tables decide differently.
pub fn diff(a: DiffArgs) -> anyhow::Result<Code> {
    let (ta, tb) = (load(&a.a)?, load(&a.b)?);
    let differences = table::diff::diff(&ta, &tb);
    for d in &differences {
        let (c, key) = (d.collective, d.key);
        match &d.kind {
            Kind::OnlyIn(side) => {
                let only = match side {
                    Side::A => &a.a,
                    Side::B => &a.b,
                };
                outln!("{c} on {key}: only in {}", only.display());
            }
            Kind::Ranges(ranges) => {
                outln!(
                    "{c} on {key}: {} range(s) decided differently",
                    ranges.len()
                );
                for r in ranges {
                    let ratio = match &r.expected {
                        Some(e) => format!(
                            "  B/A expected time {:.2}x ({:.2} us at {} vs {:.2} us at {})",
                            e.ratio(),
                            e.a_us,
                            human_bytes(e.a_at),
                            e.b_us,
                            human_bytes(e.b_at)
                        ),
                        None => String::new(),
                    };
                    let range = match r.max_bytes {
                        Some(h) => format!("{}..={h}", r.min_bytes),
                        None => format!("{}..", r.min_bytes),
                    };
                    outln!("  {range:<24} A: {:<48} B: {}{ratio}", r.a, r.b);
                    for (side, e) in [("A", &r.a_evidence), ("B", &r.b_evidence)] {
                        if let Some(e) = e {
                            outln!("  {:<24} {side} {e}", "");
                        }
                    }
                }
            }
        }
    }
    if differences.is_empty() {
        outln!(
            "{} and {} decide alike everywhere",
            a.a.display(),
            a.b.display()
        );
    }
    if !a.measured.is_empty() {
        if !(a.within.is_finite() && a.within >= 0.0) {
            return Err(UsageError(format!(
                "--within {}: a non-negative fraction (0.05 = 5%)",
                a.within
            ))
            .into());
        }
        let mut measurements = Vec::new();
        for p in &a.measured {
            measurements.push(record::read(p).map_err(|e| UsageError(e.to_string()))?);
        }
        print_agreement(&a, &ta, &tb, &measurements);
    }
    Ok(Code::Ok)
}

/// `diff --measured`: per size, the two choices timed in each CSV.
fn print_agreement(a: &DiffArgs, ta: &Table, tb: &Table, measurements: &[Vec<record::Sample>]) {
    for (name, t) in [(&a.a, ta), (&a.b, tb)] {
        let rules: usize = t.bcast.iter().chain(&t.swap).map(|c| c.rules.len()).sum();
        outln!(
            "{}: {rules} rules, pattern {}; {}",
            name.display(),
            t.provenance.pattern,
            match (&t.provenance.evidence, &t.provenance.compaction) {
                (Some(e), _) => format!("evidence: {}", table::evidence_line(e)),
                (None, Some(c)) => format!("compaction: {}", table::compaction_line(c)),
                (None, None) => "compaction: none".into(),
            }
        );
    }
    let all = colltune_core::agreement::agreement(ta, tb, measurements, &[], a.within);
    let csvs: Vec<String> = a.measured.iter().map(|p| p.display().to_string()).collect();
    let (mut agree, mut judged, mut total) = (0, 0, 0);
    for ca in &all {
        outln!(
            "\n{} on {}: slower/faster of the two choices in {}",
            ca.collective,
            ca.key,
            csvs.join(", ")
        );
        for s in &ca.sizes {
            let ratios: Vec<String> = s
                .ratios
                .iter()
                .map(|r| r.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into()))
                .collect();
            let interval = match (&s.interval, s.a == s.b) {
                (Some(g), false) => format!(
                    "B/A {:.3} [{:.3}, {}] ",
                    1.0 + g.gain,
                    1.0 + g.low,
                    if g.high.is_finite() {
                        format!("{:.3}", 1.0 + g.high)
                    } else {
                        "inf".into()
                    }
                ),
                _ => String::new(),
            };
            outln!(
                "  {:>10}  {:<5}  {}  {interval}A: {}{}",
                human_bytes(s.bytes),
                match s.agree {
                    Some(true) => "agree",
                    Some(false) => "DIFF",
                    None => "?",
                },
                ratios.join(" "),
                s.a,
                if s.a == s.b {
                    String::new()
                } else {
                    format!("  B: {}", s.b)
                }
            );
        }
        let (g, j, n) = ca.counts();
        agree += g;
        judged += j;
        total += n;
    }
    let pct = |x: usize, of: usize| {
        if of == 0 {
            0.0
        } else {
            100.0 * x as f64 / of as f64
        }
    };
    outln!(
        "\nagreement (the same choice, or the 95% interval of their time ratio within {:.0}%): {agree} of {total} grid sizes ({:.0}%); differ: {}; unresolved (?: no CSV measured both, or the interval straddles {:.0}%; not counted as agreement): {}",
        100.0 * a.within,
        pct(agree, total),
        judged - agree,
        100.0 * a.within,
        total - judged
    );
}

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    table: PathBuf,
    /// Communicator size.
    #[arg(long)]
    ranks: u32,
    /// Ranks per node (default: all on one node).
    #[arg(long)]
    ppn: Option<u32>,
    /// Nodes (default: ranks / ppn, rounded up).
    #[arg(long)]
    nodes: Option<u32>,
    /// Message bytes (K/M/G accepted).
    #[arg(long, value_parser = |s: &str| colltune_algorithms::parse_size(s))]
    bytes: u64,
    #[arg(long, default_value = "bcast")]
    collective: Collective,
}

/// The rule that applies to a call and why, and what forcing would change.
pub fn explain(a: ExplainArgs) -> anyhow::Result<Code> {
    let t = load(&a.table)?;
    let ppn = a.ppn.unwrap_or(a.ranks);
    if a.ranks == 0 || ppn == 0 {
        return Err(UsageError("--ranks and --ppn must be at least 1".into()).into());
    }
    let key = CommKey {
        ranks: a.ranks,
        ppn,
        nodes: a.nodes.unwrap_or(a.ranks.div_ceil(ppn)),
    };
    let env = RuntimeSettings::from_env().map_err(|e| UsageError(e.to_string()))?;
    let sel = Arc::new(Selector {
        settings: RuntimeSettings {
            table: Some(a.table.clone()),
            ..env.clone()
        },
        table: Some(Arc::new(t.clone())),
        fallback: None,
    });
    let c = a.collective;
    let decisions = sel.decisions(c, key);
    let (choice, _) = decisions.choose(a.bytes);
    outln!("{c} of {} bytes on {key}:", a.bytes);
    match t.rules(c).iter().find(|r| r.key() == key) {
        None => {
            let near: Vec<String> = t.rules(c).iter().map(|r| r.key().to_string()).collect();
            outln!(
                "  the table has no {c} rules for this shape (it has: {})",
                if near.is_empty() {
                    "none".into()
                } else {
                    near.join("; ")
                }
            );
        }
        Some(cr) => {
            if let Some((i, r)) = cr.rules.iter().enumerate().find(|(_, r)| r.covers(a.bytes)) {
                outln!(
                    "  table rule {} covers {} bytes: {}",
                    i + 1,
                    r.range(),
                    r.label()
                );
                if let (Some(tm), Some(at)) = (r.time_us, r.at_bytes) {
                    outln!(
                        "  measured: {tm:.2} us at {} ({} calls)",
                        human_bytes(at),
                        t.provenance.pattern
                    );
                }
                if let Some(e) = &r.evidence {
                    outln!("  {}", table::rule_evidence_line(e));
                }
                match (&r.runner_up, r.margin) {
                    (Some(u), Some(m)) if m >= 0.0 => {
                        outln!("  runner-up there: {u}, {:.1}% slower", 100.0 * m)
                    }
                    (Some(u), Some(m)) => outln!(
                        "  runner-up there: {u}, {:.1}% faster (within noise: merged into this rule)",
                        -100.0 * m
                    ),
                    _ => {}
                }
            }
        }
    }
    outln!("  decision: {choice}");
    match choice.source {
        Source::Forced => outln!(
            "  (COLLTUNE_{} is set; unset it to use the table)",
            c.name().to_uppercase()
        ),
        _ => {
            let var = format!("COLLTUNE_{}", c.name().to_uppercase());
            let example = match c {
                Collective::Bcast => "pipeline:segment=65536@nonblocking",
                Collective::Swap => "sendrecv",
            };
            let forced = parse_forced(
                c,
                if c == Collective::Bcast {
                    "COLLTUNE_BCAST"
                } else {
                    "COLLTUNE_SWAP"
                },
                example,
            )
            .map(|(s, e)| colltune_algorithms::label(s, e))
            .unwrap_or_default();
            outln!("  forcing it, e.g. {var}={example}, would run {forced} for every {c} instead, on every shape and size");
        }
    }
    Ok(Code::Ok)
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    table: PathBuf,
    /// openmpi (classic rules file, Open MPI 4.1), openmpi-json (Open MPI
    /// 6.0), or mpich (JSON collective selection).
    #[arg(long)]
    format: String,
    /// Write here (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// For mpich: MPICH's rules for the other collectives, from its
    /// selection JSON or an installed libmpich.so (`auto`: find one; `none`:
    /// broadcast only).
    #[arg(long, default_value = "auto")]
    mpich_base: String,
}

pub fn export_cmd(a: ExportArgs) -> anyhow::Result<Code> {
    let t = load(&a.table)?;
    let (text, notes) = match a.format.as_str() {
        "openmpi" => export::openmpi_classic(&t)?,
        "openmpi-json" => export::openmpi_json(&t)?,
        "mpich" => {
            let base = match a.mpich_base.as_str() {
                "none" => None,
                "auto" => match export::find_libmpich() {
                    Some(p) => Some(export::mpich_base(&p)?),
                    None => {
                        return Err(UsageError(
                            "--format mpich: no MPICH library found for the other collectives' rules (MPICH reads a tuning file instead of its built-in rules); give --mpich-base PATH (coll_selection.json or libmpich.so), or --mpich-base none for broadcast rules only".into(),
                        )
                        .into())
                    }
                },
                p => Some(export::mpich_base(Path::new(p)).map_err(|e| UsageError(e.to_string()))?),
            };
            export::mpich_json(&t, base)?
        }
        f => {
            return Err(UsageError(format!(
                "--format `{f}`: use openmpi, openmpi-json or mpich"
            ))
            .into())
        }
    };
    for n in &notes {
        eprintln!("colltune export: note: {n}");
    }
    match a.output {
        Some(p) => {
            std::fs::write(&p, text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            eprintln!("colltune export: wrote {}", p.display());
        }
        None => out!("{text}"),
    }
    Ok(Code::Ok)
}

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
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
pub fn report(a: ReportArgs) -> anyhow::Result<Code> {
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
        let kept: colltune_core::report::Series = all
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out!("{}", colltune_core::report::comparison(&kept));
    }
    // Points: (context, bytes); each won by the subject with the lowest median.
    let mut wins: std::collections::BTreeMap<(SeriesKey, String), usize> = Default::default();
    let mut points: std::collections::BTreeMap<SeriesKey, usize> = Default::default();
    let mut contexts: Vec<SeriesKey> = all
        .keys()
        .filter(|k| keep(k))
        .map(SeriesKey::context)
        .collect();
    contexts.dedup();
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
