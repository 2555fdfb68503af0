//! Reading tables: `show`, `diff`, `explain` (`validate`, `export` and
//! `report` have files of their own).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use colltune_algorithms::Collective;

use super::{Code, UsageError};
use colltune_core::decide::{parse_forced, RuntimeSettings, Selector, Source};
use colltune_core::fit::human_bytes;
use colltune_core::record;
use colltune_core::table::diff::{Kind, Side};
use colltune_core::table::{self, CommKey, Table};

/// Reads a table, its problems a usage error (every command that reads
/// tables reports them alike, file:line).
pub(super) fn load(path: &Path) -> Result<Table, UsageError> {
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
        "\nagreement (the same choice, or the 95% interval of their time ratio within {:.0}%): {agree} of {total} grid sizes ({:.0}%); differ: {}; unresolved (?: no CSV measured both, or the interval straddles {:.0}%; not counted as agreement): {}; of the {judged} sizes resolved, {agree} agree ({:.0}%)",
        100.0 * a.within,
        pct(agree, total),
        judged - agree,
        100.0 * a.within,
        total - judged,
        pct(agree, judged)
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
    /// How the communicator's ranks sit: `block` (consecutive ranks share a
    /// node), `cyclic` (round-robin over nodes), with the sockets' order
    /// inside nodes (`block/cyclic`), or the mpirun mapping (`core`,
    /// `socket`, `node`); `irregular` for neither. The selector finds it
    /// at a communicator's first call.
    #[arg(long, default_value = "block")]
    placement: String,
}

/// The rule that applies to a call and why, and what forcing would change.
pub fn explain(a: ExplainArgs) -> anyhow::Result<Code> {
    let t = load(&a.table)?;
    let ppn = a.ppn.unwrap_or(a.ranks);
    if a.ranks == 0 || ppn == 0 {
        return Err(UsageError("--ranks and --ppn must be at least 1".into()).into());
    }
    let placement = match a.placement.trim() {
        "irregular" => None,
        p => Some(colltune_core::placed::Placement::parse(p).map_err(UsageError)?),
    };
    let key = CommKey {
        placement,
        ..CommKey::shape(a.ranks, ppn, a.nodes.unwrap_or(a.ranks.div_ceil(ppn)))
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
    let placed = colltune_core::placed::Detected::of(placement);
    let others: Vec<String> = t
        .rules(c)
        .iter()
        .filter(|r| r.key().unplaced() == key.unplaced())
        .map(|r| r.placement.map_or("any".into(), |p| p.to_string()))
        .collect();
    if others.len() > 1 {
        outln!(
            "  the table has entries of this shape for placements {}; the best fit for {placed} decides",
            others.join(", ")
        );
    }
    match t.placed_rules(c, key, &placed) {
        None => {
            let near: Vec<String> = t
                .rules(c)
                .iter()
                .filter(|r| r.ranks == key.ranks)
                .map(|r| r.key().to_string())
                .collect();
            outln!(
                "  the table has no {c} rules for this shape and placement ({} of {} ranks: {})",
                near.len(),
                key.ranks,
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
