//! Building a table from raw samples alone: the same function the tuner
//! uses, so `colltune table build RAW.csv` rebuilds exactly the tuner's table.
//!
//! Per collective and communicator shape: at each measured size, every
//! colltune subject's median over all its samples; the smallest wins, and
//! the next distinct subject is the runner-up. Each measured size owns the
//! sizes up to the geometric midpoint to its neighbours; adjacent sizes with
//! the same choice merge into one rule. The MPI library's own calls are
//! baselines, never choices; its forced algorithms (`ompi_tuned`, measured
//! by `tune` on Open MPI or `bench --baseline ompi-tuned`) are choices.
//!
//! **Compaction** (on by default, [`Compact`]): a difference smaller than
//! the measurement's own noise is no reason to switch algorithms. At each
//! measured size, the candidates *within noise* of the fastest are those
//! whose median exceeds the fastest median by at most the tolerance there:
//! the larger of the two subjects' run-to-run spreads (largest run median
//! over smallest, minus one; with one run, the interquartile range over the
//! median; none for simulated samples, which are deterministic), never
//! below the floor `tolerance` and never above `max_noise`.
//! Over the measured sizes in order, a dynamic programme then picks the
//! fewest contiguous segments, each with one choice that is within noise at
//! every size it covers (a choice not measured at a size cannot cover it);
//! among covers with that many segments the simpler choices (unsegmented
//! before segmented, blocking before nonblocking, then registry order, the
//! MPI library's forced algorithms last), then the least time lost. One
//! exception: at a size where a library algorithm is within the floor
//! `tolerance` of the fastest, it ranks first there. In situ it costs
//! least: the drop-in hands such a call to the library (a tail call to
//! `PMPI_Bcast`), where one of colltune's own algorithms pays for the
//! decision and the executor, a cost the tune, timing each algorithm
//! alone, does not see. Only within the floor: across the whole noise band
//! (up to `max_noise`) the preference handed large messages to library
//! algorithms a second tune measured 15-26% slower
//! (docs/measurements/2026-12-01-libfirst). So no rule ever chooses outside the noise band
//! at any measured size, by construction; the rules before and after and
//! the time lost ((chosen - fastest) / fastest, max and mean over the
//! measured sizes) go to the table's provenance.

//!
//! One builder ([`build_launches`]) walks the collectives and
//! communicators and sums what the provenance records; per communicator
//! the rules come from the evidence ([`evidenced`], the default) or, with
//! `min_gain: None`, from the fastest medians merged within noise
//! ([`noise`]).

pub mod calls;
mod evidenced;
mod model;
mod noise;

use std::collections::BTreeMap;

use colltune_algorithms::{AlgoSpec, Collective};

use super::evidence::{self, EvidenceSummary, Unresolved};
use super::{
    spec_to_fields, CommKey, CommRules, Compaction, Provenance, Rule, Table, SCHEMA_VERSION,
};
use crate::measure::record::Sample;
use crate::measure::stats;

/// The decision at one measured size.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub bytes: u64,
    pub spec: String,
    pub execution: String,
    pub time_us: f64,
    pub runner_up: Option<(String, f64)>,
}

impl Decision {
    pub fn margin(&self) -> Option<f64> {
        self.runner_up.as_ref().map(|(_, t)| t / self.time_us - 1.0)
    }
}

/// Medians per (collective, comm key, bytes, subject label).
pub type Medians = BTreeMap<(Collective, CommKey, u64), BTreeMap<(String, String), f64>>;

/// Whether a sample's subject can be a table's choice (the library's own
/// default call is a baseline; its forced algorithms are choices).
fn is_choice(s: &Sample) -> bool {
    s.is_choice()
}

/// Median time of every colltune subject at every measured point.
pub fn medians(samples: &[Sample]) -> Medians {
    type Times = BTreeMap<(String, String), Vec<f64>>;
    let mut raw: BTreeMap<(Collective, CommKey, u64), Times> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.is_choice()) {
        let Some(c) = s.collective() else { continue };
        let key = CommKey::of(s);
        raw.entry((c, key, s.bytes))
            .or_default()
            .entry((s.spec.clone(), s.execution.clone()))
            .or_default()
            .push(s.time_us);
    }
    raw.into_iter()
        .map(|(k, subj)| {
            (
                k,
                subj.into_iter()
                    .map(|(s, v)| (s, stats::median(&v)))
                    .collect(),
            )
        })
        .collect()
}

/// The winner and runner-up at each measured size of one comm and collective.
pub fn decisions(m: &Medians, c: Collective, key: CommKey) -> Vec<Decision> {
    m.range((c, key, 0)..=(c, key, u64::MAX))
        .filter_map(|(&(_, _, bytes), subj)| fastest(bytes, subj.iter().map(|(k, &t)| (k, t))))
        .collect()
}

/// The fastest of `times` (subject, median) at `bytes`, and the runner-up;
/// ties go to the subject that sorts first.
fn fastest<'a>(
    bytes: u64,
    times: impl Iterator<Item = (&'a (String, String), f64)>,
) -> Option<Decision> {
    let mut v: Vec<(&(String, String), f64)> = times.collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(b.0)));
    let ((spec, exec), t) = v.first()?;
    Some(Decision {
        bytes,
        spec: spec.clone(),
        execution: exec.clone(),
        time_us: *t,
        runner_up: v
            .get(1)
            .map(|((s, e), t)| (colltune_algorithms::label(s, e), *t)),
    })
}

/// Rules from decisions at measured sizes: each size owns the sizes up to
/// the geometric midpoint with its neighbours; equal neighbours merge, the
/// merged rule keeping the figures of its most contested size.
pub fn rules_from(decisions: &[Decision]) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    let mut contested: Vec<f64> = Vec::new();
    for (i, d) in decisions.iter().enumerate() {
        let min_bytes = if i == 0 {
            0
        } else {
            geo_mid(decisions[i - 1].bytes, d.bytes) + 1
        };
        let max_bytes = decisions.get(i + 1).map(|n| geo_mid(d.bytes, n.bytes));
        let margin = d.margin().unwrap_or(f64::INFINITY);
        if let Some(last) = out.last_mut() {
            let spec = AlgoSpec::parse(&d.spec).ok();
            let same = spec.as_ref().is_some_and(|s| {
                let (a, p) = spec_to_fields(s);
                a == last.algorithm && p == last.params
            }) && d.execution == last.execution;
            if same {
                last.max_bytes = max_bytes;
                if margin < *contested.last().expect("one per rule") {
                    *contested.last_mut().expect("one per rule") = margin;
                    set_figures(last, d);
                }
                continue;
            }
        }
        let (algorithm, params) = AlgoSpec::parse(&d.spec)
            .map(|s| spec_to_fields(&s))
            .unwrap_or((d.spec.clone(), BTreeMap::new()));
        let mut rule = Rule {
            min_bytes,
            max_bytes,
            algorithm,
            params,
            execution: d.execution.clone(),
            time_us: None,
            at_bytes: None,
            runner_up: None,
            margin: None,
            evidence: None,
            overlap: None,
        };
        set_figures(&mut rule, d);
        out.push(rule);
        contested.push(margin);
    }
    out
}

fn set_figures(rule: &mut Rule, d: &Decision) {
    rule.time_us = Some(round3(d.time_us));
    rule.at_bytes = Some(d.bytes);
    rule.runner_up = d.runner_up.as_ref().map(|(l, _)| l.clone());
    rule.margin = d.margin().map(round3);
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// floor(sqrt(a * b)): the boundary between the ranges of sizes a < b.
pub fn geo_mid(a: u64, b: u64) -> u64 {
    let m = ((a as f64) * (b as f64)).sqrt().floor() as u64;
    m.clamp(a, b.saturating_sub(1).max(a))
}

/// How a table's rules are decided and merged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compact {
    /// Decide on the evidence ([`super::evidence`], the default): a rule
    /// replaces the library's own decision only where its gain's interval
    /// clears this minimum gain; neighbouring sizes with the same decision
    /// merge. `None` (`--no-evidence`): the fastest median at each size,
    /// merged within noise as the fields below say (the builder before
    /// schema 2).
    pub min_gain: Option<f64>,
    /// Merge at all (`--no-compact` turns it off).
    pub enabled: bool,
    /// The floor of the noise band: relative differences up to this are
    /// noise even where the runs happened to agree more closely.
    pub tolerance: f64,
    /// The ceiling: a spread above this (a disturbed point) widens the band
    /// no further, so a real crossover is never merged away as noise.
    pub max_noise: f64,
    /// The model's fit error where the samples are its predictions
    /// (`--fit-error`, [`model::mark`]); None: not given.
    pub fit_error: Option<f64>,
}

impl Default for Compact {
    fn default() -> Self {
        Compact {
            min_gain: Some(super::evidence::DEFAULT_MIN_GAIN),
            enabled: true,
            tolerance: DEFAULT_TOLERANCE,
            max_noise: MAX_NOISE,
            fit_error: None,
        }
    }
}

impl Compact {
    /// The builder before schema 2: fastest medians merged within noise.
    pub fn legacy() -> Compact {
        Compact {
            min_gain: None,
            ..Compact::default()
        }
    }
}

/// The default floor of the noise band (`--compact-tolerance`).
pub const DEFAULT_TOLERANCE: f64 = 0.03;
/// The most a measured spread widens the band.
pub const MAX_NOISE: f64 = 0.10;

pub use super::evidence::complexity;
pub use evidenced::{
    label_is_choice, library_default, point_decisions, point_decisions_fit, Decided, Point,
};
pub use model::model_of;
pub use noise::{point_stats, point_stats_of, PointStats, Stat, Stats};

/// The call patterns the samples were measured under, distinct, sorted.
pub fn patterns(samples: &[Sample]) -> Vec<String> {
    let mut v: Vec<String> = samples.iter().map(|s| s.pattern.clone()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A whole table from samples, compacted with the default settings.
pub fn build(samples: &[Sample], provenance: Provenance) -> Table {
    build_with(samples, provenance, &Compact::default())
}

/// A whole table from samples. The provenance's `pattern` is the samples'
/// (several, comma-separated, when they mix: `table build` refuses that
/// first) and its `compaction` what merging did.
pub fn build_with(samples: &[Sample], provenance: Provenance, opts: &Compact) -> Table {
    build_launches(&[samples], provenance, opts)
}

/// One collective and communicator's rules, and what the provenance sums
/// over them.
struct Built {
    rules: Vec<Rule>,
    /// The rules the fastest median alone would write.
    before: usize,
    /// (chosen - fastest) / fastest at each measured size.
    losses: Vec<f64>,
    /// The points the evidence left open.
    unresolved: Vec<Unresolved>,
}

/// Where a communicator's rules come from: the decisions the evidence
/// supports, or the fastest medians merged within noise.
enum Decider {
    Evidence { decided: Decided, min_gain: f64 },
    Noise { stats: Stats, opts: Compact },
}

impl Decider {
    fn of(launches: &[&[Sample]], opts: &Compact) -> Decider {
        match opts.min_gain {
            Some(min_gain) => Decider::Evidence {
                decided: point_decisions_fit(launches, min_gain, opts.fit_error),
                min_gain,
            },
            None => Decider::Noise {
                stats: point_stats_of(launches),
                opts: *opts,
            },
        }
    }

    /// The collectives and communicators measured, in order.
    fn keys(&self) -> Vec<(Collective, CommKey)> {
        let mut keys: Vec<(Collective, CommKey)> = match self {
            Decider::Evidence { decided, .. } => decided.keys().map(|&(c, k, _)| (c, k)).collect(),
            Decider::Noise { stats, .. } => stats.keys().map(|&(c, k, _)| (c, k)).collect(),
        };
        keys.dedup();
        keys
    }

    fn rules(&self, c: Collective, key: CommKey) -> Built {
        match self {
            Decider::Evidence { decided, min_gain } => {
                evidenced::evidenced(decided, c, key, *min_gain)
            }
            Decider::Noise { stats, opts } => noise::compacted(stats, c, key, opts),
        }
    }
}

/// As [`build_with`], from several launches of the tune, each launch's
/// samples apart ([`point_stats_of`]: a choice must hold in every launch).
pub fn build_launches(launches: &[&[Sample]], mut provenance: Provenance, opts: &Compact) -> Table {
    // Nonblocking and persistent calls' samples make their own sections.
    let all = launches;
    let blocking = calls::blocking_only(all);
    let launches: &[&[Sample]] = &blocking.iter().map(|l| &l[..]).collect::<Vec<_>>();
    let decider = Decider::of(launches, opts);
    set_pattern(&mut provenance, launches);
    let mut table = Table {
        schema: SCHEMA_VERSION,
        provenance,
        bcast: Vec::new(),
        swap: Vec::new(),
        ibcast: Vec::new(),
        bcast_init: Vec::new(),
    };
    let (mut before, mut after) = (0usize, 0usize);
    let (mut losses, mut unresolved) = (Vec::new(), Vec::new());
    for (c, key) in decider.keys() {
        let b = decider.rules(c, key);
        before += b.before;
        after += b.rules.len();
        losses.extend(b.losses);
        unresolved.extend(b.unresolved);
        if !b.rules.is_empty() {
            table.rules_mut(c).push(CommRules {
                ranks: key.ranks,
                ppn: key.ppn,
                nodes: key.nodes,
                placement: key.placement,
                rules: b.rules,
            });
        }
    }
    let max_loss = round4(losses.iter().copied().fold(0.0, f64::max));
    let mean_loss = round4(if losses.is_empty() {
        0.0
    } else {
        losses.iter().sum::<f64>() / losses.len() as f64
    });
    match decider {
        Decider::Evidence { min_gain, .. } => {
            table.provenance.evidence = Some(EvidenceSummary {
                min_gain,
                confidence: evidence::CONFIDENCE,
                launches: launches.len() as u32,
                rules: after as u32,
                rules_fastest: before as u32,
                max_loss,
                mean_loss,
                unresolved,
                partial_launches: Vec::new(),
                further: None,
            })
        }
        Decider::Noise { opts, .. } => {
            table.provenance.compaction = opts.enabled.then_some(Compaction {
                tolerance: opts.tolerance,
                rules_before: before as u32,
                rules_after: after as u32,
                max_loss,
                mean_loss,
            })
        }
    }
    calls::add_sections(&mut table, all);
    model::mark(&mut table, opts.fit_error);
    table
}
/// The provenance's `pattern`: the samples' (several, comma-separated,
/// when they mix).
fn set_pattern(provenance: &mut Provenance, launches: &[&[Sample]]) {
    let mut pats: Vec<String> = launches.iter().flat_map(|s| patterns(s)).collect();
    pats.sort_unstable();
    pats.dedup();
    if !pats.is_empty() {
        provenance.pattern = pats.join(", ");
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::noise::complexity_at;
    use super::*;
    use crate::measure::record::sample;
    use crate::tables::table::validate::{check, load_str};

    /// The tests below are of the builder before schema 2 (merging within
    /// noise); the evidence builder's are in `evidence_tests`.
    fn build(samples: &[Sample], provenance: Provenance) -> Table {
        build_with(samples, provenance, &Compact::legacy())
    }

    fn prov() -> Provenance {
        Provenance {
            host: "test".into(),
            cluster: None,
            mpi: "Open MPI v4.1.4".into(),
            date: "2026-11-30T00:00:00Z".into(),
            command: "test".into(),
            colltune: "0".into(),
            source: "measured".into(),
            pattern: "synchronized".into(),
            sweep: Default::default(),
            compaction: None,
            evidence: None,
        }
    }

    #[test]
    fn winners_become_merged_contiguous_rules() {
        let mut s = Vec::new();
        for (bytes, lin, pipe) in [
            (1, 1.0, 2.0),
            (64, 1.2, 2.1),
            (4096, 9.0, 5.0),
            (1 << 20, 900.0, 400.0),
        ] {
            for run in 1..=2 {
                s.push(sample("linear", "blocking", bytes, run, lin));
                s.push(sample(
                    "pipeline:segment=65536",
                    "nonblocking",
                    bytes,
                    run,
                    pipe,
                ));
                s.push(sample("mpi", "library", bytes, run, 0.1)); // never chosen
            }
        }
        let t = build(&s, prov());
        assert_eq!(t.bcast.len(), 1);
        let r = &t.bcast[0].rules;
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            (r[0].algorithm.as_str(), r[0].min_bytes, r[0].max_bytes),
            ("linear", 0, Some(geo_mid(64, 4096)))
        );
        assert_eq!(r[1].min_bytes, 513);
        assert_eq!(r[1].max_bytes, None);
        assert_eq!(r[1].algorithm, "pipeline");
        assert_eq!(r[1].execution, "nonblocking");
        // the most contested size of the first rule is 64 B (margin 0.75 < 1.0)
        assert_eq!(r[0].at_bytes, Some(64));
        assert_eq!(r[0].margin, Some(0.75));
        assert_eq!(
            r[0].runner_up.as_deref(),
            Some("pipeline:segment=65536 [nonblocking]")
        );
        // a built table is valid
        let text = t.to_yaml().unwrap();
        assert!(check(&load_str(&text).unwrap(), &text).is_empty());
    }

    /// Samples of `spec [exec]` at `bytes`: `runs` runs of 5 repetitions,
    /// run r's times `t * (1 + spread * r / (runs - 1))`.
    fn runs_of(spec: &str, exec: &str, bytes: u64, t: f64, spread: f64, runs: u32) -> Vec<Sample> {
        let mut v = Vec::new();
        for run in 1..=runs {
            let f = 1.0 + spread * f64::from(run - 1) / f64::from((runs - 1).max(1));
            for rep in 1..=5 {
                let mut s = sample(spec, exec, bytes, run, t * f);
                s.rep = rep;
                v.push(s);
            }
        }
        v
    }

    fn sizes(n: u32) -> impl Iterator<Item = u64> {
        (0..n).map(|i| 1u64 << i)
    }

    /// Within the tolerance floor, the library's forced algorithm (handed to
    /// the library in situ, the cheapest call) wins over a colltune
    /// algorithm that was measured faster; beyond the floor, even inside a
    /// wide noise band, or outside noise, it does not.
    #[test]
    fn within_noise_the_library_algorithm_is_preferred() {
        let lib = "ompi_tuned:algorithm=1,name=basic_linear,segment=0";
        // The one rule built when colltune's linear takes `t` (the library's
        // linear 10.0) with runs `spread` apart, at 8 sizes.
        let chosen = |t: f64, spread: f64| {
            let mut s = Vec::new();
            for b in sizes(8) {
                s.extend(runs_of("linear", "blocking", b, t, spread, 3));
                s.extend(runs_of(lib, "library", b, 10.0, spread, 3));
            }
            let r = build(&s, prov()).bcast[0].rules.clone();
            assert_eq!(r.len(), 1, "{r:?}");
            (r[0].algorithm.clone(), r[0].execution.clone())
        };
        let library = ("ompi_tuned".to_string(), "library".to_string());
        let ours = ("linear".to_string(), "blocking".to_string());
        // 2% faster, runs 3% apart: within the floor, the library's
        assert_eq!(chosen(9.8, 0.03), library);
        // 6% faster, runs 8% apart: within the noise band, beyond the 3%
        // floor: colltune's own
        assert_eq!(chosen(9.4, 0.08), ours);
        // 20% faster, runs 1% apart: outside noise, colltune's own
        assert_eq!(chosen(8.0, 0.01), ours);
        // the order itself: within the floor the library (unsegmented, then
        // segmented) first; beyond it after colltune's own
        let c = |sp: &str, e: &str, loss: f64| {
            complexity_at(complexity(Collective::Bcast, sp, e), e, loss, 0.03)
        };
        let seg = "ompi_tuned:algorithm=7,segment=8192";
        assert!(c(lib, "library", 0.02) < c(seg, "library", 0.0));
        assert!(c(seg, "library", 0.03) < c("linear", "blocking", 0.0));
        assert!(c("linear", "blocking", 0.0) < c(lib, "library", 0.04));
        assert!(c("linear", "blocking", 0.0) < c("linear", "nonblocking", 0.0));
        assert!(
            c("binomial:segment=0", "nonblocking", 0.0)
                < c("pipeline:segment=4096", "blocking", 0.0)
        );
    }

    #[test]
    fn a_noisy_alternation_collapses_to_one_rule_of_the_simpler_choice() {
        let mut s = Vec::new();
        for (i, b) in sizes(16).enumerate() {
            // binomial and knomial trade first place by 1%, runs 1% apart
            let (a, k) = if i % 2 == 0 {
                (10.0, 10.1)
            } else {
                (10.1, 10.0)
            };
            s.extend(runs_of("binomial:segment=0", "blocking", b, a, 0.01, 3));
            s.extend(runs_of(
                "knomial:radix=4,segment=0",
                "blocking",
                b,
                k,
                0.01,
                3,
            ));
            // far behind everywhere
            s.extend(runs_of("linear", "nonblocking", b, 30.0, 0.01, 3));
        }
        let plain = build_with(
            &s,
            prov(),
            &Compact {
                enabled: false,
                ..Compact::legacy()
            },
        );
        assert_eq!(plain.bcast[0].rules.len(), 16, "the noise makes 16 rules");
        assert_eq!(plain.provenance.compaction, None);
        let t = build(&s, prov());
        let r = &t.bcast[0].rules;
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!((r[0].min_bytes, r[0].max_bytes), (0, None));
        // the registry lists binomial before knomial: the simpler one
        assert_eq!(r[0].algorithm, "binomial");
        let c = t.provenance.compaction.clone().unwrap();
        assert_eq!((c.rules_before, c.rules_after), (16, 1));
        assert!(c.max_loss > 0.009 && c.max_loss < 0.011, "{c:?}");
        assert!(c.mean_loss > 0.004 && c.mean_loss < 0.006, "{c:?}");
        // the figures of a rule chosen within noise: a negative margin where
        // the runner-up was faster
        assert!(r[0].margin.unwrap() < 0.0, "{:?}", r[0]);
        let text = t.to_yaml().unwrap();
        assert!(
            text.contains("compaction:") && text.contains("rules_before: 16"),
            "{text}"
        );
        assert!(check(&load_str(&text).unwrap(), &text).is_empty());
    }

    #[test]
    fn a_real_crossover_is_kept() {
        let mut s = Vec::new();
        for (i, b) in sizes(12).enumerate() {
            // binomial 20% ahead below 64 B, pipeline 20% ahead from 64 B;
            // 1% alternating noise on top
            let wiggle = if i % 2 == 0 { 1.01 } else { 0.99 };
            let (bin, pipe) = if b < 64 {
                (10.0, 12.0)
            } else {
                (12.0, 10.0 * wiggle)
            };
            s.extend(runs_of(
                "binomial:segment=0",
                "blocking",
                b,
                bin * wiggle,
                0.02,
                2,
            ));
            s.extend(runs_of(
                "pipeline:segment=8192",
                "blocking",
                b,
                pipe,
                0.02,
                2,
            ));
        }
        let t = build(&s, prov());
        let r = &t.bcast[0].rules;
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0].algorithm, "binomial");
        assert_eq!(r[0].max_bytes, Some(geo_mid(32, 64)));
        assert_eq!(r[1].algorithm, "pipeline");
        // a tolerance above the gap merges them (the slower side loses 20%)
        let loose = Compact {
            tolerance: 0.25,
            max_noise: 0.25,
            ..Compact::legacy()
        };
        let t = build_with(&s, prov(), &loose);
        assert_eq!(t.bcast[0].rules.len(), 1);
        assert!(t.provenance.compaction.unwrap().max_loss > 0.19);
    }

    #[test]
    fn a_choice_not_measured_at_a_size_cannot_cover_it() {
        let mut s = Vec::new();
        for b in sizes(5) {
            s.extend(runs_of("binomial:segment=0", "blocking", b, 10.0, 0.0, 2));
            if b != 4 {
                s.extend(runs_of("linear", "blocking", b, 10.05, 0.0, 2));
            } else {
                s.extend(runs_of(
                    "knomial:radix=4,segment=0",
                    "blocking",
                    b,
                    10.1,
                    0.0,
                    2,
                ));
            }
        }
        let t = build(&s, prov());
        let r = &t.bcast[0].rules;
        // linear is simpler and within noise where measured, but not at 4 B,
        // which keeps one cover: binomial, measured everywhere
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].algorithm, "binomial");
    }

    /// A small deterministic generator (no dependency).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn merging_never_chooses_outside_the_noise_band() {
        let specs = [
            ("linear", "blocking"),
            ("binomial:segment=0", "blocking"),
            ("binomial:segment=0", "nonblocking"),
            ("knomial:radix=4,segment=0", "blocking"),
            ("pipeline:segment=8192", "nonblocking"),
            ("chain:segment=8192", "blocking"),
        ];
        for seed in 1..40u64 {
            let mut g = Lcg(seed);
            let mut s = Vec::new();
            let n = 6 + (seed % 20) as u32;
            for b in sizes(n) {
                for (k, (spec, exec)) in specs.iter().enumerate() {
                    // smooth trends crossing each other, noise 0-15%, some
                    // candidates missing at some sizes
                    if g.next() < 0.15 && k > 0 {
                        continue;
                    }
                    let x = (b as f64).log2();
                    let base = 10.0 + (k as f64) * (1.0 + (x * 0.7 + k as f64).sin());
                    let t = base * (1.0 + 0.05 * g.next());
                    s.extend(runs_of(
                        spec,
                        exec,
                        b,
                        t,
                        0.15 * g.next(),
                        1 + (seed % 3) as u32,
                    ));
                }
            }
            let tol = 0.01 + 0.04 * g.next();
            let opts = Compact {
                tolerance: tol,
                ..Compact::legacy()
            };
            let t = build_with(&s, prov(), &opts);
            let plain = build_with(
                &s,
                prov(),
                &Compact {
                    enabled: false,
                    ..opts
                },
            );
            let c = t.provenance.compaction.clone().unwrap();
            let rules_plain: usize = plain.bcast.iter().map(|r| r.rules.len()).sum();
            assert_eq!(c.rules_before as usize, rules_plain);
            assert!(c.rules_after <= c.rules_before, "{c:?}");
            // Independently: at every measured size, the rule covering it
            // chooses a subject within the band there.
            let st = point_stats(&s);
            let mut worst: f64 = 0.0;
            for (&(_, key, bytes), subj) in &st {
                let rule = t.lookup(Collective::Bcast, key, bytes).expect("covered");
                let label = (rule.spec().unwrap().to_string(), rule.execution.clone());
                let chosen = subj
                    .get(&label)
                    .unwrap_or_else(|| panic!("seed {seed}: {label:?} not measured at {bytes}"));
                let best = subj
                    .values()
                    .min_by(|a, b| a.median.total_cmp(&b.median))
                    .unwrap();
                let band = chosen.noise.max(best.noise).clamp(tol, MAX_NOISE.max(tol));
                let loss = chosen.median / best.median - 1.0;
                assert!(
                    loss <= band + 1e-9,
                    "seed {seed}: at {bytes} B {label:?} loses {loss} > band {band}"
                );
                worst = worst.max(loss);
            }
            assert!(
                (worst - c.max_loss).abs() < 1e-3,
                "seed {seed}: {worst} vs {c:?}"
            );
        }
    }

    /// Two launches of a tune (two CSVs): a subject only one launch
    /// measured does not count where the other measured the point too, and
    /// each launch is one vote, however many repetitions it fitted.
    #[test]
    fn a_choice_must_hold_in_every_launch() {
        let reps = |spec: &str, t: f64, n: u32| -> Vec<Sample> {
            (1..=n)
                .map(|rep| {
                    let mut s = sample(spec, "blocking", 4096, 1, t);
                    s.rep = rep;
                    s
                })
                .collect()
        };
        let (lin, bin, kn) = ("linear", "binomial:segment=0", "knomial:radix=4,segment=0");
        // Launch a, a fast state: knomial first, then linear. Launch b, 4x
        // slower for linear, 2x for binomial, and its screening dropped
        // knomial. The budget fits 4x more repetitions into launch a.
        let a = [reps(lin, 50.0, 40), reps(bin, 60.0, 33), reps(kn, 40.0, 50)].concat();
        let b = [reps(lin, 200.0, 10), reps(bin, 120.0, 17)].concat();
        let choice = |t: &Table| t.bcast[0].rules[0].algorithm.clone();
        let both = build_launches(&[&a, &b], prov(), &Compact::legacy());
        assert_eq!(both.bcast[0].rules.len(), 1);
        assert_eq!(choice(&both), "binomial");
        let st = point_stats_of(&[&a, &b]);
        let at = st.values().next().unwrap();
        let median = |spec: &str| {
            at.get(&(spec.to_string(), "blocking".to_string()))
                .map(|x| x.median)
        };
        assert_eq!(median(kn), None, "measured by one launch of two");
        assert_eq!(median(lin), Some(125.0));
        assert_eq!(median(bin), Some(90.0));
        assert!(at[&(lin.to_string(), "blocking".to_string())].noise > 2.9);
        // Pooled into one launch, the fast launch's leftovers win.
        let pooled = [a.clone(), b.clone()].concat();
        assert_eq!(choice(&build(&pooled, prov())), "knomial");
        // One launch alone is unchanged.
        assert_eq!(
            choice(&build_launches(&[&a], prov(), &Compact::legacy())),
            "knomial"
        );
        assert_eq!(point_stats_of(&[&a]), point_stats(&a));
    }

    /// CSVs that share no subject at a size (a bench of linear, another of
    /// binomial) are not launches of one sweep: both subjects count there,
    /// and the faster is chosen (no point is left empty). Where they share
    /// one, the rule for launches holds.
    #[test]
    fn launches_with_no_subject_in_common_still_decide() {
        let (lin, bin) = ("linear", "binomial:segment=0");
        let a = [
            runs_of(lin, "blocking", 64, 30.0, 0.0, 2),
            runs_of(lin, "blocking", 4096, 50.0, 0.0, 2),
        ]
        .concat();
        let b = [
            runs_of(bin, "blocking", 64, 10.0, 0.0, 2),
            runs_of(lin, "blocking", 4096, 50.0, 0.0, 2),
            // faster, but launch a did not measure it at 4 KiB
            runs_of(bin, "blocking", 4096, 40.0, 0.0, 2),
        ]
        .concat();
        let t = build_launches(&[&a, &b], prov(), &Compact::legacy());
        let r: Vec<&str> = t.bcast[0]
            .rules
            .iter()
            .map(|r| r.algorithm.as_str())
            .collect();
        assert_eq!(r, ["binomial", "linear"]);
        let st = point_stats_of(&[&a, &b]);
        assert_eq!(st.values().map(|m| m.len()).collect::<Vec<_>>(), [2, 1]);
    }

    #[test]
    fn geometric_midpoints() {
        assert_eq!(geo_mid(1, 4), 2);
        assert_eq!(geo_mid(1024, 4096), 2048);
        assert_eq!(geo_mid(7, 8), 7);
    }
}
