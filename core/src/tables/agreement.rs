//! Whether two tables agree where it matters: at each size of the grid,
//! table A's choice against table B's, timed in the samples each table was
//! tuned from and any referee measurements (`colltune diff A.yaml B.yaml
//! --measured A.csv --measured B.csv`, `jobs/stability.sh`). Every CSV is
//! one launch. At a size the two choices
//! - *agree* when they are the same, or when the 95% interval of their
//!   time ratio (launches as the replicates, [`crate::tables::table::evidence`])
//!   lies within `within` (5%) either way;
//! - *differ* when that interval lies wholly beyond `within`;
//! - are *unresolved* otherwise (the interval straddles the bound, or no
//!   CSV measured both): reported apart, never counted as agreement.
//!
//! MPI-free.

use std::collections::BTreeSet;

use colltune_algorithms::Collective;

use crate::measure::record::Sample;
use crate::tables::table::build::{point_stats, Stats};
use crate::tables::table::evidence::{gain, point_times, Gain};
use crate::tables::table::{CommKey, Rule, Table};

/// One size of the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct AtSize {
    pub bytes: u64,
    /// `spec [execution]` of each table's choice.
    pub a: String,
    pub b: String,
    /// Per measurement: slower median / faster median of the two choices,
    /// `None` where that measurement lacks one of them at this size.
    pub ratios: Vec<Option<f64>>,
    /// `Some(true)`: the same choice, or their ratio's interval within
    /// `within`; `Some(false)`: wholly beyond it; `None`: unresolved.
    pub agree: Option<bool>,
    /// B's time over A's: the estimate and its 95% interval over all the
    /// measurements (each one launch), where any measured both.
    pub interval: Option<Gain>,
}

/// One collective on one communicator shape both tables have.
#[derive(Clone, Debug, PartialEq)]
pub struct CommAgreement {
    pub collective: Collective,
    pub key: CommKey,
    pub sizes: Vec<AtSize>,
}

impl CommAgreement {
    /// (agreeing, resolved, all) sizes: resolved = agreeing + differing;
    /// all - resolved are unresolved.
    pub fn counts(&self) -> (usize, usize, usize) {
        let judged = self.sizes.iter().filter(|s| s.agree.is_some()).count();
        let agree = self.sizes.iter().filter(|s| s.agree == Some(true)).count();
        (agree, judged, self.sizes.len())
    }
}

/// The canonical `spec [execution]` of a rule, as samples write it.
fn label_of(c: Collective, r: &Rule) -> (String, String) {
    // The library's algorithms are not in colltune's registry: their whole
    // specification names them (coll/tuned's binomial is not its linear).
    if let Some(Ok(f)) = r.library() {
        return (f.spec().to_string(), r.execution.clone());
    }
    let spec = r
        .spec()
        .ok()
        .and_then(|s| colltune_algorithms::resolve(c, &s).ok())
        .map(|s| s.to_string())
        .unwrap_or_else(|| r.algorithm.clone());
    (spec, r.execution.clone())
}

/// Agreement of `a` and `b` over `grid` (every size both tables' sweeps
/// list when empty), judged by each set of samples in `measurements`.
pub fn agreement(
    a: &Table,
    b: &Table,
    measurements: &[Vec<Sample>],
    grid: &[u64],
    within: f64,
) -> Vec<CommAgreement> {
    let stats: Vec<Stats> = measurements.iter().map(|m| point_stats(m)).collect();
    let launches: Vec<&[Sample]> = measurements.iter().map(Vec::as_slice).collect();
    let times = point_times(&launches);
    let grid: Vec<u64> = if grid.is_empty() {
        let mut g: BTreeSet<u64> = a.provenance.sweep.sizes.iter().copied().collect();
        g.extend(b.provenance.sweep.sizes.iter().copied());
        if g.is_empty() {
            for m in measurements {
                g.extend(m.iter().map(|s| s.bytes));
            }
        }
        g.into_iter().collect()
    } else {
        grid.to_vec()
    };
    let mut out = Vec::new();
    for c in Collective::ALL {
        for ca in a.rules(c) {
            let Some(cb) = b.rules(c).iter().find(|x| x.key() == ca.key()) else {
                continue;
            };
            let key = ca.key();
            let mut sizes = Vec::new();
            for &bytes in &grid {
                let (Some(ra), Some(rb)) = (
                    ca.rules.iter().find(|r| r.covers(bytes)),
                    cb.rules.iter().find(|r| r.covers(bytes)),
                ) else {
                    continue;
                };
                let (la, lb) = (label_of(c, ra), label_of(c, rb));
                let ratios: Vec<Option<f64>> = stats
                    .iter()
                    .map(|st| {
                        let at = st.get(&(c, key, bytes))?;
                        let (ta, tb) = (at.get(&la)?.median, at.get(&lb)?.median);
                        (ta > 0.0 && tb > 0.0).then(|| ta.max(tb) / ta.min(tb))
                    })
                    .collect();
                // B's time over A's = the gain of A over B.
                let interval = times
                    .get(&(c, key, bytes))
                    .and_then(|at| gain(at.get(&lb)?, at.get(&la)?));
                let agree = if la == lb {
                    Some(true)
                } else {
                    interval.as_ref().and_then(|g| judge(g, within))
                };
                sizes.push(AtSize {
                    bytes,
                    a: colltune_algorithms::label(&la.0, &la.1),
                    b: colltune_algorithms::label(&lb.0, &lb.1),
                    ratios,
                    agree,
                    interval,
                });
            }
            out.push(CommAgreement {
                collective: c,
                key,
                sizes,
            });
        }
    }
    out
}

/// Agree (the ratio's interval within `within` either way), differ
/// (wholly beyond it), or None: unresolved.
pub fn judge(g: &Gain, within: f64) -> Option<bool> {
    let (lo, hi) = (1.0 + g.low, 1.0 + g.high);
    let band = (1.0 / (1.0 + within) - 1e-12, 1.0 + within + 1e-12);
    if lo >= band.0 && hi <= band.1 {
        Some(true)
    } else if lo > band.1 || hi < band.0 {
        Some(false)
    } else {
        None
    }
}

/// One measured point scored against a table (`colltune evaluate TABLE
/// --measured CSV...`).
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    pub collective: Collective,
    /// The communicator measured, with its placement where the samples say
    /// it: the table's entry is the one a communicator so placed uses.
    pub key: CommKey,
    pub bytes: u64,
    /// `spec [execution]` of the table's choice (None: no rule covers it).
    pub choice: Option<String>,
    /// The fastest median measured of a subject a table may choose.
    pub best: String,
    /// The choice's median over the best's (None: the choice was not
    /// measured here).
    pub regret: Option<f64>,
    /// The library's own decision's median over the best's (its `mpi`
    /// call, or Open MPI's algorithm 0), where measured.
    pub default_regret: Option<f64>,
}

/// Every point of `measurements` (each CSV one launch; a subject's median
/// over all of them) scored against `t`: the regret of its choice and of
/// the library's default.
pub fn score(t: &Table, measurements: &[Vec<Sample>]) -> Vec<Scored> {
    use crate::tables::table::evidence::is_reference;
    let launches: Vec<&[Sample]> = measurements.iter().map(Vec::as_slice).collect();
    let choosable = |l: &(String, String)| {
        l.1 != crate::libraries::ompi::LIBRARY_EXECUTION
            || colltune_algorithms::AlgoSpec::parse(&l.0)
                .ok()
                .is_some_and(|s| crate::libraries::library::LibraryChoice::from_spec(&s).is_ok())
    };
    let mut out = Vec::new();
    for (&(c, key, bytes), subjects) in &point_times(&launches) {
        let medians: Vec<(&(String, String), f64)> = subjects
            .iter()
            .map(|(l, times)| (l, times.median()))
            .filter(|(_, m)| m.is_finite() && *m > 0.0)
            .collect();
        let Some(&(best, tb)) = medians
            .iter()
            .filter(|(l, _)| choosable(l))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        else {
            continue;
        };
        let d = crate::model::placed::Detected::of(key.placement);
        let rule = t.lookup_placed(c, key, &d, bytes);
        let label = rule.map(|r| label_of(c, r));
        let time_of = |l: &(String, String)| medians.iter().find(|(m, _)| *m == l).map(|x| x.1);
        out.push(Scored {
            collective: c,
            key,
            bytes,
            choice: label
                .as_ref()
                .map(|l| colltune_algorithms::label(&l.0, &l.1)),
            best: colltune_algorithms::label(&best.0, &best.1),
            regret: label.as_ref().and_then(time_of).map(|x| x / tb),
            default_regret: medians
                .iter()
                .filter(|(l, _)| is_reference(l))
                .map(|x| x.1 / tb)
                .reduce(f64::min),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::sample;
    use crate::tables::table::build::{build_with, Compact};
    use crate::tables::table::test_provenance as prov;

    fn measure(times: &[(&str, u64, f64)]) -> Vec<Sample> {
        let mut v = Vec::new();
        for &(spec, bytes, t) in times {
            for run in 1..=2 {
                v.push(sample(spec, "blocking", bytes, run, t));
            }
        }
        v
    }

    /// The fastest median at each size, nothing merged.
    fn plain() -> Compact {
        Compact {
            enabled: false,
            ..Compact::legacy()
        }
    }

    const LIN: &str = "ompi_tuned:algorithm=1,name=basic_linear,segment=0";
    const BIN: &str = "ompi_tuned:algorithm=6,name=binomial,segment=0";

    #[test]
    fn a_table_is_scored_per_placement_beside_the_default() {
        let (plain, lin, bin) = (plain(), LIN, BIN);
        let dflt = "ompi_tuned:algorithm=0,name=default,segment=0";
        // Block: linear 10, binomial 20; cyclic the reverse; the default 15.
        let at = |placement: &str, spec: &str, t: f64| {
            (1..=2)
                .map(|run| Sample {
                    placement: placement.into(),
                    ..sample(spec, "library", 64, run, t)
                })
                .collect::<Vec<_>>()
        };
        let mut m = Vec::new();
        for (p, l, b) in [("block/block", 10.0, 20.0), ("cyclic/block", 20.0, 10.0)] {
            m.extend(at(p, lin, l));
            m.extend(at(p, bin, b));
            m.extend(at(p, dflt, 15.0));
        }
        let placed = build_with(&m, prov(), &plain);
        assert_eq!(placed.bcast.len(), 2);
        let got = score(&placed, std::slice::from_ref(&m));
        assert_eq!(got.len(), 2);
        for s in &got {
            assert_eq!(
                (s.regret, s.default_regret),
                (Some(1.0), Some(1.5)),
                "{s:?}"
            );
        }
        // The same data with no placement: one entry for both placements,
        // whose medians tie (15 each), so the default it keeps is 1.5x off
        // the best at both.
        let blind: Vec<Sample> = m
            .iter()
            .map(|s| Sample {
                placement: String::new(),
                ..s.clone()
            })
            .collect();
        let one = build_with(&blind, prov(), &plain);
        assert_eq!(one.bcast.len(), 1);
        let got = score(&one, std::slice::from_ref(&m));
        let mut r: Vec<f64> = got.iter().filter_map(|s| s.regret).collect();
        r.sort_by(f64::total_cmp);
        assert_eq!(r, vec![1.5, 1.5]);
        // A table whose only entry is for another placement scores nothing there.
        let only_block = crate::tables::table::Table {
            bcast: placed.bcast[..1].to_vec(),
            ..placed.clone()
        };
        let got = score(&only_block, std::slice::from_ref(&m));
        assert_eq!(
            got.iter().filter(|s| s.choice.is_none()).count(),
            1,
            "{got:?}"
        );
    }

    #[test]
    fn two_different_library_algorithms_are_two_choices() {
        let (plain, lin, bin) = (plain(), LIN, BIN);
        let lib = |spec: &str, bytes, t| {
            (1..=2)
                .map(|run| sample(spec, "library", bytes, run, t))
                .collect::<Vec<_>>()
        };
        let mut ma = lib(lin, 64, 10.0);
        ma.extend(lib(bin, 64, 12.0));
        let mut mb = lib(lin, 64, 12.0);
        mb.extend(lib(bin, 64, 10.0));
        let ta = build_with(&ma, prov(), &plain);
        let tb = build_with(&mb, prov(), &plain);
        let got = agreement(&ta, &tb, &[ma.clone(), mb], &[64], 0.05);
        let s = &got[0].sizes[0];
        assert_eq!(
            (s.a.as_str(), s.b.as_str()),
            (&*format!("{lin} [library]"), &*format!("{bin} [library]"))
        );
        // 20% apart one way in one launch, the other way in the other: the
        // launches contradict each other, unresolved (never agreement)
        assert_eq!(s.agree, None, "{s:?}");
        // 20% apart the same way in two launches: they differ
        let got = agreement(&ta, &tb, &[ma.clone(), ma], &[64], 0.05);
        assert_eq!(got[0].sizes[0].agree, Some(false), "{:?}", got[0].sizes[0]);
    }

    #[test]
    fn choices_within_the_threshold_agree_and_unmeasured_ones_are_not_judged() {
        let plain = Compact {
            enabled: false,
            ..Compact::legacy()
        };
        // A: linear wins at 1 and 2 B, binomial at 4 B; B: binomial at 1 B
        // (by a hair), linear at 2 B, and at 4 B linear 20% behind.
        let ma = measure(&[
            ("linear", 1, 10.0),
            ("binomial:segment=0", 1, 10.2),
            ("linear", 2, 10.0),
            ("binomial:segment=0", 2, 11.0),
            ("linear", 4, 12.0),
            ("binomial:segment=0", 4, 10.0),
        ]);
        let mb = measure(&[
            ("linear", 1, 10.1),
            ("binomial:segment=0", 1, 10.0),
            ("linear", 2, 10.0),
            ("binomial:segment=0", 2, 12.0),
            ("linear", 4, 9.0),
            ("knomial:radix=4,segment=0", 8, 9.0),
            ("linear", 8, 9.5),
        ]);
        let mut ma8 = ma.clone();
        ma8.extend(measure(&[("binomial:segment=0", 8, 7.0)]));
        let ta = build_with(&ma8, prov(), &plain);
        let tb = build_with(&mb, prov(), &plain);
        // each CSV twice: four launches, two of each state
        let got = agreement(
            &ta,
            &tb,
            &[ma8.clone(), mb.clone(), ma8, mb],
            &[1, 2, 4, 8],
            0.05,
        );
        assert_eq!(got.len(), 1);
        let s = &got[0].sizes;
        // 1 B: different choices, 2% apart one way in A's samples, 1% the
        // other in B's: the ratio's interval over 4 launches is within 5%
        assert_eq!(s[0].agree, Some(true), "{:?}", s[0]);
        // 2 B: the same choice
        assert_eq!(s[1].agree, Some(true), "{:?}", s[1]);
        // 4 B: binomial vs linear, 20% apart in A (B lacks binomial)
        assert_eq!(s[2].agree, Some(false), "{:?}", s[2]);
        assert_eq!(s[2].ratios[1], None);
        // 8 B: binomial vs knomial, each measured in one CSV only: unresolved
        assert_eq!(s[3].agree, None, "{:?}", s[3]);
        assert_eq!(got[0].counts(), (2, 3, 4));
    }
}
