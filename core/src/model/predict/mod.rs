//! `colltune predict`: from a point-to-point model alone, which of Open
//! MPI's broadcast algorithms wins where, and, against measurements nobody
//! here took, how far that prediction is from what really won.
//!
//! Per (ranks, bytes) of the measured data: the measured winner among the
//! forced algorithms (coll/tuned 1-9, and colltune's own measured beside
//! them: [`own`], pico's Bine rows), the predicted winner among the same
//! ones, the regret (the measured time of the predicted winner over the
//! measured best), and each algorithm's time error; where the library's
//! own decision (algorithm 0) was measured, its regret beside the model's,
//! and the predicted default / best ratio per rank count beside the
//! measured one. A prediction agrees where its winner is the measured
//! winner or within 5% of it. Times are what `osu_bcast` reports: the mean
//! over ranks of each rank's time in the call ([`trees::osu_time`]).

pub use crate::model::own;
pub mod neighbours;
pub mod trees;

use std::collections::BTreeMap;

use crate::libraries::ompi::Forced;
use crate::measure::record::Sample;
use crate::measure::stats::{geomean, median};
use crate::model::placement::{Layout, Mapping};
use crate::model::sim::Model;

/// A prediction agrees within this much of the measured best.
pub const AGREE_WITHIN: f64 = 1.05;

/// What a measured time is of a call whose ranks took different times:
/// `osu_bcast` and IMB report the mean over ranks of each rank's time; the
/// pico benchmark the slowest rank's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimeKind {
    MeanOverRanks,
    Slowest,
}

impl TimeKind {
    /// The time of a call whose ranks took `each` (from [`trees::simulate`]).
    pub fn of(self, each: &[f64]) -> f64 {
        match self {
            TimeKind::MeanOverRanks => trees::osu_time(each),
            TimeKind::Slowest => each.iter().copied().fold(0.0, f64::max),
        }
    }

    /// What a sample's time is, from where it came from: pico's per-call
    /// files (`imported:pico:...`) the slowest rank's, anything else the
    /// mean over ranks.
    pub fn of_sample(s: &Sample) -> TimeKind {
        if s.source.starts_with("imported:pico:") {
            TimeKind::Slowest
        } else {
            TimeKind::MeanOverRanks
        }
    }

    /// The kind of most of `samples` (the mean over ranks where they are
    /// as many).
    pub fn of_samples(samples: &[Sample]) -> TimeKind {
        let slowest = samples
            .iter()
            .filter(|s| TimeKind::of_sample(s) == TimeKind::Slowest)
            .count();
        if 2 * slowest > samples.len() {
            TimeKind::Slowest
        } else {
            TimeKind::MeanOverRanks
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TimeKind::MeanOverRanks => "the mean over ranks",
            TimeKind::Slowest => "the slowest rank's",
        }
    }
}

/// Measured times: (ranks, bytes) -> algorithm -> median over runs (us).
pub type Measured = BTreeMap<(usize, u64), BTreeMap<u32, f64>>;

/// A measured time more than this many times what the same algorithm took
/// on as many ranks or more and as many bytes or more (another point of
/// the data) is a glitch ([`screen`]): a broadcast to more ranks, or of
/// more bytes, is not several times faster (the published curves' own
/// steps, protocol switches and a second node coming into use, are below
/// 2x). Noise only adds time, so a glitch is always a time too high.
pub const GLITCH_FACTOR: f64 = 3.0;

/// A measured time [`screen`] left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Glitch {
    pub ranks: usize,
    pub bytes: u64,
    pub algorithm: u32,
    pub time_us: f64,
    /// What it was held against, e.g. `7.7x its 4.12 us at 158 ranks, 512 B`.
    pub against: String,
}

impl std::fmt::Display for Glitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ranks, {} B, algorithm {}: {:.2} us, {}",
            self.ranks, self.bytes, self.algorithm, self.time_us, self.against
        )
    }
}

/// The algorithm a time of `alg` at (ranks, bytes) ran: itself when forced,
/// the fixed decision's choice for the library's default (0), whose curve
/// changes algorithm with size and ranks and is only comparable where the
/// decision is the same.
fn ran(alg: u32, ranks: usize, bytes: u64) -> u32 {
    trees::resolved(alg, ranks, bytes).0
}

/// `meas` less its glitches ([`GLITCH_FACTOR`]), and the glitches. Each
/// time is held against the same algorithm's times as measured (not
/// against already screened ones) at every point with as many ranks or more
/// and as many bytes or more, where the library's default ran the same
/// algorithm there as here: a stretch of glitches (a bad spell of a run
/// spans neighbouring points) is caught as long as one point beyond it is
/// clean.
pub fn screen(meas: &Measured) -> (Measured, Vec<Glitch>) {
    let mut by_alg: BTreeMap<u32, Vec<(usize, u64, f64)>> = BTreeMap::new();
    for (&(r, b), algs) in meas {
        for (&a, &t) in algs {
            by_alg.entry(a).or_default().push((r, b, t));
        }
    }
    let mut out = Measured::new();
    let mut glitches = Vec::new();
    for (&(r, b), algs) in meas {
        for (&a, &t) in algs {
            let here = ran(a, r, b);
            let least = by_alg[&a]
                .iter()
                .filter(|&&(r2, b2, _)| r2 >= r && b2 >= b && (r2, b2) != (r, b))
                .filter(|&&(r2, b2, _)| ran(a, r2, b2) == here)
                .min_by(|x, y| x.2.total_cmp(&y.2));
            match least.filter(|x| t > GLITCH_FACTOR * x.2) {
                Some(&(r2, b2, t2)) => glitches.push(Glitch {
                    ranks: r,
                    bytes: b,
                    algorithm: a,
                    time_us: t,
                    against: format!("{:.1}x its {t2:.2} us at {r2} ranks, {b2} B", t / t2),
                }),
                None => {
                    out.entry((r, b)).or_default().insert(a, t);
                }
            }
        }
    }
    (out, glitches)
}

/// Two algorithms whose predicted times are more than this far apart run
/// different code there ([`alike`]; [`BY_MODEL`] says it in words).
pub const APART: f64 = 1.10;
/// Two measured times this close are alike ([`alike`]).
pub const ALIKE_WITHIN: f64 = 1.05;
/// [`alike`] flags a pair measured alike at this share of the points where
/// they run different code or more...
pub const ALIKE_SHARE: f64 = 0.75;
/// ...and at this many points or more.
pub const ALIKE_MIN_POINTS: usize = 8;

/// Two algorithms measured alike where they run different code: the runs
/// of one of them most likely did not force it (`mpirun --mca
/// coll_tuned_bcast_algorithm N` without `coll_tuned_use_dynamic_rules
/// true`, or Open MPI 5's coll/han taking the call before coll/tuned), so
/// its times are another algorithm's, usually the library's default.
#[derive(Clone, Debug, PartialEq)]
pub struct Alike {
    /// The two algorithms (0: the library's default), `a < b`.
    pub a: u32,
    pub b: u32,
    /// Points where the model puts them more than [`APART`] apart.
    pub apart: usize,
    /// Of those, points where their measured times are within
    /// [`ALIKE_WITHIN`] of each other.
    pub alike: usize,
    /// The median of their measured times' ratio (b over a) there.
    pub ratio: f64,
    /// What says they run different code at a point.
    pub basis: &'static str,
}

/// [`Alike::basis`] of [`alike`].
const BY_MODEL: &str = "the model puts them more than 10% apart";
/// [`Alike::basis`] of [`alike_default`].
const BY_DECISION: &str = "Open MPI's fixed decision runs another algorithm there, 8 ranks or more";

impl Alike {
    /// The algorithm to leave out of the check: the forced one of a pair
    /// with the default (its times are the default's); None for two forced
    /// algorithms (which one ran as asked cannot be told).
    pub fn suspect(&self) -> Option<u32> {
        (self.a == 0).then_some(self.b)
    }
}

impl std::fmt::Display for Alike {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |a: u32| match a {
            0 => "the default (0)".to_string(),
            a => format!("algorithm {a}"),
        };
        write!(
            f,
            "{} and {} measured within {:.0}% of each other at {} of the {} points where they run different code ({}; median ratio {:.2})",
            name(self.a),
            name(self.b),
            100.0 * (ALIKE_WITHIN - 1.0),
            self.alike,
            self.apart,
            self.basis,
            self.ratio
        )
    }
}

/// The counts behind an [`Alike`]: the points where two algorithms run
/// different code, and those where they measured alike.
#[derive(Default)]
struct Tally {
    apart: usize,
    alike: usize,
    ratios: Vec<f64>,
}

impl Tally {
    /// A point where they run different code, measured `ta` and `tb`.
    fn add(&mut self, ta: f64, tb: f64) {
        self.apart += 1;
        self.ratios.push(tb / ta);
        if ta.max(tb) / ta.min(tb) <= ALIKE_WITHIN {
            self.alike += 1;
        }
    }

    /// The pair, if it was measured alike often enough to flag.
    fn flag(self, a: u32, b: u32, basis: &'static str) -> Option<Alike> {
        (self.apart >= ALIKE_MIN_POINTS && self.alike as f64 >= ALIKE_SHARE * self.apart as f64)
            .then(|| Alike {
                a,
                b,
                apart: self.apart,
                alike: self.alike,
                ratio: median(&self.ratios),
                basis,
            })
    }
}

/// Pairs of algorithms measured alike ([`Alike`]) among `points`: at least
/// [`ALIKE_MIN_POINTS`] points where the model puts them more than
/// [`APART`] apart, and at [`ALIKE_SHARE`] of those or more their measured
/// times within [`ALIKE_WITHIN`] of each other. Two codes that differ are
/// not measured alike everywhere they differ: one of the runs did not run
/// what it was asked to.
pub fn alike(points: &[Point]) -> Vec<Alike> {
    // Open MPI's: whether a run forced what it asked is theirs to doubt.
    let algs: std::collections::BTreeSet<u32> = points
        .iter()
        .flat_map(|p| p.times.keys().copied())
        .filter(|&a| !own::is_own(a))
        .collect();
    let mut out = Vec::new();
    for &a in &algs {
        for &b in algs.range(a + 1..) {
            let mut tally = Tally::default();
            for p in points {
                let (Some(&(ta, pa)), Some(&(tb, pb))) = (p.times.get(&a), p.times.get(&b)) else {
                    continue;
                };
                if pa.max(pb) / pa.min(pb) > APART {
                    tally.add(ta, tb);
                }
            }
            out.extend(tally.flag(a, b, BY_MODEL));
        }
    }
    out
}

/// [`alike_default`] counts points of this many ranks or more: on fewer,
/// different trees are nearly one shape (a root and two or three sends).
/// [`BY_DECISION`] says it in words.
pub const ALIKE_MIN_RANKS: usize = 8;

/// [`alike`] from measurements alone (`table build`, where no model
/// says where two algorithms differ): each forced algorithm against the
/// library's default (0) at the points of [`ALIKE_MIN_RANKS`] ranks or
/// more where Open MPI's fixed decision runs other code than it
/// ([`trees::same_run`]).
pub fn alike_default(meas: &Measured) -> Vec<Alike> {
    let mut pairs: BTreeMap<u32, Tally> = BTreeMap::new();
    for (&(ranks, bytes), algs) in meas {
        let Some(&d) = algs.get(&0) else { continue };
        if ranks < ALIKE_MIN_RANKS {
            continue;
        }
        for (&b, &t) in algs.range(1..own::FIRST) {
            if trees::same_run(0, b, ranks, bytes) {
                continue;
            }
            pairs.entry(b).or_default().add(d, t);
        }
    }
    pairs
        .into_iter()
        .filter_map(|(b, tally)| tally.flag(0, b, BY_DECISION))
        .collect()
}

/// The forced algorithms of Open MPI's measured in `samples` whose runs
/// most likely did not force them ([`alike_default`], under each mapping
/// the samples were taken with), each once.
pub fn unforced(samples: &[Sample]) -> Vec<Alike> {
    let mut mappings: Vec<Mapping> = samples.iter().filter_map(sample_mapping).collect();
    mappings.sort();
    mappings.dedup();
    if mappings.is_empty() {
        mappings.push(Mapping::Core);
    }
    let mut out: Vec<Alike> = Vec::new();
    for m in mappings {
        for al in alike_default(&measured(samples, m)) {
            if !out.iter().any(|x| x.b == al.b) {
                out.push(al);
            }
        }
    }
    out
}

/// `meas` without algorithm `alg`'s times.
pub fn without(meas: &Measured, alg: u32) -> Measured {
    meas.iter()
        .map(|(&k, algs)| {
            let kept = algs
                .iter()
                .filter(|(&a, _)| a != alg)
                .map(|(&a, &t)| (a, t))
                .collect();
            (k, kept)
        })
        .collect()
}

/// The mapping a sample was taken under, where its source says it
/// (`imported:...:map-by-socket`).
pub fn sample_mapping(s: &Sample) -> Option<Mapping> {
    s.source
        .rsplit(':')
        .next()
        .and_then(|t| t.strip_prefix("map-by-"))
        .and_then(|m| Mapping::parse(m).ok())
}

/// The algorithm a broadcast sample ran, if the model knows it: Open MPI's
/// coll/tuned id (0: the library's decision), or one of colltune's own
/// ([`own`]: `bine` as pico's `*_over` files are read), run blocking; with
/// its segment size (0: none).
pub fn algorithm_of(s: &Sample) -> Option<(u32, u64)> {
    let spec = colltune_algorithms::AlgoSpec::parse(&s.spec).ok()?;
    if let Ok(f) = Forced::from_spec(&spec) {
        return Some((f.id, u64::from(f.segment)));
    }
    // colltune's own as the simulator runs it: blocking (a nonblocking
    // run of the same spec is another schedule's time).
    own::by_name(&s.spec)
        .filter(|_| s.execution == colltune_algorithms::Execution::Blocking.name())
        .map(|o| (o.id, 0))
}

/// Whether `s` is a sample of algorithm `alg` ([`algorithm_of`]: Open
/// MPI's coll/tuned id, 0 the library's default, or one of colltune's own).
pub fn is_forced(s: &Sample, alg: u32) -> bool {
    algorithm_of(s).is_some_and(|f| f.0 == alg)
}

/// The measured broadcast times of the algorithms the model knows
/// ([`algorithm_of`]: Open MPI's, colltune's own) in `samples`
/// taken under `mapping` (samples that do not say their mapping count for
/// any): per point, each algorithm's median over its runs, outliers left
/// out where others remain.
pub fn measured(samples: &[Sample], mapping: Mapping) -> Measured {
    let mut runs: BTreeMap<(usize, u64, u32), Vec<(f64, bool)>> = BTreeMap::new();
    for s in samples {
        if s.collective != "bcast" || sample_mapping(s).is_some_and(|m| m != mapping) {
            continue;
        }
        let Some((id, segment)) = algorithm_of(s) else {
            continue;
        };
        if segment != 0 {
            continue;
        }
        runs.entry((s.ranks as usize, s.bytes, id))
            .or_default()
            .push((s.time_us, s.outlier != 0));
    }
    let mut out = Measured::new();
    for ((r, b, a), v) in runs {
        let clean: Vec<f64> = v.iter().filter(|x| !x.1).map(|x| x.0).collect();
        let all: Vec<f64> = v.iter().map(|x| x.0).collect();
        let t = median(if clean.is_empty() { &all } else { &clean });
        out.entry((r, b)).or_default().insert(a, t);
    }
    out
}

/// One point of the check.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub ranks: usize,
    pub bytes: u64,
    /// Algorithm -> (measured, predicted) time, us; the default (0) too
    /// where measured.
    pub times: BTreeMap<u32, (f64, f64)>,
    pub measured_winner: u32,
    pub predicted_winner: u32,
    /// Measured time of the predicted winner over the measured best.
    pub regret: f64,
    /// The library default's measured time over the measured best.
    pub default_regret: Option<f64>,
    /// The runner-up's predicted time is within the model's own error
    /// ([`Model::fit_error`]) of the predicted winner's: the model cannot
    /// tell them apart.
    pub uncertain: bool,
}

impl Point {
    pub fn agrees(&self) -> bool {
        self.predicted_winner == self.measured_winner || self.regret <= AGREE_WITHIN
    }
}

/// The check's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub points: usize,
    pub agreement: f64,
    pub regret_geomean: f64,
    pub regret_worst: f64,
    /// Geometric mean of the default's regret over the points that have it.
    pub default_regret: Option<f64>,
    /// Points marked [`Point::uncertain`].
    pub uncertain: usize,
    /// Agreement over the other points (None: every point uncertain).
    pub agreement_certain: Option<f64>,
    /// Median time error over every algorithm and point.
    pub time_error_median: f64,
    /// Per algorithm: median time error.
    pub time_error_by_algorithm: BTreeMap<u32, f64>,
    /// Per rank count: (measured, predicted) geometric mean over sizes of
    /// the default's time over the best forced algorithm's.
    pub default_ratio: BTreeMap<usize, (f64, f64)>,
    /// Where the library's decision runs one of the forced algorithms as
    /// forced (the same code: [`trees::same_run`]): how many points, and
    /// the geometric mean of the measured default's time over that
    /// algorithm's. It is 1 where the two were measured alike; any other
    /// value is an offset between the runs that no model can predict.
    pub default_self: Option<(usize, f64)>,
}

impl Summary {
    /// The last line `predict` prints.
    pub fn line(&self) -> String {
        let d = self
            .default_regret
            .map_or_else(|| "-".to_string(), |d| format!("{d:.2}"));
        format!(
            "agreement {:.0}% of {} points; regret geomean {:.2}, worst {:.2}; library default regret {d}; time error median {:.0}%",
            100.0 * self.agreement,
            self.points,
            self.regret_geomean,
            self.regret_worst,
            100.0 * self.time_error_median
        )
    }
}

impl Summary {
    /// The line on the points the model cannot decide
    /// ([`Point::uncertain`]), printed before [`Summary::line`].
    pub fn uncertain_line(&self, error: f64) -> String {
        let rest = self
            .agreement_certain
            .map_or_else(|| "-".to_string(), |a| format!("{:.0}%", 100.0 * a));
        format!(
            "uncertain: {} of {} points (the runner-up predicted within the model's error, {:.0}%); agreement on the other {}: {rest}",
            self.uncertain,
            self.points,
            100.0 * error,
            self.points - self.uncertain
        )
    }
}

/// A point's times of the forced algorithms (the library's default, 0,
/// left out): the candidates a winner is chosen among.
pub fn forced(algs: &BTreeMap<u32, f64>) -> BTreeMap<u32, f64> {
    algs.iter()
        .filter(|(&a, _)| a != 0)
        .map(|(&a, &t)| (a, t))
        .collect()
}

fn argmin(m: &BTreeMap<u32, f64>) -> u32 {
    m.iter()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map(|(&a, _)| a)
        .expect("a point with algorithms")
}

/// Whether the runner-up of `predicted` is within `error` (a share) of
/// the winner ([`Point::uncertain`]).
pub fn within_error(predicted: &BTreeMap<u32, f64>, error: f64) -> bool {
    let mut t: Vec<f64> = predicted.values().copied().collect();
    t.sort_by(f64::total_cmp);
    t.len() >= 2 && t[1] <= t[0] * (1.0 + error)
}

/// Predicts every point of `meas` that measured two forced algorithms or
/// more, on model `m` with ranks placed by `mapping` on `layout`, each
/// time taken as `kind` of the ranks' times.
pub fn check(
    m: &Model,
    layout: &Layout,
    mapping: Mapping,
    meas: &Measured,
    kind: TimeKind,
) -> Result<(Vec<Point>, Summary), String> {
    let mut points = Vec::new();
    for (&(ranks, bytes), algs) in meas {
        let forced = forced(algs);
        if forced.len() < 2 {
            continue;
        }
        let mut times = BTreeMap::new();
        for (&a, &t) in algs {
            let p = trees::simulate(m, layout, mapping, a, ranks, bytes)
                .map(|e| kind.of(&e))
                .map_err(|e| format!("{ranks} ranks, {bytes} B, algorithm {a}: {e}"))?;
            times.insert(a, (t, p));
        }
        let predicted: BTreeMap<u32, f64> = forced.keys().map(|a| (*a, times[a].1)).collect();
        let (mw, pw) = (argmin(&forced), argmin(&predicted));
        let best = forced[&mw];
        points.push(Point {
            ranks,
            bytes,
            measured_winner: mw,
            predicted_winner: pw,
            regret: forced[&pw] / best,
            default_regret: algs.get(&0).map(|d| d / best),
            uncertain: within_error(&predicted, m.fit_error.unwrap_or(0.0)),
            times,
        });
    }
    if points.is_empty() {
        return Err("no point measured two or more of Open MPI's forced algorithms (coll/tuned 1-9) or colltune's own (bine, scatter_allgather) under this mapping".into());
    }
    let summary = summarize(&points);
    Ok((points, summary))
}

/// The figures over `points`.
pub fn summarize(points: &[Point]) -> Summary {
    let regrets: Vec<f64> = points.iter().map(|p| p.regret).collect();
    let defaults: Vec<f64> = points.iter().filter_map(|p| p.default_regret).collect();
    let mut by_alg: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for p in points {
        for (&a, &(t, q)) in &p.times {
            by_alg.entry(a).or_default().push((q - t).abs() / t);
        }
    }
    let all: Vec<f64> = by_alg.values().flatten().copied().collect();
    let mut ratio: BTreeMap<usize, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for p in points {
        if let Some(&(d, dp)) = p.times.get(&0) {
            let best_meas = p.times[&p.measured_winner].0;
            let best_pred = p
                .times
                .iter()
                .filter(|(&a, _)| a != 0)
                .map(|(_, x)| x.1)
                .fold(f64::INFINITY, f64::min);
            let e = ratio.entry(p.ranks).or_default();
            e.0.push(d / best_meas);
            e.1.push(dp / best_pred);
        }
    }
    let same: Vec<f64> = points
        .iter()
        .filter_map(|p| {
            let d = p.times.get(&0)?.0;
            let forced = p
                .times
                .iter()
                .find(|(&a, _)| a != 0 && trees::same_run(0, a, p.ranks, p.bytes));
            forced.map(|(_, x)| d / x.0)
        })
        .collect();
    let certain: Vec<&Point> = points.iter().filter(|p| !p.uncertain).collect();
    Summary {
        uncertain: points.len() - certain.len(),
        agreement_certain: (!certain.is_empty())
            .then(|| certain.iter().filter(|p| p.agrees()).count() as f64 / certain.len() as f64),
        default_self: (!same.is_empty()).then(|| (same.len(), geomean(&same))),
        points: points.len(),
        agreement: points.iter().filter(|p| p.agrees()).count() as f64 / points.len() as f64,
        regret_geomean: geomean(&regrets),
        regret_worst: regrets.iter().copied().fold(1.0, f64::max),
        default_regret: (!defaults.is_empty()).then(|| geomean(&defaults)),
        time_error_median: median(&all),
        time_error_by_algorithm: by_alg.into_iter().map(|(a, v)| (a, median(&v))).collect(),
        default_ratio: ratio
            .into_iter()
            .map(|(r, (m, p))| (r, (geomean(&m), geomean(&p))))
            .collect(),
    }
}

#[cfg(test)]
mod tests;
