//! The tuner's quality, independent of the machine it runs on: the
//! simulator's noise-free times are the truth, a [`NoiseProfile`] is laid
//! over them, and K independent simulated tunes (different seeds) are
//! built into tables by the same builder `table build` uses
//! (`colltune noise bench`). Reported per communicator: how often two
//! tunes choose alike, the regret of each tune's choices against the
//! truth's best, the sizes left unresolved, and the tune's time (the
//! simulated calls' time measured). MPI-free.
//!
//! The library's own decision (the reference every rule must beat) is not
//! in the simulator: its stand-in is colltune's binomial tree (the nearest
//! of colltune's algorithms to Open MPI's default, [`crate::libraries::ompi::TUNED_DEFAULT`]),
//! measured as the library's `mpi` call, so keeping it costs exactly
//! binomial's time.

use std::collections::BTreeMap;

use colltune_algorithms::{AlgoSpec, Collective, Execution, NodeMap};

use super::resolve::{until_resolved, Rounds};
use crate::measure::noise::{NoiseProfile, Rng};
use crate::measure::record::{sample, Sample};
use crate::model::sim::{rotation_roots, simulate_at, Model};
use crate::tables::table::build::{build_launches, label_is_choice, point_decisions, Compact};
use crate::tables::table::evidence::{is_reference, Label, Open};
use crate::tables::table::{CommKey, Provenance, Table};

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    pub sizes: Vec<u64>,
    pub tunes: usize,
    pub launches: usize,
    pub runs: u32,
    pub reps: u32,
    /// Further launches a tune may spend on its unresolved sizes.
    pub extra_launches: usize,
    pub seed: u64,
    pub min_gain: f64,
}

/// The noise-free time of every candidate (and the reference) per size.
pub struct Truth {
    pub key: CommKey,
    pub layout: String,
    /// (bytes, label) -> microseconds (mean over the rotating roots).
    pub times: BTreeMap<(u64, Label), f64>,
}

/// The reference's label in the simulated samples.
fn mpi() -> Label {
    ("mpi".into(), "library".into())
}

/// colltune's broadcast candidates the benchmark compares: every
/// registry algorithm the tuner compares at its default parameters, the
/// segmented ones also at 64 KiB, blocking; node-aware ones only across
/// nodes.
pub fn candidates(nodes: &NodeMap) -> Vec<AlgoSpec> {
    let mut out = Vec::new();
    for a in colltune_algorithms::algorithms(Collective::Bcast) {
        if a.tuning != colltune_algorithms::registry::Tuning::Candidate
            || a.has(colltune_algorithms::registry::Restriction::OneSided)
            || (a.has(colltune_algorithms::registry::Restriction::NodeAware)
                && nodes.num_nodes() < 2)
        {
            continue;
        }
        let Ok(spec) = colltune_algorithms::resolve(Collective::Bcast, &AlgoSpec::new(a.name))
        else {
            continue;
        };
        if a.param("segment").is_some() {
            let mut big = spec.clone();
            big.params.insert(
                "segment".into(),
                colltune_algorithms::ParamValue::Int(65536),
            );
            out.push(big);
        }
        out.push(spec);
    }
    out
}

/// Simulates the truth on `nodes` at every size.
pub fn truth(model: &Model, nodes: &NodeMap, sizes: &[u64]) -> Result<Truth, String> {
    let roots = rotation_roots(Collective::Bcast, nodes);
    let mut times = BTreeMap::new();
    let cands = candidates(nodes);
    for &b in sizes {
        for spec in &cands {
            let mut sum = 0.0;
            for &r in &roots {
                sum += simulate_at(
                    model,
                    Collective::Bcast,
                    spec,
                    Execution::Blocking,
                    nodes,
                    b,
                    r,
                )
                .map_err(|e| format!("simulating {spec} at {b} B: {e}"))?;
            }
            times.insert(
                (b, (spec.to_string(), "blocking".to_string())),
                sum / roots.len() as f64,
            );
        }
        let bin = colltune_algorithms::resolve(Collective::Bcast, &AlgoSpec::new("binomial"))
            .map_err(|e| e.to_string())?;
        let t = times[&(b, (bin.to_string(), "blocking".to_string()))];
        times.insert((b, mpi()), t);
    }
    crate::model::sim::drop_kept_call();
    Ok(Truth {
        key: CommKey {
            ranks: nodes.size() as u32,
            ppn: nodes.max_ppn() as u32,
            nodes: nodes.num_nodes() as u32,
            placement: None,
        },
        layout: nodes.to_string(),
        times,
    })
}

/// One simulated launch measuring, at each size, the subjects listed (all
/// where the list is empty): `runs` runs of `reps` samples, the profile's
/// noise laid over the truth.
fn launch(
    truth: &Truth,
    points: &[(u64, Vec<Label>)],
    p: &NoiseProfile,
    g: &mut Rng,
    c: &BenchConfig,
) -> Vec<Sample> {
    let common = g.lognormal(p.launch_sigma);
    let mut state: BTreeMap<&Label, f64> = BTreeMap::new();
    let mut out = Vec::new();
    for (b, only) in points {
        let b = *b;
        let here: Vec<(&Label, f64)> = truth
            .times
            .iter()
            .filter(|((bb, l), _)| *bb == b && (only.is_empty() || only.contains(l)))
            .map(|((_, l), &t)| (l, t))
            .collect();
        for run in 1..=c.runs {
            for &(label, t0) in &here {
                let f = *state.entry(label).or_insert_with(|| {
                    let two = if g.chance(p.two_state_rate) {
                        p.two_state_factor
                    } else {
                        1.0
                    };
                    g.lognormal(p.subject_launch_sigma) * two
                });
                let rf = g.lognormal(p.run_sigma);
                for rep in 1..=c.reps {
                    let mut t = t0 * common * f * rf * g.lognormal(p.sample_sigma);
                    if g.chance(p.outlier_rate) {
                        t *= p.outlier_factor;
                    }
                    let mut s = sample(&label.0, &label.1, b, run, t);
                    s.rep = rep;
                    s.ranks = truth.key.ranks;
                    s.ppn = truth.key.ppn;
                    s.nodes = truth.key.nodes;
                    s.layout = truth.layout.clone();
                    s.mpi = "Open MPI (simulated)".into();
                    s.host = "simulated".into();
                    s.source = if p.is_none() {
                        "simulated:truth".into()
                    } else {
                        format!("noisy:{}", p.name)
                    };
                    out.push(s);
                }
            }
        }
    }
    out
}

fn prov() -> Provenance {
    Provenance::made_now(
        "simulated".into(),
        None,
        "Open MPI (simulated)".into(),
        "simulated".into(),
        Default::default(),
    )
}

/// The true time of a table's choice at `bytes`, and its label (the
/// library's own decision is the reference's time).
fn chosen(t: &Table, truth: &Truth, bytes: u64) -> Option<(String, f64)> {
    let r = t.lookup(Collective::Bcast, truth.key, bytes)?;
    if r.library().is_some_and(|f| f.is_ok_and(|f| f.is_default())) {
        return Some(("library".into(), truth.times[&(bytes, mpi())]));
    }
    let spec = colltune_algorithms::resolve(Collective::Bcast, &r.spec().ok()?).ok()?;
    let label = (spec.to_string(), r.execution.clone());
    truth
        .times
        .get(&(bytes, label.clone()))
        .map(|&x| (label.0, x))
}

/// One tune: its table, and the simulated call time it measured (s).
pub struct Tune {
    pub table: Table,
    pub seconds: f64,
    pub launches: usize,
    /// Runs measured (one subject at one size in one run).
    pub runs: usize,
    pub unresolved: usize,
}

/// The tune's launches as [`Rounds`]: a round is one further launch
/// measuring, at each open size, only the subjects that decide it.
struct Launches<'t> {
    truth: &'t Truth,
    p: &'t NoiseProfile,
    c: &'t BenchConfig,
    g: Rng,
    all: Vec<Vec<Sample>>,
}

impl Rounds for Launches<'_> {
    type Point = u64;
    type Error = std::convert::Infallible;

    fn open(&mut self) -> Vec<(u64, Open)> {
        let l: Vec<&[Sample]> = self.all.iter().map(Vec::as_slice).collect();
        point_decisions(&l, self.c.min_gain)
            .into_iter()
            .filter_map(|((_, _, b), (d, subj))| {
                d.further(&subj, label_is_choice, self.c.min_gain)
                    .map(|o| (b, o))
            })
            .collect()
    }

    fn spend(&mut self, open: &[(u64, Open)]) -> Result<bool, Self::Error> {
        // The library's decision is measured as its `mpi` call.
        let points: Vec<(u64, Vec<Label>)> = open
            .iter()
            .map(|(b, o)| {
                let who = o
                    .contenders
                    .iter()
                    .map(|l| if is_reference(l) { mpi() } else { l.clone() })
                    .collect();
                (*b, who)
            })
            .collect();
        let one = launch(self.truth, &points, self.p, &mut self.g, self.c);
        self.all.push(one);
        Ok(true)
    }
}

/// A simulated tune: `launches` launches of every subject at every size,
/// then up to `extra_launches` more, each only at the sizes still open and
/// of their contenders ([`until_resolved`], the tuner's loop).
pub fn tune(truth: &Truth, p: &NoiseProfile, c: &BenchConfig, seed: u64) -> Tune {
    let mut g = Rng::new(seed);
    let every: Vec<(u64, Vec<Label>)> = c.sizes.iter().map(|&b| (b, Vec::new())).collect();
    let all: Vec<Vec<Sample>> = (0..c.launches)
        .map(|_| launch(truth, &every, p, &mut g, c))
        .collect();
    let mut rounds = Launches {
        truth,
        p,
        c,
        g,
        all,
    };
    let Ok(_) = until_resolved(&mut rounds, c.extra_launches as u32);
    let all = rounds.all;
    let opts = Compact {
        min_gain: Some(c.min_gain),
        ..Compact::default()
    };
    let l: Vec<&[Sample]> = all.iter().map(Vec::as_slice).collect();
    let table = build_launches(&l, prov(), &opts);
    let seconds = all.iter().flatten().map(|s| s.time_us).sum::<f64>() / 1e6;
    let unresolved = table
        .provenance
        .evidence
        .as_ref()
        .map(|e| e.unresolved.len())
        .unwrap_or(0);
    Tune {
        table,
        seconds,
        launches: all.len(),
        runs: all.iter().flatten().filter(|s| s.rep == 1).count(),
        unresolved,
    }
}

/// One size: bytes, the truth's best (label, us), each tune's choice
/// (label, true time / best).
pub type PerSize = (u64, (String, f64), Vec<(String, f64)>);

/// The benchmark's figures for one communicator.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    pub key: CommKey,
    pub tunes: usize,
    pub sizes: usize,
    /// Over all pairs of tunes and sizes: the same choice.
    pub agree_same: f64,
    /// The same choice, or true times within 5%.
    pub agree_within5: f64,
    /// chosen true time / best true time, over tunes and sizes.
    pub regret_geomean: f64,
    pub regret_worst: f64,
    /// Of the sizes, those handed to the library (mean over tunes).
    pub library_share: f64,
    pub unresolved_mean: f64,
    pub launches_mean: f64,
    /// Runs per tune (one subject at one size in one run).
    pub runs_mean: f64,
    pub seconds_mean: f64,
    /// Noise-free: the evidence builder's choice the same as the builder
    /// before it (schema 1), at this share of sizes; and both regrets.
    pub noise_free_same: f64,
    pub noise_free_regret: (f64, f64),
    /// Per size: the truth's best (label, us) and each tune's choice
    /// (label, its true time / the best).
    pub per_size: Vec<PerSize>,
    /// Each tune's table.
    pub tables: Vec<Table>,
}

/// Runs the benchmark on one communicator.
pub fn bench(truth: &Truth, p: &NoiseProfile, c: &BenchConfig) -> BenchResult {
    let best: BTreeMap<u64, f64> = c
        .sizes
        .iter()
        .map(|&b| {
            let m = truth
                .times
                .iter()
                .filter(|((bb, _), _)| *bb == b)
                .map(|(_, &t)| t)
                .fold(f64::INFINITY, f64::min);
            (b, m)
        })
        .collect();
    let tunes: Vec<Tune> = (0..c.tunes)
        .map(|k| tune(truth, p, c, c.seed.wrapping_add(1000 * k as u64 + 1)))
        .collect();
    let picks: Vec<Vec<(String, f64)>> = tunes
        .iter()
        .map(|t| {
            c.sizes
                .iter()
                .map(|&b| chosen(&t.table, truth, b).unwrap_or(("none".into(), f64::NAN)))
                .collect()
        })
        .collect();
    let (mut same, mut within, mut pairs) = (0usize, 0usize, 0usize);
    for i in 0..picks.len() {
        for j in i + 1..picks.len() {
            for (a, b) in picks[i].iter().zip(&picks[j]) {
                pairs += 1;
                if a.0 == b.0 {
                    same += 1;
                    within += 1;
                } else if a.1.max(b.1) / a.1.min(b.1) <= 1.05 + 1e-12 {
                    within += 1;
                }
            }
        }
    }
    let mut regrets = Vec::new();
    let mut lib = 0usize;
    for pk in &picks {
        for (x, &b) in pk.iter().zip(&c.sizes) {
            regrets.push(x.1 / best[&b]);
            lib += usize::from(x.0 == "library");
        }
    }
    // Noise-free: both builders on the truth itself.
    let exact = {
        let mut g = Rng::new(0);
        let one = BenchConfig {
            runs: 1,
            reps: 1,
            ..c.clone()
        };
        let every: Vec<(u64, Vec<Label>)> = c.sizes.iter().map(|&b| (b, Vec::new())).collect();
        launch(truth, &every, &NoiseProfile::none(), &mut g, &one)
    };
    let ev = build_launches(
        &[&exact],
        prov(),
        &Compact {
            min_gain: Some(c.min_gain),
            ..Compact::default()
        },
    );
    let legacy = build_launches(&[&exact], prov(), &Compact::legacy());
    let (mut nf_same, mut r_ev, mut r_leg) = (0usize, Vec::new(), Vec::new());
    let bin = colltune_algorithms::resolve(Collective::Bcast, &AlgoSpec::new("binomial"))
        .map(|s| s.to_string())
        .unwrap_or_default();
    for &b in &c.sizes {
        let (Some(x), Some(y)) = (chosen(&ev, truth, b), chosen(&legacy, truth, b)) else {
            continue;
        };
        // the library's stand-in runs binomial
        let name = |s: &str| {
            if s == "library" {
                bin.clone()
            } else {
                s.to_string()
            }
        };
        nf_same += usize::from(name(&x.0) == name(&y.0) || x.1 == y.1);
        r_ev.push(x.1 / best[&b]);
        r_leg.push(y.1 / best[&b]);
    }
    let n = c.sizes.len().max(1) as f64;
    let k = tunes.len().max(1) as f64;
    let per_size = c
        .sizes
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let top = truth
                .times
                .iter()
                .filter(|((bb, _), _)| *bb == b)
                .min_by(|x, y| x.1.total_cmp(y.1))
                .map(|((_, l), &t)| (colltune_algorithms::label(&l.0, &l.1), t))
                .unwrap_or_default();
            let picks = picks
                .iter()
                .map(|pk| (pk[i].0.clone(), pk[i].1 / best[&b]))
                .collect();
            (b, top, picks)
        })
        .collect();
    BenchResult {
        key: truth.key,
        tunes: tunes.len(),
        sizes: c.sizes.len(),
        agree_same: same as f64 / pairs.max(1) as f64,
        agree_within5: within as f64 / pairs.max(1) as f64,
        regret_geomean: crate::measure::stats::geomean(&regrets),
        regret_worst: regrets.iter().copied().fold(1.0, f64::max),
        library_share: lib as f64 / (n * k),
        unresolved_mean: tunes.iter().map(|t| t.unresolved as f64).sum::<f64>() / k,
        launches_mean: tunes.iter().map(|t| t.launches as f64).sum::<f64>() / k,
        runs_mean: tunes.iter().map(|t| t.runs as f64).sum::<f64>() / k,
        seconds_mean: tunes.iter().map(|t| t.seconds).sum::<f64>() / k,
        noise_free_same: nf_same as f64 / n,
        noise_free_regret: (
            crate::measure::stats::geomean(&r_ev),
            crate::measure::stats::geomean(&r_leg),
        ),
        per_size,
        tables: tunes.into_iter().map(|t| t.table).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_truth() -> Truth {
        let m = Model::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tuning-tables/models/test-ib.yaml"
        )))
        .unwrap();
        let nodes = NodeMap::blocks(&[4]).unwrap();
        truth(&m, &nodes, &[1, 1024, 65536, 1 << 20]).unwrap()
    }

    /// The test truth's sizes, 2 launches of 2 runs, minimum gain 3%.
    fn config(tunes: usize, reps: u32, extra_launches: usize, seed: u64) -> BenchConfig {
        BenchConfig {
            sizes: vec![1, 1024, 65536, 1 << 20],
            tunes,
            launches: 2,
            runs: 2,
            reps,
            extra_launches,
            seed,
            min_gain: 0.03,
        }
    }

    #[test]
    fn without_noise_tunes_agree_and_regret_is_what_the_minimum_gain_allows() {
        let t = test_truth();
        let c = config(3, 5, 0, 1);
        let r = bench(&t, &NoiseProfile::none(), &c);
        assert_eq!(r.agree_same, 1.0, "{r:?}");
        // the library is kept only where nothing beats it by 3%
        assert!(r.regret_worst <= 1.03 + 1e-9, "{r:?}");
        assert!(r.noise_free_same > 0.0);
    }

    /// With no noise nothing is open: the further-launch loop measures
    /// nothing and decides as the tune without it.
    #[test]
    fn without_noise_the_loop_changes_nothing() {
        let t = test_truth();
        let c = config(2, 3, 0, 7);
        let without = tune(&t, &NoiseProfile::none(), &c, 1);
        let with = tune(
            &t,
            &NoiseProfile::none(),
            &BenchConfig {
                extra_launches: 5,
                ..c.clone()
            },
            1,
        );
        assert_eq!((with.launches, with.runs), (without.launches, without.runs));
        assert_eq!(with.table.bcast, without.table.bcast);
        assert_eq!(with.unresolved, 0);
    }

    /// Under noise the loop spends launches only at open sizes, only on
    /// their contenders, and never more than the cap.
    #[test]
    fn further_launches_measure_only_the_open_sizes_contenders() {
        let t = test_truth();
        let p = NoiseProfile {
            sample_sigma: 0.05,
            run_sigma: 0.05,
            subject_launch_sigma: 0.08,
            ..NoiseProfile::none()
        };
        let c = config(1, 3, 3, 3);
        let subjects = t.times.keys().filter(|(b, _)| *b == 1).count();
        let r = tune(&t, &p, &c, 11);
        assert!(r.launches > 2 && r.launches <= 5, "{}", r.launches);
        // each further launch: at most every size, fewer subjects than all
        let sweep = 2 * 4 * subjects * 2;
        let further = r.runs - sweep;
        assert!(further > 0, "nothing was open");
        assert!(
            further < (r.launches - 2) * 4 * subjects * 2,
            "{further} runs: every subject measured again"
        );
    }

    #[test]
    fn noise_is_laid_over_the_truth() {
        let t = test_truth();
        let p = NoiseProfile {
            sample_sigma: 0.05,
            launch_sigma: 0.3,
            ..NoiseProfile::none()
        };
        let c = BenchConfig {
            sizes: vec![1024],
            tunes: 1,
            launches: 1,
            runs: 3,
            reps: 50,
            extra_launches: 0,
            seed: 1,
            min_gain: 0.03,
        };
        let mut g = Rng::new(5);
        let s = launch(&t, &[(1024, Vec::new())], &p, &mut g, &c);
        let mpi: Vec<f64> = s
            .iter()
            .filter(|x| x.spec == "mpi")
            .map(|x| x.time_us)
            .collect();
        assert_eq!(mpi.len(), 150);
        let truth = t.times[&(1024, super::mpi())];
        let m = crate::measure::stats::median(&mpi);
        // one launch factor moves the median; samples spread around it
        assert!(m != truth && (m / truth).ln().abs() < 1.5, "{m} {truth}");
        let lo = mpi.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = mpi.iter().copied().fold(0.0, f64::max);
        assert!(hi / lo > 1.1, "{lo} {hi}");
    }
}
