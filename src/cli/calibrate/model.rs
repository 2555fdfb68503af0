//! The model `calibrate` writes: the links it measured and fitted, those
//! it could not measure in this job taken from `--base`, and a source line
//! that says how it was made.

use std::fmt::Write as _;

use super::report::Measured;
use super::Args;
use colltune_core::measure::fit::human_bytes;
use colltune_core::model::sim::Model;
use colltune_core::tables::table::now_iso8601;

/// The fitted model: the measured links (those not measurable in this
/// job from `base`), and a source line that says how it was made.
pub fn model_of(
    a: &Args,
    job: (&str, usize, &colltune_algorithms::NodeMap),
    sizes: &[u64],
    measured: &[Option<Measured>],
    base: Option<&Model>,
    copy_gbs: f64,
) -> Model {
    let (host, ranks, nodes) = job;
    let now = now_iso8601();
    let mut source = format!(
        "calibrated by `colltune calibrate` on {host} ({} ranks, layout {nodes}), {}, {} {} UTC; \
         ping-pong {}..{}, median of {} runs per size.",
        ranks,
        colltune_mpi::bench::library_short(),
        &now[..10],
        &now[11..16],
        human_bytes(sizes[0]),
        human_bytes(*sizes.last().expect("sizes")),
        a.runs
    );
    for (what, m) in ["intra", "inter"].iter().zip(measured) {
        let _ = match m {
            Some(m) => write!(
                source,
                " {what} (ranks {}-{}): fit max relative error {:.1}%, median {:.1}%.",
                m.pair.leader,
                m.pair.follower,
                100.0 * m.fit.max_rel_error,
                100.0 * m.fit.median_rel_error
            ),
            None => write!(
                source,
                " {what}: not measurable in this job, taken from {}.",
                a.base.as_ref().expect("checked").display()
            ),
        };
    }
    let b = base;
    Model {
        name: a
            .name
            .clone()
            .unwrap_or_else(|| format!("calibrated-{host}")),
        source,
        intra: measured[0].as_ref().map_or_else(
            || b.expect("checked above").intra.clone(),
            |m| m.fit.link.clone(),
        ),
        inter: measured[1].as_ref().map_or_else(
            || b.expect("checked above").inter.clone(),
            |m| m.fit.link.clone(),
        ),
        copy_gbs,
        levels: Vec::new(),
        memory_copy_gbs: b.and_then(|b| b.memory_copy_gbs),
        intra_load_per_rank: b.and_then(|b| b.intra_load_per_rank),
        shared_reads: b.is_some_and(|b| b.shared_reads),
        shared_ports: b.is_some_and(|b| b.shared_ports),
        group: b.and_then(|b| b.group.clone()),
        // The ping-pong's own residual: what `predict` holds a runner-up to.
        fit_error: measured
            .iter()
            .flatten()
            .map(|m| m.fit.median_rel_error)
            .reduce(f64::max),
    }
}
