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

use std::collections::BTreeMap;

use colltune_algorithms::{AlgoSpec, Collective};

use super::{spec_to_fields, CommKey, CommRules, Provenance, Rule, Table, SCHEMA_VERSION};
use crate::record::Sample;
use crate::stats;

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

/// Median time of every colltune subject at every measured point.
pub fn medians(samples: &[Sample]) -> Medians {
    type Times = BTreeMap<(String, String), Vec<f64>>;
    let mut raw: BTreeMap<(Collective, CommKey, u64), Times> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.is_choice()) {
        let Some(c) = s.collective() else { continue };
        let key = CommKey {
            ranks: s.ranks,
            ppn: s.ppn,
            nodes: s.nodes,
        };
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
        .filter_map(|(&(_, _, bytes), subj)| {
            let mut v: Vec<(&(String, String), f64)> = subj.iter().map(|(k, &t)| (k, t)).collect();
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
        })
        .collect()
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

/// A whole table from samples.
pub fn build(samples: &[Sample], provenance: Provenance) -> Table {
    let m = medians(samples);
    let mut table = Table {
        schema: SCHEMA_VERSION,
        provenance,
        bcast: Vec::new(),
        swap: Vec::new(),
    };
    let mut keys: Vec<(Collective, CommKey)> = m.keys().map(|&(c, k, _)| (c, k)).collect();
    keys.dedup();
    for (c, key) in keys {
        let rules = rules_from(&decisions(&m, c, key));
        if !rules.is_empty() {
            table.rules_mut(c).push(CommRules {
                ranks: key.ranks,
                ppn: key.ppn,
                nodes: key.nodes,
                rules,
            });
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::sample;
    use crate::table::validate::{check, load_str};

    fn prov() -> Provenance {
        Provenance {
            host: "test".into(),
            cluster: None,
            mpi: "Open MPI v4.1.4".into(),
            date: "2026-11-30T00:00:00Z".into(),
            command: "test".into(),
            colltune: "0".into(),
            source: "measured".into(),
            sweep: Default::default(),
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

    #[test]
    fn geometric_midpoints() {
        assert_eq!(geo_mid(1, 4), 2);
        assert_eq!(geo_mid(1024, 4096), 2048);
        assert_eq!(geo_mid(7, 8), 7);
    }
}
