//! `simulate --compare`: the model against a measured CSV, scored and printed.

use super::*;

/// The self-agreement line, for one group and for all.
fn itself_line(s: &SelfAgreement, o: &Options) -> String {
    format!(
        "the measurement against itself (each run against each other run): winner within {:.0}% \
         of the other run's best at {} of {} ({:.0}%); times within {:.0}% at {} of {} ({:.0}%)",
        100.0 * o.near,
        s.near.hits,
        s.near.of,
        s.near.percent(),
        100.0 * o.tolerance,
        s.within.hits,
        s.within.of,
        s.within.percent()
    )
}

/// `simulate --compare`: the model against a measured CSV.
pub(super) fn compare(a: &Args, m: &Model, path: &std::path::Path) -> anyhow::Result<Code> {
    let samples =
        colltune_core::measure::record::read(path).map_err(|e| UsageError(e.to_string()))?;
    let o = Options {
        tolerance: a.tolerance,
        near: a.near,
    };
    let r = compare::compare(m, &samples, &o).map_err(|e| -> anyhow::Error {
        let msg = format!("{}: {e}", path.display());
        if e.is_bad_input() {
            UsageError(msg).into()
        } else {
            anyhow::anyhow!(msg)
        }
    })?;
    let writer = match &a.csv {
        Some(p) => {
            let mut w = Writer::open(p, false)?;
            w.write(&r.simulated)?;
            Some(w)
        }
        None => None,
    };
    for g in &r.groups {
        outln!(
            "\n{} on {}: measured ({}) against model {}",
            g.collective,
            g.layout,
            path.display(),
            m.name
        );
        outln!(
            "{:>10}  {:<34} {:<34} {:>7} {:>9} {:>9}",
            "bytes",
            "measured winner",
            "predicted winner",
            "match",
            "regret",
            "|error|"
        );
        for s in &g.sizes {
            outln!(
                "{:>10}  {:<34} {:<34} {:>7} {:>8.3}x {:>8.1}%",
                s.bytes,
                trunc(&s.measured_winner, 34),
                if s.priced_alike > 1 {
                    let also = format!(" +{} tied", s.priced_alike - 1);
                    format!("{}{also}", trunc(&s.predicted_winner, 34 - also.len()))
                } else {
                    trunc(&s.predicted_winner, 34)
                },
                match s.verdict {
                    Verdict::Exact => "yes",
                    Verdict::Tie => "tie",
                    Verdict::Near => "near",
                    Verdict::Miss => "no",
                },
                s.regret,
                100.0 * s.median_error
            );
        }
        outln!("  {}", itself_line(&g.itself, &o));
        if !a.summary_only {
            outln!(
                "\n  per point (measured: each root's median, averaged over the roots; run spread; \
                 predicted, averaged alike; error):"
            );
            for s in &g.sizes {
                for v in &s.points {
                    outln!(
                        "  {:>10} {:<40} {:>11.2} us {:>6.2}x {:>11.2} us {:>+7.1}%",
                        s.bytes,
                        trunc(&v.label, 40),
                        v.measured,
                        v.spread,
                        v.predicted,
                        100.0 * (v.predicted - v.measured) / v.measured
                    );
                }
            }
        }
    }
    let t = &r.totals;
    outln!(
        "\nmodel {} against {}: predicted winner = measured winner at {} of {} sizes \
         ({:.0}%), {} with ties called ({:.0}%); within {:.0}% of the measured best at {} \
         ({:.0}%); geomean regret {:.3}x",
        m.name,
        path.display(),
        t.exact.hits,
        t.sizes,
        t.exact.percent(),
        t.called.hits,
        t.called.percent(),
        100.0 * a.near,
        t.near.hits,
        t.near.percent(),
        t.geomean_regret
    );
    outln!(
        "predicted times: {} of {} points ({:.0}%) within {:.0}% of the measured time; \
         median error {:.1}%, 90th percentile {:.1}%{}",
        t.within.hits,
        t.within.of,
        t.within.percent(),
        100.0 * a.tolerance,
        100.0 * t.median_error,
        100.0 * t.p90_error,
        if r.skipped > 0 {
            format!(
                " ({} samples of the MPI library's own collectives skipped)",
                r.skipped
            )
        } else {
            String::new()
        }
    );
    outln!("{}", itself_line(&t.itself, &o));
    if let Some(w) = &writer {
        outln!("simulated samples: {}", w.path().display());
    }
    Ok(Code::Ok)
}
