//! The run x point loop that `bench` and `evaluate` share: every point
//! measured run after run, samples streamed to the CSV as they are taken,
//! what cannot be measured said once and collected for the closing lines.

use colltune_core::measure::record::{Sample, Writer};
use colltune_mpi::bench::{Measurer, Outcome, Point, Skips};

use crate::progress::Reporter;

/// Measures every point `runs` times, run after run (each run in the order
/// of `points`); rank 0 gets the samples (also written to `writer`).
/// `tool` names the command in what it says (through `progress`: rank 0).
pub fn measure_runs(
    m: &mut Measurer,
    points: &[Point],
    runs: u32,
    mut writer: Option<&mut Writer>,
    progress: &mut Reporter,
    tool: &str,
    skips: &mut Skips,
) -> anyhow::Result<Vec<Sample>> {
    let mut samples = Vec::new();
    for run in 1..=runs {
        for pt in points {
            progress.set_message(format!(
                "run {run}/{runs} {} {} {} B",
                pt.subject.collective(),
                pt.subject.label(),
                pt.bytes
            ));
            let outcome = m.try_measure(pt, run, skips).map_err(|e| {
                anyhow::Error::new(e).context(format!(
                    "measuring {} at {} bytes",
                    pt.subject.label(),
                    pt.bytes
                ))
            })?;
            match outcome {
                Outcome::Measured(got) => {
                    if let Some(w) = writer.as_deref_mut() {
                        w.write(&got)?;
                    }
                    samples.extend(got);
                }
                Outcome::Unavailable(e) => progress.println(&format!(
                    "colltune {tool}: skipping {}: {e}",
                    pt.subject.label()
                )),
                Outcome::NotApplicable(_) | Outcome::Skipped => {}
            }
            progress.inc(0);
        }
    }
    Ok(samples)
}

/// The closing lines for what `skips` holds.
pub fn skipped_lines(skips: &Skips) -> Vec<String> {
    let mut out = Vec::new();
    for (u, _) in &skips.unavailable {
        out.push(format!(
            "not measured (not available with this MPI and network): {u}"
        ));
    }
    for (label, sizes, why) in &skips.not_applicable {
        out.push(format!(
            "not measured where the library cannot apply it (it would run its own choice instead): {label} at {} B; first: {why}",
            sizes
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out
}
