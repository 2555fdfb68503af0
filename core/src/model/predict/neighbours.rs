//! The measured set against itself: how well the winner measured at the
//! neighbouring rank count (same size) names a point's winner, scored as
//! [`super::check`] scores the model. A yardstick for the model's line,
//! not a bound on it: where a set's winners change between neighbouring
//! rank counts (its steps, its noise: a run that drew a slow spell), no
//! smooth model follows them either.
//!
//! For each point with two forced algorithms or more, each of its two
//! neighbours (the next rank count below and above measured at the same
//! size with two or more of the same algorithms) gives one guess: its own
//! measured winner among the algorithms both measured. A guess agrees as
//! a prediction does ([`super::AGREE_WITHIN`]); its regret is the point's
//! time of the guessed algorithm over the point's best of the same
//! algorithms.

use super::{Measured, AGREE_WITHIN};
use crate::measure::stats::geomean;
use std::collections::BTreeMap;

/// The neighbours' guesses, scored.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbours {
    /// Guesses scored (up to two a point).
    pub guesses: usize,
    /// Points with at least one guess.
    pub points: usize,
    pub agreement: f64,
    pub regret_geomean: f64,
    pub regret_worst: f64,
}

impl Neighbours {
    /// The line `predict` prints before its last.
    pub fn line(&self) -> String {
        format!(
            "the set against itself: the winner measured at the next rank count (same size) agrees at {:.0}% of {} guesses on {} points; regret geomean {:.2}, worst {:.2} (the set's own steps and noise between neighbours: a yardstick for the line below)",
            100.0 * self.agreement,
            self.guesses,
            self.points,
            self.regret_geomean,
            self.regret_worst
        )
    }
}

/// The forced algorithms of each point (the default, 0, left out), by size
/// then rank count.
fn forced_by_size(meas: &Measured) -> BTreeMap<u64, BTreeMap<usize, BTreeMap<u32, f64>>> {
    let mut out: BTreeMap<u64, BTreeMap<usize, BTreeMap<u32, f64>>> = BTreeMap::new();
    for (&(ranks, bytes), algs) in meas {
        let forced = super::forced(algs);
        if forced.len() >= 2 {
            out.entry(bytes).or_default().insert(ranks, forced);
        }
    }
    out
}

/// The winner of `by` among `among` (the first of equals).
fn winner(by: &BTreeMap<u32, f64>, among: &[u32]) -> u32 {
    among
        .iter()
        .copied()
        .min_by(|a, b| by[a].total_cmp(&by[b]))
        .expect("two algorithms or more")
}

/// `meas` scored against its own neighbouring rank counts; None where no
/// point has a neighbour (one rank count a size).
pub fn score(meas: &Measured) -> Option<Neighbours> {
    let mut regrets = Vec::new();
    let (mut agree, mut points) = (0, 0);
    for by_ranks in forced_by_size(meas).values() {
        let ranks: Vec<usize> = by_ranks.keys().copied().collect();
        for (i, r) in ranks.iter().enumerate() {
            let here = &by_ranks[r];
            let mut guessed = false;
            let near = [i.checked_sub(1), Some(i + 1).filter(|&j| j < ranks.len())];
            for j in near.into_iter().flatten() {
                let there = &by_ranks[&ranks[j]];
                let common: Vec<u32> = here
                    .keys()
                    .copied()
                    .filter(|a| there.contains_key(a))
                    .collect();
                if common.len() < 2 {
                    continue;
                }
                let (guess, best) = (winner(there, &common), winner(here, &common));
                let regret = here[&guess] / here[&best];
                agree += usize::from(guess == best || regret <= AGREE_WITHIN);
                regrets.push(regret);
                guessed = true;
            }
            points += usize::from(guessed);
        }
    }
    (!regrets.is_empty()).then(|| Neighbours {
        guesses: regrets.len(),
        points,
        agreement: agree as f64 / regrets.len() as f64,
        regret_geomean: geomean(&regrets),
        regret_worst: regrets.iter().copied().fold(1.0, f64::max),
    })
}
