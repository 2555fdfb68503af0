//! The gain of a candidate over the reference at one point and its
//! interval, by what was measured ([`Basis`]): over launches, over the
//! runs of one launch, over the samples of one run (the module above
//! says why each is computed as it is).
//!
//! ```text
//! reference times  \
//!                   > paired log ratios -> mean, t interval -> Gain
//! candidate times  /   (per launch, per run or per sample)
//! ```

use std::collections::BTreeMap;

use super::Times;
use crate::measure::stats;

/// How an interval was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Basis {
    Launches,
    /// Launches, each one's ratio pooled over a point and its neighbour
    /// ([`pooled_gain`]).
    Pooled,
    RunsOfOneLaunch,
    SamplesOfOneRun,
    /// Predicted by a model (simulated samples: deterministic); the
    /// interval's half-width on the log scale is `ln(1 + fit error)`, the
    /// model's own fit error (0 where none was given).
    Model,
    /// Too little to pair: unbounded.
    Nothing,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Launches => "launches",
            Basis::Pooled => "launches, pooled with the neighbouring size",
            Basis::RunsOfOneLaunch => "runs of one launch",
            Basis::SamplesOfOneRun => "samples of one run",
            Basis::Model => "model",
            Basis::Nothing => "too few to pair",
        }
    }
}

/// A candidate's gain over the reference at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct Gain {
    /// reference / candidate - 1, the point estimate.
    pub gain: f64,
    pub low: f64,
    pub high: f64,
    /// Launches that measured both.
    pub launches: u32,
    /// Runs of the candidate in those launches.
    pub runs: u32,
    pub basis: Basis,
}

impl Gain {
    pub fn clears(&self, min_gain: f64) -> bool {
        self.low > min_gain
    }
    /// The interval straddles the minimum gain: more measurement could
    /// change the decision.
    pub fn straddles(&self, min_gain: f64) -> bool {
        self.low <= min_gain && self.high > min_gain
    }
}

/// Two-sided 97.5% quantile of Student's t with `df` degrees of freedom.
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        d if d <= 30 => T[d - 1],
        d => 1.96 + 2.4 / d as f64,
    }
}

/// The rank k (1: the smallest) of the order statistic of `n` independent
/// replicates that is a 97.5% lower confidence bound of their median,
/// distribution-free: the largest k with P(Binomial(n, 1/2) < k) <= 2.5%
/// (the sign test). None below 6 replicates (all 5 above a value happen
/// by chance with 1/32 > 2.5%).
pub fn order_low(n: usize) -> Option<usize> {
    // P(Binomial(n, 1/2) = i), summed from i = 0
    let (mut term, mut below, mut k) = (0.5f64.powi(n as i32), 0.0, 0);
    for i in 0..n {
        below += term;
        if below > 0.025 {
            break;
        }
        k = i + 1;
        term *= (n - i) as f64 / (i + 1) as f64;
    }
    (k > 0).then_some(k)
}

pub(super) fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var.sqrt())
}

fn ln_ratio(r: &[f64], x: &[f64]) -> Option<f64> {
    let (a, b) = (stats::median(r), stats::median(x));
    (a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()).then(|| (a / b).ln())
}

/// The gain of `x` over the reference `r` at one point (see the module
/// documentation for the interval); None where no launch measured both.
pub fn gain(r: &Times, x: &Times) -> Option<Gain> {
    let rl = r.launches();
    let common: Vec<usize> = x
        .launches()
        .into_iter()
        .filter(|l| rl.contains(l))
        .collect();
    if common.is_empty() {
        return None;
    }
    let runs = x.runs.keys().filter(|k| common.contains(&k.0)).count() as u32;
    let launches = common.len() as u32;
    let make = |m: f64, half: f64, basis: Basis| Gain {
        gain: m.exp() - 1.0,
        low: (m - half).exp() - 1.0,
        high: if half.is_finite() {
            (m + half).exp() - 1.0
        } else {
            f64::INFINITY
        },
        launches,
        runs,
        basis,
    };
    let unbounded = |m: f64| Gain {
        low: -1.0,
        ..make(m, f64::INFINITY, Basis::Nothing)
    };
    if r.simulated && x.simulated {
        let all = |t: &Times| -> Vec<f64> { common.iter().flat_map(|&l| t.of_launch(l)).collect() };
        let m = ln_ratio(&all(r), &all(x))?;
        let half = (1.0 + r.fit_error.max(x.fit_error)).ln();
        return Some(make(m, half, Basis::Model));
    }
    if common.len() >= 2 {
        let v: Vec<f64> = common
            .iter()
            .filter_map(|&l| ln_ratio(&r.of_launch(l), &x.of_launch(l)))
            .collect();
        if v.len() < 2 {
            return v.first().map(|&m| unbounded(m));
        }
        return Some(over_launches(&v, runs, Basis::Launches));
    }
    let l = common[0];
    let paired: Vec<f64> = x
        .runs
        .range((l, 0)..=(l, u32::MAX))
        .filter_map(|(k, xs)| r.runs.get(k).and_then(|rs| ln_ratio(rs, xs)))
        .collect();
    if paired.len() >= 2 {
        let (m, sd) = mean_sd(&paired);
        let n = paired.len() as f64;
        let half = t975(paired.len() - 1) * sd * (1.0 + 1.0 / n).sqrt();
        return Some(make(m, half, Basis::RunsOfOneLaunch));
    }
    let (rs, xs) = (r.of_launch(l), x.of_launch(l));
    let m = ln_ratio(&rs, &xs)?;
    if rs.len() < 3 || xs.len() < 3 {
        return Some(unbounded(m));
    }
    let robust_var = |v: &[f64]| {
        let logs: Vec<f64> = v.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
        let med = stats::median(&logs);
        let s = 1.4826 * stats::mad(&logs, med);
        s * s
    };
    let half = 1.96 * (robust_var(&rs) + robust_var(&xs)).sqrt();
    Some(make(m, half, Basis::SamplesOfOneRun))
}

/// The interval over per-launch log ratios `v` (two or more): Student's t,
/// its lower end raised to the sign test's order statistic where that is
/// higher (the module documentation).
fn over_launches(v: &[f64], runs: u32, basis: Basis) -> Gain {
    let (m, sd) = mean_sd(v);
    let half = t975(v.len() - 1) * sd / (v.len() as f64).sqrt();
    let mut low = m - half;
    if let Some(k) = order_low(v.len()) {
        let mut sorted = v.to_vec();
        sorted.sort_by(f64::total_cmp);
        low = low.max(sorted[k - 1]);
    }
    Gain {
        gain: m.exp() - 1.0,
        low: low.exp() - 1.0,
        high: (m + half).exp() - 1.0,
        launches: v.len() as u32,
        runs,
        basis,
    }
}

/// The gain of a candidate over the reference at neighbouring points
/// taken as one (each pair: a point's reference and candidate): per
/// launch, the mean of its log ratios at the points it measured both,
/// then the interval over launches as [`gain`] makes it. It assumes the
/// points share one gain, so it is used only where a rule's own measured
/// size supports it ([`Basis::Pooled`]). None with fewer than two launches
/// or on simulated samples (predicted: nothing to pool).
pub fn pooled_gain(pairs: &[(&Times, &Times)]) -> Option<Gain> {
    let mut by: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut runs = 0u32;
    for (r, x) in pairs {
        if r.simulated || x.simulated {
            return None;
        }
        let rl = r.launches();
        for l in x.launches().into_iter().filter(|l| rl.contains(l)) {
            if let Some(v) = ln_ratio(&r.of_launch(l), &x.of_launch(l)) {
                by.entry(l).or_default().push(v);
                runs += x.runs.range((l, 0)..=(l, u32::MAX)).count() as u32;
            }
        }
    }
    let v: Vec<f64> = by
        .values()
        .map(|v| v.iter().sum::<f64>() / v.len() as f64)
        .collect();
    (v.len() >= 2).then(|| over_launches(&v, runs, Basis::Pooled))
}
