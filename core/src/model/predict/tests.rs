//! The check's arithmetic and the simulated trees, MPI-free.

use super::*;
use crate::model::placement::Level;
use crate::model::sim::{LevelLink, Link};

fn link(lat: f64, gbs: f64) -> Link {
    Link {
        latency_us: lat,
        overhead_us: lat / 2.0,
        gap_us: lat / 2.0,
        bandwidth_gbs: gbs,
        eager_limit: 4096,
        eager_bandwidth_gbs: None,
        burst_bytes: None,
        rendezvous_first_bytes: None,
    }
}

fn model() -> Model {
    Model {
        name: "t".into(),
        source: "t".into(),
        intra: link(0.3, 5.0),
        inter: link(1.5, 10.0),
        copy_gbs: 10.0,
        levels: vec![LevelLink {
            shares: Level::Socket.name().into(),
            link: link(0.1, 8.0),
        }],
        memory_copy_gbs: None,
        intra_load_per_rank: None,
        shared_reads: false,
        shared_ports: false,
        group: None,
        fit_error: None,
    }
}

#[test]
fn levels_and_placement_change_the_time() {
    let m = model();
    let l = Layout::parse("node:2,socket:2,core:4").unwrap();
    // Two ranks: one socket (core), two sockets (socket), two nodes (node).
    let t = |map| {
        trees::simulate(&m, &l, map, 1, 2, 8)
            .map(|e| trees::osu_time(&e))
            .unwrap()
    };
    let (core, socket, node) = (t(Mapping::Core), t(Mapping::Socket), t(Mapping::Node));
    assert!(core < socket && socket < node, "{core} {socket} {node}");
    // Without placement levels, both ranks of one node use `intra`.
    let mut flat = m.clone();
    flat.levels.clear();
    let f = trees::simulate(&flat, &l, Mapping::Core, 1, 2, 8)
        .map(|e| trees::osu_time(&e))
        .unwrap();
    assert!((f - socket).abs() < 1e-9, "{f} {socket}");
    // The root of a linear broadcast sends to every rank in turn: on one
    // node, rank k receives after rank k - 1.
    let one = Layout::parse("node:1,core:16").unwrap();
    let each = trees::simulate(&m, &one, Mapping::Core, 1, 16, 8).unwrap();
    assert!(each[1..].windows(2).all(|w| w[0] < w[1]), "{each:?}");
    // Too many ranks for the layout: an error saying so.
    let e = trees::simulate(&m, &l, Mapping::Core, 1, 17, 8)
        .map(|e| trees::osu_time(&e))
        .unwrap_err();
    assert!(e.contains("17 ranks"), "{e}");
    // The default runs what the fixed decision picks.
    let d = trees::simulate(&m, &l, Mapping::Core, 0, 6, 64)
        .map(|e| trees::osu_time(&e))
        .unwrap();
    let picked = trees::simulate(
        &m,
        &l,
        Mapping::Core,
        crate::libraries::ompi::tuned_bcast_decision(6, 64),
        6,
        64,
    )
    .map(|e| trees::osu_time(&e))
    .unwrap();
    assert_eq!(d, picked);
}

fn point(ranks: usize, bytes: u64, t: &[(u32, f64, f64)]) -> Point {
    let times: BTreeMap<u32, (f64, f64)> = t.iter().map(|&(a, m, p)| (a, (m, p))).collect();
    let forced = |i: usize| -> BTreeMap<u32, f64> {
        times
            .iter()
            .filter(|(&a, _)| a != 0)
            .map(|(&a, x)| (a, if i == 0 { x.0 } else { x.1 }))
            .collect()
    };
    let (mw, pw) = (argmin(&forced(0)), argmin(&forced(1)));
    Point {
        ranks,
        bytes,
        regret: times[&pw].0 / times[&mw].0,
        default_regret: times.get(&0).map(|d| d.0 / times[&mw].0),
        measured_winner: mw,
        predicted_winner: pw,
        uncertain: false,
        times,
    }
}

#[test]
fn the_summary_counts_agreement_regret_and_errors() {
    let pts = vec![
        // Exact winner.
        point(4, 8, &[(1, 1.0, 1.1), (5, 2.0, 2.0), (0, 1.5, 1.0)]),
        // Wrong winner, within 5%: agrees.
        point(4, 16, &[(1, 1.0, 2.0), (5, 1.04, 1.0)]),
        // Wrong winner, 2x: disagrees.
        point(8, 8, &[(1, 1.0, 2.0), (5, 2.0, 1.0), (0, 3.0, 3.0)]),
    ];
    let s = summarize(&pts);
    assert_eq!(s.points, 3);
    assert!((s.agreement - 2.0 / 3.0).abs() < 1e-12);
    assert!((s.regret_worst - 2.0).abs() < 1e-12);
    assert!((s.regret_geomean - (1.04f64 * 2.0).powf(1.0 / 3.0)).abs() < 1e-12);
    assert!((s.default_regret.unwrap() - (1.5f64 * 3.0).sqrt()).abs() < 1e-12);
    // Algorithm 1's errors: 10%, 100%, 100%.
    assert!((s.time_error_by_algorithm[&1] - 1.0).abs() < 1e-12);
    // 4 ranks: default 1.5 measured over best 1.0; predicted 1.0 over 1.1.
    let (m, p) = s.default_ratio[&4];
    assert!((m - 1.5).abs() < 1e-12 && (p - 1.0 / 1.1).abs() < 1e-12);
    let line = s.line();
    assert!(line.starts_with("agreement 67% of 3 points; regret geomean 1.28, worst 2.00; library default regret 2.12; time error median "), "{line}");
    let no_default = summarize(&pts[1..2]);
    assert!(no_default.line().contains("library default regret -;"));
}

/// Where Open MPI's decision runs a forced algorithm as forced, the
/// default's time over that algorithm's says how alike the runs were.
#[test]
fn the_default_is_held_against_the_forced_run_of_the_same_code() {
    // 200 ranks: the decision runs binomial (6) below 2 B, the binary tree
    // (5) below 16 KiB, k-nomial (7, not forced here) from 64 KiB; on 6
    // ranks from 1 MiB one chain, not the forced chain's 4.
    assert!(trees::same_run(0, 6, 200, 1) && trees::same_run(0, 5, 200, 8));
    assert!(!trees::same_run(0, 2, 6, 1 << 21) && !trees::same_run(0, 5, 200, 1));
    let pts = vec![
        point(200, 1, &[(0, 14.0, 3.0), (5, 9.0, 4.0), (6, 10.0, 3.0)]),
        point(200, 8, &[(0, 9.0, 4.0), (5, 10.0, 4.0), (6, 10.0, 3.0)]),
        point(
            200,
            1 << 17,
            &[(0, 50.0, 9.0), (5, 10.0, 4.0), (6, 10.0, 3.0)],
        ),
        point(
            6,
            1 << 21,
            &[(0, 50.0, 9.0), (2, 10.0, 4.0), (5, 10.0, 3.0)],
        ),
    ];
    let (n, g) = summarize(&pts).default_self.unwrap();
    assert_eq!(n, 2);
    assert!((g - (1.4f64 * 0.9).sqrt()).abs() < 1e-12, "{g}");
    assert_eq!(summarize(&pts[2..]).default_self, None);
}

#[test]
fn the_glitch_rule_leaves_out_times_several_times_what_more_took() {
    // Algorithm 5 on 4, 6, 8 ranks at 8, 16, 32 B: times grow a little with
    // both; one time (6 ranks, 8 B) is 40x the rest, another (8 ranks, 32
    // B, the last point: nothing beyond it to hold it against) is kept
    // however high; the default (0) is held only where the fixed decision
    // runs the same algorithm.
    let mut meas = Measured::new();
    for r in [4usize, 6, 8] {
        for b in [8u64, 16, 32] {
            let t = 2.0 + r as f64 * 0.1 + b as f64 * 0.01;
            meas.entry((r, b)).or_default().insert(5, t);
        }
    }
    meas.get_mut(&(6, 8)).unwrap().insert(5, 100.0);
    meas.get_mut(&(8, 32)).unwrap().insert(5, 100.0);
    let (kept, g) = screen(&meas);
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!((g[0].ranks, g[0].bytes, g[0].algorithm), (6, 8, 5));
    assert!(g[0].to_string().contains("x its"), "{}", g[0]);
    assert!(!kept.get(&(6, 8)).is_some_and(|x| x.contains_key(&5)));
    assert_eq!(kept[&(8, 32)][&5], 100.0);
    // A time 2x what more took is no glitch (a protocol switch can do
    // that), 3.5x is.
    let mut m2 = Measured::new();
    m2.entry((4, 8)).or_default().insert(6, 4.0);
    m2.entry((4, 16)).or_default().insert(6, 2.0);
    assert!(screen(&m2).1.is_empty());
    m2.entry((4, 8)).or_default().insert(6, 7.0);
    assert_eq!(screen(&m2).1.len(), 1);
    // The default changes algorithm with size: its times at sizes where
    // the decision differs are not held against each other.
    let (r, lo, hi) = (32usize, 1024u64, 1 << 20);
    assert_ne!(trees::resolved(0, r, lo).0, trees::resolved(0, r, hi).0);
    let mut m3 = Measured::new();
    m3.entry((r, lo)).or_default().insert(0, 50.0);
    m3.entry((r, hi)).or_default().insert(0, 10.0);
    assert!(screen(&m3).1.is_empty());
}

/// Shared-memory copies queue on their memory domain's aggregate rate,
/// except a copy between two cores of one cache, which stays in it: a
/// chain of 4 ranks inside one cache is not slowed by a slow memory; the
/// same chain over ranks of one socket that share no cache is.
#[test]
fn copies_inside_a_cache_do_not_queue_on_memory() {
    let mut m = model();
    m.levels = vec![
        LevelLink {
            shares: Level::Cache.name().into(),
            link: link(0.1, 8.0),
        },
        LevelLink {
            shares: Level::Socket.name().into(),
            link: link(0.1, 8.0),
        },
    ];
    let l = Layout::parse("node:1,socket:1,cache:2,core:4").unwrap();
    let chain = |m: &Model, map| {
        // pipeline: one chain, 0 -> 1 -> 2 -> 3
        trees::simulate(m, &l, map, 3, 4, 1 << 20)
            .map(|e| trees::osu_time(&e))
            .unwrap()
    };
    let fast = chain(&m, Mapping::Core);
    let mut slow = m.clone();
    slow.memory_copy_gbs = Some(0.5);
    // mapped by core, ranks 0-3 share the first cache: no change
    assert!((chain(&slow, Mapping::Core) - fast).abs() < 1e-9);
    // every level alike but not a cache: the memory bounds each copy
    let mut flat = slow.clone();
    flat.levels[0].shares = Level::Socket.name().into();
    let bound = chain(&flat, Mapping::Core);
    assert!(bound > 4.0 * fast, "{bound} vs {fast}");
}

#[test]
fn an_algorithm_measured_as_the_default_where_they_differ_is_flagged() {
    // Ten points where the model puts linear (1) 3x the default's time:
    // linear measured at the default's time (1-3% off) at nine of them,
    // binary (5) measured apart from both everywhere.
    let pts: Vec<Point> = (0..10u64)
        .map(|i| {
            let d = 2.0 + i as f64;
            let lin = if i == 9 {
                2.0 * d
            } else {
                d * (1.01 + 0.002 * i as f64)
            };
            point(
                64,
                1 << i,
                &[(0, d, d), (1, lin, 3.0 * d), (5, 1.5 * d, 1.4 * d)],
            )
        })
        .collect();
    let found = alike(&pts);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!((f.a, f.b, f.apart, f.alike), (0, 1, 10, 9));
    assert_eq!(f.suspect(), Some(1));
    assert!((f.ratio - 1.01).abs() < 0.01, "{f:?}");
    assert!(f.to_string().contains("at 9 of the 10 points"), "{f}");

    // Left out, the point's winners are the other forced algorithms'.
    let meas: Measured = pts
        .iter()
        .map(|p| {
            (
                (p.ranks, p.bytes),
                p.times.iter().map(|(&a, x)| (a, x.0)).collect(),
            )
        })
        .collect();
    let kept = without(&meas, 1);
    assert!(kept.values().all(|m| !m.contains_key(&1) && m.len() == 2));

    // Where the model says the two run alike, a match proves nothing: not
    // flagged; nor with fewer than ALIKE_MIN_POINTS points apart; nor at
    // a share below ALIKE_SHARE.
    let same_code: Vec<Point> = (0..10u64)
        .map(|i| point(64, 1 << i, &[(0, 2.0, 2.0), (1, 2.0, 2.1), (5, 3.0, 3.0)]))
        .collect();
    assert!(alike(&same_code).is_empty());
    assert!(alike(&pts[..ALIKE_MIN_POINTS - 1]).is_empty());
    let half: Vec<Point> = (0..10u64)
        .map(|i| {
            let lin = if i % 2 == 0 { 2.0 } else { 4.0 };
            point(64, 1 << i, &[(0, 2.0, 2.0), (1, lin, 6.0), (5, 3.0, 3.0)])
        })
        .collect();
    assert!(alike(&half).is_empty());
    // Two forced algorithms alike: flagged, but which one is wrong cannot
    // be told.
    let two: Vec<Point> = (0..10u64)
        .map(|i| point(64, 1 << i, &[(2, 5.0, 5.0), (5, 5.1, 9.0)]))
        .collect();
    let f = alike(&two);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].suspect(), None);
}

#[test]
fn without_a_model_the_default_is_held_against_each_forced_algorithm() {
    // 16 and 64 ranks, 1 B to 512 B: the fixed decision runs a binomial or
    // a chain there, never basic linear (1) nor the pipeline (3).
    let mut meas = Measured::new();
    for &r in &[16usize, 64] {
        for i in 0..10u32 {
            let b = 1u64 << i;
            let d = 1.0 + f64::from(i);
            let mut m = BTreeMap::new();
            m.insert(0, d);
            m.insert(1, d * 1.02); // the default's times: unforced
            m.insert(3, d * 4.0); // a pipeline, really run
            meas.insert((r, b), m);
        }
        // 4 ranks do not count (fewer than ALIKE_MIN_RANKS).
        meas.insert((4, 1), BTreeMap::from([(0, 1.0), (3, 1.0)]));
    }
    let found = alike_default(&meas);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].a, found[0].b, found[0].apart, found[0].alike),
        (0, 1, 20, 20)
    );
    assert_eq!(found[0].suspect(), Some(1));
    // Measured apart from the default: nothing to say.
    for m in meas.values_mut() {
        if let Some(t) = m.get_mut(&1) {
            *t *= 1.3;
        }
    }
    assert!(alike_default(&meas).is_empty());
}

#[test]
fn a_point_whose_runner_up_is_within_the_models_error_is_uncertain() {
    let two = |a: f64, b: f64| -> BTreeMap<u32, f64> { [(1, a), (2, b)].into_iter().collect() };
    assert!(within_error(&two(10.0, 10.9), 0.1));
    assert!(!within_error(&two(10.0, 11.5), 0.1));
    assert!(!within_error(&[(1, 1.0)].into_iter().collect(), 0.5));
    // The summary counts them apart and keeps the last line as it was.
    let mut pts = vec![
        point(4, 8, &[(1, 1.0, 1.0), (2, 2.0, 1.05)]),
        point(4, 16, &[(1, 1.0, 2.0), (2, 2.0, 1.0)]),
    ];
    pts[0].uncertain = true;
    let s = summarize(&pts);
    assert_eq!((s.uncertain, s.agreement_certain), (1, Some(0.0)));
    assert!(
        s.line().starts_with("agreement 50% of 2 points;"),
        "{}",
        s.line()
    );
    assert!(s
        .uncertain_line(0.1)
        .starts_with("uncertain: 1 of 2 points (the runner-up predicted within the model's error, 10%); agreement on the other 1: 0%"));
    // A model with an error marks points from its predictions.
    let mut m = model();
    m.fit_error = Some(10.0);
    let l = Layout::parse("node:2,socket:2,core:4").unwrap();
    let meas: Measured = [((4, 8), [(1, 3.0), (6, 2.0)].into_iter().collect())]
        .into_iter()
        .collect();
    let (p, s) = check(&m, &l, Mapping::Core, &meas, TimeKind::MeanOverRanks).unwrap();
    assert!(p[0].uncertain && s.uncertain == 1);
    m.fit_error = None;
    let (p, _) = check(&m, &l, Mapping::Core, &meas, TimeKind::Slowest).unwrap();
    assert!(!p[0].uncertain);
}

#[test]
fn the_set_against_itself_guesses_from_the_neighbouring_rank_counts() {
    // One size, rank counts 4, 8, 16: linear (1) wins at 4 and 8, binary
    // (5) at 16 by a factor 3; the default (0) is no candidate.
    let mut meas = Measured::new();
    let mut put = |r: usize, t: &[(u32, f64)]| {
        meas.insert((r, 64), t.iter().copied().collect());
    };
    put(4, &[(0, 1.0), (1, 1.0), (5, 2.0)]);
    put(8, &[(1, 1.0), (5, 1.02)]);
    put(16, &[(1, 3.0), (5, 1.0)]);
    // A size of one algorithm alone gives no guess.
    meas.insert((4, 128), [(1, 1.0)].into_iter().collect());
    let n = neighbours::score(&meas).expect("neighbours");
    // 4 <- 8 (linear, right), 8 <- 4 (linear, right), 8 <- 16 (binary:
    // 1.02, within AGREE_WITHIN), 16 <- 8 (linear: 3x).
    assert_eq!((n.guesses, n.points), (4, 3));
    assert!((n.agreement - 0.75).abs() < 1e-12, "{n:?}");
    assert!((n.regret_worst - 3.0).abs() < 1e-12, "{n:?}");
    let g = (1.0f64 * 1.0 * 1.02 * 3.0).powf(0.25);
    assert!((n.regret_geomean - g).abs() < 1e-12, "{n:?}");
    assert!(n.line().starts_with("the set against itself: the winner measured at the next rank count (same size) agrees at 75% of 4 guesses on 3 points; regret geomean 1.32, worst 3.00"), "{}", n.line());
    // One rank count a size: nothing to guess from.
    let mut one = Measured::new();
    one.insert((4, 64), [(1, 1.0), (5, 2.0)].into_iter().collect());
    assert_eq!(neighbours::score(&one), None);
}
