//! The evidence behind a table's decision at one measured size: each
//! candidate's gain over the *reference* (the MPI library's own decision,
//! its default call, at that size) with a 95% confidence interval whose
//! unit of replication is the **launch** (a separate `mpirun`, one CSV),
//! and the decision that evidence supports. MPI-free.
//!
//! **Gain.** `reference time / candidate time - 1` (0.10: the candidate
//! takes 1/1.1 of the library's time), estimated on the log scale and
//! *paired*: a launch's machine state slows every subject it measures
//! alike, so the ratio is taken within each launch (each run, each
//! sample) before anything is averaged.
//!
//! **The interval**, by what was measured (the `basis` a rule records):
//! - `launches` (two or more launches measured both): the per-launch log
//!   ratios (each launch's median over median) are the replicates;
//!   Student's t with launches - 1 degrees of freedom. Launches come in
//!   states (on this VM Open MPI's default takes 1.1-1.9x basic linear's
//!   time in some launches and 10x in others), and a mixture of states
//!   makes t's interval wide where every launch agrees on the sign: so the
//!   lower end is the higher of t's and a distribution-free one, the
//!   order statistic of the launches' ratios that bounds their median
//!   ([`order_low`]: the smallest of 6-8 launches, the second smallest of
//!   9-11, ...). Each is a 97.5% lower bound (of the mean, of the median
//!   launch), so the higher holds with at least 95% (Bonferroni); the
//!   upper end stays t's.
//! - `launches, pooled with the neighbouring size` ([`pooled_gain`]): the
//!   same over launches whose ratio is the mean of the log ratios at a
//!   size and its neighbour; only for a size that takes a neighbour's
//!   choice (`build::pooled_decisions`).
//! - `runs of one launch`: runs inside a launch share its state and are
//!   not independent, so their spread says little about the next launch.
//!   Conservatively, the interval is a *prediction* interval for one more
//!   run (t with runs - 1 degrees of freedom, half-width
//!   `t * sd * sqrt(1 + 1/runs)`), not the confidence interval of their
//!   mean, about `sqrt(runs + 1)` times wider: a launch is treated as no
//!   better known than a single run of it.
//! - `samples of one run`: one run alone; the interval spans 1.96 robust
//!   standard deviations (1.4826 MAD of the log samples) of each subject
//!   combined, again a prediction for one sample, not the mean's.
//! - `model`: predicted, not measured (simulated samples: a model is
//!   deterministic, so nothing repeats to give an interval). The interval
//!   is the model's own fit error `e` (`table build --fit-error`: the
//!   median relative time error of its predictions against measurements
//!   it did not see, as `predict` prints it) taken as the uncertainty of
//!   the predicted ratio: `ln(1 + e)` either side of the log gain, so a
//!   prediction replaces the library's decision only where it predicts a
//!   gain beyond the minimum gain *and* the fit error. Without a fit error
//!   the half-width is 0 (the predictions taken as exact, the tables
//!   before this basis did so under the name `exact`).
//! - With fewer than 2 launches, 2 runs or 3 samples of each to pair, the
//!   interval is unbounded: nothing is decided on it.
//!
//! **The decision** ([`decide`]): a candidate *clears* where its interval's
//! lower end exceeds the minimum gain (default 3%, `--min-gain`). Where
//! none clears, the table hands the call to the library (the reference).
//! Where some do, the *tied* are the clearing candidates that no other
//! clearing candidate is shown faster than by more than the minimum gain
//! (on the two's own paired interval, as the gains are computed: its lower
//! end above the minimum gain), and a fixed order picks among them: the
//! library's own algorithms first (unsegmented first), then colltune's
//! simplest ([`complexity`]: unsegmented, blocking, registry order), then
//! the label. Two tunes that cannot tell the tied candidates apart so
//! write the same rule.

use std::collections::BTreeMap;

use colltune_algorithms::{AlgoSpec, Collective};

use super::CommKey;
use crate::measure::record::Sample;
use crate::measure::stats;

mod gain;
mod record;

pub use gain::*;
pub use record::*;

/// The default minimum gain a rule must clear (`--min-gain`).
pub const DEFAULT_MIN_GAIN: f64 = 0.03;
/// The intervals' confidence (two-sided).
pub const CONFIDENCE: f64 = 0.95;

/// A subject: (spec, execution).
pub type Label = (String, String);

/// One subject's times at one point: per (launch, run), its samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Times {
    pub runs: BTreeMap<(usize, u32), Vec<f64>>,
    /// Simulated samples (deterministic).
    pub simulated: bool,
    /// The model's fit error (relative), for simulated samples: the
    /// half-width of a [`Basis::Model`] interval (0: not given).
    pub fit_error: f64,
}

impl Times {
    fn launches(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.runs.keys().map(|k| k.0).collect();
        v.dedup();
        v
    }
    fn of_launch(&self, l: usize) -> Vec<f64> {
        self.runs
            .range((l, 0)..=(l, u32::MAX))
            .flat_map(|(_, v)| v.iter().copied())
            .collect()
    }
    pub fn median(&self) -> f64 {
        let all: Vec<f64> = self.runs.values().flatten().copied().collect();
        stats::median(&all)
    }
}

/// Every subject (the library's baseline included) at every point.
pub type PointTimes = BTreeMap<(Collective, CommKey, u64), BTreeMap<Label, Times>>;

/// Collects the samples of several launches (one slice each) per point
/// and subject.
pub fn point_times(launches: &[&[Sample]]) -> PointTimes {
    let mut out: PointTimes = BTreeMap::new();
    for (l, samples) in launches.iter().enumerate() {
        for s in samples.iter() {
            let Some(c) = s.collective() else { continue };
            let key = CommKey::of(s);
            let t = out
                .entry((c, key, s.bytes))
                .or_default()
                .entry((s.spec.clone(), s.execution.clone()))
                .or_default();
            t.simulated |= s.source.starts_with("simulated");
            t.runs.entry((l, s.run)).or_default().push(s.time_us);
        }
    }
    out
}

/// Whether a subject is the library's own decision: its default call
/// (`mpi`), Open MPI's algorithm 0, MPICH's `auto`.
pub fn is_reference(label: &Label) -> bool {
    label.1 == crate::libraries::ompi::LIBRARY_EXECUTION
        && (label.0 == "mpi"
            || colltune_algorithms::AlgoSpec::parse(&label.0)
                .ok()
                .and_then(|s| crate::libraries::library::LibraryChoice::from_spec(&s).ok())
                .is_some_and(|f| f.is_default()))
}

/// How simple a choice is, smaller first: segmented parameters (nested
/// algorithms count their own), nonblocking execution, registry order.
pub fn complexity(collective: Collective, spec: &str, execution: &str) -> u64 {
    fn segmented(s: &AlgoSpec) -> u64 {
        s.params
            .iter()
            .map(|(k, v)| match v {
                colltune_algorithms::ParamValue::Int(n) if k == "segment" && *n > 0 => 1,
                colltune_algorithms::ParamValue::Algo(a) => segmented(a),
                _ => 0,
            })
            .sum()
    }
    let parsed = AlgoSpec::parse(spec).ok();
    let seg = parsed.as_ref().map(segmented).unwrap_or(0);
    let order = parsed
        .and_then(|p| colltune_algorithms::algorithms(collective).position(|a| a.name == p.name))
        .unwrap_or(99)
        .min(99) as u64;
    LIBRARY_FIRST_ABOVE + seg * 1000 + u64::from(execution == "nonblocking") * 100 + order
}

/// Complexities below this are the library's algorithms where they are
/// within the tolerance floor of the fastest (`build::noise::complexity_at`).
pub(super) const LIBRARY_FIRST_ABOVE: u64 = 10;

/// The fixed order among tied choices, smaller first: the library's own
/// algorithms (its default call first, then unsegmented), then colltune's
/// by [`complexity`], then the label.
pub fn order_key(c: Collective, label: &Label) -> (u8, u64, Label) {
    let lib = label.1 == crate::libraries::ompi::LIBRARY_EXECUTION;
    let rank = if is_reference(label) {
        0
    } else if lib {
        1
    } else {
        2
    };
    (rank, complexity(c, &label.0, &label.1), label.clone())
}

/// What the evidence supports at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct PointDecision {
    pub bytes: u64,
    /// The choice: a clearing candidate, or the reference.
    pub choice: Label,
    /// The reference the gains are measured against (the library's own
    /// decision, or the simplest measured subject where the library's call
    /// was not measured).
    pub reference: Label,
    /// Whether the reference is the library's own decision.
    pub library_reference: bool,
    /// The chosen candidate's gain; where the reference is kept, the best
    /// other candidate's (why it was not chosen), if any.
    pub evidence: Option<(Label, Gain)>,
    /// Candidates whose interval straddles the minimum gain.
    pub unresolved: Vec<(Label, Gain)>,
    /// Candidates tied with the choice (the fixed order picked it).
    pub tied: usize,
    /// The others of the tie, by label (none where the reference is kept).
    pub tied_with: Vec<Label>,
}

impl PointDecision {
    pub fn keeps_reference(&self) -> bool {
        self.choice == self.reference
    }

    /// Whether more measurement could change this decision, and between
    /// which subjects ([`Open`]); None where it is resolved.
    /// - The reference is kept and a candidate's gain over it straddles the
    ///   minimum gain ([`Gain::straddles`]).
    /// - A choice was made and another candidate's estimate over it is
    ///   above the minimum gain: the fixed order may have picked among
    ///   candidates the measurement cannot yet tell apart although one
    ///   seems faster by more than the minimum gain; or one is shown
    ///   faster than the choice (its interval's lower end above the
    ///   minimum gain too) but has not yet cleared the reference, whose
    ///   own noise can be the wider (a run here: Open MPI's basic linear
    ///   kept at 304 B and 1 KiB against shm 6x faster, shm measured in
    ///   no later launch). Candidates merely within each other's noise
    ///   (the estimate below the minimum gain) are a tie, resolved by the
    ///   order.
    pub fn open(
        &self,
        subjects: &BTreeMap<Label, Times>,
        choosable: impl Fn(&Label) -> bool,
        min_gain: f64,
    ) -> Option<Open> {
        let best = |v: &[(Label, Gain)]| {
            v.iter()
                .max_by(|a, b| a.1.gain.total_cmp(&b.1.gain).then(b.0.cmp(&a.0)))
                .cloned()
        };
        let (against, straddling) = if self.keeps_reference() {
            (&self.reference, self.unresolved.clone())
        } else {
            let mine = subjects.get(&self.choice)?;
            let v: Vec<(Label, Gain)> = subjects
                .iter()
                .filter(|(l, _)| **l != self.choice && choosable(l) && !is_reference(l))
                .filter_map(|(l, t)| gain(mine, t).map(|g| (l.clone(), g)))
                .filter(|(_, g)| g.gain > min_gain)
                .collect();
            (&self.choice, v)
        };
        let (candidate, g) = best(&straddling)?;
        let mut contenders = vec![against.clone()];
        contenders.extend(straddling.into_iter().map(|(l, _)| l));
        // The rest of the tie the fixed order picked the choice from: the
        // next pick among them must rest on the same launches (measured
        // apart, the pick moved from one thinly measured member to the next,
        // launch after launch, while a faster candidate waited).
        for l in &self.tied_with {
            if !contenders.contains(l) {
                contenders.push(l.clone());
            }
        }
        Some(Open {
            candidate,
            gain: g,
            against: against.clone(),
            tie: !self.keeps_reference(),
            confirm: false,
            contenders,
        })
    }

    /// A choice that replaces the reference on the evidence of one launch
    /// (its runs or its samples): the launch is the unit of replication, and
    /// one launch's state (a sweep that saw every run of the reference
    /// slow) can repeat itself in every run of it. Such a choice waits for
    /// a second launch to confirm it: an [`Open`] with `confirm`, between
    /// the reference and the choice. None where the choice rests on
    /// launches, is predicted by a model, or keeps the reference.
    pub fn unconfirmed(&self) -> Option<Open> {
        if self.keeps_reference() {
            return None;
        }
        let (label, g) = self.evidence.as_ref()?;
        if !matches!(g.basis, Basis::RunsOfOneLaunch | Basis::SamplesOfOneRun) {
            return None;
        }
        Some(Open {
            candidate: label.clone(),
            gain: g.clone(),
            against: self.reference.clone(),
            tie: false,
            confirm: true,
            contenders: vec![self.reference.clone(), label.clone()],
        })
    }

    /// What a further *launch* could change here: an [`open`](Self::open)
    /// decision, else an [`unconfirmed`](Self::unconfirmed) one. Further
    /// runs inside a launch cannot confirm a choice (they share the
    /// launch's state), so the tuner's in-launch rounds use `open` alone.
    pub fn further(
        &self,
        subjects: &BTreeMap<Label, Times>,
        choosable: impl Fn(&Label) -> bool,
        min_gain: f64,
    ) -> Option<Open> {
        self.open(subjects, choosable, min_gain)
            .or_else(|| self.unconfirmed())
    }
}

/// A decision more measurement could change ([`PointDecision::open`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Open {
    /// The candidate most likely to change it, and its gain over `against`.
    pub candidate: Label,
    pub gain: Gain,
    /// The reference (kept), or the choice (made).
    pub against: Label,
    /// A choice was made (the candidate may beat it by more than the
    /// minimum gain); false: the reference was kept.
    pub tie: bool,
    /// The candidate is the choice, made on one launch's evidence over the
    /// reference (`against`): a second launch confirms it
    /// ([`PointDecision::unconfirmed`]).
    pub confirm: bool,
    /// The subjects whose further runs can settle it: `against` first,
    /// then every candidate whose interval against it is open, then the
    /// rest of the tie the choice was picked from.
    pub contenders: Vec<Label>,
}

/// The decision at one point from every subject measured there (the
/// library's baseline included); `choices` says which subjects a table may
/// choose. None where nothing measured can be chosen.
pub fn decide(
    c: Collective,
    bytes: u64,
    subjects: &BTreeMap<Label, Times>,
    choosable: impl Fn(&Label) -> bool,
    min_gain: f64,
) -> Option<PointDecision> {
    // The reference: the library's own decision, a choice (Open MPI's
    // algorithm 0) before the bare baseline (`mpi`); else the simplest.
    let mut refs: Vec<&Label> = subjects.keys().filter(|l| is_reference(l)).collect();
    refs.sort_by_key(|l| (!choosable(l), l.0 == "mpi"));
    let (reference, library_reference) = match refs.first() {
        Some(r) => ((*r).clone(), true),
        None => (
            subjects
                .keys()
                .filter(|l| choosable(l))
                .min_by_key(|l| order_key(c, l))?
                .clone(),
            false,
        ),
    };
    let rt = &subjects[&reference];
    let gains: Vec<(Label, Gain)> = subjects
        .iter()
        .filter(|(l, _)| **l != reference && choosable(l) && !is_reference(l))
        .filter_map(|(l, t)| gain(rt, t).map(|g| (l.clone(), g)))
        .collect();
    let unresolved: Vec<(Label, Gain)> = gains
        .iter()
        .filter(|(_, g)| g.straddles(min_gain))
        .cloned()
        .collect();
    let clearing: Vec<&(Label, Gain)> = gains.iter().filter(|(_, g)| g.clears(min_gain)).collect();
    let best_other = || {
        gains
            .iter()
            .max_by(|a, b| a.1.gain.total_cmp(&b.1.gain).then(b.0.cmp(&a.0)))
            .cloned()
    };
    let Some(leader) = clearing
        .iter()
        .max_by(|a, b| a.1.gain.total_cmp(&b.1.gain).then(b.0.cmp(&a.0)))
    else {
        return Some(PointDecision {
            bytes,
            choice: reference.clone(),
            reference,
            library_reference,
            evidence: best_other(),
            unresolved,
            tied: 0,
            tied_with: Vec::new(),
        });
    };
    // Tied: the clearing candidates no other clearing candidate is shown
    // faster than by more than the minimum gain, judged on the two
    // measured side by side (their own paired interval: the reference's
    // noise does not enter it, and a leader misjudged against the
    // reference cannot carry a slower candidate in). The leader, should
    // intervals ever exclude every candidate.
    let beaten = |x: &Label| {
        clearing.iter().any(|(y, _)| {
            y != x && gain(&subjects[x], &subjects[y]).is_some_and(|g| g.low > min_gain)
        })
    };
    let mut tied: Vec<&&(Label, Gain)> = clearing.iter().filter(|(l, _)| !beaten(l)).collect();
    if tied.is_empty() {
        tied.push(leader);
    }
    let pick = tied
        .iter()
        .min_by_key(|(l, _)| order_key(c, l))
        .expect("the leader is tied with itself");
    Some(PointDecision {
        bytes,
        choice: pick.0.clone(),
        reference,
        library_reference,
        evidence: Some((pick.0.clone(), pick.1.clone())),
        unresolved,
        tied: tied.len(),
        tied_with: tied
            .iter()
            .map(|t| t.0.clone())
            .filter(|l| *l != pick.0)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::gain::mean_sd;
    use super::*;

    fn times(launch_runs: &[(usize, u32, &[f64])]) -> Times {
        let mut t = Times::default();
        for &(l, r, v) in launch_runs {
            t.runs.insert((l, r), v.to_vec());
        }
        t
    }

    #[test]
    fn a_launch_that_stopped_half_way_is_named() {
        let full: Vec<Sample> = [1u64, 64, 4096]
            .iter()
            .map(|&b| crate::measure::record::sample("linear", "blocking", b, 1, 1.0))
            .collect();
        let half = full[..2].to_vec();
        let names = ["a.csv".to_string(), "b.csv".to_string()];
        let got = partial_launches(&[&full, &half], &names, &[None, None]);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("b.csv: bcast on 4 ranks stopped at 64 B (1 of 3"),
            "{got:?}"
        );
        assert!(partial_launches(&[&full, &full], &names, &[None, None]).is_empty());
        // a later launch asked only for the open sizes, finished: complete
        assert!(partial_launches(&[&full, &half], &names, &[None, Some(false)]).is_empty());
        // the tuner's own marker names a launch whatever it measured
        let got = partial_launches(&[&full, &full], &names, &[Some(true), None]);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("a.csv: the tuner stopped early")
                && got[0].contains("bcast on 4 ranks at 4 KiB"),
            "{got:?}"
        );
    }

    #[test]
    fn launches_are_the_replicates() {
        // three launches, the candidate 20% faster in each (ratio 1.25),
        // whatever the launch's own speed
        let r = times(&[(0, 1, &[10.0]), (1, 1, &[20.0]), (2, 1, &[15.0])]);
        let x = times(&[(0, 1, &[8.0]), (1, 1, &[16.0]), (2, 1, &[12.0])]);
        let g = gain(&r, &x).unwrap();
        assert_eq!(g.basis, Basis::Launches);
        assert_eq!((g.launches, g.runs), (3, 3));
        assert!((g.gain - 0.25).abs() < 1e-9 && (g.low - 0.25).abs() < 1e-9);
        // one launch disagreeing widens it past zero: t(2) = 4.3
        let x = times(&[(0, 1, &[8.0]), (1, 1, &[22.0]), (2, 1, &[12.0])]);
        let g = gain(&r, &x).unwrap();
        assert!(g.low < 0.0 && g.high > 0.25, "{g:?}");
    }

    #[test]
    fn the_order_statistic_bounds_the_median_launch() {
        // the sign test's ranks: 2^-n <= 2.5% from 6 launches on
        let k: Vec<Option<usize>> = (1..=12).map(order_low).collect();
        assert_eq!(
            k,
            [
                None,
                None,
                None,
                None,
                None,
                Some(1),
                Some(1),
                Some(1),
                Some(2),
                Some(2),
                Some(2),
                Some(3)
            ]
        );
        // The default of this VM's small sizes: every launch's ratio above
        // 1.2, some near 10 (two launch states). t's interval straddles
        // zero; the smallest of the six bounds the median launch at +20%.
        // (one sample per launch, the candidate's 1.0)
        let per_launch = |v: &[f64]| {
            let mut t = Times::default();
            for (l, &q) in v.iter().enumerate() {
                t.runs.insert((l, 1), vec![q]);
            }
            t
        };
        let ratios = [1.3, 10.2, 1.2, 1.5, 10.4, 1.4];
        let r = per_launch(&ratios);
        let x = per_launch(&[1.0; 6]);
        let g = gain(&r, &x).unwrap();
        let v: Vec<f64> = ratios.iter().map(|q: &f64| q.ln()).collect();
        let (m, sd) = mean_sd(&v);
        let t_low = (m - t975(5) * sd / 6f64.sqrt()).exp() - 1.0;
        assert!(t_low < 0.03, "t alone clears: {t_low}");
        assert!((g.low - 0.2).abs() < 1e-9, "{g:?}");
        assert!(g.clears(DEFAULT_MIN_GAIN));
        // five such launches: no distribution-free bound, t's alone
        let (r5, x5) = (per_launch(&ratios[..5]), per_launch(&[1.0; 5]));
        assert!(!gain(&r5, &x5).unwrap().clears(DEFAULT_MIN_GAIN));
        // one launch of six below the minimum gain: the median's bound is
        // that launch, and t's is lower still
        let mixed = [1.3, 10.2, 1.0, 1.5, 10.4, 1.4];
        assert!(!gain(&per_launch(&mixed), &x)
            .unwrap()
            .clears(DEFAULT_MIN_GAIN));
    }

    #[test]
    fn one_launch_is_conservative() {
        // runs 1% apart in the ratio: a prediction interval, wider than
        // the mean's confidence interval by sqrt(runs + 1)
        let r = times(&[(0, 1, &[10.0]), (0, 2, &[10.0]), (0, 3, &[10.0])]);
        let x = times(&[(0, 1, &[9.0]), (0, 2, &[9.1]), (0, 3, &[8.9])]);
        let g = gain(&r, &x).unwrap();
        assert_eq!(g.basis, Basis::RunsOfOneLaunch);
        let v: Vec<f64> = [9.0f64, 9.1, 8.9].iter().map(|t| (10.0 / t).ln()).collect();
        let (m, sd) = mean_sd(&v);
        let ci = t975(2) * sd / 3f64.sqrt();
        let got = (g.high + 1.0).ln() - m;
        assert!((got - ci * 2.0).abs() < 1e-9, "{got} vs {ci}");
        // one run: the samples, robustly; too few samples: unbounded
        let r1 = times(&[(0, 1, &[10.0, 10.2, 9.9, 10.1, 30.0])]);
        let x1 = times(&[(0, 1, &[8.0, 8.1, 7.9, 8.2, 8.0])]);
        let g = gain(&r1, &x1).unwrap();
        assert_eq!(g.basis, Basis::SamplesOfOneRun);
        assert!(g.low > 0.2 && g.high < 0.35, "{g:?}");
        let g = gain(&times(&[(0, 1, &[10.0])]), &times(&[(0, 1, &[5.0])])).unwrap();
        assert_eq!(
            (g.basis, g.high, g.low),
            (Basis::Nothing, f64::INFINITY, -1.0)
        );
        // nothing in common: no evidence
        assert_eq!(
            gain(&times(&[(0, 1, &[1.0])]), &times(&[(1, 1, &[1.0])])),
            None
        );
    }

    fn lab(s: &str, e: &str) -> Label {
        (s.into(), e.into())
    }

    /// Two library algorithms measured in one launch's two screening runs
    /// clear the minimum against the reference, and a candidate 7x faster
    /// than them cannot be told apart from them on those two runs: the
    /// fixed order picks a library algorithm from the tie of three. The
    /// point is open, and the next launch measures the whole tie with the
    /// faster candidate, so the pick cannot wander from one thinly measured
    /// member to the next (seen on the VM at 304 B: 8 launches, each pick a
    /// different Open MPI algorithm, `shm` 7x faster throughout).
    #[test]
    fn a_tie_of_thin_evidence_is_measured_whole() {
        let r = lab("ompi_tuned:algorithm=0,name=default,segment=0", "library");
        let k = lab("ompi_tuned:algorithm=7,name=knomial,segment=0", "library");
        let l = lab(
            "ompi_tuned:algorithm=1,name=basic_linear,segment=0",
            "library",
        );
        let s = lab("shm:segment=0,slots=2", "blocking");
        let every = |first: [f64; 2], later: f64| {
            let mut v: Vec<(usize, u32, Vec<f64>)> =
                vec![(0, 1, vec![first[0]]), (0, 2, vec![first[1]])];
            for launch in 1..4 {
                for run in 1..3 {
                    v.push((launch, run, vec![later]));
                }
            }
            let mut t = Times::default();
            for (a, b, x) in v {
                t.runs.insert((a, b), x);
            }
            t
        };
        let mut m = BTreeMap::new();
        m.insert(r.clone(), every([10.0, 10.2], 10.0));
        m.insert(k.clone(), times(&[(0, 1, &[4.0]), (0, 2, &[4.1])]));
        m.insert(l.clone(), times(&[(0, 1, &[4.2]), (0, 2, &[4.0])]));
        m.insert(s.clone(), every([0.5, 2.0], 0.6));
        let c = Collective::Bcast;
        let d = decide(c, 304, &m, |_| true, DEFAULT_MIN_GAIN).unwrap();
        assert!(d.choice == k || d.choice == l, "{d:?}");
        assert_eq!(d.tied, 3, "{d:?}");
        let o = d.open(&m, |_| true, DEFAULT_MIN_GAIN).expect("open");
        for x in [&k, &l, &s] {
            assert!(o.contenders.contains(x), "{x:?} not in {:?}", o.contenders);
        }
        assert_eq!(o.contenders[0], d.choice);
    }

    /// A candidate shown faster than the choice, which has not cleared the
    /// reference (the reference's own launches disagree), keeps the point
    /// open with it among the contenders: else no later launch measures it
    /// and the slower choice stays (seen on the VM: basic linear kept at
    /// 304 B and 1 KiB, `shm` 6x faster and measured in no later launch).
    #[test]
    fn a_candidate_faster_than_the_choice_keeps_the_point_open() {
        let r = lab("ompi_tuned:algorithm=0,name=default,segment=0", "library");
        let l = lab(
            "ompi_tuned:algorithm=1,name=basic_linear,segment=0",
            "library",
        );
        let s = lab("shm:segment=0,slots=2", "blocking");
        let mut m = BTreeMap::new();
        // the reference: 3 us in launch 0, 0.25 us in launch 1
        m.insert(
            r.clone(),
            times(&[
                (0, 1, &[3.0]),
                (0, 2, &[3.05]),
                (1, 1, &[0.25]),
                (1, 2, &[0.26]),
            ]),
        );
        // basic linear, launch 0 only: clears the reference on its runs
        m.insert(l.clone(), times(&[(0, 1, &[1.3]), (0, 2, &[1.35])]));
        // shm in both launches: 6x faster than basic linear in launch 0,
        // but against the reference's two launches its interval is wide
        m.insert(
            s.clone(),
            times(&[
                (0, 1, &[0.2]),
                (0, 2, &[0.21]),
                (1, 1, &[0.26]),
                (1, 2, &[0.27]),
            ]),
        );
        let c = Collective::Bcast;
        let d = decide(c, 304, &m, |_| true, DEFAULT_MIN_GAIN).unwrap();
        assert_eq!(d.choice, l, "{d:?}");
        let g = gain(&m[&l], &m[&s]).unwrap();
        assert!(g.low > DEFAULT_MIN_GAIN, "{g:?}");
        let o = d.open(&m, |_| true, DEFAULT_MIN_GAIN).expect("open");
        assert_eq!(o.candidate, s, "{o:?}");
        assert!(o.contenders.contains(&s) && o.contenders[0] == l, "{o:?}");
    }

    #[test]
    fn the_reference_is_kept_unless_a_gain_clears_and_ties_go_by_order() {
        let mpi = lab("mpi", "library");
        let lin = lab("linear", "blocking");
        let bin = lab("binomial:segment=0", "blocking");
        let pipe = lab("pipeline:segment=8192", "nonblocking");
        // three launches, exact ratios per launch (zero spread)
        let at = |t: f64| times(&[(0, 1, &[t]), (1, 1, &[t]), (2, 1, &[t])]);
        let mut m = BTreeMap::new();
        m.insert(mpi.clone(), at(10.0));
        m.insert(lin.clone(), at(9.8)); // +2%: does not clear 3%
        let d = decide(Collective::Bcast, 64, &m, |_| true, 0.03).unwrap();
        assert!(d.keeps_reference() && d.library_reference);
        assert_eq!(d.evidence.as_ref().unwrap().0, lin);
        // pipeline +25%, binomial +22%: tied within the minimum gain, and
        // binomial is simpler (blocking, unsegmented)
        m.insert(pipe.clone(), at(8.0));
        m.insert(bin.clone(), at(8.2));
        let d = decide(Collective::Bcast, 64, &m, |_| true, 0.03).unwrap();
        assert_eq!((d.choice.clone(), d.tied), (bin.clone(), 2));
        // binomial +10% only: pipeline's lead is beyond the minimum gain
        m.insert(bin.clone(), at(9.1));
        let d = decide(Collective::Bcast, 64, &m, |_| true, 0.03).unwrap();
        assert_eq!(d.choice, pipe);
        // no library call measured: the simplest subject is the reference
        m.remove(&mpi);
        let d = decide(Collective::Bcast, 64, &m, |_| true, 0.03).unwrap();
        assert_eq!(d.reference, lin);
        assert!(!d.library_reference);
        assert_eq!(d.choice, pipe);
    }
}
