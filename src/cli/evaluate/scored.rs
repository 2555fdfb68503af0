//! `colltune evaluate TABLE --measured CSV...`: the table scored against
//! measurements already taken (`colltune_core::tables::agreement::score`), no MPI:
//! per placement the regret of the table's choices beside the library
//! default's.

use std::collections::BTreeMap;

use super::Args;
use crate::cli::{Code, UsageError};
use colltune_core::measure::record;
use colltune_core::measure::stats::geomean;
use colltune_core::tables::agreement::{score, Scored};
use colltune_core::tables::table;
use colltune_core::units::human_bytes;

/// `regret geomean 1.04, worst 1.62 (64 ranks at 16 KiB)`.
fn regrets(points: &[&Scored], of: fn(&Scored) -> Option<f64>) -> String {
    let v: Vec<(f64, &Scored)> = points
        .iter()
        .filter_map(|p| of(p).map(|r| (r, *p)))
        .collect();
    let Some(&(worst, at)) = v.iter().max_by(|a, b| a.0.total_cmp(&b.0)) else {
        return "-".into();
    };
    let r: Vec<f64> = v.iter().map(|x| x.0).collect();
    format!(
        "geomean {:.3}, worst {worst:.2} ({} ranks at {}; {} points)",
        geomean(&r),
        at.key.ranks,
        human_bytes(at.bytes),
        r.len()
    )
}

pub fn run(a: &Args) -> anyhow::Result<Code> {
    let t = table::load(&a.table).map_err(|e| UsageError(e.to_string()))?;
    let mut measurements = Vec::new();
    for p in &a.measured {
        measurements.push(record::read(p).map_err(|e| UsageError(e.to_string()))?);
    }
    let mut points = score(&t, &measurements);
    if !a.collective.is_empty() {
        points.retain(|p| a.collective.contains(&p.collective));
    }
    if points.is_empty() {
        return Err(UsageError(format!(
            "{}: no point measured of a subject a table may choose",
            a.measured
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    outln!(
        "{} scored against {} measured points ({}); at each, the entry a communicator of the measured shape and placement uses; regret = the choice's median / the fastest median measured of what a table may choose",
        a.table.display(),
        points.len(),
        a.measured
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut by: BTreeMap<(String, String), Vec<&Scored>> = BTreeMap::new();
    for p in &points {
        let placed = p.key.placement.map_or("any".into(), |x| x.to_string());
        by.entry((p.collective.to_string(), placed))
            .or_default()
            .push(p);
        by.entry((p.collective.to_string(), "all".into()))
            .or_default()
            .push(p);
    }
    for ((c, placed), ps) in &by {
        let uncovered = ps.iter().filter(|p| p.choice.is_none()).count();
        let unmeasured = ps
            .iter()
            .filter(|p| p.choice.is_some() && p.regret.is_none())
            .count();
        let both: Vec<(f64, f64)> = ps
            .iter()
            .filter_map(|p| Some((p.regret?, p.default_regret?)))
            .collect();
        let better = both.iter().filter(|(r, d)| r < d).count();
        let worse = both.iter().filter(|(r, d)| r > d).count();
        outln!("\n{c}, placement {placed}: {} points", ps.len());
        outln!("  table:           regret {}", regrets(ps, |p| p.regret));
        outln!(
            "  library default: regret {}",
            regrets(ps, |p| p.default_regret)
        );
        if !both.is_empty() {
            outln!(
                "  where both were measured ({}): the table faster at {better}, slower at {worse}",
                both.len()
            );
        }
        if uncovered + unmeasured > 0 {
            outln!(
                "  not scored: {uncovered} points no entry of the table covers, {unmeasured} where its choice was not measured"
            );
        }
    }
    Ok(Code::Ok)
}
