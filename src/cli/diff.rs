//! `colltune diff A B`: two tables side by side, rule by rule, and with
//! measurements, how often each one's choice agrees with the fastest.

use std::path::PathBuf;

use super::inspect::load;
use super::{Code, UsageError};
use colltune_core::measure::fit::human_bytes;
use colltune_core::measure::record;
use colltune_core::tables::table::diff::{Kind, Side};
use colltune_core::tables::table::{self, Table};

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
        let c = d.collective;
        let key = if d.b_key == d.key {
            d.key.to_string()
        } else {
            format!("{} (B: {})", d.key, d.b_key)
        };
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
    let all = colltune_core::tables::agreement::agreement(ta, tb, measurements, &[], a.within);
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
