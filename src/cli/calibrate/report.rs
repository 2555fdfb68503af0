//! What `calibrate` writes besides the model: every measured run (CSV)
//! and, per link, the fit against the measurement.

use std::path::Path;

use anyhow::Context;
use colltune_core::model::calibrate::LinkFit;
use colltune_mpi::calibrate::{LinkData, Pair};

/// One measured link.
pub struct Measured {
    pub what: &'static str,
    pub pair: Pair,
    pub data: LinkData,
    pub fit: LinkFit,
    pub note: String,
}

/// Every measured run of every link, one CSV row each.
pub fn write_raw(p: &Path, measured: &[Option<Measured>]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(p).with_context(|| format!("writing {}", p.display()))?;
    w.write_record(["link", "what", "bytes", "run", "iterations", "time_us"])?;
    for m in measured.iter().flatten() {
        for r in &m.data.raw {
            w.write_record([
                m.what.to_string(),
                r.what.clone(),
                r.bytes.to_string(),
                r.run.to_string(),
                r.iterations.to_string(),
                format!("{:.4}", r.time_us),
            ])?;
        }
    }
    w.flush()?;
    Ok(())
}

/// One link's fit: per size the measured and the modelled time, then the
/// fitted parameters.
pub fn print_link(m: &Measured) {
    outln!("\n{}-node link, one-way ping-pong time:", m.what);
    outln!(
        "{:>10} {:>12} {:>8} {:>12} {:>8}",
        "bytes",
        "measured us",
        "spread",
        "model us",
        "error"
    );
    for (b, t, p) in &m.fit.points {
        let spread = m.data.spread(*b);
        outln!(
            "{b:>10} {t:>12.2} {spread:>7.2}x {p:>12.2} {:>+7.1}%",
            100.0 * (p - t) / t
        );
    }
    let l = &m.fit.link;
    outln!(
            "  L = {:.3} us, o = {:.3} us, g = {:.3} us, bandwidth = {:.3} GB/s{}{}, eager limit = {}; \
             max error {:.1}%, median {:.1}%",
            l.latency_us,
            l.overhead_us,
            l.gap_us,
            l.bandwidth_gbs,
            l.eager_bandwidth_gbs
                .map(|e| format!(" ({e:.3} GB/s eager)"))
                .unwrap_or_default(),
            l.burst_bytes
                .map(|b| format!(", token bucket {b} B"))
                .unwrap_or_default(),
            match l.rendezvous_first_bytes {
                Some(f) => format!("{} B (ob1; a rendezvous sends {f} B first)", l.eager_limit),
                None => format!("{} B", l.eager_limit),
            },
            100.0 * m.fit.max_rel_error,
            100.0 * m.fit.median_rel_error
        );
    outln!("{}", m.note);
}
