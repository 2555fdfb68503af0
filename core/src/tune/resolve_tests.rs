//! Further rounds where decisions are open ([`super::resolve`]), on a
//! synthetic machine whose answers are known by construction. MPI-free.

use std::collections::BTreeMap;

use colltune_algorithms::{Collective, Execution};

use super::resolve::{until_resolved, Outcome, Rounds};
use super::*;
use crate::libraries::ompi::Forced;
use crate::measure::record::{sample, Sample};
use crate::tables::table::build::build_with;
use crate::tables::table::evidence::{decide, Gain, Open, Times};
use crate::tables::table::{Provenance, Sweep};

/// Per (spec name, bytes): the time, and the run-to-run noise (a run's
/// times are scaled by exp(+noise) on odd runs, exp(-noise) on even ones).
struct Machine {
    /// Says its measurements are deterministic (as a model's are).
    exact: bool,
    times: BTreeMap<(&'static str, u64), (f64, f64)>,
    asked: Vec<Request>,
    samples: Vec<Sample>,
    /// Says stop (as a budget or SIGTERM does) once this many requests
    /// were answered.
    stop_after: Option<usize>,
}

impl Machine {
    fn new(times: &[(&'static str, u64, f64, f64)]) -> Machine {
        Machine {
            exact: false,
            times: times.iter().map(|&(n, b, t, s)| ((n, b), (t, s))).collect(),
            asked: Vec::new(),
            samples: Vec::new(),
            stop_after: None,
        }
    }
}

impl Oracle for Machine {
    fn exact(&self) -> bool {
        self.exact
    }

    fn should_stop(&self) -> bool {
        self.stop_after.is_some_and(|n| self.asked.len() >= n)
    }

    fn measure(&mut self, reqs: &[Request]) -> Result<Vec<Vec<f64>>, TuneError> {
        self.asked.extend(reqs.iter().cloned());
        Ok(reqs
            .iter()
            .map(|r| {
                let name = if r.cand.forced().is_some() {
                    "library"
                } else {
                    r.cand.spec.name.as_str()
                };
                let (t, s) = self
                    .times
                    .iter()
                    .find(|((n, b), _)| *n == name && *b == r.bytes)
                    .map(|(_, &v)| v)
                    .expect("a time for every candidate and size");
                let sign = if r.run % 2 == 1 { 1.0 } else { -1.0 };
                let t = t * (sign * s).exp();
                let v = vec![t; 3];
                for (k, &x) in v.iter().enumerate() {
                    let mut smp = sample(
                        &r.cand.spec.to_string(),
                        r.cand.exec_name(),
                        r.bytes,
                        r.run,
                        x,
                    );
                    smp.rep = k as u32 + 1;
                    self.samples.push(smp);
                }
                v
            })
            .collect())
    }
}

/// The library at 10 us; linear 10% faster at 64 B with run noise
/// `noise64`, and `gain4096` faster at 4 KiB exactly; scatter_allgather at
/// 20 us.
fn machine(noise64: f64, gain4096: f64) -> Machine {
    Machine::new(&[
        ("library", 64, 10.0, 0.0),
        ("linear", 64, 10.0 / 1.10, noise64),
        ("scatter_allgather", 64, 20.0, 0.0),
        // (measured only where a further launch asks for the crossover)
        ("library", 512, 10.0, 0.0),
        ("linear", 512, 10.0 / 1.2, 0.0),
        ("scatter_allgather", 512, 20.0, 0.0),
        ("library", 4096, 10.0, 0.0),
        ("linear", 4096, 10.0 / (1.0 + gain4096), 0.0),
        ("scatter_allgather", 4096, 20.0, 0.0),
    ])
}

fn cands() -> Vec<Candidate> {
    vec![
        Candidate::library(Forced { id: 0, segment: 0 }),
        Candidate::new(Collective::Bcast, "linear", Execution::Blocking),
        Candidate::new(Collective::Bcast, "scatter_allgather", Execution::Blocking),
    ]
}

/// Every size coarse, nothing pruned: every candidate gets the sweep's 4
/// runs, so the rounds' effect is the only difference.
fn settings(rounds: u32) -> Settings {
    Settings {
        sizes: vec![64, 4096],
        stride: 1,
        margin: 10.0,
        extra_rounds: rounds,
        ..Settings::default()
    }
}

/// The sweep's requests (runs 1-4: 2 sizes x 3 candidates x 4 runs) are
/// all there; the further ones (runs 5 on).
fn further(m: &Machine) -> Vec<Request> {
    let sweep = m.asked.iter().filter(|r| r.run <= 4).count();
    assert_eq!(sweep, 24, "{:?}", m.asked);
    m.asked.iter().filter(|r| r.run > 4).cloned().collect()
}

/// At 64 B linear is 10% faster than the library with runs 2% apart: the
/// sweep's 4 runs leave its interval straddling 3%, one round of 2 more
/// clears it. At 4 KiB it is 30% faster exactly: resolved by the sweep.
/// scatter_allgather is far slower everywhere: never a contender.
#[test]
fn further_runs_go_only_to_the_open_size_and_its_contenders() {
    let mut m = machine(0.02, 0.30);
    let st = settings(3);
    let mut s = Search::new(&mut m, &st, 0, cands());
    s.run().unwrap();
    let (o, runs) = s.resolve().unwrap();
    let extra = further(&m);
    assert_eq!((o.rounds, runs, extra.len()), (1, 4, 4), "{o:?}");
    assert!(extra.iter().all(|r| r.bytes == 64), "{extra:?}");
    let mut who: Vec<(String, u32)> = extra.iter().map(|r| (r.cand.label(), r.run)).collect();
    who.sort();
    assert_eq!(
        who.iter().map(|w| w.1).collect::<Vec<_>>(),
        vec![5, 6, 5, 6],
        "{who:?}"
    );
    assert!(who.iter().all(|w| !w.0.starts_with("scatter")), "{who:?}");
    assert!(o.left.is_empty() && o.resolved() == 1, "{o:?}");
    assert_eq!(o.spent.keys().copied().collect::<Vec<_>>(), vec![64]);
    // The table built from all the samples chooses linear at 64 B too,
    // and lists nothing as straddling: both choices wait only for a second
    // launch to confirm them (one launch's runs are one launch's state).
    let t = build_with(&m.samples, prov(), &Compact::default());
    let e = t.provenance.evidence.as_ref().unwrap();
    assert_eq!(
        e.unresolved
            .iter()
            .map(|u| (u.bytes, u.unconfirmed))
            .collect::<Vec<_>>(),
        vec![(64, true), (4096, true)],
        "{:?}",
        e.unresolved
    );
    assert_eq!(t.bcast[0].rules[0].algorithm, "linear");
}

fn prov() -> Provenance {
    Provenance::made_now(
        "test".into(),
        None,
        "Open MPI 4.1.4".into(),
        "measured".into(),
        Sweep::default(),
    )
}

use crate::tables::table::build::Compact;

/// Runs 16% apart: no number of runs inside the launch resolves a 10%
/// gain against 3%; the loop stops at the cap, and the size is reported,
/// by the search and in the table's provenance.
#[test]
fn the_rounds_stop_at_the_cap_and_the_open_size_is_reported() {
    let mut m = machine(0.08, 0.30);
    let st = settings(2);
    let mut s = Search::new(&mut m, &st, 0, cands());
    s.run().unwrap();
    let (o, runs) = s.resolve().unwrap();
    assert_eq!((o.rounds, runs, o.resolved()), (2, 8, 0), "{o:?}");
    assert!(!o.budget_spent);
    assert_eq!(o.left.len(), 1);
    let (b, open) = &o.left[0];
    assert_eq!(*b, 64);
    assert!(!open.tie && open.candidate.0 == "linear", "{open:?}");
    assert_eq!(further(&m).len(), 8);
    let t = build_with(&m.samples, prov(), &Compact::default());
    let e = t.provenance.evidence.as_ref().unwrap();
    // 64 B straddles; 4 KiB's choice waits for a second launch.
    assert_eq!(
        e.unresolved
            .iter()
            .map(|u| (u.bytes, u.unconfirmed))
            .collect::<Vec<_>>(),
        vec![(64, false), (4096, true)]
    );
    let f = resolve::further(&[(o, runs)]).unwrap();
    assert_eq!((f.rounds, f.runs, f.sizes, f.resolved), (2, 8, 1, 0));
}

/// The budget runs out in the further rounds, after a whole sweep: the
/// rounds say the budget ran out, but the sweep is not cut short (no
/// `.incomplete` marker, no "sizes not reached"). Cut in the sweep, it is.
#[test]
fn a_budget_spent_in_the_rounds_leaves_the_sweep_whole() {
    for (stop_after, swept_short) in [(24, false), (10, true)] {
        let mut m = machine(0.08, 0.30);
        m.stop_after = Some(stop_after);
        let st = settings(3);
        let mut s = Search::new(&mut m, &st, 0, cands());
        let (short, o, runs) = sweep_and_resolve(&mut s).unwrap();
        assert_eq!(short, swept_short, "stop after {stop_after}: {o:?}");
        assert!(o.budget_spent && runs == 0, "{o:?}");
    }
}

/// Nothing open (no noise), rounds disabled, or no evidence: not one
/// further run, the same decisions.
#[test]
fn resolved_sizes_get_no_further_runs() {
    for st in [
        settings(3),
        settings(0),
        Settings {
            min_gain: None,
            ..settings(3)
        },
    ] {
        let mut m = machine(0.0, 0.01);
        let mut s = Search::new(&mut m, &st, 0, cands());
        s.run().unwrap();
        let (o, runs) = s.resolve().unwrap();
        assert_eq!((o.rounds, runs), (0, 0), "{o:?}");
        assert!(further(&m).is_empty());
    }
    // a model's runs are exact: nothing is open, whatever their spread
    let mut m = machine(0.08, 0.30);
    m.exact = true;
    let st = settings(3);
    let mut s = Search::new(&mut m, &st, 0, cands());
    s.run().unwrap();
    let (o, runs) = s.resolve().unwrap();
    assert_eq!((o.rounds, runs, o.left.len()), (0, 0, 0), "{o:?}");
    // and where a size is open, 0 rounds measures nothing more but says so
    let mut m = machine(0.08, 0.0);
    let st = settings(0);
    let mut s = Search::new(&mut m, &st, 0, cands());
    s.run().unwrap();
    let (o, _) = s.resolve().unwrap();
    assert_eq!(o.left.len(), 1);
    assert!(further(&m).is_empty());
}

fn times(per_launch: &[f64]) -> Times {
    let mut t = Times::default();
    for (l, &x) in per_launch.iter().enumerate() {
        t.runs.insert((l, 1), vec![x]);
    }
    t
}

/// A choice made, and another candidate seemingly faster than it by more
/// than the minimum gain without the interval showing it: open, between
/// the two. The same two within each other's noise: a tie, resolved.
#[test]
fn a_choice_the_measurement_cannot_separate_from_a_faster_one_is_open() {
    let lab = |s: &str| (s.to_string(), "blocking".to_string());
    let lib = ("ompi_tuned:algorithm=0".to_string(), "library".to_string());
    let mut m = BTreeMap::new();
    m.insert(lib.clone(), times(&[10.0, 10.0, 10.0]));
    // both clear against the library; ring seems 15% faster than
    // scatter_allgather, but one launch in three says otherwise
    m.insert(lab("scatter_allgather"), times(&[8.0, 8.0, 8.0]));
    m.insert(lab("scatter_allgather_ring"), times(&[6.5, 6.5, 8.4]));
    let d = decide(Collective::Bcast, 512, &m, |_| true, 0.03).unwrap();
    assert_eq!(d.choice, lab("scatter_allgather"), "{d:?}");
    let o = d.open(&m, |_| true, 0.03).expect("open");
    assert!(o.tie);
    assert_eq!(o.against, lab("scatter_allgather"));
    assert_eq!(o.candidate, lab("scatter_allgather_ring"));
    assert_eq!(o.contenders.len(), 2);
    // within each other's noise, the estimate under 3%: a tie, resolved
    m.insert(lab("scatter_allgather_ring"), times(&[7.9, 7.8, 8.4]));
    let d = decide(Collective::Bcast, 512, &m, |_| true, 0.03).unwrap();
    assert_eq!(d.open(&m, |_| true, 0.03), None, "{d:?}");
}

/// The loop itself: a budget that runs out stops it and says so.
#[test]
fn the_budget_stops_the_rounds() {
    struct Fake {
        open: Vec<u64>,
        budget: u32,
    }
    impl Rounds for Fake {
        type Point = u64;
        type Error = ();
        fn open(&mut self) -> Vec<(u64, Open)> {
            let g = Gain {
                gain: 0.1,
                low: 0.0,
                high: 0.2,
                launches: 1,
                runs: 2,
                basis: crate::tables::table::evidence::Basis::RunsOfOneLaunch,
            };
            let l = ("linear".to_string(), "blocking".to_string());
            self.open
                .iter()
                .map(|&b| {
                    (
                        b,
                        Open {
                            candidate: l.clone(),
                            gain: g.clone(),
                            against: l.clone(),
                            tie: false,
                            confirm: false,
                            contenders: vec![l.clone()],
                        },
                    )
                })
                .collect()
        }
        fn spend(&mut self, _: &[(u64, Open)]) -> Result<bool, ()> {
            if self.budget == 0 {
                return Ok(false);
            }
            self.budget -= 1;
            // one size resolves per round
            self.open.pop();
            Ok(true)
        }
    }
    let mut f = Fake {
        open: vec![1, 2, 3],
        budget: 1,
    };
    let o: Outcome<u64> = until_resolved(&mut f, 10).unwrap();
    assert_eq!((o.rounds, o.budget_spent, o.left.len()), (1, true, 2));
    assert_eq!(o.resolved(), 1);
}

/// A further launch (`tune --focus`): after one launch, both sizes wait
/// for a second to confirm linear; the second measures exactly those two
/// sizes, each with the library's decision and linear (never the far
/// slower scatter_allgather, no screening, no other size), every run at
/// full budget; built from both, both choices are confirmed.
#[test]
fn a_further_launch_measures_only_the_open_points_and_their_contenders() {
    use super::focus::Focus;
    use crate::tables::table::build::build_launches;
    use crate::tables::table::evidence::DEFAULT_MIN_GAIN;
    let mut m1 = machine(0.02, 0.30);
    let st = settings(0);
    Search::new(&mut m1, &st, 0, cands()).run().unwrap();
    let first = m1.samples.clone();
    let f = Focus::from_launches(&[&first], DEFAULT_MIN_GAIN, &[4], &st.sizes);
    // and no crossover between them, although their choices differ (the
    // library's decision kept at 64 B, linear's 10% not yet clear; linear
    // at 4 KiB, 30% faster): 64 B's decision is open, so it may yet move
    // (`focus::crossover` waits for settled decisions on both sides).
    assert_eq!(
        (f.len(), f.sizes(), f.elsewhere),
        (2, vec![64, 4096], 0),
        "{f:?}"
    );
    // Communicator sizes this tune does not measure are counted apart.
    let g = Focus::from_launches(&[&first], DEFAULT_MIN_GAIN, &[8], &st.sizes);
    assert_eq!((g.len(), g.elsewhere), (0, 2), "{g:?}");

    let mut m2 = machine(0.02, 0.30);
    let st2 = Settings {
        focus: Some(f),
        ..settings(0)
    };
    Search::new(&mut m2, &st2, 0, cands()).run().unwrap();
    let mut asked: Vec<(u64, String, u32, bool)> = m2
        .asked
        .iter()
        .map(|r| {
            (
                r.bytes,
                r.cand.spec.name.clone(),
                r.run,
                r.budget_scale == 1.0,
            )
        })
        .collect();
    asked.sort();
    let mut want = Vec::new();
    for b in [64, 4096] {
        for name in ["linear", "ompi_tuned"] {
            for run in 1..=4 {
                want.push((b, name.to_string(), run, true));
            }
        }
    }
    want.sort();
    assert_eq!(asked, want);
    // Built from both, 64 B and 4 KiB are confirmed, both linear: no
    // crossover left to measure.
    let all = [&first[..], &m2.samples];
    let t = build_launches(&all, prov(), &Compact::default());
    assert_eq!(t.bcast[0].rules[0].algorithm, "linear");
    let e = t.provenance.evidence.as_ref().unwrap();
    assert!(e.unresolved.is_empty(), "{:?}", e.unresolved);
    // Nothing open: a focused launch measures nothing.
    let none = Focus::from_launches(&all, DEFAULT_MIN_GAIN, &[4], &st.sizes);
    assert!(none.is_empty(), "{none:?}");
}

/// Times where scatter_allgather wins at 1 B, linear at 16 B, and at 4 B
/// scatter_allgather takes 10x linear's time.
const CROSSING: [(&str, u64, f64, f64); 9] = [
    ("library", 1, 10.0, 0.0),
    ("scatter_allgather", 1, 5.0, 0.0),
    ("linear", 1, 6.0, 0.0),
    ("library", 4, 10.0, 0.0),
    ("scatter_allgather", 4, 60.0, 0.0),
    ("linear", 4, 5.5, 0.0),
    ("library", 16, 10.0, 0.0),
    ("scatter_allgather", 16, 40.0, 0.0),
    ("linear", 16, 5.0, 0.0),
];

/// One launch over 1 B and 16 B alone on [`CROSSING`]'s machine.
fn crossing_launch() -> (Machine, Settings) {
    let mut m = Machine::new(&CROSSING);
    let st = Settings {
        sizes: vec![1, 16],
        ..settings(0)
    };
    Search::new(&mut m, &st, 0, cands()).run().unwrap();
    (m, st)
}

/// Where the first launch's choices differ between two measured sizes
/// and it did not measure between them (here its margin let it pass; on
/// a real machine the evidence of later launches moved a choice), a later
/// launch measures the crossover with the library's decision and the two
/// choices: scatter_allgather wins at 1 B but is 10x slower at 4 B, which
/// the builder would otherwise have given it (the geometric mean of 1 and
/// 16). Built from both launches, 4 B is linear's.
#[test]
fn a_crossover_no_launch_measured_is_measured_between() {
    use super::focus::Focus;
    use crate::tables::table::build::build_launches;
    use crate::tables::table::evidence::DEFAULT_MIN_GAIN;
    let times = CROSSING;
    let (m1, st) = crossing_launch();
    assert!(
        m1.asked.iter().all(|r| r.bytes != 4),
        "the first launch measured 4 B"
    );
    let first = m1.samples.clone();
    let grid = [1, 2, 4, 8, 16];
    let f = Focus::from_launches(&[&first], DEFAULT_MIN_GAIN, &[4], &grid);
    let at4 = &f.at(0, Collective::Bcast).expect("points")[&4];
    let names: Vec<&str> = at4.iter().map(|l| l.0.split(':').next().unwrap()).collect();
    assert_eq!(
        names,
        ["ompi_tuned", "scatter_allgather", "linear"],
        "{f:?}"
    );

    let mut m2 = Machine::new(&times);
    let st2 = Settings {
        focus: Some(f),
        ..st.clone()
    };
    Search::new(&mut m2, &st2, 0, cands()).run().unwrap();
    let t = build_launches(&[&first, &m2.samples], prov(), &Compact::default());
    let rule = t.bcast[0]
        .rules
        .iter()
        .find(|r| r.min_bytes <= 4 && r.max_bytes.is_none_or(|m| m >= 4))
        .expect("a rule for 4 B");
    assert_eq!(rule.algorithm, "linear", "{:?}", t.bcast[0].rules);

    // Choices within the minimum gain of each other at both sizes: no
    // crossover worth measuring.
    let close = [
        ("library", 1, 10.0, 0.0),
        ("scatter_allgather", 1, 5.0, 0.0),
        ("linear", 1, 5.05, 0.0),
        ("library", 16, 10.0, 0.0),
        ("scatter_allgather", 16, 5.05, 0.0),
        ("linear", 16, 5.0, 0.0),
    ];
    let mut m3 = Machine::new(&close);
    Search::new(&mut m3, &st, 0, cands()).run().unwrap();
    let g = Focus::from_launches(&[&m3.samples], DEFAULT_MIN_GAIN, &[4], &grid);
    assert!(!g.sizes().contains(&4), "{g:?}");
}

/// A label names a candidate of the launch, or a segmented one at the
/// segment an earlier launch chose; one this launch does not offer, none.
#[test]
fn labels_name_this_launchs_candidates() {
    use super::focus::candidate_of;
    let c = vec![
        Candidate::new(Collective::Bcast, "linear", Execution::Blocking),
        Candidate::new(Collective::Bcast, "pipeline:segment=0", Execution::Blocking),
    ];
    let l = |s: &str, e: &str| (s.to_string(), e.to_string());
    assert_eq!(
        candidate_of(&c, &l("linear", "blocking")).map(|c| c.label()),
        Some("linear [blocking]".into())
    );
    assert_eq!(
        candidate_of(&c, &l("pipeline:segment=8192", "blocking")).map(|c| c.segment()),
        Some(Some(8192))
    );
    assert_eq!(candidate_of(&c, &l("linear", "nonblocking")), None);
    assert_eq!(candidate_of(&c, &l("binomial:segment=0", "blocking")), None);
}

/// Neighbouring sizes whose choices were each never measured at the
/// other's size: each neighbour measures the other's choice first (its own
/// decision is open until it has), and nothing is measured between them
/// yet; once both have, the size between them.
#[test]
fn a_neighbours_choice_never_measured_there_is_measured_there_first() {
    use super::focus::Focus;
    use crate::tables::table::evidence::DEFAULT_MIN_GAIN;
    let all = crossing_launch().0.samples;
    let named = |s: &Sample, name: &str| s.algorithm.starts_with(name) || s.spec.starts_with(name);
    // as a launch that never measured linear at 1 B nor
    // scatter_allgather at 16 B would have left it
    let part: Vec<Sample> = all
        .iter()
        .filter(|s| !(s.bytes == 1 && named(s, "linear")))
        .filter(|s| !(s.bytes == 16 && named(s, "scatter_allgather")))
        .cloned()
        .collect();
    assert!(part.len() < all.len(), "nothing left out");
    let grid = [1, 2, 4, 8, 16];
    let names = |f: &Focus, at: u64| -> Option<Vec<String>> {
        let p = f.at(0, Collective::Bcast)?.get(&at)?;
        Some(
            p.iter()
                .map(|l| l.0.split(':').next().unwrap().to_string())
                .collect(),
        )
    };
    let f = Focus::from_launches(&[&part], DEFAULT_MIN_GAIN, &[4], &grid);
    let at1 = names(&f, 1).unwrap_or_else(|| panic!("1 B not measured again: {f:?}"));
    assert!(at1.iter().any(|n| n == "linear"), "{at1:?}");
    let at16 = names(&f, 16).unwrap_or_else(|| panic!("16 B not measured again: {f:?}"));
    assert!(at16.iter().any(|n| n == "scatter_allgather"), "{at16:?}");
    assert!(names(&f, 4).is_none(), "measured between first: {f:?}");
    // With both measured at both sizes: the size between.
    let g = Focus::from_launches(&[&all], DEFAULT_MIN_GAIN, &[4], &grid);
    assert!(names(&g, 4).is_some(), "{g:?}");
}
