//! What a table records of the evidence: a rule's ([`RuleEvidence`]), the
//! whole table's ([`EvidenceSummary`]), the points left open
//! ([`Unresolved`]) and what the tuner spent on them ([`Further`]), and the
//! launches that stopped half-way ([`partial_launches`]).

use std::collections::BTreeMap;

use colltune_algorithms::Collective;
use serde::{Deserialize, Serialize};

use super::{Open, PointDecision};
use crate::measure::record::Sample;
use crate::tables::table::CommKey;

/// The evidence a rule records (schema 2): the gain at the measured size
/// where it is weakest among those the rule covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleEvidence {
    /// What the gain is over: the library's own decision (`mpi
    /// [library]`, Open MPI's algorithm 0), or where the library's call was
    /// not measured, the simplest candidate (`reference_is_library: false`).
    pub reference: String,
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub reference_is_library: bool,
    /// The candidate the figures are of: the rule's choice, or where the
    /// rule keeps the reference, the best other candidate (not chosen).
    pub candidate: String,
    /// reference time / candidate time - 1 (0.10 = the candidate is 10%
    /// faster), the estimate, and its 95% interval.
    pub gain: f64,
    pub low: f64,
    /// Absent: unbounded (too little measured to pair).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// Launches that measured both, and the candidate's runs in them.
    pub launches: u32,
    pub runs: u32,
    /// `launches`, `runs of one launch`, `samples of one run`, `model`
    /// (predicted; `exact` in tables before it), or
    /// `too few to pair`.
    pub basis: String,
    /// `clears` (the choice: its interval is above the minimum gain),
    /// `unresolved` (the interval straddles it: the reference is kept),
    /// or `no gain` (the interval is below it: the reference is kept).
    pub verdict: String,
    /// Basis `model`: the model that predicted the times (the samples'
    /// `simulated:<model>` source), and its fit error, the interval's
    /// half-width (`table build --fit-error`; absent: not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_error: Option<f64>,
}

fn yes() -> bool {
    true
}
fn is_true(b: &bool) -> bool {
    *b
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

impl RuleEvidence {
    pub fn of(d: &PointDecision, min_gain: f64) -> Option<RuleEvidence> {
        let (cand, g) = d.evidence.as_ref()?;
        let verdict = if !d.keeps_reference() {
            "clears"
        } else if g.straddles(min_gain) {
            "unresolved"
        } else {
            "no gain"
        };
        Some(RuleEvidence {
            reference: colltune_algorithms::label(&d.reference.0, &d.reference.1),
            reference_is_library: d.library_reference,
            candidate: colltune_algorithms::label(&cand.0, &cand.1),
            gain: round4(g.gain),
            low: round4(g.low),
            high: g.high.is_finite().then(|| round4(g.high)),
            launches: g.launches,
            runs: g.runs,
            basis: g.basis.name().into(),
            verdict: verdict.into(),
            model: None,
            fit_error: None,
        })
    }

    /// Whether the figures are a model's predictions, not measurements.
    pub fn predicted(&self) -> bool {
        self.basis == super::Basis::Model.name() || self.basis == "exact"
    }

    /// `+12.3% [+5.1%, +19.9%] over mpi [library], 3 launches, 12 runs`;
    /// a prediction says so, with the model and its fit error.
    pub fn line(&self) -> String {
        let pct = |x: f64| format!("{:+.1}%", 100.0 * x);
        if self.predicted() {
            return format!(
                "{} [{}, {}] over {}, predicted by {}, not measured ({})",
                pct(self.gain),
                pct(self.low),
                self.high.map(pct).unwrap_or_else(|| "unbounded".into()),
                self.reference,
                self.model.as_deref().unwrap_or("a model"),
                match self.fit_error {
                    Some(e) => format!("model fit error {:.1}%: the interval", 100.0 * e),
                    None => "no fit error given: no interval".into(),
                }
            );
        }
        format!(
            "{} [{}, {}] over {}, {} launch(es), {} runs ({})",
            pct(self.gain),
            pct(self.low),
            self.high.map(pct).unwrap_or_else(|| "unbounded".into()),
            self.reference,
            self.launches,
            self.runs,
            self.basis
        )
    }
}

/// The evidence settings and what was left unresolved (provenance,
/// schema 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceSummary {
    /// The gain a rule's interval must clear to replace the library's
    /// decision.
    pub min_gain: f64,
    pub confidence: f64,
    /// Launches (CSVs) the table was built from.
    pub launches: u32,
    /// Rules written, and rules the fastest median at each size would
    /// have made.
    pub rules: u32,
    pub rules_fastest: u32,
    /// (chosen - fastest) / fastest by median over the measured sizes: the
    /// time the evidence rule leaves on the table, max and mean.
    pub max_loss: f64,
    pub mean_loss: f64,
    /// Measured sizes a further launch could change: a candidate's
    /// interval straddles the minimum gain (the library's decision was kept
    /// there), or a choice was made on one launch's evidence and waits for
    /// a second to confirm it (`unconfirmed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<Unresolved>,
    /// Launches that measured fewer sizes than the others (died or ran
    /// out of budget half-way): they count for what they measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial_launches: Vec<String>,
    /// Further runs the tuner spent where decisions were open (`tune
    /// --extra-rounds`); absent where none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub further: Option<Further>,
}

/// What the tuner spent on open decisions ([`crate::tune::resolve`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Further {
    /// Rounds run (at most `--extra-rounds` per collective and
    /// communicator).
    pub rounds: u32,
    /// Runs measured in them (one run: one subject at one size).
    pub runs: u32,
    /// Sizes that got further runs, and of them, those resolved by the end.
    pub sizes: u32,
    pub resolved: u32,
    /// The tune's budget (time or signal) ran out before the rounds did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub budget_spent: bool,
}

impl Further {
    pub fn line(&self) -> String {
        format!(
            "{} further round(s), {} runs at {} open size(s): {} resolved, {} left{}",
            self.rounds,
            self.runs,
            self.sizes,
            self.resolved,
            self.sizes - self.resolved.min(self.sizes),
            if self.budget_spent {
                " (the budget ran out)"
            } else {
                ""
            }
        )
    }
}

/// One measured size left unresolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unresolved {
    pub collective: String,
    pub ranks: u32,
    pub ppn: u32,
    pub nodes: u32,
    pub bytes: u64,
    /// The best straddling candidate and its interval.
    pub candidate: String,
    pub gain: f64,
    pub low: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// Where a choice was made: the choice the gain is over (the
    /// candidate may be faster than it by more than the minimum gain).
    /// Absent: the gain is over the reference, which was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_choice: Option<String>,
    /// The candidate *is* the choice, made over the reference on one
    /// launch's evidence: resolved for this launch, but not yet confirmed
    /// by a second ([`PointDecision::unconfirmed`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unconfirmed: bool,
}

impl Unresolved {
    /// The entry of an open decision at one point.
    pub fn of(c: Collective, key: CommKey, bytes: u64, o: &Open) -> Unresolved {
        let g = &o.gain;
        Unresolved {
            collective: c.to_string(),
            ranks: key.ranks,
            ppn: key.ppn,
            nodes: key.nodes,
            bytes,
            candidate: colltune_algorithms::label(&o.candidate.0, &o.candidate.1),
            gain: round4(g.gain),
            low: round4(g.low),
            high: g.high.is_finite().then(|| round4(g.high)),
            over_choice: o
                .tie
                .then(|| colltune_algorithms::label(&o.against.0, &o.against.1)),
            unconfirmed: o.confirm,
        }
    }

    pub fn line(&self) -> String {
        let pct = |x: f64| format!("{:+.1}%", 100.0 * x);
        format!(
            "{} on {} ranks ({}x{}) at {}: {} {} [{}, {}]{}",
            self.collective,
            self.ranks,
            self.nodes,
            self.ppn,
            crate::units::human_bytes(self.bytes),
            self.candidate,
            pct(self.gain),
            pct(self.low),
            self.high.map(pct).unwrap_or_else(|| "unbounded".into()),
            if self.unconfirmed {
                " chosen on one launch's evidence, a second to confirm it".to_string()
            } else {
                self.over_choice
                    .as_ref()
                    .map(|c| format!(" over the choice {c}"))
                    .unwrap_or_default()
            }
        )
    }
}

/// Launches that stopped half-way (died, or ran out of budget), by name.
/// They count for what they measured; this names them. `stopped[i]` is
/// what launch i's tuner recorded: `Some(true)` it stopped early (its
/// `CSV.incomplete` marker), `Some(false)` it finished what it was asked
/// (a later launch asked only for the sizes left open is complete,
/// however few it measured). Where nothing was recorded (`None`: a bench,
/// an import, a CSV from before the marker) a launch counts as stopped,
/// for each collective and communicator, where its largest measured size
/// is below the largest any launch measured.
pub fn partial_launches(
    launches: &[&[Sample]],
    names: &[String],
    stopped: &[Option<bool>],
) -> Vec<String> {
    type Sizes = BTreeMap<(String, CommKey), std::collections::BTreeSet<u64>>;
    let per: Vec<Sizes> = launches
        .iter()
        .map(|l| {
            let mut m: Sizes = BTreeMap::new();
            for s in l.iter() {
                m.entry((s.collective.clone(), CommKey::of(s)))
                    .or_default()
                    .insert(s.bytes);
            }
            m
        })
        .collect();
    let mut out = Vec::new();
    let name = |i: usize| names.get(i).map(String::as_str).unwrap_or("?");
    for (i, m) in per.iter().enumerate() {
        match stopped.get(i).copied().flatten() {
            Some(false) => continue,
            Some(true) => {
                let last = m
                    .iter()
                    .map(|(k, sizes)| {
                        format!(
                            "{} on {} ranks at {}",
                            k.0,
                            k.1.ranks,
                            sizes
                                .last()
                                .map_or("-".into(), |&b| crate::units::human_bytes(b))
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                out.push(format!(
                    "{}: the tuner stopped early (its .incomplete marker; last measured: {last}): it counts for the sizes it measured",
                    name(i)
                ));
                continue;
            }
            None if launches.len() < 2 => continue,
            None => {}
        }
        for (k, sizes) in m {
            let all: std::collections::BTreeSet<u64> = per
                .iter()
                .filter_map(|o| o.get(k))
                .flatten()
                .copied()
                .collect();
            let (Some(&top), Some(&mine)) = (all.last(), sizes.last()) else {
                continue;
            };
            if mine < top {
                let missing = all.iter().filter(|b| !sizes.contains(b)).count();
                out.push(format!(
                    "{}: {} on {} ranks stopped at {} ({missing} of {} sizes not measured, the largest {}): it counts for the sizes it measured",
                    name(i),
                    k.0,
                    k.1.ranks,
                    crate::units::human_bytes(mine),
                    all.len(),
                    crate::units::human_bytes(top)
                ));
            }
        }
    }
    out
}
