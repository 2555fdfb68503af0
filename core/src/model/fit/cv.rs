//! The fit's guard against over-reach (`calibrate --cross-validate`):
//! cross-validation inside the fit set. The pinning rule asks whether the
//! fit's own points feel a knob; a figure can pass it and still be those
//! points' noise (20 points, a library's quirk at a few of them) that
//! moves every prediction nobody measured. Here each pinned knob has to
//! earn its figure on points it was not fitted on.
//!
//! ```text
//!   points, in the fit's order:  0 1 2 3 4 5 6 7 8 9 ...
//!   fold of point i = i mod K:   0 1 2 3 4 0 1 2 3 4 ...
//!
//!   per fold f: the fit's stages (search, pinning, refinements) on the
//!               other folds' points -> x_f
//!   held-out error H(x) = mean over the points of |ln(predicted /
//!               measured)|, fold f's points at x_f's knobs
//!
//!   pinned knob k kept where H(x_f) < H(x_f with k at the start's figure)
//!               (or no fold moved it); the kept ones searched again on
//!               every point, then shrunk toward the start:
//!   x -> s x, s in {0, 1/4, 1/2, 3/4, 1} the one of least H(s x_f)
//!               (ties: the smaller s, the start's side)
//! ```
//!
//! The whole procedure is what each fold reruns (the pinning rule too: a
//! knob whose points are all held out stays at the start there), so the
//! check is of what the fit would have said without those points. A knob
//! dropped goes back to the start's figure and the report says so; `s` is
//! printed with the held-out error at the start, at the full fit and at
//! what is kept. Deterministic (folds by position, the search fixed).
//! Cost: K fits of (K-1)/K of the points, then one held-out simulation of
//! each point per knob and per `s`: about 4-5 times the fit alone.
//!
//! What it cannot see: a plan's points are each chosen to pin something
//! (`plan`), so holding one out takes what pinned a figure with it; on
//! such a set the held-out error overstates the over-reach
//! (docs/measurements/2026-12-07-calibrate, the last addendum). Hence
//! opt-in.
//!
//! Parameters: [`FOLDS`], [`SHRINK`].

use super::{score, stages, FitError, Obs};
use crate::model::placement::Layout;
use crate::model::sim::Model;

use super::knobs::apply;

/// Folds (at most; leave-one-out below this many points).
pub const FOLDS: usize = 5;
/// The shares of the fitted log-factors tried, from the start (0) to the
/// full fit (1).
pub const SHRINK: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// What the cross-validation found.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    /// Folds the points were split into.
    pub folds: usize,
    /// The knobs (indices into [`super::knobs::KNOBS`]) the held-out
    /// points were predicted no better with: back to the start's figure.
    pub dropped: Vec<usize>,
    /// The share of the kept knobs' fitted log-factors kept ([`SHRINK`]).
    pub shrink: f64,
    /// Held-out mean |ln(predicted / measured)|: at the start, at the
    /// fold fits with every pinned knob, at what is kept.
    pub at_start: f64,
    pub at_full: f64,
    pub at_kept: f64,
    /// Simulations of a fold's training points the fold fits ran.
    pub evaluations: usize,
}

/// The folds of `n` points: fold of point i is i mod K.
fn folds(n: usize) -> usize {
    FOLDS.min(n)
}

/// Cross-validates the knobs `pinned` (indices, fitted on all of `obs`):
/// which to keep and how far to shrink them ([module text](self)). `None`
/// where there are too few points to hold any out (fewer than 2) or no
/// knob to check.
pub fn check(
    base: &Model,
    layout: &Layout,
    obs: &[Obs],
    pinned: &[usize],
    n_knobs: usize,
) -> Result<Option<Held>, FitError> {
    let k = folds(obs.len());
    if k < 2 || pinned.is_empty() {
        return Ok(None);
    }
    let mut evaluations = 0;
    // Per fold: its held-out points and the knobs fitted without them.
    let mut fits: Vec<(Vec<Obs>, Vec<f64>)> = Vec::new();
    for f in 0..k {
        let pick = |held: bool| -> Vec<Obs> {
            let at = |i: &usize| (i % k == f) == held;
            (0..obs.len()).filter(at).map(|i| obs[i].clone()).collect()
        };
        let (test, train) = (pick(true), pick(false));
        let st = stages(base, layout, &train)?;
        evaluations += st.evaluations;
        let x = if st.cost > st.base_cost {
            vec![0.0; n_knobs]
        } else {
            st.x
        };
        fits.push((test, x));
    }
    // H: the held-out points' summed |ln| with each fold's knobs mapped by
    // `f` (the same map for every fold).
    let held = |map: &dyn Fn(&[f64]) -> Vec<f64>| -> Result<f64, FitError> {
        let mut sum = 0.0;
        for (test, x) in &fits {
            sum += score(&apply(base, &map(x)), layout, test)?.0 * test.len() as f64;
        }
        Ok(sum / obs.len() as f64)
    };
    let at_full = held(&|x| x.to_vec())?;
    let at_start = held(&|x| vec![0.0; x.len()])?;
    let mut dropped = Vec::new();
    for &j in pinned {
        let without = held(&|x| {
            let mut y = x.to_vec();
            y[j] = 0.0;
            y
        })?;
        let moved = fits.iter().any(|(_, x)| x[j] != 0.0);
        if moved && without <= at_full {
            dropped.push(j);
        }
    }
    let keep = |x: &[f64]| -> Vec<f64> {
        let mut y = x.to_vec();
        for &j in &dropped {
            y[j] = 0.0;
        }
        y
    };
    let (mut shrink, mut at_kept) = (0.0, at_start);
    for &s in &SHRINK[1..] {
        let h = held(&|x| keep(x).iter().map(|v| v * s).collect())?;
        if h < at_kept * (1.0 - 1e-9) {
            (shrink, at_kept) = (s, h);
        }
    }
    Ok(Some(Held {
        folds: k,
        dropped,
        shrink,
        at_start,
        at_full,
        at_kept,
        evaluations,
    }))
}
