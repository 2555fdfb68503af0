//! The tuner: a budgeted, adaptive search over the tuning space that spends
//! its measurements where decisions are made. MPI-free: it asks an
//! [`Oracle`] for measurements (the MPI driver in [`driver`], or a network
//! model), so its logic is tested without MPI.
//!
//! Per communicator and collective:
//! 1. **Coarse sizes** (every `stride`-th size of the grid, and the last):
//!    every candidate is *screened* with `screen_runs` cheap runs (a fraction
//!    of the time budget); candidates whose best run median is worse than
//!    the leader's worst by more than `margin` are **dominated** and dropped
//!    there (repeated samples say so, not one); survivors get `full_runs`
//!    full-budget runs.
//! 2. **Segment sizes** of the best segmented survivors are tuned at each
//!    coarse size with argmin's bounded one-dimensional optimiser (Brent)
//!    over log2(segment), rounded to powers of two and memoised.
//! 3. **Crossovers**: between two neighbouring measured sizes whose winners
//!    differ by more than `margin` at either end, the size between is
//!    measured (with the survivors of both ends only): the middle grid size,
//!    or off the grid the geometric mean, recursively, until the crossover
//!    is pinned between sizes within [`RESOLUTION`] of each other (protocol
//!    switches such as an eager limit sit between powers of two). Where both
//!    ends agree, or the choice between them hardly matters, nothing between
//!    is measured.
//!
//! 4. **Open decisions** ([`resolve`]): at the measured sizes whose
//!    decision the evidence leaves open, further rounds of runs of the
//!    subjects that decide it, until resolved or `extra_rounds` or the
//!    budget is spent.
//!
//! A further launch ([`focus`], `tune --focus`) instead measures only the
//! points earlier launches left open, each with the subjects that decide
//! it, `screen_runs + full_runs` full runs, then step 4.
//!
//! `exhaustive` instead measures every candidate (and every segment size of
//! the grid) at every size with `screen_runs + full_runs` full runs: the
//! reference the adaptive search is judged against.

pub mod focus;
pub mod noise_bench;
pub mod resolve;
#[cfg(test)]
mod resolve_tests;
pub mod resume;
pub mod sim;
pub mod space;
pub mod wire;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use argmin::core::{CostFunction, Executor};
use argmin::solver::brent::BrentOpt;
use colltune_algorithms::Collective;
use thiserror::Error;

use crate::measure::stats::{self, Summary};
pub use space::{
    adapt_candidates, candidates, distinct_at, library_candidates, mpich_candidates, segment_grid,
    Candidate, SpaceOptions,
};

/// One measurement the search asks for: one run of one point.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Which communicator (0: the world; others: sub-communicators).
    pub comm: usize,
    pub cand: Candidate,
    pub bytes: u64,
    pub run: u32,
    /// Fraction of the per-point time budget to spend.
    pub budget_scale: f64,
}

#[derive(Debug, Error)]
pub enum TuneError {
    /// The oracle could not measure (an MPI error, say).
    #[error(transparent)]
    Measure(Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Record(#[from] crate::measure::record::RecordError),
    #[error("{0}")]
    Other(String),
}

/// Where measurements come from.
pub trait Oracle {
    /// Measures each request; returns each one's per-repetition times (us).
    fn measure(&mut self, reqs: &[Request]) -> Result<Vec<Vec<f64>>, TuneError>;
    /// Whether the search should stop now (budget spent, SIGTERM).
    fn should_stop(&self) -> bool {
        false
    }
    /// Whether the measurements are deterministic (a model): their
    /// evidence is exact, as the table builder reads simulated samples, so
    /// no decision is ever open.
    fn exact(&self) -> bool {
        false
    }
}

/// Search settings.
#[derive(Clone, Debug)]
pub struct Settings {
    pub sizes: Vec<u64>,
    pub screen_runs: u32,
    pub full_runs: u32,
    pub screen_scale: f64,
    pub margin: f64,
    pub stride: usize,
    pub brent_iters: u64,
    pub exhaustive: bool,
    pub deadline: Option<Instant>,
    /// The MPI library's own broadcast algorithms compared beside
    /// colltune's (measured only): coll/tuned's ([`library_candidates`])
    /// and coll/adapt's ([`adapt_candidates`]) on Open MPI, MPICH's
    /// ([`mpich_candidates`]) on MPICH; what the running library lets
    /// colltune force.
    pub library_candidates: Vec<Candidate>,
    /// The minimum gain decisions are judged by (`--min-gain`); None
    /// (`--no-evidence`): no further rounds.
    pub min_gain: Option<f64>,
    /// Further rounds at most where decisions are open ([`resolve`]).
    pub extra_rounds: u32,
    /// A further launch: only these points and subjects ([`focus`]).
    pub focus: Option<focus::Focus>,
}

/// The default cap on further rounds (`tune --extra-rounds`).
pub const DEFAULT_EXTRA_ROUNDS: u32 = 3;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sizes: (0..23).map(|i| 1u64 << i).collect(),
            screen_runs: 2,
            full_runs: 2,
            screen_scale: 0.25,
            margin: 0.05,
            stride: 4,
            brent_iters: 6,
            exhaustive: false,
            deadline: None,
            library_candidates: Vec::new(),
            min_gain: Some(crate::tables::table::evidence::DEFAULT_MIN_GAIN),
            extra_rounds: DEFAULT_EXTRA_ROUNDS,
            focus: None,
        }
    }
}

impl Settings {
    pub fn runs(&self) -> u32 {
        self.screen_runs + self.full_runs
    }
}

/// Off the grid, crossovers are pinned until the sizes around them are
/// within this ratio (protocol switches such as an eager limit sit between
/// powers of two).
pub const RESOLUTION: f64 = 1.2;

/// The size to measure between two measured sizes `lo` < `hi`: the grid's
/// nearest to their geometric mean, else the geometric mean while the two
/// are more than [`RESOLUTION`] apart; None where none lies strictly
/// between.
pub(crate) fn between(lo: u64, hi: u64, grid: &[u64]) -> Option<u64> {
    let geo = ((lo as f64) * (hi as f64)).sqrt();
    let mid = match grid
        .iter()
        .copied()
        .filter(|&s| s > lo && s < hi)
        .min_by(|a, b| {
            ((*a as f64).ln() - geo.ln())
                .abs()
                .total_cmp(&((*b as f64).ln() - geo.ln()).abs())
        }) {
        Some(m) => m,
        None if hi as f64 / lo.max(1) as f64 > RESOLUTION && hi > lo + 1 => geo.round() as u64,
        None => return None,
    };
    (mid > lo && mid < hi).then_some(mid)
}

/// Times per candidate per run, per size.
type Data = BTreeMap<u64, BTreeMap<Candidate, BTreeMap<u32, Vec<f64>>>>;

/// The search over one communicator and collective.
pub struct Search<'a, O: Oracle> {
    oracle: &'a mut O,
    settings: &'a Settings,
    comm: usize,
    cands: Vec<Candidate>,
    data: Data,
    /// Points measured (requests answered), weighted by their budget scale.
    pub cost: f64,
    /// The search stopped early (budget or signal).
    pub cut_short: bool,
}

impl<'a, O: Oracle> Search<'a, O> {
    pub fn new(
        oracle: &'a mut O,
        settings: &'a Settings,
        comm: usize,
        cands: Vec<Candidate>,
    ) -> Self {
        Search {
            oracle,
            settings,
            comm,
            cands,
            data: BTreeMap::new(),
            cost: 0.0,
            cut_short: false,
        }
    }

    fn stop(&mut self) -> bool {
        if self.settings.deadline.is_some_and(|d| Instant::now() >= d) || self.oracle.should_stop()
        {
            self.cut_short = true;
        }
        self.cut_short
    }

    /// Measures one run of these candidates at `bytes` (skipping any
    /// already measured for that run). False when the search must stop.
    fn measure(
        &mut self,
        bytes: u64,
        cands: &[Candidate],
        run: u32,
        scale: f64,
    ) -> Result<bool, TuneError> {
        if self.stop() {
            return Ok(false);
        }
        let reqs: Vec<Request> = space::distinct_at(bytes, cands)
            .iter()
            .filter(|c| {
                !self
                    .data
                    .get(&bytes)
                    .and_then(|m| m.get(*c))
                    .is_some_and(|r| r.contains_key(&run))
            })
            .map(|c| Request {
                comm: self.comm,
                cand: c.clone(),
                bytes,
                run,
                budget_scale: scale,
            })
            .collect();
        if reqs.is_empty() {
            return Ok(true);
        }
        let times = self.oracle.measure(&reqs)?;
        for (r, t) in reqs.into_iter().zip(times) {
            self.cost += r.budget_scale;
            self.data
                .entry(bytes)
                .or_default()
                .entry(r.cand)
                .or_default()
                .insert(run, t);
        }
        Ok(true)
    }

    fn summary(&self, bytes: u64, c: &Candidate) -> Option<Summary> {
        let runs = self.data.get(&bytes)?.get(c)?;
        let v: Vec<Vec<f64>> = runs.values().cloned().collect();
        Some(stats::summarize(&v))
    }

    /// Candidates of `set` not clearly dominated at `bytes`, best first.
    /// The library's own decision is never dropped: every gain a table
    /// records is measured against it, so it runs every run at every size
    /// (pruned at screening, a refined size had no reference and its rule
    /// was judged against the next-best library algorithm instead).
    fn survivors(&self, bytes: u64, set: &[Candidate]) -> Vec<Candidate> {
        let mut s: Vec<(Candidate, Summary)> = set
            .iter()
            .filter_map(|c| self.summary(bytes, c).map(|s| (c.clone(), s)))
            .collect();
        s.sort_by(|a, b| a.1.median.total_cmp(&b.1.median));
        let Some((_, best)) = s.first() else {
            return Vec::new();
        };
        let limit = best.run_range().1 * (1.0 + self.settings.margin);
        let best_median = best.median;
        s.into_iter()
            .filter(|(c, x)| {
                c.is_reference() || x.run_range().0 <= limit || x.median <= best_median
            })
            .map(|(c, _)| c)
            .collect()
    }

    /// The best candidate measured at `bytes`.
    pub fn winner(&self, bytes: u64) -> Option<Candidate> {
        let m = self.data.get(&bytes)?;
        m.keys()
            .filter_map(|c| self.summary(bytes, c).map(|s| (c, s.median)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(b.0)))
            .map(|(c, _)| c.clone())
    }

    /// Screen, prune, confirm: the survivors at `bytes`.
    fn evaluate(&mut self, bytes: u64, live: &[Candidate]) -> Result<Vec<Candidate>, TuneError> {
        let st = self.settings;
        for run in 1..=st.screen_runs {
            if !self.measure(bytes, live, run, st.screen_scale)? {
                return Ok(self.survivors(bytes, live));
            }
        }
        let surv = self.survivors(bytes, live);
        for run in st.screen_runs + 1..=st.runs() {
            if !self.measure(bytes, &surv, run, 1.0)? {
                break;
            }
        }
        Ok(self.survivors(bytes, &surv))
    }

    /// Tunes the segment size of `family` at `bytes` with Brent's method
    /// over log2(segment); returns the best segmented candidate measured.
    fn tune_segment(
        &mut self,
        bytes: u64,
        family: &Candidate,
    ) -> Result<Option<Candidate>, TuneError> {
        let grid = segment_grid(bytes);
        if grid.is_empty() || family.segment().is_none() {
            return Ok(None);
        }
        let lo = (grid[0] as f64).log2();
        let hi = (*grid.last().expect("non-empty") as f64).log2();
        let iters = self.settings.brent_iters;
        let cell = RefCell::new((&mut *self, None::<TuneError>));
        let eval = |x: f64| -> f64 {
            let seg = (1u64 << x.round().clamp(lo, hi) as u32)
                .clamp(grid[0], *grid.last().expect("grid"));
            let c = family.with_segment(seg);
            let mut g = cell.borrow_mut();
            let (search, err) = &mut *g;
            if err.is_some() {
                return f64::INFINITY;
            }
            let runs = search.settings.runs();
            for run in 1..=runs {
                match search.measure(bytes, std::slice::from_ref(&c), run, 1.0) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        *err = Some(e);
                        return f64::INFINITY;
                    }
                }
            }
            search
                .summary(bytes, &c)
                .map(|s| s.median)
                .unwrap_or(f64::INFINITY)
        };
        if (hi - lo).abs() < 0.5 {
            eval(lo);
        } else {
            let _ = Executor::new(
                Log2Cost(&eval),
                BrentOpt::new(lo, hi).set_tolerance(1e-3, 0.5),
            )
            .configure(|s| s.max_iters(iters))
            .run();
        }
        let (search, err) = cell.into_inner();
        if let Some(e) = err {
            return Err(e);
        }
        Ok(grid
            .iter()
            .map(|&g| family.with_segment(g))
            .filter_map(|c| search.summary(bytes, &c).map(|s| (c, s.median)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(c, _)| c))
    }

    /// Runs the search (adaptive, exhaustive, or a further launch's).
    pub fn run(&mut self) -> Result<(), TuneError> {
        if let Some(f) = &self.settings.focus {
            let coll = self.cands.first().map(|c| c.collective);
            let points = coll.and_then(|c| f.at(self.comm, c)).cloned();
            return self.run_focused(points.unwrap_or_default());
        }
        if self.settings.exhaustive {
            return self.run_exhaustive();
        }
        let sizes = self.settings.sizes.clone();
        let n = sizes.len();
        if n == 0 {
            return Ok(());
        }
        let mut coarse: Vec<usize> = (0..n).step_by(self.settings.stride.max(1)).collect();
        if *coarse.last().expect("non-empty") != n - 1 {
            coarse.push(n - 1);
        }
        let mut survivors_at: BTreeMap<u64, Vec<Candidate>> = BTreeMap::new();
        let all = self.cands.clone();
        for &i in &coarse {
            let bytes = sizes[i];
            let mut surv = self.evaluate(bytes, &all)?;
            // Tune the segment size of the two best segmented families.
            let families: Vec<Candidate> = {
                let mut seen = BTreeSet::new();
                surv.iter()
                    .filter(|c| c.segment().is_some())
                    .map(Candidate::family)
                    .filter(|f| seen.insert(f.clone()))
                    .take(2)
                    .collect()
            };
            for f in families {
                if let Some(t) = self.tune_segment(bytes, &f)? {
                    surv.push(t);
                }
            }
            let surv = self.survivors(bytes, &surv);
            survivors_at.insert(bytes, surv);
            if self.cut_short {
                return Ok(());
            }
        }
        for w in coarse.windows(2) {
            self.bisect(sizes[w[0]], sizes[w[1]], &mut survivors_at)?;
            if self.cut_short {
                break;
            }
        }
        Ok(())
    }

    /// Whether choosing wrongly between the winners at `lo` and `hi`
    /// anywhere between them would cost more than `margin`: at either end,
    /// the other end's winner is worse (or was dropped there).
    fn contested(&self, lo: u64, hi: u64) -> bool {
        let (Some(a), Some(b)) = (self.winner(lo), self.winner(hi)) else {
            return false;
        };
        if a == b {
            return false;
        }
        let loss = |at: u64, good: &Candidate, other: &Candidate| match (
            self.summary(at, good),
            self.summary(at, other),
        ) {
            (Some(g), Some(o)) => o.median / g.median - 1.0,
            _ => f64::INFINITY,
        };
        loss(lo, &a, &b) > self.settings.margin || loss(hi, &b, &a) > self.settings.margin
    }

    /// Between two measured sizes whose winners differ (and matter), measure
    /// the size between them (a grid size if there is one, else the
    /// geometric mean) and recurse, until the crossover lies between sizes
    /// within `resolution` of each other.
    fn bisect(
        &mut self,
        lo: u64,
        hi: u64,
        survivors_at: &mut BTreeMap<u64, Vec<Candidate>>,
    ) -> Result<(), TuneError> {
        if !self.contested(lo, hi) {
            return Ok(());
        }
        let Some(mid) = between(lo, hi, &self.settings.sizes) else {
            return Ok(());
        };
        let mut live: Vec<Candidate> = survivors_at.get(&lo).cloned().unwrap_or_default();
        for c in survivors_at.get(&hi).cloned().unwrap_or_default() {
            if !live.contains(&c) {
                live.push(c);
            }
        }
        let surv = self.evaluate(mid, &live)?;
        survivors_at.insert(mid, surv);
        if self.cut_short {
            return Ok(());
        }
        self.bisect(lo, mid, survivors_at)?;
        self.bisect(mid, hi, survivors_at)
    }

    /// A further launch ([`focus`]): at each open size, every run of the
    /// subjects that decide it, interleaved as in the sweep.
    fn run_focused(&mut self, points: BTreeMap<u64, Vec<focus::Label>>) -> Result<(), TuneError> {
        for (bytes, who) in points {
            let live: Vec<Candidate> = who
                .iter()
                .filter_map(|l| focus::candidate_of(&self.cands, l))
                .collect();
            for run in 1..=self.settings.runs() {
                if !self.measure(bytes, &live, run, 1.0)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn run_exhaustive(&mut self) -> Result<(), TuneError> {
        for bytes in self.settings.sizes.clone() {
            let mut live = Vec::new();
            for c in &self.cands {
                live.push(c.clone());
                if c.segment().is_some() {
                    live.extend(segment_grid(bytes).into_iter().map(|g| c.with_segment(g)));
                }
            }
            for run in 1..=self.settings.runs() {
                if !self.measure(bytes, &live, run, 1.0)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Measured sizes and their winners.
    pub fn winners(&self) -> BTreeMap<u64, Candidate> {
        self.data
            .keys()
            .filter_map(|&b| self.winner(b).map(|w| (b, w)))
            .collect()
    }
}

/// Adapts a closure over log2(segment) to argmin's cost function.
struct Log2Cost<'f, F: Fn(f64) -> f64>(&'f F);

impl<F: Fn(f64) -> f64> CostFunction for Log2Cost<'_, F> {
    type Param = f64;
    type Output = f64;
    fn cost(&self, x: &f64) -> Result<f64, argmin::core::Error> {
        Ok((self.0)(*x))
    }
}

/// Which collectives a tune covers, in order.
pub fn collectives_of(list: &[Collective]) -> Vec<Collective> {
    if list.is_empty() {
        Collective::ALL.to_vec()
    } else {
        list.to_vec()
    }
}

/// What a campaign did.
#[derive(Debug, Default)]
pub struct Campaign {
    /// A search stopped early (budget, SIGTERM).
    pub cut_short: bool,
    /// Per (communicator, collective), the further rounds at open sizes
    /// and the runs they measured.
    pub rounds: Vec<((usize, Collective), resolve::Outcome<u64>, u32)>,
}

impl Campaign {
    /// The further rounds for the table's provenance.
    pub fn further(&self) -> Option<crate::tables::table::evidence::Further> {
        let v: Vec<(resolve::Outcome<u64>, u32)> = self
            .rounds
            .iter()
            .map(|(_, o, r)| (o.clone(), *r))
            .collect();
        resolve::further(&v)
    }
}

/// One search of the campaign: the sweep, then its further rounds. The
/// first value says whether the sweep itself was cut short (budget,
/// SIGTERM): further rounds that stop at the budget leave the sweep, and
/// the table, complete (their outcome says the budget ran out), so no
/// `.incomplete` marker asks a batch job to run the sweep again.
fn sweep_and_resolve<O: Oracle>(
    search: &mut Search<'_, O>,
) -> Result<(bool, resolve::Outcome<u64>, u32), TuneError> {
    search.run()?;
    let swept_short = search.cut_short;
    let (o, runs) = search.resolve()?;
    Ok((swept_short, o, runs))
}

/// Runs the search for every communicator (its index for the oracle and
/// whether it spans several nodes) and every collective, in that order: the
/// one campaign loop of `tune`, measured or simulated, each search followed
/// by its further rounds where decisions are open.
pub fn search_all<O: Oracle>(
    oracle: &mut O,
    settings: &Settings,
    comms: &[(usize, bool)],
    collectives: &[Collective],
    executions: &[colltune_algorithms::Execution],
    pairing: &str,
) -> Result<Campaign, TuneError> {
    let mut out = Campaign::default();
    for &(ci, multi_node) in comms {
        let opts = SpaceOptions {
            executions: executions.to_vec(),
            pairing: pairing.to_string(),
            multi_node,
        };
        for &coll in collectives {
            let mut cands = candidates(coll, &opts);
            if coll == Collective::Bcast {
                cands.extend(settings.library_candidates.iter().cloned());
            }
            let mut search = Search::new(oracle, settings, ci, cands);
            let (swept_short, o, runs) = sweep_and_resolve(&mut search)?;
            out.cut_short |= swept_short;
            out.rounds.push(((ci, coll), o, runs));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use colltune_algorithms::Execution;

    /// A synthetic machine: alpha-beta costs with a segmentation sweet spot
    /// and multiplicative noise, deterministic per (candidate, size, run, rep).
    struct Model {
        asked: Vec<Request>,
        noise: f64,
    }

    fn model_time(c: &Candidate, n: f64) -> f64 {
        let seg = c.segment().unwrap_or(0) as f64;
        let base = match c.spec.name.as_str() {
            "linear" => 2.0 + n / 800.0,
            "binomial" => 3.0 + n / 1500.0,
            "pipeline" => 6.0 + n / 3000.0,
            _ => 8.0 + n / 500.0,
        };
        // segments help pipelines above 64 KiB, cost 0.3 us each
        let seg_term = if seg > 0.0 {
            (n / seg) * 0.3 - if n > 65536.0 { n / 9000.0 } else { 0.0 }
        } else {
            0.0
        };
        let exec = if c.exec == Execution::Nonblocking {
            0.2
        } else {
            0.0
        };
        (base + seg_term + exec).max(0.5)
    }

    impl Oracle for Model {
        fn measure(&mut self, reqs: &[Request]) -> Result<Vec<Vec<f64>>, TuneError> {
            self.asked.extend(reqs.iter().cloned());
            Ok(reqs
                .iter()
                .map(|r| {
                    let t = model_time(&r.cand, r.bytes as f64);
                    (0..7)
                        .map(|k| {
                            let h = (r.run as u64 * 7919 + k * 104_729 + r.bytes) % 1000;
                            t * (1.0 + self.noise * (h as f64 / 1000.0 - 0.5))
                        })
                        .collect()
                })
                .collect())
        }
    }

    fn cands() -> Vec<Candidate> {
        let mut v = Vec::new();
        for s in [
            "linear",
            "binomial:segment=0",
            "pipeline:segment=0",
            "binary:segment=0",
        ] {
            for e in Execution::ALL {
                v.push(Candidate::new(Collective::Bcast, s, e));
            }
        }
        v
    }

    #[test]
    fn adaptive_finds_the_exhaustive_winners_for_a_fraction_of_the_cost() {
        let settings = Settings::default();
        let mut m = Model {
            asked: vec![],
            noise: 0.02,
        };
        let mut a = Search::new(&mut m, &settings, 0, cands());
        a.run().unwrap();
        let adaptive = a.winners();
        let cost_a = a.cost;

        let ex_settings = Settings {
            exhaustive: true,
            ..Settings::default()
        };
        let mut m2 = Model {
            asked: vec![],
            noise: 0.02,
        };
        let mut e = Search::new(&mut m2, &ex_settings, 0, cands());
        e.run().unwrap();
        let exhaustive = e.winners();
        assert!(cost_a / e.cost < 0.2, "cost ratio {}", cost_a / e.cost);

        // Every grid size: the rule the adaptive table gives (nearest
        // measured size, geometric midpoints) vs the exhaustive winner.
        let mut regret = Vec::new();
        for (&b, ew) in &exhaustive {
            let (&ab, aw) = adaptive
                .iter()
                .min_by(|x, y| {
                    let d = |s: u64| ((s as f64).ln() - (b as f64).ln()).abs();
                    d(*x.0).total_cmp(&d(*y.0))
                })
                .unwrap();
            let _ = ab;
            regret.push(model_time(aw, b as f64) / model_time(ew, b as f64));
        }
        let g = stats::geomean(&regret);
        assert!(g <= 1.05, "geomean regret {g}");
        // segment sizes were tuned for the pipeline at large sizes
        let big = adaptive.get(&(1 << 22)).unwrap();
        assert_eq!(big.spec.name, "pipeline", "{big:?}");
        assert!(big.segment().unwrap() > 0);
    }

    #[test]
    fn dominated_candidates_are_dropped_only_on_repeated_evidence() {
        let settings = Settings::default();
        let mut m = Model {
            asked: vec![],
            noise: 0.0,
        };
        let mut s = Search::new(&mut m, &settings, 0, cands());
        let surv = s.evaluate(1, &cands()).unwrap();
        // linear wins at 1 byte; binary is far behind and dropped
        assert_eq!(surv[0].spec.name, "linear");
        assert!(surv.iter().all(|c| c.spec.name != "binary"));
        // dropped candidates got the two screening runs only
        let asked_binary: Vec<u32> = m
            .asked
            .iter()
            .filter(|r| r.cand.spec.name == "binary")
            .map(|r| r.run)
            .collect();
        assert_eq!(asked_binary, vec![1, 1, 2, 2]);
    }

    #[test]
    fn the_librarys_decision_is_never_dropped() {
        // The library's default is slow in this model (it falls to the
        // costliest branch), so screening would prune it everywhere; it
        // must still be measured in every run at every size the search
        // measures, refined sizes included: it is the reference.
        let reference = Candidate::library(crate::libraries::ompi::Forced { id: 0, segment: 0 });
        assert!(reference.is_reference());
        let mut all = cands();
        all.push(reference.clone());
        let settings = Settings::default();
        let mut m = Model {
            asked: vec![],
            noise: 0.02,
        };
        let mut s = Search::new(&mut m, &settings, 0, all);
        s.run().unwrap();
        let sizes: std::collections::BTreeSet<u64> = m.asked.iter().map(|r| r.bytes).collect();
        assert!(sizes.len() > 5, "{sizes:?}");
        for &b in &sizes {
            let runs: std::collections::BTreeSet<u32> = m
                .asked
                .iter()
                .filter(|r| r.bytes == b && r.cand == reference)
                .map(|r| r.run)
                .collect();
            let want: std::collections::BTreeSet<u32> = (1..=settings.runs()).collect();
            assert_eq!(runs, want, "the reference's runs at {b} B");
        }
        // Pruning still happens to the others: binary (as slow) is dropped
        // after screening somewhere.
        let dropped = sizes.iter().any(|&b| {
            !m.asked.iter().any(|r| {
                r.bytes == b && r.cand.spec.name == "binary" && r.run > settings.screen_runs
            })
        });
        assert!(dropped, "binary was never pruned");
    }

    #[test]
    fn a_deadline_stops_the_search_with_what_it_has() {
        let settings = Settings {
            deadline: Some(Instant::now()),
            ..Settings::default()
        };
        let mut m = Model {
            asked: vec![],
            noise: 0.0,
        };
        let mut s = Search::new(&mut m, &settings, 0, cands());
        s.run().unwrap();
        assert!(s.cut_short);
        assert!(m.asked.is_empty());
    }
}
