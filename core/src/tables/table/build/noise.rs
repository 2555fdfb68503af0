//! The builder before schema 2 ([`Compact::legacy`]): at each measured
//! size the fastest median, merged within noise (the module above says
//! how). Per collective and communicator:
//!
//! ```text
//! stats per point -> cells[point][candidate] (allowed? loss, simplicity)
//!     -> cover: the fewest segments, then the simplest, then the least
//!        loss (a dynamic programme over the points in order)
//!     -> one rule per segment, with its most contested size's figures
//! ```

use std::collections::BTreeMap;

use colltune_algorithms::{AlgoSpec, Collective};

use super::{fastest, geo_mid, is_choice, rules_from, set_figures, Built, Compact, Decision};
use crate::measure::record::Sample;
use crate::measure::stats;
use crate::tables::table::evidence::{complexity, LIBRARY_FIRST_ABOVE};
use crate::tables::table::{spec_to_fields, CommKey, Rule};

/// One subject at one measured size: its median and relative noise.
#[derive(Clone, Debug, PartialEq)]
pub struct Stat {
    pub median: f64,
    /// Run-to-run spread (largest run median / smallest - 1), or with a
    /// single run the interquartile range over the median.
    pub noise: f64,
}

/// Every subject's statistics at one point, by (spec, execution).
pub type PointStats = BTreeMap<(String, String), Stat>;
/// Per (collective, comm, bytes): every subject's statistics.
pub type Stats = BTreeMap<(Collective, CommKey, u64), PointStats>;

/// Median and noise of every colltune subject at every measured point.
pub fn point_stats(samples: &[Sample]) -> Stats {
    point_stats_of(&[samples])
}

/// As [`point_stats`], from several launches of the tune (separate `mpirun`
/// jobs, one CSV each): a shared or oversubscribed machine can run one
/// launch 1.5x slower than the next and reorder the algorithms with it, so
/// a choice should hold in every launch. Where more than one launch
/// measured a point:
/// - a subject counts there only if every one of those launches measured
///   it (an adaptive tune stops measuring what its screening found slow:
///   a subject seen by one launch alone would be judged by that launch's
///   state alone, and a fast launch's leftovers would win);
/// - its median is the median of the launches' medians, each launch one
///   vote (pooled samples would let the faster launch, which fits more
///   repetitions into the same budget, outvote the slower);
/// - its noise is the spread over every run of every launch.
///
/// Where the launches share no subject at a point (two benches of
/// different algorithms), every subject counts there, its median the
/// median of the medians of the launches that measured it.
pub fn point_stats_of(launches: &[&[Sample]]) -> Stats {
    // (simulated, times per (launch, run)): a model is deterministic, its
    // spread over repetitions is the roots', not noise.
    type Runs = (bool, BTreeMap<(usize, u32), Vec<f64>>);
    type Subjects = BTreeMap<(String, String), Runs>;
    let mut raw: BTreeMap<(Collective, CommKey, u64), Subjects> = BTreeMap::new();
    for (launch, samples) in launches.iter().enumerate() {
        for s in samples.iter().filter(|s| is_choice(s)) {
            let Some(c) = s.collective() else { continue };
            let key = CommKey::of(s);
            let e = raw
                .entry((c, key, s.bytes))
                .or_default()
                .entry((s.spec.clone(), s.execution.clone()))
                .or_default();
            e.0 |= s.source.starts_with("simulated");
            e.1.entry((launch, s.run)).or_default().push(s.time_us);
        }
    }
    raw.into_iter()
        .map(|(k, subj)| {
            // Each subject's launches, and its times per launch, once.
            let subj: Vec<_> = subj
                .into_iter()
                .map(|(label, (simulated, runs))| {
                    let mut by_launch: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
                    for (&(l, _), v) in &runs {
                        by_launch.entry(l).or_default().extend_from_slice(v);
                    }
                    (label, simulated, runs, by_launch)
                })
                .collect();
            let launches = |b: &BTreeMap<usize, Vec<f64>>| b.keys().copied().collect::<Vec<_>>();
            let mut here: Vec<usize> = subj.iter().flat_map(|s| launches(&s.3)).collect();
            here.sort_unstable();
            here.dedup();
            // CSVs that share no subject at this point (two benches of
            // different algorithms, say) are not launches of one sweep:
            // then every subject counts, by the launches that measured it.
            let shared = subj.iter().any(|s| launches(&s.3) == here);
            let v = subj
                .into_iter()
                .filter(|s| !shared || launches(&s.3) == here)
                .map(|(label, simulated, runs, by_launch)| {
                    let mut st = stat_of(&runs.into_values().collect::<Vec<_>>());
                    if by_launch.len() > 1 {
                        let per_launch: Vec<f64> =
                            by_launch.values().map(|v| stats::median(v)).collect();
                        st.median = stats::median(&per_launch);
                    }
                    if simulated {
                        st.noise = 0.0;
                    }
                    (label, st)
                })
                .collect();
            (k, v)
        })
        .collect()
}

fn stat_of(runs: &[Vec<f64>]) -> Stat {
    let sum = stats::summarize(runs);
    let noise = if sum.run_medians.len() >= 2 {
        sum.run_spread() - 1.0
    } else {
        let mut all: Vec<f64> = runs.iter().flatten().copied().collect();
        all.sort_by(f64::total_cmp);
        let q = |f: f64| all[((all.len() - 1) as f64 * f).round() as usize];
        if all.len() >= 4 && sum.median > 0.0 {
            (q(0.75) - q(0.25)) / sum.median
        } else {
            0.0
        }
    };
    Stat {
        median: sum.median,
        noise: if noise.is_finite() {
            noise.max(0.0)
        } else {
            0.0
        },
    }
}

/// The complexity of a candidate at one measured size: the MPI library's
/// forced algorithms rank first (by segmentation only) where their loss to
/// the fastest is within the floor `tolerance` (a few percent: there the
/// cheaper call in situ, a tail call to the library, outweighs the
/// difference); elsewhere they rank as [`complexity`] says (unknown to the
/// registry, after colltune's own), so a wide noise band at a point never
/// hands it to a library algorithm that was measured clearly slower.
pub(super) fn complexity_at(base: u64, execution: &str, loss: f64, tolerance: f64) -> u64 {
    if execution == crate::libraries::ompi::LIBRARY_EXECUTION && loss <= tolerance + 1e-12 {
        // [`complexity`]'s segmentation term, alone
        base.saturating_sub(LIBRARY_FIRST_ABOVE) / 1000
    } else {
        base
    }
}

/// One candidate at one measured size in the cover.
struct Cell {
    allowed: bool,
    loss: f64,
    /// [`complexity_at`] this point.
    simple: u64,
}

/// Rules for one collective and communicator: the fewest segments whose
/// choice is within noise at every measured size they cover.
pub(super) fn compacted(st: &Stats, c: Collective, key: CommKey, opts: &Compact) -> Built {
    let points: Vec<(u64, &PointStats)> = st
        .range((c, key, 0)..=(c, key, u64::MAX))
        .map(|(&(_, _, b), m)| (b, m))
        .collect();
    let plain = rules_from(&decisions_of(&points));
    if !opts.enabled || points.is_empty() {
        return Built {
            before: plain.len(),
            losses: vec![0.0; points.len()],
            rules: plain,
            unresolved: Vec::new(),
        };
    }
    let mut labels: Vec<&(String, String)> = points.iter().flat_map(|(_, m)| m.keys()).collect();
    labels.sort();
    labels.dedup();
    let cells = cells(c, &points, &labels, opts);
    let mut losses = Vec::new();
    let rules = cover(&cells, labels.len())
        .into_iter()
        .map(|seg| segment_rule(&points, &cells, &labels, seg, &mut losses))
        .collect();
    Built {
        rules,
        before: plain.len(),
        losses,
        unresolved: Vec::new(),
    }
}

/// `cells[i][k]`: candidate `labels[k]` at point `i`, allowed where its
/// loss to the fastest is within the noise band there.
fn cells(
    c: Collective,
    points: &[(u64, &PointStats)],
    labels: &[&(String, String)],
    opts: &Compact,
) -> Vec<Vec<Cell>> {
    let simple: Vec<u64> = labels.iter().map(|(s, e)| complexity(c, s, e)).collect();
    let ceiling = opts.max_noise.max(opts.tolerance);
    points
        .iter()
        .map(|(_, m)| {
            let best = m
                .values()
                .min_by(|a, b| a.median.total_cmp(&b.median))
                .expect("a measured point has a subject");
            labels
                .iter()
                .zip(&simple)
                .map(|(l, &base)| match m.get(*l) {
                    Some(x) => {
                        let tol = x.noise.max(best.noise).clamp(opts.tolerance, ceiling);
                        let loss = if best.median > 0.0 {
                            x.median / best.median - 1.0
                        } else if x.median > 0.0 {
                            f64::INFINITY
                        } else {
                            0.0
                        };
                        Cell {
                            allowed: loss <= tol + 1e-12,
                            loss: loss.max(0.0),
                            simple: complexity_at(base, &l.1, loss.max(0.0), opts.tolerance),
                        }
                    }
                    None => Cell {
                        allowed: false,
                        loss: f64::INFINITY,
                        simple: base,
                    },
                })
                .collect()
        })
        .collect()
}

/// The best cover of the points by segments (first point, last point,
/// candidate), in order: the fewest segments, then the least summed
/// complexity, then the least summed loss.
fn cover(cells: &[Vec<Cell>], candidates: usize) -> Vec<(usize, usize, usize)> {
    let n = cells.len();
    // best[j]: (segments, complexity, loss, start of last segment, choice)
    // of the best cover of points 0..j.
    type Cost = (usize, u64, f64);
    let better = |a: &Cost, b: &Cost| {
        a.0.cmp(&b.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.total_cmp(&b.2))
            .is_lt()
    };
    let mut best: Vec<Option<(Cost, usize, usize)>> = vec![None; n + 1];
    best[0] = Some(((0, 0, 0.0), 0, 0));
    for i in 0..n {
        let Some((base, _, _)) = best[i] else {
            continue;
        };
        // Candidates allowed at every point of i..=j, with their losses
        // and complexities summed.
        let mut alive: Vec<(usize, f64, u64)> = (0..candidates).map(|k| (k, 0.0, 0)).collect();
        for j in i..n {
            alive.retain_mut(|(k, sum, cx)| {
                let cell = &cells[j][*k];
                *sum += cell.loss;
                *cx += cell.simple;
                cell.allowed
            });
            if alive.is_empty() {
                break;
            }
            let (k, sum, cx) = alive
                .iter()
                .min_by(|a, b| {
                    (a.2, a.1)
                        .partial_cmp(&(b.2, b.1))
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then(a.0.cmp(&b.0))
                })
                .copied()
                .expect("non-empty");
            let cost = (base.0 + 1, base.1 + cx, base.2 + sum);
            if best[j + 1].is_none_or(|(b, _, _)| better(&cost, &b)) {
                best[j + 1] = Some((cost, i, k));
            }
        }
    }
    // Walk back the segments.
    let mut segs: Vec<(usize, usize, usize)> = Vec::new();
    let mut j = n;
    while j > 0 {
        let (_, i, k) = best[j].expect("every prefix has a cover: single points");
        segs.push((i, j - 1, k));
        j = i;
    }
    segs.reverse();
    segs
}

/// The rule of segment `(i, j, k)`: points `i..=j` choose `labels[k]`,
/// with the figures of the most contested size; the segment's losses go
/// to `losses`.
fn segment_rule(
    points: &[(u64, &PointStats)],
    cells: &[Vec<Cell>],
    labels: &[&(String, String)],
    (i, j, k): (usize, usize, usize),
    losses: &mut Vec<f64>,
) -> Rule {
    let (spec, exec) = labels[k];
    let (algorithm, params) = AlgoSpec::parse(spec)
        .map(|s| spec_to_fields(&s))
        .unwrap_or((spec.clone(), BTreeMap::new()));
    let mut rule = Rule {
        min_bytes: if i == 0 {
            0
        } else {
            geo_mid(points[i - 1].0, points[i].0) + 1
        },
        max_bytes: points.get(j + 1).map(|nx| geo_mid(points[j].0, nx.0)),
        algorithm,
        params,
        execution: exec.clone(),
        time_us: None,
        at_bytes: None,
        runner_up: None,
        margin: None,
        evidence: None,
        overlap: None,
    };
    // The figures of the most contested size: the smallest margin of
    // the best other subject over the choice (negative where another
    // was faster, within noise).
    let mut contested: Option<(f64, Decision)> = None;
    for (p, cell) in points[i..=j].iter().zip(&cells[i..=j]) {
        losses.push(cell[k].loss);
        let mine = p.1[labels[k]].median;
        let other =
            p.1.iter()
                .filter(|(l, _)| *l != labels[k])
                .min_by(|a, b| a.1.median.total_cmp(&b.1.median).then(a.0.cmp(b.0)));
        let d = Decision {
            bytes: p.0,
            spec: spec.clone(),
            execution: exec.clone(),
            time_us: mine,
            runner_up: other.map(|((s, e), x)| (colltune_algorithms::label(s, e), x.median)),
        };
        let m = d.margin().unwrap_or(f64::INFINITY);
        if contested.as_ref().is_none_or(|(cm, _)| m < *cm) {
            contested = Some((m, d));
        }
    }
    if let Some((_, d)) = contested {
        set_figures(&mut rule, &d);
    }
    rule
}

/// The fastest subject and the runner-up at each point.
fn decisions_of(points: &[(u64, &PointStats)]) -> Vec<Decision> {
    points
        .iter()
        .filter_map(|(bytes, subj)| fastest(*bytes, subj.iter().map(|(k, x)| (k, x.median))))
        .collect()
}
