//! The budget where the decision is uncertain: after the planned sweep,
//! further rounds of measurement only at the points whose decision is still
//! open ([`PointDecision::open`]: a candidate's interval straddles the
//! minimum gain against the kept reference, or a candidate seems faster
//! than the choice by more than it without the interval showing it), and
//! only of the subjects that decide it, until every point is resolved, the
//! rounds are spent or the budget is. The one loop, [`until_resolved`],
//! serves the measured and simulated tune (a round: further runs inside the
//! launch, [`Search::resolve`]) and the simulated benchmark (a round: one
//! further launch, [`super::noise_bench`]); the job scripts spend further
//! launches at the sizes a table lists as unresolved
//! (`colltune table unresolved --sizes`).
//!
//! **A round of the tune** gives every contender at every open size
//! `full_runs` further full-budget runs, numbered on from the size's last,
//! the candidates interleaved within each run as in the sweep. Runs inside
//! one launch narrow its conservative prediction interval (`t(runs - 1) *
//! sd * sqrt(1 + 1/runs)`) but not the launch-to-launch noise, which only
//! further launches (the job scripts') can average out.

use std::collections::BTreeMap;

use crate::tables::table::build::label_is_choice;
use crate::tables::table::evidence::{decide, Further, Label, Open, Times};

use super::focus::label_of;
use super::{Candidate, Oracle, Search, TuneError};

/// Where measurement happens, one round at a time.
pub trait Rounds {
    /// Names a point (a size; a size of one communicator and collective).
    type Point: Clone + Ord;
    type Error;
    /// The points whose decision is open now.
    fn open(&mut self) -> Vec<(Self::Point, Open)>;
    /// Measures one round at these points (their contenders only). False:
    /// the budget is spent (nothing more can be measured).
    fn spend(&mut self, open: &[(Self::Point, Open)]) -> Result<bool, Self::Error>;
}

/// What the rounds did.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome<P> {
    pub rounds: u32,
    /// Per point, the rounds it got.
    pub spent: BTreeMap<P, u32>,
    /// The points still open at the end.
    pub left: Vec<(P, Open)>,
    /// The budget ran out before the rounds or the open points did.
    pub budget_spent: bool,
}

impl<P: Ord> Outcome<P> {
    /// Points that got rounds and are no longer open.
    pub fn resolved(&self) -> usize {
        self.spent
            .keys()
            .filter(|p| !self.left.iter().any(|(q, _)| q == *p))
            .count()
    }
}

/// Spends up to `max_rounds` rounds on the open points, re-evaluating after
/// each: stops when none is open, the rounds are spent, or `spend` says the
/// budget is.
pub fn until_resolved<R: Rounds>(
    r: &mut R,
    max_rounds: u32,
) -> Result<Outcome<R::Point>, R::Error> {
    let mut out = Outcome {
        rounds: 0,
        spent: BTreeMap::new(),
        left: r.open(),
        budget_spent: false,
    };
    while !out.left.is_empty() && out.rounds < max_rounds {
        if !r.spend(&out.left)? {
            out.budget_spent = true;
            break;
        }
        out.rounds += 1;
        for (p, _) in &out.left {
            *out.spent.entry(p.clone()).or_default() += 1;
        }
        out.left = r.open();
    }
    Ok(out)
}

/// A tune's further rounds, summed over its searches, for the provenance.
pub fn further<P: Ord>(outcomes: &[(Outcome<P>, u32)]) -> Option<Further> {
    let mut f = Further::default();
    for (o, runs) in outcomes {
        f.rounds = f.rounds.max(o.rounds);
        f.runs += runs;
        f.sizes += o.spent.len() as u32;
        f.resolved += o.resolved() as u32;
        f.budget_spent |= o.budget_spent;
    }
    (f.sizes > 0).then_some(f)
}

impl<O: Oracle> Search<'_, O> {
    /// The subjects measured at `bytes`, as the table builder sees one
    /// launch's samples.
    fn subjects(&self, bytes: u64) -> BTreeMap<Label, (Candidate, Times)> {
        let mut out = BTreeMap::new();
        let exact = self.oracle.exact();
        for (c, runs) in self.data.get(&bytes).into_iter().flatten() {
            let mut t = Times {
                simulated: exact,
                ..Times::default()
            };
            for (&run, v) in runs {
                t.runs.insert((0, run), v.clone());
            }
            out.insert(label_of(c), (c.clone(), t));
        }
        out
    }

    /// Further rounds where the decision is open (see the module
    /// documentation), after [`Search::run`]: none without a minimum gain
    /// (`--no-evidence`), with `extra_rounds` 0, or once the search was cut
    /// short. Returns what the rounds did and the runs they measured.
    pub fn resolve(&mut self) -> Result<(Outcome<u64>, u32), TuneError> {
        let none = Outcome {
            rounds: 0,
            spent: BTreeMap::new(),
            left: Vec::new(),
            budget_spent: self.cut_short,
        };
        let Some(min_gain) = self.settings.min_gain else {
            return Ok((none, 0));
        };
        if self.cut_short || self.settings.exhaustive {
            return Ok((none, 0));
        }
        let max = self.settings.extra_rounds;
        let mut r = SearchRounds {
            search: self,
            min_gain,
            runs: 0,
        };
        let out = until_resolved(&mut r, max)?;
        let runs = r.runs;
        Ok((out, runs))
    }
}

struct SearchRounds<'s, 'a, O: Oracle> {
    search: &'s mut Search<'a, O>,
    min_gain: f64,
    runs: u32,
}

impl<O: Oracle> Rounds for SearchRounds<'_, '_, O> {
    type Point = u64;
    type Error = TuneError;

    fn open(&mut self) -> Vec<(u64, Open)> {
        let s = &self.search;
        let Some(coll) = s.cands.first().map(|c| c.collective) else {
            return Vec::new();
        };
        s.data
            .keys()
            .filter_map(|&b| {
                let subj: BTreeMap<Label, Times> = s
                    .subjects(b)
                    .into_iter()
                    .map(|(l, (_, t))| (l, t))
                    .collect();
                let d = decide(coll, b, &subj, label_is_choice, self.min_gain)?;
                d.open(&subj, label_is_choice, self.min_gain)
                    .map(|o| (b, o))
            })
            .collect()
    }

    fn spend(&mut self, open: &[(u64, Open)]) -> Result<bool, TuneError> {
        let per_round = self.search.settings.full_runs.max(1);
        for (bytes, o) in open {
            let subj = self.search.subjects(*bytes);
            let cands: Vec<Candidate> = o
                .contenders
                .iter()
                .filter_map(|l| subj.get(l).map(|(c, _)| c.clone()))
                .collect();
            let last = subj
                .values()
                .flat_map(|(_, t)| t.runs.keys().map(|k| k.1))
                .max()
                .unwrap_or(0);
            for run in last + 1..=last + per_round {
                if !self.search.measure(*bytes, &cands, run, 1.0)? {
                    return Ok(false);
                }
                self.runs += cands.len() as u32;
            }
        }
        Ok(true)
    }
}
