//! A model calibrated from a few collectives (`colltune calibrate
//! --collectives`): the figures a ping-pong cannot hold (what a message
//! costs inside a broadcast, a forwarding hop, copies sharing a memory
//! domain, a busy node, the links between groups of nodes) fitted to
//! measured broadcast times of algorithms the simulator runs as the
//! library does (Open MPI's coll/tuned trees with its numbering and forced
//! defaults, its fixed decision for algorithm 0; [`crate::model::predict::trees`]).
//!
//! ```text
//!   base model (ping-pong fit | model file | generic)
//!        |  x: one factor 2^x per knob (knobs.rs)
//!        v
//!   simulate every measured point --> |ln(predicted / measured)|
//!        |  compass search on x, steps 2, 1, 1/2, 1/4 (log2 units)
//!        v
//!   pinned? each fitted knob doubled and halved must cost the fit
//!           >= 2%, and the points it moves be of 2 algorithms or more
//!           (else back to the base's figure, and said so)
//!        |  the pinned knobs searched again (steps 1/2, 1/4), the others
//!        |  held at the base
//!        v
//!   refinements (net-gap), each alone from there: kept where pinned and
//!        |  the fit's objective falls by 2% or more, then searched again
//!        |  with the pinned knobs
//!        v
//!   held out (cv.rs; opt-in): the stages above rerun on K folds,
//!        |  each pinned knob kept only where it predicts the held-out
//!        |  points better, the rest shrunk toward the base as far as the
//!        v  held-out points say; the whole kept only where it beats the base
//! ```
//!
//! A refinement is a knob the others can stand in for on much of the data
//! (a node's port gap and each rank's overhead both space a rank's sends
//! out): searched together the two trade figures, and the pinning test at
//! the traded point finds neither pinned (THIN's fit lost its net-overhead
//! so). Fitted after the others, it holds only what they cannot: the
//! nested model has to earn its figure. `plan` spends no point on it.
//!
//! The objective is the mean absolute log ratio of predicted to measured
//! time over the points: every point weighs alike whatever its size, and
//! a few points the model's shapes cannot follow (a library's quirk, a
//! glitch) pull it less than squares would. The
//! search is a deterministic pattern search (no random start, the knobs in
//! one fixed order), so the same data gives the same model. A knob no
//! point is sensitive to (doubling it moves no time by 1%) is not searched.
//! Cost: about (2 x knobs) simulations of every point per pass, a few passes
//! per step (held out: the same again on each of cv.rs's K folds, of
//! (K-1)/K of the points); the points are simulated on every core.
//!
//! Parameters: [`STEPS`], [`PASSES`], [`PINNED`], [`SENSITIVE`],
//! [`PINNED_ALGORITHMS`].

pub mod cv;
pub mod knobs;
pub mod plan;

use std::collections::BTreeMap;

use crate::measure::record::Sample;
use crate::measure::stats::median;
use crate::model::placement::{Layout, Level, Mapping};
use crate::model::predict::{self, trees, TimeKind};
use crate::model::sim::Model;
use knobs::{applies, apply, figure, Knob, KnobInfo, KNOBS};

/// The search's step sizes, log2 units (a factor 4, 2, 1.41, 1.19).
pub const STEPS: [f64; 4] = [2.0, 1.0, 0.5, 0.25];
/// At most this many passes over the knobs per step. A step ends where a
/// pass moves no knob; the cap only bounds the cost. It was 3, and a
/// search stopped short of its step's optimum changed figures with the fit
/// set (EPYC by core, a plan of 100: agreement 67% at 3 passes, 86% run to
/// the end; docs/measurements/2026-12-07-converged).
pub const PASSES: usize = 20;
/// A fitted knob doubled or halved must raise the objective by this share
/// or more to count as pinned by the data.
pub const PINNED: f64 = 0.02;
/// A point is sensitive to a knob where doubling it moves its time by
/// this share or more.
pub const SENSITIVE: f64 = 0.01;
/// A knob counts as pinned only where the points sensitive to it are of
/// this many algorithms or more: a figure that one algorithm's points
/// alone move takes up that algorithm's own error in the model (a shape
/// the simulator follows less well, a library's quirk) and moves every
/// other algorithm's prediction with it (net-latency x38 on EPYC by core,
/// fitted to basic linear alone: docs/measurements/2026-12-07-calibrate).
pub const PINNED_ALGORITHMS: usize = 2;
/// No knob moves further than this from the base (log2 units: 2^12).
const BOUND: f64 = 12.0;

/// One measured point to fit: a broadcast of coll/tuned algorithm
/// `algorithm` (0: the library's decision; from
/// [`predict::own::FIRST`] on, colltune's own).
#[derive(Clone, Debug, PartialEq)]
pub struct Obs {
    pub mapping: Mapping,
    pub algorithm: u32,
    pub ranks: usize,
    pub bytes: u64,
    /// Median over the runs measured, microseconds.
    pub time_us: f64,
    pub kind: TimeKind,
    /// Where it came from (the sample's source), for errors.
    pub source: String,
}

/// What stops a fit.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    #[error("no broadcast of Open MPI's algorithms (coll/tuned 0-9) or colltune's own (bine, scatter_allgather) among the collectives: give osu_bcast / IMB / pico results or colltune's CSV of `ompi_tuned` subjects")]
    NoPoints,
    #[error("{origin}: {ranks} ranks, {bytes} B, algorithm {algorithm}: time {time_us} us is not a positive number; fix or drop that row")]
    BadTime {
        origin: String,
        ranks: usize,
        bytes: u64,
        algorithm: u32,
        time_us: f64,
    },
    #[error("{origin}: {ranks} ranks, {bytes} B, algorithm {algorithm}: {why}; give a --layout with room for the ranks, or drop the row")]
    Simulate {
        origin: String,
        ranks: usize,
        bytes: u64,
        algorithm: u32,
        why: String,
    },
}

/// The points to fit in `samples`: broadcasts of algorithms the model
/// knows (Open MPI's, colltune's own: [`predict::algorithm_of`]), each key's
/// median over its runs, under the mapping each sample says (else
/// `mapping`); what each time is from its source ([`TimeKind::of_sample`]).
pub fn observations(samples: &[Sample], mapping: Mapping) -> Vec<Obs> {
    type Key = (Mapping, usize, u64, u32, TimeKind);
    let mut runs: BTreeMap<Key, (Vec<f64>, String)> = BTreeMap::new();
    for s in samples {
        if s.collective != "bcast" {
            continue;
        }
        let m = predict::sample_mapping(s).unwrap_or(mapping);
        let Some((alg, _)) = predict::algorithm_of(s) else {
            continue;
        };
        let e = runs
            .entry((m, s.ranks as usize, s.bytes, alg, TimeKind::of_sample(s)))
            .or_insert_with(|| (Vec::new(), s.source.clone()));
        e.0.push(s.time_us);
    }
    runs.into_iter()
        .map(
            |((mapping, ranks, bytes, algorithm, kind), (t, source))| Obs {
                mapping,
                algorithm,
                ranks,
                bytes,
                time_us: median(&t),
                kind,
                source,
            },
        )
        .collect()
}

/// The simulated time of every point on `m`, the points shared out over
/// the machine's cores.
pub fn simulate_all(m: &Model, layout: &Layout, obs: &[Obs]) -> Result<Vec<f64>, FitError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, obs.len().max(1));
    let one = |o: &Obs| {
        trees::simulate(m, layout, o.mapping, o.algorithm, o.ranks, o.bytes)
            .map(|e| o.kind.of(&e))
            .map_err(|why| FitError::Simulate {
                origin: o.source.clone(),
                ranks: o.ranks,
                bytes: o.bytes,
                algorithm: o.algorithm,
                why,
            })
    };
    let parts: Vec<Result<Vec<(usize, f64)>, FitError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let one = &one;
                s.spawn(move || {
                    (t..obs.len())
                        .step_by(threads)
                        .map(|i| one(&obs[i]).map(|v| (i, v)))
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a simulation thread"))
            .collect()
    });
    let mut out = vec![0.0; obs.len()];
    for part in parts {
        for (i, v) in part? {
            out[i] = v;
        }
    }
    Ok(out)
}

/// Whether any point of `obs` puts two ranks on one node of `layout`.
fn sees_inside_a_node(layout: &Layout, obs: &[Obs]) -> bool {
    let shapes: std::collections::BTreeSet<(Mapping, usize)> =
        obs.iter().map(|o| (o.mapping, o.ranks)).collect();
    shapes.into_iter().any(|(mapping, ranks)| {
        mapping.place(layout, ranks).is_ok_and(|cores| {
            let mut nodes = std::collections::BTreeSet::new();
            cores
                .iter()
                .any(|&c| !nodes.insert(layout.group_of(c, Level::Node)))
        })
    })
}

/// Simulates every point on `m` and scores it: the objective and the
/// simulated times (what each stage's search evaluates).
pub(super) fn score(m: &Model, layout: &Layout, obs: &[Obs]) -> Result<(f64, Vec<f64>), FitError> {
    let p = simulate_all(m, layout, obs)?;
    Ok((objective(&p, obs), p))
}

/// The objective: mean |ln(predicted / measured)|.
fn objective(pred: &[f64], obs: &[Obs]) -> f64 {
    let sum: f64 = pred
        .iter()
        .zip(obs)
        .map(|(p, o)| (p.max(1e-9) / o.time_us).ln().abs())
        .sum();
    sum / obs.len().max(1) as f64
}

/// One knob after the fit.
#[derive(Clone, Debug, PartialEq)]
pub struct KnobFit {
    pub name: &'static str,
    pub what: &'static str,
    /// The fitted factor on the base's figure (1 where not pinned).
    pub factor: f64,
    /// The figure it sets, in words.
    pub figure: String,
    /// Whether the data pins it ([`PINNED`]).
    pub pinned: bool,
    /// The points sensitive to it ([`SENSITIVE`]): how many, and which
    /// algorithms, ranks and sizes they span.
    pub basis: String,
}

/// A shape of the simulator the fit may switch on (`sim/share.rs`): a
/// way resources are shared that the ping-pong cannot show.
pub struct Shape {
    pub name: &'static str,
    pub what: &'static str,
    get: fn(&Model) -> bool,
    set: fn(&mut Model),
}

/// The shapes, in the order the fit tries them.
pub const SHAPES: &[Shape] = &[
    Shape {
        name: "shared-ports",
        what: "transfers leaving a node's network port at once share its rate (else they queue)",
        get: |m| m.shared_ports,
        set: |m| m.shared_ports = true,
    },
    Shape {
        name: "shared-reads",
        what: "reads of one sender's buffer inside a node at once share it (else they queue)",
        get: |m| m.shared_reads,
        set: |m| m.shared_reads = true,
    },
];

/// One shape after the fit: whether it was kept, and the fit's objective
/// (mean |ln(predicted / measured)|) without and with it.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeFit {
    pub name: &'static str,
    pub what: &'static str,
    pub kept: bool,
    pub without: f64,
    pub with: f64,
}

/// A fitted model and how it fits.
#[derive(Clone, Debug)]
pub struct Fitted {
    pub model: Model,
    pub knobs: Vec<KnobFit>,
    /// The shapes tried ([`SHAPES`]), in order.
    pub shapes: Vec<ShapeFit>,
    /// Per point: predicted time.
    pub predicted: Vec<f64>,
    /// Median and worst |predicted / measured - 1|.
    pub error_median: f64,
    pub error_worst: f64,
    /// The same at the base model, before the fit.
    pub base_error_median: f64,
    /// Simulations of the whole set the fit ran.
    pub evaluations: usize,
    /// The cross-validation of the pinned knobs ([`fit_held_out`], [`cv`];
    /// none without it, where no knob was pinned or there are fewer than 2
    /// points).
    pub held: Option<cv::Held>,
}

/// Median and worst relative error.
pub fn errors(pred: &[f64], obs: &[Obs]) -> (f64, f64) {
    let e: Vec<f64> = pred
        .iter()
        .zip(obs)
        .map(|(p, o)| (p / o.time_us - 1.0).abs())
        .collect();
    (median(&e), e.iter().copied().fold(0.0, f64::max))
}

/// The points whose time moves by [`SENSITIVE`] or more between `a` and
/// `b`: how many, how many algorithms they are of, and in words.
fn basis(a: &[f64], b: &[f64], obs: &[Obs]) -> (usize, usize, String) {
    let hit: Vec<&Obs> = obs
        .iter()
        .zip(a.iter().zip(b))
        .filter(|(_, (x, y))| (*y / *x - 1.0).abs() >= SENSITIVE)
        .map(|(o, _)| o)
        .collect();
    if hit.is_empty() {
        return (0, 0, format!("no point of {} moves", obs.len()));
    }
    let mut algs: Vec<u32> = hit.iter().map(|o| o.algorithm).collect();
    algs.sort();
    algs.dedup();
    let span = |v: Vec<u64>| {
        let lo = v.iter().min().copied().unwrap_or(0);
        let hi = v.iter().max().copied().unwrap_or(0);
        (lo, hi)
    };
    let (r0, r1) = span(hit.iter().map(|o| o.ranks as u64).collect());
    let (b0, b1) = span(hit.iter().map(|o| o.bytes).collect());
    let names: Vec<String> = algs.iter().map(|&a| predict::own::label(a)).collect();
    (
        hit.len(),
        algs.len(),
        format!(
            "{} of {} points (algorithms {}; {r0}-{r1} ranks; {b0}-{b1} B)",
            hit.len(),
            obs.len(),
            names.join(", ")
        ),
    )
}

/// A compass search from `x` (objective `cost`) over the knobs `live`,
/// with the given steps: each knob moved up, else down, by a step while
/// that lowers the objective, at most [`PASSES`] passes per step.
fn search(
    eval: &mut impl FnMut(&[f64]) -> Result<(f64, Vec<f64>), FitError>,
    mut x: Vec<f64>,
    mut cost: f64,
    live: &[usize],
    steps: &[f64],
) -> Result<(Vec<f64>, f64), FitError> {
    for &step in steps {
        for _ in 0..PASSES {
            let mut moved = false;
            for &k in live {
                for dir in [1.0, -1.0] {
                    let mut y = x.clone();
                    y[k] = (y[k] + dir * step).clamp(-BOUND, BOUND);
                    let (c, _) = eval(&y)?;
                    if c < cost * (1.0 - 1e-9) {
                        (x, cost) = (y, c);
                        moved = true;
                        break;
                    }
                }
            }
            if !moved {
                break;
            }
        }
    }
    Ok((x, cost))
}

/// Whether knob `k`, fitted at `x` (objective `cost`, predictions `at`),
/// is pinned: doubling or halving it costs [`PINNED`] or more, and the
/// points it moves are of [`PINNED_ALGORITHMS`] algorithms or more; and
/// the points it moves, in words.
fn pin_test(
    eval: &mut impl FnMut(&[f64]) -> Result<(f64, Vec<f64>), FitError>,
    x: &[f64],
    cost: f64,
    k: usize,
    at: &[f64],
    obs: &[Obs],
) -> Result<(bool, String), FitError> {
    let mut up = x.to_vec();
    up[k] += 1.0;
    let (cu, pu) = eval(&up)?;
    let mut down = x.to_vec();
    down[k] -= 1.0;
    let (cd, _) = eval(&down)?;
    let (_, algs, mut text) = basis(at, &pu, obs);
    let pinned = cu.min(cd) >= cost * (1.0 + PINNED) + 1e-12 && algs >= PINNED_ALGORITHMS;
    if (1..PINNED_ALGORITHMS).contains(&algs) {
        text +=
            "; one algorithm alone moves it (its own shape's error cannot be told from the figure)";
    }
    Ok((pinned, text))
}

/// What the fit's stages give ([`stages`]).
struct Staged {
    /// The knobs, log2 units (0: the base's figure).
    x: Vec<f64>,
    cost: f64,
    base_cost: f64,
    base_pred: Vec<f64>,
    pinned: Vec<bool>,
    /// Per knob: the points it moves, and why it is not pinned, in words.
    why: Vec<String>,
    evaluations: usize,
}

/// The fit's stages on `obs` ([module text](self)): the search over the
/// live knobs, the pinning test, the pinned ones searched again, then the
/// refinements. The cross-validation (cv.rs) runs the same on each fold.
fn stages(base: &Model, layout: &Layout, obs: &[Obs]) -> Result<Staged, FitError> {
    let n = KNOBS.len();
    let mut evaluations = 0;
    let mut eval = |x: &[f64]| -> Result<(f64, Vec<f64>), FitError> {
        evaluations += 1;
        score(&apply(base, x), layout, obs)
    };
    let zero = vec![0.0; n];
    let (base_cost, base_pred) = eval(&zero)?;
    // Which knobs any point feels, at the base.
    let mut live = Vec::new();
    for (k, info) in KNOBS.iter().enumerate() {
        if !applies(base, info.knob) {
            continue;
        }
        // Doubled, else halved (a limit the base does not have, such as
        // a group's links, only shows below the base's figure).
        for step in [1.0, -1.0] {
            let mut x = zero.clone();
            x[k] = step;
            let (_, p) = eval(&x)?;
            if basis(&base_pred, &p, obs).0 > 0 {
                live.push(k);
                break;
            }
        }
    }
    // The first stage: every live knob but the refinements.
    let first: Vec<usize> = live
        .iter()
        .copied()
        .filter(|&k| !KNOBS[k].refines)
        .collect();
    let (mut x, mut cost) = search(&mut eval, zero.clone(), base_cost, &first, &STEPS)?;
    let (_, at) = eval(&x)?;
    let mut why: Vec<String> = vec!["no point moves (nothing in the data depends on it)".into(); n];
    let mut pinned = vec![false; n];
    for &k in &first {
        (pinned[k], why[k]) = pin_test(&mut eval, &x, cost, k, &at, obs)?;
    }
    // The pinned knobs again, the others held at the base's figure (the
    // search may have moved them to make up for another).
    let kept: Vec<usize> = first.iter().copied().filter(|&k| pinned[k]).collect();
    for (v, &p) in x.iter_mut().zip(&pinned) {
        if !p {
            *v = 0.0;
        }
    }
    let (c, _) = eval(&x)?;
    (x, cost) = search(&mut eval, x, c, &kept, &STEPS[2..])?;
    // The second stage: each refinement alone from there, kept where it is
    // pinned and lowers the objective by PINNED or more.
    for k in live.iter().copied().filter(|&k| KNOBS[k].refines) {
        let (y, c) = search(&mut eval, x.clone(), cost, &[k], &STEPS)?;
        let (_, at) = eval(&y)?;
        let (pin, text) = pin_test(&mut eval, &y, c, k, &at, obs)?;
        why[k] = text;
        if pin && c <= cost * (1.0 - PINNED) {
            let mut all = kept.clone();
            all.push(k);
            (x, cost) = search(&mut eval, y, c, &all, &STEPS[2..])?;
            pinned[k] = true;
        } else if pin {
            why[k] += "; lowers the error by less than 2% beyond the other knobs";
        }
    }
    Ok(Staged {
        x,
        cost,
        base_cost,
        base_pred,
        pinned,
        why,
        evaluations,
    })
}

/// The fit's last stage: each of [`SHAPES`] tried on `base` from the
/// fitted `x` (objective `cost`), the `pinned` knobs searched again; kept
/// where the objective falls by [`PINNED`] or more. What is kept: the
/// base, the knobs, and a line per shape.
fn try_shapes(
    base: &Model,
    layout: &Layout,
    obs: &[Obs],
    (mut x, mut cost): (Vec<f64>, f64),
    pinned: &[usize],
    evaluations: &mut usize,
) -> Result<(Model, Vec<f64>, Vec<ShapeFit>), FitError> {
    let mut base = base.clone();
    let mut shapes = Vec::new();
    for shape in SHAPES {
        if (shape.get)(&base) {
            continue;
        }
        let mut with = base.clone();
        (shape.set)(&mut with);
        let mut eval = |x: &[f64]| -> Result<(f64, Vec<f64>), FitError> {
            *evaluations += 1;
            score(&apply(&with, x), layout, obs)
        };
        let (c0, _) = eval(&x)?;
        // No point moves with it: nothing to search.
        let (y, c) = if (c0 - cost).abs() <= 1e-12 * cost.max(1e-12) {
            (x.clone(), c0)
        } else {
            search(&mut eval, x.clone(), c0, pinned, &STEPS[2..])?
        };
        let kept = c < cost * (1.0 - PINNED);
        shapes.push(ShapeFit {
            name: shape.name,
            what: shape.what,
            kept,
            without: cost,
            with: c,
        });
        if kept {
            (base, x, cost) = (with, y, c);
        }
    }
    Ok((base, x, shapes))
}

/// Fits the knobs of `base` to `obs` ([module text](self)), without the
/// held-out guard (cv.rs).
pub fn fit(base: &Model, layout: &Layout, obs: &[Obs]) -> Result<Fitted, FitError> {
    fit_with(base, layout, obs, false)
}

/// Fits the knobs of `base` to `obs`, then holds every pinned figure out
/// against points it was not fitted on ([`cv`]: `calibrate
/// --cross-validate`).
pub fn fit_held_out(base: &Model, layout: &Layout, obs: &[Obs]) -> Result<Fitted, FitError> {
    fit_with(base, layout, obs, true)
}

fn fit_with(base: &Model, layout: &Layout, obs: &[Obs], guard: bool) -> Result<Fitted, FitError> {
    if obs.is_empty() {
        return Err(FitError::NoPoints);
    }
    if let Some(o) = obs
        .iter()
        .find(|o| !(o.time_us.is_finite() && o.time_us > 0.0))
    {
        return Err(FitError::BadTime {
            origin: o.source.clone(),
            ranks: o.ranks,
            bytes: o.bytes,
            algorithm: o.algorithm,
            time_us: o.time_us,
        });
    }
    // The layout's groups are the ones simulated: the fitted model says
    // so, and `top-bandwidth` starts from their nodes' ports.
    let mut base = base.clone();
    if let (Some((_, per)), Some(g)) = (layout.groups(), base.group.as_mut()) {
        g.nodes = per;
    }
    let base = &base;
    let n = KNOBS.len();
    let Staged {
        mut x,
        mut cost,
        base_cost,
        base_pred,
        mut pinned,
        mut why,
        mut evaluations,
    } = stages(base, layout, obs)?;
    let mut eval = |x: &[f64]| -> Result<(f64, Vec<f64>), FitError> {
        evaluations += 1;
        score(&apply(base, x), layout, obs)
    };
    let zero = vec![0.0; n];
    // The guard: every pinned figure held out against points it was not
    // fitted on (cv.rs).
    let checked: Vec<usize> = (0..n).filter(|&k| pinned[k]).collect();
    let held = if guard {
        cv::check(base, layout, obs, &checked, n)?
    } else {
        None
    };
    if let Some(h) = &held {
        for &j in &h.dropped {
            why[j] += &format!(
                "; fitted x{:.2}, but the fit's points held out were predicted no better with it (cross-validation)",
                x[j].exp2()
            );
            (pinned[j], x[j]) = (false, 0.0);
        }
        let still: Vec<usize> = (0..n).filter(|&k| pinned[k]).collect();
        if !h.dropped.is_empty() && !still.is_empty() {
            let (c, _) = eval(&x)?;
            (x, cost) = search(&mut eval, x, c, &still, &STEPS[2..])?;
        }
        if h.shrink < 1.0 {
            x.iter_mut().for_each(|v| *v *= h.shrink);
            (cost, _) = eval(&x)?;
        }
        if h.shrink == 0.0 {
            for &j in &still {
                why[j] += "; fitted, but the fit's points held out were predicted best at the start's figures (cross-validation)";
                pinned[j] = false;
            }
        }
    }
    let report: Vec<(usize, &KnobInfo, String)> = KNOBS
        .iter()
        .enumerate()
        .map(|(k, i)| (k, i, why[k].clone()))
        .collect();
    if cost > base_cost {
        // Nothing the data pins beats the start: keep the start.
        x = zero;
        pinned.iter_mut().for_each(|p| *p = false);
        cost = base_cost;
    }
    // The shapes (sim/share.rs), each tried from the fitted figures with
    // the pinned knobs searched again, kept where the fit's error falls by
    // PINNED or more.
    let pins: Vec<usize> = (0..n).filter(|&k| pinned[k]).collect();
    let (base, x, shapes) = try_shapes(base, layout, obs, (x, cost), &pins, &mut evaluations)?;
    let mut model = apply(&base, &x);
    // No point puts two ranks on one node: node-bandwidth moved the local
    // copy (eager messages between nodes), the links inside a node are
    // not in the data and keep the start's rates.
    let inside = sees_inside_a_node(layout, obs);
    if !inside {
        knobs::keep_node_rates(&mut model, &base);
    }
    let predicted = simulate_all(&model, layout, obs)?;
    evaluations += 1;
    let (error_median, error_worst) = errors(&predicted, obs);
    let knobs = report
        .into_iter()
        .map(|(k, info, mut basis)| {
            if !inside && info.knob == Knob::NodeBandwidth && pinned[k] {
                basis += &format!(
                    "; the local copy alone ({:.3} GB/s): no point puts two ranks on one node, so its links keep the start's rates",
                    model.copy_gbs
                );
            }
            KnobFit {
                name: info.name,
                what: info.what,
                factor: x[k].exp2(),
                figure: figure(&model, info.knob),
                pinned: pinned[k],
                basis,
            }
        })
        .collect();
    model.fit_error = Some(error_median);
    Ok(Fitted {
        model,
        knobs,
        shapes,
        predicted,
        error_median,
        error_worst,
        base_error_median: errors(&base_pred, obs).0,
        evaluations,
        held,
    })
}

#[cfg(test)]
mod tests;
