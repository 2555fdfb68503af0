//! What `predict` writes besides its summary: the predictions alone
//! (no measurements), the predicted times as a raw CSV, and the per-point
//! lines of a check.

use super::{usage, Args};
use crate::cli::{parse_sizes, Code};
use colltune_core::measure::import;
use colltune_core::measure::record;
use colltune_core::model::placement::{Layout, Mapping};
use colltune_core::model::predict::{self, own, trees};
use colltune_core::model::sim::Model;

/// Predicted times and winners alone.
pub fn predict_only(
    a: &Args,
    m: &Model,
    layout: &Layout,
    mapping: Mapping,
) -> anyhow::Result<Code> {
    let sizes = parse_sizes(&a.sizes)?;
    let num = |t: &str, what: &str| -> anyhow::Result<Vec<u64>> {
        t.split(',')
            .map(|x| {
                x.trim()
                    .parse::<u64>()
                    .map_err(|_| usage(format!("--{what}: `{x}` is not a whole number")))
            })
            .collect()
    };
    let ranks = num(&a.ranks, "ranks")?;
    let algs: Vec<u32> = num(&a.algorithms, "algorithms")?
        .into_iter()
        .map(|x| x as u32)
        .collect();
    if let Some(bad) = algs
        .iter()
        .find(|&&x| colltune_core::libraries::ompi::tuned_by_id(x).is_none())
    {
        return Err(usage(format!(
            "--algorithms: coll/tuned has no broadcast algorithm {bad} (0-9)"
        )));
    }
    outln!("# ranks bytes winner | per algorithm: predicted us (osu_bcast's mean over ranks)");
    let mut rows = Vec::new();
    for &r in &ranks {
        for &b in &sizes {
            let mut row = Vec::new();
            let mut best: Option<(u32, f64)> = None;
            for &al in &algs {
                let t = trees::simulate(m, layout, mapping, al, r as usize, b)
                    .map(|e| trees::osu_time(&e))
                    .map_err(usage)?;
                rows.push(row_of(al, r as u32, b, t, mapping));
                if al != 0 && best.is_none_or(|x| t < x.1) {
                    best = Some((al, t));
                }
                row.push(format!("{al}: {t:.2}"));
            }
            let w = best.map_or("-".into(), |x| x.0.to_string());
            outln!("{r:>5} {b:>8} {w:>2} | {}", row.join(", "));
        }
    }
    if let Some(out) = &a.csv {
        write_rows(out, &rows, m, layout, mapping)?;
    }
    Ok(Code::Ok)
}

fn row_of(algorithm: u32, ranks: u32, bytes: u64, time_us: f64, m: Mapping) -> import::BcastRow {
    import::BcastRow {
        algorithm,
        ranks,
        bytes,
        time_us,
        min_us: None,
        max_us: None,
        mapping: Some(m),
        iterations: None,
        line: 0,
    }
}

/// The predicted times as a raw CSV (`--csv`): one sample per point and
/// algorithm, its source the model.
pub fn write_predicted(
    out: &std::path::Path,
    points: &[predict::Point],
    model: &Model,
    layout: &Layout,
    mapping: Mapping,
) -> anyhow::Result<()> {
    let rows: Vec<import::BcastRow> = points
        .iter()
        .flat_map(|p| {
            p.times
                .iter()
                .map(|(&al, &(_, q))| row_of(al, p.ranks as u32, p.bytes, q, mapping))
        })
        .collect();
    write_rows(out, &rows, model, layout, mapping)
}

/// Predicted rows as raw samples, their source the model.
fn write_rows(
    out: &std::path::Path,
    rows: &[import::BcastRow],
    model: &Model,
    layout: &Layout,
    mapping: Mapping,
) -> anyhow::Result<()> {
    let source = format!("simulated:{}", model.name);
    let samples = import::to_samples(rows, Some(layout), Some(mapping), "Open MPI", &source)
        .map_err(|(_, w)| usage(w))?;
    record::Writer::open(out, false)
        .and_then(|mut w| w.write(&samples))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

/// Per point: the measured and predicted winners, the regrets, and per
/// algorithm the measured and predicted times and the error.
pub fn print_points(points: &[predict::Point]) {
    outln!("# ranks bytes measured-winner predicted-winner regret default-regret | per algorithm: measured us, predicted us, error (? after the predicted winner: uncertain, the runner-up within the model's error)");
    for p in points {
        let d = p.default_regret.map_or("-".into(), |d| format!("{d:.2}"));
        let algs: Vec<String> = p
            .times
            .iter()
            .map(|(&a, (t, q))| {
                let a = own::label(a);
                format!("{a}: {t:.2} {q:.2} {:+.0}%", 100.0 * (q - t) / t)
            })
            .collect();
        outln!(
            "{:>5} {:>8} {:>2} {:>2}{} {:.2} {d} | {}",
            p.ranks,
            p.bytes,
            own::label(p.measured_winner),
            own::label(p.predicted_winner),
            if p.uncertain { "?" } else { "" },
            p.regret,
            algs.join(", ")
        );
    }
}
