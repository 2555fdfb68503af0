//! Which points to measure so that the fit ([`super::fit`]) pins the
//! model best (`colltune plan --budget N`): a greedy D-optimal design on
//! the fit's Jacobian.
//!
//! ```text
//!   candidates (algorithm, ranks, bytes, mapping)   thinned to <= 8 rank counts x 10 sizes
//!        |  J[i][k] = ln t_i(knob k doubled) - ln t_i(base)     (one simulation per knob)
//!        v
//!   M = eps I;  repeat N times: take the i with the largest J_i' M^-1 J_i,  M += J_i J_i'
//! ```
//!
//! Each pick is the point that adds most to log det M, the volume of what
//! the picked points pin (the D criterion), so a knob that no pick moves
//! yet gains most from the next point that moves it; ties go to the first
//! candidate, so the plan is deterministic. Cost: (knobs + 1) simulations
//! per candidate. Parameters: [`MAX_RANKS`], [`MAX_SIZES`], [`RIDGE`].

use super::knobs::{applies, apply, KNOBS};
use super::{simulate_all, FitError, Obs};
use crate::model::placement::{Layout, Mapping};
use crate::model::predict::TimeKind;
use crate::model::sim::Model;

/// Candidates are thinned to at most this many rank counts...
pub const MAX_RANKS: usize = 8;
/// ...and this many sizes, spread evenly over the sorted values (the
/// smallest and largest kept).
pub const MAX_SIZES: usize = 10;
/// The information matrix starts at this multiple of the identity.
pub const RIDGE: f64 = 1e-4;

/// A point that could be measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub mapping: Mapping,
    pub algorithm: u32,
    pub ranks: usize,
    pub bytes: u64,
}

/// A planned point and what it adds (ln of the growth of det M).
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub candidate: Candidate,
    pub gain: f64,
}

/// At most `max` of the sorted distinct `v`, evenly spread, ends kept.
fn spread<T: Ord + Copy>(mut v: Vec<T>, max: usize) -> Vec<T> {
    v.sort();
    v.dedup();
    if v.len() <= max || max < 2 {
        return v;
    }
    (0..max).map(|i| v[i * (v.len() - 1) / (max - 1)]).collect()
}

/// `cands` on at most [`MAX_RANKS`] rank counts and [`MAX_SIZES`] sizes.
pub fn thin(cands: &[Candidate]) -> Vec<Candidate> {
    let ranks = spread(cands.iter().map(|c| c.ranks).collect(), MAX_RANKS);
    let sizes = spread(cands.iter().map(|c| c.bytes).collect(), MAX_SIZES);
    cands
        .iter()
        .filter(|c| ranks.contains(&c.ranks) && sizes.contains(&c.bytes))
        .cloned()
        .collect()
}

/// Solves `a y = b` (Gauss-Jordan with partial pivoting; `a` is small and
/// positive definite here).
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap_or(c);
        a.swap(c, p);
        b.swap(c, p);
        let d = a[c][c];
        if d.abs() < 1e-300 {
            continue;
        }
        let (pivot, bc) = (a[c].clone(), b[c]);
        for (r, (row, br)) in a.iter_mut().zip(b.iter_mut()).enumerate() {
            if r != c {
                let f = row[c] / d;
                for (x, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                    *x -= f * p;
                }
                *br -= f * bc;
            }
        }
    }
    (0..n).map(|i| b[i] / a[i][i]).collect()
}

/// Plans `budget` points of `cands` (thinned: [`thin`]) on `base`, times
/// taken as `kind`.
pub fn plan(
    base: &Model,
    layout: &Layout,
    cands: &[Candidate],
    kind: TimeKind,
    budget: usize,
) -> Result<Vec<Planned>, FitError> {
    let cands = thin(cands);
    let obs: Vec<Obs> = cands
        .iter()
        .map(|c| Obs {
            mapping: c.mapping,
            algorithm: c.algorithm,
            ranks: c.ranks,
            bytes: c.bytes,
            time_us: 1.0,
            kind,
            source: "plan".into(),
        })
        .collect();
    let at = simulate_all(base, layout, &obs)?;
    let mut cols = Vec::new();
    for (k, info) in KNOBS.iter().enumerate() {
        // A refinement (net-gap) is fitted only where the data earn it: the
        // budget goes to the knobs every fit sets.
        if !applies(base, info.knob) || info.refines {
            continue;
        }
        let mut x = vec![0.0; KNOBS.len()];
        x[k] = 1.0;
        let p = simulate_all(&apply(base, &x), layout, &obs)?;
        cols.push(
            p.iter()
                .zip(&at)
                .map(|(a, b)| (a / b).ln())
                .collect::<Vec<f64>>(),
        );
    }
    let dims = cols.len();
    let row = |i: usize| -> Vec<f64> { cols.iter().map(|c| c[i]).collect() };
    let mut m: Vec<Vec<f64>> = (0..dims)
        .map(|i| {
            (0..dims)
                .map(|j| if i == j { RIDGE } else { 0.0 })
                .collect()
        })
        .collect();
    let mut taken = vec![false; cands.len()];
    let mut out = Vec::new();
    for _ in 0..budget.min(cands.len()) {
        let mut best: Option<(usize, f64)> = None;
        for (i, _) in cands.iter().enumerate().filter(|(i, _)| !taken[*i]) {
            let j = row(i);
            let y = solve(m.clone(), j.clone());
            let q: f64 = j.iter().zip(&y).map(|(a, b)| a * b).sum();
            if best.is_none_or(|b| q > b.1 * (1.0 + 1e-12)) {
                best = Some((i, q));
            }
        }
        let Some((i, q)) = best else { break };
        taken[i] = true;
        let j = row(i);
        for (row, ja) in m.iter_mut().zip(&j) {
            for (x, jb) in row.iter_mut().zip(&j) {
                *x += ja * jb;
            }
        }
        out.push(Planned {
            candidate: cands[i].clone(),
            gain: (1.0 + q.max(0.0)).ln(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_keeps_the_ends_and_solve_solves() {
        assert_eq!(spread(vec![5, 1, 3, 2, 4, 1], 3), vec![1, 3, 5]);
        assert_eq!(spread(vec![2, 1], 8), vec![1, 2]);
        let y = solve(vec![vec![2.0, 1.0], vec![1.0, 3.0]], vec![3.0, 5.0]);
        assert!(
            (y[0] - 0.8).abs() < 1e-12 && (y[1] - 1.4).abs() < 1e-12,
            "{y:?}"
        );
    }

    #[test]
    fn a_plan_spans_what_the_knobs_need() {
        // One node and two: a plan of 6 takes points between nodes and
        // inside a node, large and small.
        let base = super::super::knobs::generic();
        let layout = Layout::parse("node:2,core:8").unwrap();
        let mut cands = Vec::new();
        for alg in [1, 2, 5, 6] {
            for ranks in [2, 4, 8, 16] {
                for bytes in [1, 1024, 1 << 20] {
                    cands.push(Candidate {
                        mapping: Mapping::Core,
                        algorithm: alg,
                        ranks,
                        bytes,
                    });
                }
            }
        }
        let p = plan(&base, &layout, &cands, TimeKind::MeanOverRanks, 6).unwrap();
        assert_eq!(p.len(), 6);
        assert!(p.iter().any(|x| x.candidate.ranks > 8), "{p:?}");
        assert!(p.iter().any(|x| x.candidate.ranks <= 8), "{p:?}");
        assert!(p.iter().any(|x| x.candidate.bytes == 1 << 20), "{p:?}");
        assert!(p.iter().any(|x| x.candidate.bytes <= 1024), "{p:?}");
        // Deterministic.
        assert_eq!(
            p,
            plan(&base, &layout, &cands, TimeKind::MeanOverRanks, 6).unwrap()
        );
    }
}
