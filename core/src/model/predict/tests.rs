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
