//! `colltune calibrate --collectives FILE... --layout L --mapping M -o
//! MODEL.yaml [--p2p FILE... | --base MODEL.yaml]`: the model fitted to
//! measured broadcasts ([`colltune_core::model::fit`]), MPI-free. It
//! starts from the ping-pong's model (`--p2p`), a model file (`--base`),
//! or colltune's generic figures, prints each fitted figure with the
//! points it came from, the residuals and what the data could not pin,
//! and writes the model with its fit error (`predict` marks a point
//! uncertain where the runner-up is within it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cli::predict::{read, usage};
use crate::cli::Code;
use colltune_core::measure::stats::median;
use colltune_core::model::fit::{self, knobs, Fitted, Obs};
use colltune_core::model::placement::{Layout, Mapping};
use colltune_core::model::predict::{own, TimeKind};
use colltune_core::model::sim::Model;

/// What `calibrate --collectives` reads besides the files.
pub struct Inputs<'a> {
    pub files: &'a [PathBuf],
    pub layout: Option<&'a str>,
    pub mapping: Option<&'a str>,
    pub alloc: Option<&'a str>,
    pub group_by: Option<&'a str>,
    pub columns: Option<&'a str>,
    pub labels: Option<&'a str>,
    pub base: Option<&'a Path>,
    pub p2p: &'a crate::cli::p2p::P2pArgs,
    pub name: Option<&'a str>,
    pub out: &'a Path,
    pub cross_validate: bool,
}

/// The model the fit starts from, and what it is, in words.
fn base_of(i: &Inputs, layout: &Layout) -> anyhow::Result<(Model, String)> {
    if !i.p2p.p2p.is_empty() {
        let rows = crate::cli::p2p::read(i.p2p)?;
        let f = crate::cli::p2p::fit(&rows, layout, "from-p2p", i.p2p)?;
        return Ok((f.model, "the ping-pong's model (--p2p)".into()));
    }
    if let Some(p) = i.base {
        let mut m = Model::load(p).map_err(usage)?;
        m.shared_reads |= i.p2p.shared_reads;
        return Ok((m, format!("the model {} (--base)", p.display())));
    }
    let mut generic = knobs::generic();
    generic.shared_reads = i.p2p.shared_reads;
    Ok((
        generic,
        "colltune's generic figures (neither --p2p nor --base given)".into(),
    ))
}

/// The algorithms of `obs`: coll/tuned's ids as a span, colltune's own
/// by name (`0-9, bine`).
fn algorithms(obs: &[Obs]) -> String {
    let tuned = span(obs.iter().map(|o| o.algorithm).filter(|&a| !own::is_own(a)));
    let mut names: Vec<String> = obs
        .iter()
        .filter(|o| own::is_own(o.algorithm))
        .map(|o| own::label(o.algorithm))
        .collect();
    names.sort();
    names.dedup();
    if tuned != "-" {
        names.insert(0, tuned);
    }
    names.join(", ")
}

/// A list of numbers as `a-b` (or `a`).
fn span<T: Ord + Copy + std::fmt::Display>(v: impl Iterator<Item = T>) -> String {
    let v: Vec<T> = v.collect();
    match (v.iter().min(), v.iter().max()) {
        (Some(a), Some(b)) if a != b => format!("{a}-{b}"),
        (Some(a), _) => a.to_string(),
        _ => "-".into(),
    }
}

pub fn run(i: Inputs) -> anyhow::Result<Code> {
    let layout = i
        .layout
        .ok_or_else(|| usage("--collectives needs --layout (e.g. node:2,socket:2,core:12)"))
        .and_then(|l| {
            crate::cli::args::placed_layout(l, i.alloc, i.group_by).map_err(Into::into)
        })?;
    let mapping = i
        .mapping
        .ok_or_else(|| usage("--collectives needs --mapping (core, socket or node: how the ranks were placed where the files do not say)"))
        .and_then(|m| Mapping::parse(m).map_err(usage))?;
    let samples = read::collectives(i.files, i.columns, i.labels, mapping)?;
    let obs = fit::observations(&samples, mapping);
    let (base, from) = base_of(&i, &layout)?;
    let kinds: Vec<&str> = {
        let mut k: Vec<TimeKind> = obs.iter().map(|o| o.kind).collect();
        k.sort();
        k.dedup();
        k.into_iter().map(TimeKind::name).collect()
    };
    outln!(
        "collectives: {} points (algorithms {}; {} ranks; {} B; time: {})",
        obs.len(),
        algorithms(&obs),
        span(obs.iter().map(|o| o.ranks)),
        span(obs.iter().map(|o| o.bytes)),
        kinds.join(" and ")
    );
    let f = if i.cross_validate {
        fit::fit_held_out(&base, &layout, &obs)
    } else {
        fit::fit(&base, &layout, &obs)
    }
    .map_err(usage)?;
    outln!(
        "start: {from}; error median {:.1}% there",
        100.0 * f.base_error_median
    );
    report(&f, &obs);
    let mut model = f.model.clone();
    model.name = i.name.unwrap_or("calibrated").into();
    let files: Vec<String> = i.files.iter().map(|p| p.display().to_string()).collect();
    let pinned: Vec<String> = f
        .knobs
        .iter()
        .filter(|k| k.pinned)
        .map(|k| format!("{} x{:.2}", k.name, k.factor))
        .collect();
    model.source = format!(
        "calibrate --collectives: {} points of {} on {layout} (mapping {mapping}), from {from}; fitted: {}; error median {:.1}%, worst {:.1}%. Started from: {}",
        obs.len(),
        files.join(" "),
        if pinned.is_empty() { "nothing".into() } else { pinned.join(", ") },
        100.0 * f.error_median,
        100.0 * f.error_worst,
        base.source
    );
    std::fs::write(i.out, model.to_yaml())
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", i.out.display()))?;
    outln!(
        "wrote {} (fit error {:.1}%: predict calls a point uncertain where the runner-up is within it)",
        i.out.display(),
        100.0 * f.error_median
    );
    Ok(Code::Ok)
}

/// Each knob with its figure and basis, then the residuals.
fn report(f: &Fitted, obs: &[Obs]) {
    for k in &f.knobs {
        if k.pinned {
            outln!(
                "  {:<16} x{:<6.2} {}; pinned by {}",
                k.name,
                k.factor,
                k.figure,
                k.basis
            );
        } else {
            outln!(
                "  {:<16} not pinned, left at the start's figure ({}): {}",
                k.name,
                k.figure,
                k.basis
            );
        }
    }
    for s in &f.shapes {
        let verdict = if s.kept {
            "kept"
        } else if s.with >= s.without * (1.0 - 1e-12) && s.with <= s.without * (1.0 + 1e-12) {
            "not kept, no point moves with it"
        } else {
            "not kept, the error falls by less than 2% with it (or rises)"
        };
        outln!(
            "  {:<16} {verdict}: {}; mean |ln error| {:.3} without, {:.3} with",
            s.name,
            s.what,
            s.without,
            s.with
        );
    }
    let mut by: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for (o, p) in obs.iter().zip(&f.predicted) {
        by.entry(o.algorithm)
            .or_default()
            .push((p / o.time_us - 1.0).abs());
    }
    let per: Vec<String> = by
        .iter()
        .map(|(&a, v)| format!("{}: {:.0}%", own::label(a), 100.0 * median(v)))
        .collect();
    outln!(
        "residuals: error median {:.1}%, worst {:.1}%; per algorithm {}; {} simulations of the set",
        100.0 * f.error_median,
        100.0 * f.error_worst,
        per.join(", "),
        f.evaluations
    );
    if let Some(h) = &f.held {
        let dropped: Vec<&str> = h.dropped.iter().map(|&j| knobs::KNOBS[j].name).collect();
        outln!(
            "cross-validation: {} folds; held-out error (mean |ln|) at the start {:.3}, fitted {:.3}, kept {:.3}; dropped: {}; kept {} of the fitted log-factors; {} simulations of a fold's points",
            h.folds,
            h.at_start,
            h.at_full,
            h.at_kept,
            if dropped.is_empty() { "none".into() } else { dropped.join(", ") },
            h.shrink,
            h.evaluations
        );
    }
    let worst = obs.iter().zip(&f.predicted).max_by(|a, b| {
        (a.1 / a.0.time_us)
            .ln()
            .abs()
            .total_cmp(&(b.1 / b.0.time_us).ln().abs())
    });
    if let Some((o, p)) = worst {
        outln!(
            "worst point: {} ranks, {} B, algorithm {}: measured {:.2} us, fitted {p:.2} us",
            o.ranks,
            o.bytes,
            own::label(o.algorithm),
            o.time_us
        );
    }
}
