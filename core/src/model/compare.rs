//! Model validation (`simulate --compare`): a network model's predictions
//! against measured samples.
//!
//! Every point measured of colltune's own algorithms (collective x layout
//! x spec x execution x size) is simulated from each root it was measured
//! from. Both sides are the mean over the measured roots (weighted by
//! their repetitions) of each root's time, measured as that root's median:
//! with a rotating root the times mix fast and slow roots (a tree aligned
//! with the nodes or not), and a median of the mixture flips between them.
//!
//! Per size the measured winner is judged against the predicted one
//! ([`Verdict`]: the same, a tie the model cannot call, within `near` of
//! the measured best, or not), with its regret (the predicted winner's
//! measured time over the measured best); per point the prediction's
//! error. And the measurement against itself: each run's winner and times
//! judged against each other run, as the model's are against all runs:
//! the most a model can show.

use std::collections::{BTreeMap, BTreeSet};

use colltune_algorithms::{AlgoSpec, Collective, Execution, NodeMap, Variant};

use crate::measure::method::Subject;
use crate::measure::record::Sample;
use crate::measure::stats::{geomean, median, median_sorted, summarize};
use crate::model::sim::{simulate_at, Model, SimError};
use crate::model::simulate::sample;

/// How closely a prediction must agree to count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// A predicted time counts as right within this fraction of the
    /// measured one.
    pub tolerance: f64,
    /// A predicted winner counts as a near match when its measured time is
    /// within this fraction of the measured best.
    pub near: f64,
}

/// `hits` of `of` cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub hits: usize,
    pub of: usize,
}

impl Tally {
    /// The share of hits, in percent (0 when there are no cases).
    pub fn percent(self) -> f64 {
        100.0 * self.hits as f64 / self.of.max(1) as f64
    }

    fn add(&mut self, o: Tally) {
        self.hits += o.hits;
        self.of += o.of;
    }
}

/// One measured point (subject x size) and its prediction, times in
/// microseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// `spec [execution]`.
    pub label: String,
    /// Each root's median, averaged over the roots measured.
    pub measured: f64,
    /// The run spread: largest run median over smallest.
    pub spread: f64,
    /// The simulated time, averaged over the roots alike.
    pub predicted: f64,
    /// The measured time from each run alone (run -> time): the
    /// measurement's agreement with itself.
    pub per_run: BTreeMap<u32, f64>,
}

impl Point {
    /// The prediction's relative error, (predicted - measured) / measured.
    pub fn error(&self) -> f64 {
        (self.predicted - self.measured) / self.measured
    }
}

/// How the predicted winner of a size fares against the measured one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The same subject.
    Exact,
    /// The model prices the measured winner the same as its own choice (on
    /// 3 ranks every tree is the root sending to both): a tie it cannot
    /// call. The table takes the first.
    Tie,
    /// Another subject, measured within `near` of the measured best.
    Near,
    /// Another subject, slower than that.
    Miss,
}

/// The measurement against itself: each run's winner and times judged
/// against every other run, as the model's are against all runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelfAgreement {
    /// Run a's winner within `near` of run b's best, over ordered pairs of
    /// runs (a, b).
    pub near: Tally,
    /// A point's time in run a within `tolerance` of run b's, over the
    /// points both runs measured, for every ordered pair of runs.
    pub within: Tally,
}

impl SelfAgreement {
    /// The agreement among the runs of one size's points.
    pub fn of(points: &[Point], o: &Options) -> SelfAgreement {
        let mut s = SelfAgreement::default();
        let runs: BTreeSet<u32> = points
            .iter()
            .flat_map(|v| v.per_run.keys().copied())
            .collect();
        for &a in &runs {
            for &b in &runs {
                if a == b {
                    continue;
                }
                let both: Vec<(f64, f64)> = points
                    .iter()
                    .filter_map(|v| Some((*v.per_run.get(&a)?, *v.per_run.get(&b)?)))
                    .collect();
                let Some(&(_, at_b)) = both.iter().min_by(|x, y| x.0.total_cmp(&y.0)) else {
                    continue;
                };
                let best_b = both.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
                s.near.hits += usize::from(at_b <= best_b * (1.0 + o.near));
                s.near.of += 1;
                s.within.hits += both
                    .iter()
                    .filter(|(ta, tb)| ((ta - tb) / tb).abs() <= o.tolerance)
                    .count();
                s.within.of += both.len();
            }
        }
        s
    }

    fn add(&mut self, o: &SelfAgreement) {
        self.near.add(o.near);
        self.within.add(o.within);
    }
}

/// One size of one (collective, layout): its points and how the model did.
#[derive(Clone, Debug, PartialEq)]
pub struct Size {
    pub bytes: u64,
    /// In (spec, execution) order.
    pub points: Vec<Point>,
    /// The label of the point with the lowest measured time (the first of
    /// equals).
    pub measured_winner: String,
    /// The label of the point with the lowest predicted time (the first of
    /// equals).
    pub predicted_winner: String,
    /// Points the model prices the same as its winner, the winner included
    /// (1: the model chose alone).
    pub priced_alike: usize,
    pub verdict: Verdict,
    /// Whether the predicted winner's measured time is within `near` of the
    /// measured best (true for every exact match).
    pub near: bool,
    /// The predicted winner's measured time over the measured best (1: no
    /// loss).
    pub regret: f64,
    /// The median of the points' |error|.
    pub median_error: f64,
    pub itself: SelfAgreement,
}

impl Size {
    /// Judges one size's points; None when there are none.
    pub fn score(bytes: u64, points: Vec<Point>, o: &Options) -> Option<Size> {
        let best_m = points
            .iter()
            .min_by(|x, y| x.measured.total_cmp(&y.measured))?;
        let best_p = points
            .iter()
            .min_by(|x, y| x.predicted.total_cmp(&y.predicted))?;
        let regret = best_p.measured / best_m.measured;
        let tied = |v: &Point| v.predicted <= best_p.predicted * (1.0 + 1e-9);
        let near = regret <= 1.0 + o.near;
        let verdict = if best_m.label == best_p.label {
            Verdict::Exact
        } else if tied(best_m) {
            Verdict::Tie
        } else if near {
            Verdict::Near
        } else {
            Verdict::Miss
        };
        let mut e: Vec<f64> = points.iter().map(|v| v.error().abs()).collect();
        e.sort_by(f64::total_cmp);
        Some(Size {
            bytes,
            measured_winner: best_m.label.clone(),
            predicted_winner: best_p.label.clone(),
            priced_alike: points.iter().filter(|v| tied(v)).count(),
            verdict,
            near,
            regret,
            median_error: median_sorted(&e),
            itself: SelfAgreement::of(&points, o),
            points,
        })
    }
}

/// One (collective, layout) measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub collective: String,
    pub layout: String,
    /// In increasing size.
    pub sizes: Vec<Size>,
    /// The sizes' agreements added up.
    pub itself: SelfAgreement,
}

impl Group {
    /// Judges every size of one (collective, layout).
    pub fn score(
        collective: String,
        layout: String,
        by_size: BTreeMap<u64, Vec<Point>>,
        o: &Options,
    ) -> Group {
        let sizes: Vec<Size> = by_size
            .into_iter()
            .filter_map(|(bytes, points)| Size::score(bytes, points, o))
            .collect();
        let mut itself = SelfAgreement::default();
        for s in &sizes {
            itself.add(&s.itself);
        }
        Group {
            collective,
            layout,
            sizes,
            itself,
        }
    }
}

/// Every group's sizes and points together.
#[derive(Clone, Debug, PartialEq)]
pub struct Totals {
    pub sizes: usize,
    /// Sizes where the predicted winner is the measured one.
    pub exact: Tally,
    /// Sizes exact or a tie the model could not call.
    pub called: Tally,
    /// Sizes where the predicted winner is within `near` of the measured
    /// best.
    pub near: Tally,
    /// Points whose predicted time is within `tolerance` of the measured.
    pub within: Tally,
    /// Geometric mean of the sizes' regrets.
    pub geomean_regret: f64,
    /// Median and 90th percentile of the points' |error| (NaN: no points).
    pub median_error: f64,
    pub p90_error: f64,
    pub itself: SelfAgreement,
}

impl Totals {
    pub fn of(groups: &[Group], o: &Options) -> Totals {
        let sizes = groups.iter().map(|g| g.sizes.len()).sum();
        let count = |f: &dyn Fn(&Size) -> bool| Tally {
            hits: groups
                .iter()
                .flat_map(|g| &g.sizes)
                .filter(|s| f(s))
                .count(),
            of: sizes,
        };
        let regrets: Vec<f64> = groups
            .iter()
            .flat_map(|g| &g.sizes)
            .map(|s| s.regret)
            .collect();
        let mut errs: Vec<f64> = groups
            .iter()
            .flat_map(|g| &g.sizes)
            .flat_map(|s| &s.points)
            .map(|v| v.error().abs())
            .collect();
        errs.sort_by(f64::total_cmp);
        let mut itself = SelfAgreement::default();
        for g in groups {
            itself.add(&g.itself);
        }
        Totals {
            sizes,
            exact: count(&|s| s.verdict == Verdict::Exact),
            called: count(&|s| matches!(s.verdict, Verdict::Exact | Verdict::Tie)),
            near: count(&|s| s.near),
            within: Tally {
                hits: errs.iter().filter(|&&x| x <= o.tolerance).count(),
                of: errs.len(),
            },
            geomean_regret: geomean(&regrets),
            median_error: median_sorted(&errs),
            p90_error: errs
                .get(((errs.len() as f64 * 0.9) as usize).min(errs.len().saturating_sub(1)))
                .copied()
                .unwrap_or(f64::NAN),
            itself,
        }
    }
}

/// A model against measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// In (collective, layout) order.
    pub groups: Vec<Group>,
    pub totals: Totals,
    /// Samples of the MPI library's own collectives, left out.
    pub skipped: usize,
    /// The simulated repetitions (one per point and root measured), in the
    /// raw-sample schema.
    pub simulated: Vec<Sample>,
}

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The samples hold no (non-outlier) measurement of colltune's own
    /// algorithms.
    #[error("no measurements of colltune's algorithms to compare with")]
    Empty,
    /// A point the simulator cannot take (`place`: `collective spec
    /// [execution] on layout`).
    #[error("{place}: {why}")]
    Bad { place: String, why: String },
    /// The simulation of a point failed.
    #[error("{place}: {error}")]
    Sim { place: String, error: SimError },
}

impl CompareError {
    /// Whether the input is at fault (as opposed to the simulator).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, CompareError::Sim { .. })
    }
}

/// The mean over roots of each root's median, weighted by its repetitions.
pub fn mean_of_root_medians<'v>(by_root: impl Iterator<Item = &'v Vec<f64>>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for times in by_root {
        sum += median(times) * times.len() as f64;
        n += times.len();
    }
    sum / n.max(1) as f64
}

/// The model `m` against `samples` (samples of the MPI library and
/// outliers left out): every point simulated from each root measured, then
/// judged.
pub fn compare(m: &Model, samples: &[Sample], o: &Options) -> Result<Comparison, CompareError> {
    // (collective, layout) -> bytes -> points.
    type Key = (String, String);
    let mut groups: BTreeMap<Key, BTreeMap<u64, Vec<Point>>> = BTreeMap::new();
    // (group, spec, execution, bytes) -> run -> root -> times.
    type PointKey = (Key, String, String, u64);
    let mut raw: BTreeMap<PointKey, BTreeMap<u32, BTreeMap<usize, Vec<f64>>>> = BTreeMap::new();
    let mut skipped = 0usize;
    for s in samples {
        if s.is_library() || s.outlier != 0 {
            skipped += usize::from(s.is_library());
            continue;
        }
        let point = (
            (s.collective.clone(), s.layout.clone()),
            s.spec.clone(),
            s.execution.clone(),
            s.bytes,
        );
        raw.entry(point)
            .or_default()
            .entry(s.run)
            .or_default()
            .entry(s.root.max(0) as usize)
            .or_default()
            .push(s.time_us);
    }
    if raw.is_empty() {
        return Err(CompareError::Empty);
    }
    let mut simulated = Vec::new();
    for (point, by_run) in raw {
        // The same times three ways: by root (all runs), by run (all roots),
        // and each run's mean over roots.
        let mut from: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for (&root, times) in by_run.values().flatten() {
            from.entry(root).or_default().extend(times);
        }
        let runs: Vec<Vec<f64>> = by_run
            .values()
            .map(|by_root| by_root.values().flatten().copied().collect())
            .collect();
        let per_run = by_run
            .iter()
            .map(|(&run, by_root)| (run, mean_of_root_medians(by_root.values())))
            .collect();
        let ((coll, layout), spec, exec, bytes) = point;
        let place = || {
            format!(
                "{coll} {} on {layout}",
                colltune_algorithms::label(&spec, &exec)
            )
        };
        let bad = |why: String| CompareError::Bad {
            place: place(),
            why,
        };
        let c: Collective = coll.parse().map_err(bad)?;
        let sp = AlgoSpec::parse(&spec).map_err(|e| bad(e.to_string()))?;
        let ex: Execution = exec.parse().map_err(bad)?;
        let nodes = NodeMap::parse(&layout).map_err(|e| bad(e.to_string()))?;
        let subject = Subject::Ours(Variant {
            collective: c,
            spec: sp.clone(),
            exec: ex,
        });
        let mut predicted = 0.0;
        for (i, (&root, times)) in from.iter().enumerate() {
            if root >= nodes.size() {
                return Err(bad(format!(
                    "root {root} outside the layout's {} ranks",
                    nodes.size()
                )));
            }
            let t = simulate_at(m, c, &sp, ex, &nodes, bytes, root).map_err(|error| {
                CompareError::Sim {
                    place: place(),
                    error,
                }
            })?;
            simulated.push(sample(
                m,
                &nodes,
                &subject,
                bytes,
                (1, i as u32 + 1),
                root,
                t,
            ));
            predicted += t * times.len() as f64;
        }
        let predicted = predicted / from.values().map(Vec::len).sum::<usize>().max(1) as f64;
        groups
            .entry((coll.clone(), layout.clone()))
            .or_default()
            .entry(bytes)
            .or_default()
            .push(Point {
                label: colltune_algorithms::label(spec, exec),
                measured: mean_of_root_medians(from.values()),
                spread: summarize(&runs).run_spread(),
                predicted,
                per_run,
            });
    }
    let groups: Vec<Group> = groups
        .into_iter()
        .map(|((coll, layout), by_size)| Group::score(coll, layout, by_size, o))
        .collect();
    Ok(Comparison {
        totals: Totals::of(&groups, o),
        groups,
        skipped,
        simulated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const O: Options = Options {
        tolerance: 0.3,
        near: 0.05,
    };

    /// A point measured `m` us (one run) and predicted `p` us.
    fn pt(label: &str, m: f64, p: f64) -> Point {
        Point {
            label: label.into(),
            measured: m,
            spread: 1.0,
            predicted: p,
            per_run: BTreeMap::from([(1, m)]),
        }
    }

    /// A point measured in several runs (run -> time), predicted `p`.
    fn runs(label: &str, times: &[(u32, f64)], p: f64) -> Point {
        Point {
            per_run: times.iter().copied().collect(),
            ..pt(label, times[0].1, p)
        }
    }

    fn score(points: Vec<Point>) -> Size {
        Size::score(8, points, &O).unwrap()
    }

    #[test]
    fn the_predicted_winner_is_the_measured_one() {
        let s = score(vec![pt("a", 1.0, 1.1), pt("b", 2.0, 1.6)]);
        assert_eq!(s.verdict, Verdict::Exact);
        assert_eq!(
            (s.measured_winner.as_str(), s.predicted_winner.as_str()),
            ("a", "a")
        );
        assert_eq!(s.priced_alike, 1);
        assert!(s.near);
        assert_eq!(s.regret, 1.0);
        // |error| 10% and 20%: the median is their mean.
        assert!((s.median_error - 0.15).abs() < 1e-12, "{}", s.median_error);
        assert!((s.points[1].error() + 0.2).abs() < 1e-12);
        assert_eq!(Size::score(8, vec![], &O), None);
    }

    #[test]
    fn a_measured_winner_priced_as_the_predicted_one_is_a_tie() {
        // The model prices a and b alike and takes the first; b won.
        let s = score(vec![
            pt("a", 2.0, 1.0),
            pt("b", 1.0, 1.0),
            pt("c", 3.0, 5.0),
        ]);
        assert_eq!(s.verdict, Verdict::Tie);
        assert_eq!(
            (s.measured_winner.as_str(), s.predicted_winner.as_str()),
            ("b", "a")
        );
        assert_eq!(s.priced_alike, 2);
        assert_eq!(s.regret, 2.0);
        assert!(!s.near);
    }

    #[test]
    fn another_winner_is_near_within_the_margin_or_a_miss() {
        let s = score(vec![pt("a", 1.0, 2.0), pt("b", 1.04, 1.0)]);
        assert_eq!(s.verdict, Verdict::Near);
        assert!(s.near && (s.regret - 1.04).abs() < 1e-12);
        let s = score(vec![pt("a", 1.0, 2.0), pt("b", 1.5, 1.0)]);
        assert_eq!(s.verdict, Verdict::Miss);
        assert_eq!(
            (s.measured_winner.as_str(), s.predicted_winner.as_str()),
            ("a", "b")
        );
        assert!(!s.near && s.regret == 1.5);
    }

    #[test]
    fn the_runs_judged_against_each_other() {
        // Two runs that agree on the winner (a) and on every time within
        // 30%: both ordered pairs count.
        let pts = [
            runs("a", &[(1, 1.0), (2, 1.1)], 1.0),
            runs("b", &[(1, 2.0), (2, 2.1)], 2.0),
        ];
        let s = SelfAgreement::of(&pts, &O);
        assert_eq!(s.near, Tally { hits: 2, of: 2 });
        assert_eq!(s.within, Tally { hits: 4, of: 4 });
        // Run 2 reverses the order and is twice as slow: run 1's winner (a)
        // is 2.0/1.2 of run 2's best there, run 2's (b) 2.0/1.0 of run 1's.
        let pts = [
            runs("a", &[(1, 1.0), (2, 2.0)], 1.0),
            runs("b", &[(1, 2.0), (2, 1.2)], 2.0),
        ];
        let s = SelfAgreement::of(&pts, &O);
        assert_eq!(s.near, Tally { hits: 0, of: 2 });
        // b: |2.0 - 1.2| / 1.2 and / 2.0 are both above 30%; so is a.
        assert_eq!(s.within, Tally { hits: 0, of: 4 });
        // A third run measuring only b: pairs with it have one point each,
        // and that point wins both.
        let pts = [
            runs("a", &[(1, 1.0), (2, 1.0)], 1.0),
            runs("b", &[(1, 2.0), (2, 2.0), (3, 2.5)], 2.0),
        ];
        let s = SelfAgreement::of(&pts, &O);
        assert_eq!(s.near, Tally { hits: 6, of: 6 });
        // (1,2) and (2,1): 2 points each, all equal; (1,3), (3,1), (2,3),
        // (3,2): b alone, 2.0 against 2.5 is within 30% both ways.
        assert_eq!(s.within, Tally { hits: 8, of: 8 });
        // One run: nothing to judge.
        assert_eq!(
            SelfAgreement::of(&[pt("a", 1.0, 1.0)], &O),
            SelfAgreement::default()
        );
    }

    #[test]
    fn totals_add_up_every_group() {
        let g1 = Group::score(
            "bcast".into(),
            "4".into(),
            BTreeMap::from([
                // exact, errors 0 and 0.5
                (1, vec![pt("a", 1.0, 1.0), pt("b", 2.0, 3.0)]),
                // tie, errors 0 and 1
                (2, vec![pt("a", 2.0, 2.0), pt("b", 1.0, 2.0)]),
            ]),
            &O,
        );
        let g2 = Group::score(
            "swap".into(),
            "4".into(),
            // miss, regret 4, errors 0.1 and 0.75
            BTreeMap::from([(1, vec![pt("a", 1.0, 1.1), pt("b", 4.0, 1.0)])]),
            &O,
        );
        assert_eq!(g1.sizes.iter().map(|s| s.bytes).collect::<Vec<_>>(), [1, 2]);
        let t = Totals::of(&[g1, g2], &O);
        assert_eq!(t.sizes, 3);
        assert_eq!(t.exact, Tally { hits: 1, of: 3 });
        assert_eq!(t.called, Tally { hits: 2, of: 3 });
        assert_eq!(t.near, Tally { hits: 1, of: 3 });
        assert_eq!(t.within, Tally { hits: 3, of: 6 });
        assert!((t.exact.percent() - 100.0 / 3.0).abs() < 1e-12);
        // regrets 1, 2, 4
        assert!(
            (t.geomean_regret - 2.0).abs() < 1e-12,
            "{}",
            t.geomean_regret
        );
        // |errors| sorted: 0, 0, 0.1, 0.5, 0.75, 1
        assert!((t.median_error - 0.3).abs() < 1e-12, "{}", t.median_error);
        assert_eq!(t.p90_error, 1.0);
        let none = Totals::of(&[], &O);
        assert_eq!(none.exact.percent(), 0.0);
        assert!(none.p90_error.is_nan());
    }

    fn model(name: &str, inter_gbs: f64, inter_lat: f64) -> Model {
        serde_yaml::from_str(&format!(
            "name: {name}\nsource: test figures\n\
             intra: {{latency_us: 0.3, overhead_us: 0.1, gap_us: 0.05, bandwidth_gbs: 10, eager_limit: 4096}}\n\
             inter: {{latency_us: {inter_lat}, overhead_us: 0.3, gap_us: 0.1, bandwidth_gbs: {inter_gbs}, eager_limit: 65536}}\n\
             copy_gbs: 10\n"
        ))
        .unwrap()
    }

    /// What `simulate --layout 3x2` writes for a few broadcasts at 8 B,
    /// 64 KiB and 1 MiB, from every root of the rotation.
    fn simulated(m: &Model) -> Vec<Sample> {
        let nodes = NodeMap::parse("3x2").unwrap();
        let c = Collective::Bcast;
        let mut out = Vec::new();
        for spec in [
            "linear",
            "binomial",
            "binary",
            "pipeline",
            "scatter_allgather",
        ] {
            let spec = colltune_algorithms::resolve(c, &AlgoSpec::parse(spec).unwrap()).unwrap();
            for exec in [Execution::Blocking, Execution::Nonblocking] {
                let s = Subject::Ours(Variant {
                    collective: c,
                    spec: spec.clone(),
                    exec,
                });
                for bytes in [8, 65536, 1 << 20] {
                    for (i, &r) in crate::model::sim::rotation_roots(c, &nodes)
                        .iter()
                        .enumerate()
                    {
                        let t = simulate_at(m, c, &spec, exec, &nodes, bytes, r).unwrap();
                        out.push(sample(m, &nodes, &s, bytes, (1, i as u32 + 1), r, t));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn a_model_predicts_its_own_simulation_exactly_and_another_does_not() {
        let fast = model("fast", 12.5, 1.5);
        let rows = simulated(&fast);
        let c = compare(&fast, &rows, &O).unwrap();
        assert_eq!(c.groups.len(), 1);
        assert_eq!(
            (c.groups[0].collective.as_str(), c.groups[0].layout.as_str()),
            ("bcast", "3x2")
        );
        assert_eq!(c.totals.sizes, 3);
        assert_eq!(c.totals.exact, Tally { hits: 3, of: 3 });
        assert_eq!(c.totals.within, Tally { hits: 30, of: 30 });
        assert_eq!(c.totals.median_error, 0.0);
        assert_eq!(c.totals.geomean_regret, 1.0);
        // One run: no measurement against itself.
        assert_eq!(c.totals.itself, SelfAgreement::default());
        // Every point simulated again from each root it was measured from.
        assert_eq!(c.simulated.len(), rows.len());
        assert_eq!(c.skipped, 0);

        // A very different machine: slow, high-latency network.
        let slow = model("slow", 0.01, 500.0);
        let c = compare(&slow, &rows, &O).unwrap();
        assert_eq!(c.totals.within, Tally { hits: 0, of: 30 });
    }

    #[test]
    fn a_second_run_the_same_or_twice_as_slow() {
        let fast = model("fast", 12.5, 1.5);
        let rows = simulated(&fast);
        for (factor, within) in [(1.0, 60), (2.0, 0)] {
            let mut two = rows.clone();
            two.extend(rows.iter().map(|r| Sample {
                run: 2,
                time_us: r.time_us * factor,
                ..r.clone()
            }));
            let c = compare(&fast, &two, &O).unwrap();
            // Same winners: 3 sizes, each run against the other.
            assert_eq!(c.totals.itself.near, Tally { hits: 6, of: 6 }, "x{factor}");
            // 10 points x 3 sizes, each run against the other.
            assert_eq!(
                c.totals.itself.within,
                Tally {
                    hits: within,
                    of: 60
                },
                "x{factor}"
            );
            assert_eq!(c.groups[0].itself, c.totals.itself);
        }
    }

    #[test]
    fn library_samples_and_outliers_are_left_out() {
        let fast = model("fast", 12.5, 1.5);
        let mut rows = simulated(&fast);
        let n = rows.len();
        rows.push(Sample {
            execution: "library".into(),
            ..rows[0].clone()
        });
        rows.push(Sample {
            outlier: 1,
            time_us: 1e9,
            ..rows[0].clone()
        });
        let c = compare(&fast, &rows, &O).unwrap();
        assert_eq!((c.skipped, c.simulated.len()), (1, n));
        assert_eq!(c.totals.exact, Tally { hits: 3, of: 3 });
        // Nothing of ours: an error.
        let lib: Vec<Sample> = rows.iter().rev().take(2).cloned().collect();
        assert!(matches!(compare(&fast, &lib, &O), Err(CompareError::Empty)));
        assert!(matches!(compare(&fast, &[], &O), Err(CompareError::Empty)));
    }

    #[test]
    fn a_point_the_simulator_cannot_take_names_its_place() {
        let fast = model("fast", 12.5, 1.5);
        let one = simulated(&fast)[0].clone();
        for (bad, why) in [
            (
                Sample {
                    root: 6,
                    ..one.clone()
                },
                "root 6 outside the layout's 6 ranks",
            ),
            (
                Sample {
                    execution: "soon".into(),
                    ..one.clone()
                },
                "soon",
            ),
            (
                Sample {
                    layout: "3y2".into(),
                    ..one.clone()
                },
                "3y2",
            ),
        ] {
            let e = compare(&fast, &[bad], &O).unwrap_err();
            assert!(e.is_bad_input(), "{e}");
            let msg = e.to_string();
            assert!(msg.starts_with("bcast ") && msg.contains(why), "{msg}");
        }
    }
}
