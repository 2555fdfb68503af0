//! A further launch of a tune (`tune --focus CSV...`): the earlier
//! launches' samples decide, as the table builder would, which points are
//! still open ([`PointDecision::further`]: an interval that straddles the
//! minimum gain, or a choice one launch made that a second must confirm),
//! and this launch measures only those points, and at each only the
//! subjects that decide it: the library's own decision (every gain is
//! measured against it), the choice, and every candidate whose interval
//! against them is open. No screening, no segment search, no new sizes:
//! a later launch sharpens the decisions the first one left open instead
//! of widening the grid (a full search in every launch bisected new sizes
//! each time, so the grid grew with the launches and never settled).
//!
//! [`PointDecision::further`]: crate::tables::table::evidence::PointDecision::further

use std::collections::{BTreeMap, BTreeSet};

use colltune_algorithms::{AlgoSpec, Collective};

use crate::measure::record::Sample;
use crate::tables::table::build::{label_is_choice, point_decisions};
pub use crate::tables::table::evidence::Label;

use super::Candidate;

/// The open points of earlier launches, per communicator (by its index in
/// this tune) and collective: per size, the subjects to measure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Focus {
    points: BTreeMap<(usize, Collective), BTreeMap<u64, Vec<Label>>>,
    /// Open points of communicator sizes this tune does not measure.
    pub elsewhere: usize,
}

impl Focus {
    /// From the earlier launches (one slice of samples each), judged with
    /// `min_gain`; `comm_sizes[i]` is the size of this tune's communicator
    /// `i`.
    pub fn from_launches(launches: &[&[Sample]], min_gain: f64, comm_sizes: &[u32]) -> Focus {
        let mut f = Focus::default();
        for ((coll, key, bytes), (d, subj)) in point_decisions(launches, min_gain) {
            let Some(open) = d.further(&subj, label_is_choice, min_gain) else {
                continue;
            };
            let Some(ci) = comm_sizes.iter().position(|&r| r == key.ranks) else {
                f.elsewhere += 1;
                continue;
            };
            // The reference first (gains are measured against it in the
            // same launch), then the contenders, each once.
            let mut who: Vec<Label> = d
                .library_reference
                .then(|| d.reference.clone())
                .into_iter()
                .collect();
            for l in open.contenders {
                if !who.contains(&l) {
                    who.push(l);
                }
            }
            f.points.entry((ci, coll)).or_default().insert(bytes, who);
        }
        f
    }

    /// The open sizes of communicator `ci` and `coll`, with their subjects.
    pub fn at(&self, ci: usize, coll: Collective) -> Option<&BTreeMap<u64, Vec<Label>>> {
        self.points.get(&(ci, coll))
    }

    /// Every open size, of any communicator and collective.
    pub fn sizes(&self) -> Vec<u64> {
        let s: BTreeSet<u64> = self
            .points
            .values()
            .flat_map(|m| m.keys().copied())
            .collect();
        s.into_iter().collect()
    }

    /// Open points in all.
    pub fn len(&self) -> usize {
        self.points.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The subject label a candidate's samples carry.
pub(super) fn label_of(c: &Candidate) -> Label {
    (c.spec.to_string(), c.exec_name().to_string())
}

/// The candidate of `cands` that `label` names: itself, or a segmented one
/// at the segment an earlier launch's segment search chose. None: not
/// offered in this launch (another execution, say).
pub(super) fn candidate_of(cands: &[Candidate], label: &Label) -> Option<Candidate> {
    if let Some(c) = cands.iter().find(|c| label_of(c) == *label) {
        return Some(c.clone());
    }
    let seg = AlgoSpec::parse(&label.0).ok()?.int("segment").ok()?;
    cands
        .iter()
        .filter(|c| c.segment().is_some())
        .map(|c| c.with_segment(seg))
        .find(|c| label_of(c) == *label)
}
