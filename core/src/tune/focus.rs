//! A further launch of a tune (`tune --focus CSV...`): the earlier
//! launches' samples decide, as the table builder would, which points are
//! still open ([`PointDecision::further`]: an interval that straddles the
//! minimum gain, or a choice one launch made that a second must confirm),
//! and this launch measures only those points, and at each only the
//! subjects that decide it: the library's own decision (every gain is
//! measured against it), the choice, and every candidate whose interval
//! against them is open. No screening, no segment search, no new sizes
//! but the crossovers below: a later launch sharpens the decisions the first one left open instead
//! of widening the grid (a full search in every launch bisected new sizes
//! each time, so the grid grew with the launches and never settled).
//!
//! The one kind of new size: where the earlier launches' decisions
//! at two neighbouring measured sizes differ (each settled: neither open),
//! and one of the two choices is slower at the other's size by more than
//! the minimum gain, the size between them ([`crossover`]), with the
//! library's decision and the two choices only. Where a neighbour never
//! measured the other's choice, that neighbour is measured with it first
//! (a choice that a later launch moved to an algorithm measured nowhere
//! near would otherwise only ever be measured between, and the
//! neighbour's decision never met it). A first launch bisects the
//! crossovers of its fastest medians; the evidence of later launches can move a
//! choice (a tie resolved by the fixed order, a choice confirmed), and a
//! crossover no launch measured would otherwise be placed half-way by the
//! builder: one table chose Open MPI's scatter_allgather_ring from 1 B
//! measured up to 4 B unmeasured, where that algorithm stops running
//! linear and takes 60x as long.
//!
//! [`PointDecision::further`]: crate::tables::table::evidence::PointDecision::further

use std::collections::{BTreeMap, BTreeSet};

use colltune_algorithms::{AlgoSpec, Collective};

use crate::measure::record::Sample;
use crate::tables::table::build::{label_is_choice, point_decisions};
pub use crate::tables::table::evidence::Label;
use crate::tables::table::evidence::{PointDecision, Times};

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
    /// `grid` is the tune's size grid (a crossover's size is one of it
    /// where one lies between, else the geometric mean).
    pub fn from_launches(
        launches: &[&[Sample]],
        min_gain: f64,
        comm_sizes: &[u32],
        grid: &[u64],
    ) -> Focus {
        let mut f = Focus::default();
        let decided = point_decisions(launches, min_gain);
        // Crossovers between neighbouring measured sizes of one shape (the
        // neighbours first, where one has not measured the other's choice;
        // the size between once both have), only between settled
        // decisions: where either neighbour is still open it is measured
        // again anyway, and its choice may yet move (on this VM the band
        // where Open MPI's default, basic linear and chain swap places
        // launch to launch gained a size between each two at every launch,
        // each measured by the few launches left).
        let mut mids: Vec<((usize, Collective), u64, Vec<Label>)> = Vec::new();
        let mut prev: Option<(&(Collective, _, u64), &_, bool)> = None;
        for (k, v) in &decided {
            let settled = v.0.open(&v.1, label_is_choice, min_gain).is_none();
            if let Some((pk, pv, _)) =
                prev.filter(|(pk, _, was)| (pk.0, pk.1) == (k.0, k.1) && *was && settled)
            {
                if let Some(ci) = comm_sizes.iter().position(|&r| r == k.1.ranks) {
                    for (at, who) in crossover((pk.2, pv), (k.2, v), min_gain, grid) {
                        mids.push(((ci, k.0), at, who));
                    }
                }
            }
            prev = Some((k, v, settled));
        }
        for ((coll, key, bytes), (d, subj)) in decided {
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
            add_new(&mut who, open.contenders);
            f.points.entry((ci, coll)).or_default().insert(bytes, who);
        }
        // Merged into the open points of the same sizes: each subject once.
        for (at, size, who) in mids {
            add_new(
                f.points.entry(at).or_default().entry(size).or_default(),
                who,
            );
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

/// What to measure where two neighbouring measured sizes `lo` < `hi` have
/// different choices `a` and `b` and the choice matters, each with its
/// subjects (the library's decision, then the two choices):
/// - a neighbour that has not measured the other's choice, first (`lo`
///   where `b` was never measured there, `hi` where `a` was not): its own
///   decision is open until it has (a choice that a later launch moved to
///   a new algorithm was never measured at the sizes around it);
/// - else the size between them, where one of the two is slower at the
///   other's size by more than `min_gain`.
///
/// None where the choices agree, where each is within `min_gain` of the
/// other at both sizes, or where no size lies between (the grid's nearest to the
/// geometric mean, else the geometric mean while the two are more than
/// [`RESOLUTION`](super::RESOLUTION) apart).
pub fn crossover(
    lo: (u64, &(PointDecision, BTreeMap<Label, Times>)),
    hi: (u64, &(PointDecision, BTreeMap<Label, Times>)),
    min_gain: f64,
    grid: &[u64],
) -> Vec<(u64, Vec<Label>)> {
    let ((lo, (dl, tl)), (hi, (dh, th))) = (lo, hi);
    let (a, b) = (&dl.choice, &dh.choice);
    if a == b || hi <= lo + 1 {
        return Vec::new();
    }
    // How much slower `other` is than `mine` where `mine` was chosen (not
    // measured there: unknown, so the crossover is measured).
    let loss =
        |t: &BTreeMap<Label, Times>, mine: &Label, other: &Label| match (t.get(mine), t.get(other))
        {
            (Some(m), Some(o)) => o.median() / m.median() - 1.0,
            _ => f64::INFINITY,
        };
    if loss(tl, a, b) <= min_gain && loss(th, b, a) <= min_gain {
        return Vec::new();
    }
    let mut who: Vec<Label> = Vec::new();
    let refs = [
        (dl.library_reference, &dl.reference),
        (dh.library_reference, &dh.reference),
    ];
    add_new(
        &mut who,
        refs.into_iter()
            .filter(|(is, _)| *is)
            .map(|(_, r)| r.clone())
            .chain([a.clone(), b.clone()]),
    );
    let unmeasured: Vec<u64> = [(lo, tl, b), (hi, th, a)]
        .into_iter()
        .filter(|(_, t, other)| !t.contains_key(*other))
        .map(|(at, _, _)| at)
        .collect();
    if !unmeasured.is_empty() {
        return unmeasured.into_iter().map(|at| (at, who.clone())).collect();
    }
    super::between(lo, hi, grid)
        .map(|mid| vec![(mid, who)])
        .unwrap_or_default()
}

/// Appends the labels `who` lacks, in order, each once.
fn add_new(who: &mut Vec<Label>, labels: impl IntoIterator<Item = Label>) {
    for l in labels {
        if !who.contains(&l) {
            who.push(l);
        }
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
