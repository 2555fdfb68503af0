//! The fit recovers figures it simulated its data with, says which it
//! could not pin, and refuses bad input.

use super::knobs::{apply, generic, Knob, KNOBS};
use super::*;

fn layout() -> Layout {
    Layout::parse("node:2,core:8").unwrap()
}

fn points(ranks: &[usize]) -> Vec<Obs> {
    grid(
        &[1, 2, 5, 6],
        ranks,
        &[8, 4096, 65536, 1 << 20],
        Mapping::Core,
    )
}

/// Every algorithm at every rank count and size, placed by `mapping`.
fn grid(algs: &[u32], ranks: &[usize], sizes: &[u64], mapping: Mapping) -> Vec<Obs> {
    let mut out = Vec::new();
    for &algorithm in algs {
        for &ranks in ranks {
            for &bytes in sizes {
                out.push(Obs {
                    mapping,
                    algorithm,
                    ranks,
                    bytes,
                    time_us: 1.0,
                    kind: TimeKind::MeanOverRanks,
                    source: "test".into(),
                });
            }
        }
    }
    out
}

/// `obs` with the times `truth` gives them on `layout`.
fn timed(truth: &Model, layout: &Layout, obs: Vec<Obs>) -> Vec<Obs> {
    let t = simulate_all(truth, layout, &obs).unwrap();
    obs.into_iter()
        .zip(t)
        .map(|(o, t)| Obs { time_us: t, ..o })
        .collect()
}

fn x_of(pairs: &[(Knob, f64)]) -> Vec<f64> {
    KNOBS
        .iter()
        .map(|i| pairs.iter().find(|p| p.0 == i.knob).map_or(0.0, |p| p.1))
        .collect()
}

/// `obs` with the times `truth` gives them.
fn measured_on(truth: &Model, obs: Vec<Obs>) -> Vec<Obs> {
    timed(truth, &layout(), obs)
}

fn knob<'a>(f: &'a Fitted, name: &str) -> &'a KnobFit {
    f.knobs.iter().find(|k| k.name == name).unwrap()
}

#[test]
fn recovers_the_figures_it_simulated_its_data_with() {
    let base = generic();
    // Messages inside a broadcast cost 3x the base's overhead, the network
    // moves half as fast.
    let truth = apply(
        &base,
        &x_of(&[
            (Knob::NodeOverhead, 3f64.log2()),
            (Knob::NetBandwidth, -1.0),
        ]),
    );
    let obs = measured_on(&truth, points(&[2, 4, 8, 12, 16]));
    let f = fit_held_out(&base, &layout(), &obs).unwrap();
    assert!(f.error_median < 0.02, "{f:?}");
    assert!(f.base_error_median > 0.1, "{f:?}");
    let o = knob(&f, "node-overhead");
    assert!(o.pinned && (o.factor / 3.0 - 1.0).abs() < 0.2, "{o:?}");
    let b = knob(&f, "net-bandwidth");
    assert!(b.pinned && (b.factor / 0.5 - 1.0).abs() < 0.2, "{b:?}");
    assert!(b.basis.contains("points"), "{b:?}");
    // Held out, the true figures predict better than the start: kept whole.
    let h = f.held.as_ref().unwrap();
    assert!(h.dropped.is_empty() && h.shrink == 1.0, "{h:?}");
    assert!(h.at_kept < 0.5 * h.at_start, "{h:?}");
    // The model carries its own error; the fit is deterministic.
    assert_eq!(f.model.fit_error, Some(f.error_median));
    let again = fit_held_out(&base, &layout(), &obs).unwrap();
    assert_eq!(again.model, f.model);
    assert!(fit(&base, &layout(), &obs).unwrap().held.is_none());
}

#[test]
fn a_figure_the_data_does_not_touch_is_left_at_the_base_and_said() {
    let base = generic();
    let truth = apply(&base, &x_of(&[(Knob::NodeLatency, 1.0)]));
    // One node only: nothing between nodes.
    let obs = measured_on(&truth, points(&[2, 4, 8]));
    let f = fit(&base, &layout(), &obs).unwrap();
    for name in [
        "net-overhead",
        "net-latency",
        "net-bandwidth",
        "top-bandwidth",
    ] {
        let k = knob(&f, name);
        assert!(!k.pinned && k.factor == 1.0, "{k:?}");
        assert!(k.basis.contains("no point"), "{k:?}");
    }
    assert_eq!(f.model.inter, base.inter);
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let base = generic();
    assert!(matches!(
        fit(&base, &layout(), &[]),
        Err(FitError::NoPoints)
    ));
    let mut obs = points(&[2]);
    obs[1].time_us = -3.0;
    let e = fit(&base, &layout(), &obs).unwrap_err();
    assert!(e.to_string().contains("not a positive number"), "{e}");
    // More ranks than the layout has cores.
    let mut obs = points(&[2]);
    obs[0].ranks = 64;
    obs[0].time_us = 5.0;
    for o in &mut obs[1..] {
        o.time_us = 5.0;
    }
    let e = fit(&base, &layout(), &obs).unwrap_err();
    assert!(e.to_string().contains("give a --layout"), "{e}");
}

#[test]
fn observations_take_the_median_of_runs_and_the_time_kind_of_the_source() {
    let s = |alg: u32, t: f64, src: &str| {
        let spec = format!("ompi_tuned:algorithm={alg},segment=0");
        let mut x = crate::measure::record::sample(&spec, "library", 8, 1, t);
        x.source = src.into();
        x
    };
    let v = vec![
        s(6, 1.0, "imported:osu:a:map-by-core"),
        s(6, 3.0, "imported:osu:a:map-by-core"),
        s(6, 2.0, "imported:osu:a:map-by-core"),
        s(5, 9.0, "imported:pico:8_binary_ompi_int32.csv:map-by-node"),
        s(2, 9.0, "imported:osu:a:map-by-core"),
    ];
    let o = observations(&v, Mapping::Core);
    assert_eq!(o.len(), 3, "{o:?}");
    let six = o.iter().find(|x| x.algorithm == 6).unwrap();
    assert_eq!(six.time_us, 2.0);
    let five = o.iter().find(|x| x.algorithm == 5).unwrap();
    assert_eq!(
        (five.kind, five.mapping),
        (TimeKind::Slowest, Mapping::Node)
    );
}

#[test]
fn one_algorithms_points_alone_pin_no_figure() {
    let base = generic();
    let truth = apply(&base, &x_of(&[(Knob::NodeOverhead, 2.0)]));
    // The same truth, seen through basic linear alone and through four
    // algorithms: only the second may move the figure.
    let all = measured_on(&truth, points(&[2, 4, 8, 12, 16]));
    let alone: Vec<Obs> = all.iter().filter(|o| o.algorithm == 1).cloned().collect();
    let f = fit(&base, &layout(), &alone).unwrap();
    let o = knob(&f, "node-overhead");
    assert!(!o.pinned && o.factor == 1.0, "{o:?}");
    assert!(o.basis.contains("one algorithm alone"), "{o:?}");
    assert!(f.knobs.iter().all(|k| !k.pinned), "{:?}", f.knobs);
    let f = fit(&base, &layout(), &all).unwrap();
    assert!(knob(&f, "node-overhead").pinned, "{:?}", f.knobs);
}

#[test]
fn colltunes_own_bine_is_an_observation_and_simulates() {
    let own = predict::own::OWN[0].resolved().to_string();
    let mut s = crate::measure::record::sample(&own, "blocking", 8, 1, 4.0);
    s.source = "imported:pico:8_bine_lat_i_new_over_int32.csv:map-by-node".into();
    let o = observations(&[s], Mapping::Core);
    assert_eq!(o.len(), 1, "{o:?}");
    assert_eq!(
        (o[0].algorithm, o[0].mapping),
        (predict::own::FIRST, Mapping::Node)
    );
    let t = simulate_all(&generic(), &layout(), &o).unwrap();
    assert!(t[0] > 0.0, "{t:?}");
}

#[test]
fn a_nodes_shared_port_is_told_from_each_ranks_overhead() {
    let base = generic();
    // Every message between nodes holds its node's port 2.1 us, in and
    // out (net-gap x8: (0 + 0.3) 8 - 0.3), each rank's overhead as the base.
    let truth = apply(&base, &x_of(&[(Knob::NetGap, 3.0)]));
    assert!((truth.inter.gap_us - 2.1).abs() < 1e-9, "{:?}", truth.inter);
    assert_eq!(truth.inter.overhead_us, base.inter.overhead_us);
    // One rank a node and up to eight a node, by node and by core.
    let mut obs = points(&[2, 8, 16]);
    for o in points(&[2, 4, 8, 16]) {
        obs.push(Obs {
            mapping: Mapping::Node,
            ..o
        });
    }
    let obs = measured_on(&truth, obs);
    let f = fit(&base, &layout(), &obs).unwrap();
    assert!(f.error_median < 0.02, "{f:?}");
    let g = knob(&f, "net-gap");
    assert!(g.pinned && (g.factor / 8.0 - 1.0).abs() < 0.2, "{g:?}");
    assert!(g.figure.starts_with("g (us): network"), "{g:?}");
    let o = knob(&f, "net-overhead");
    assert!((o.factor - 1.0).abs() < 0.2, "{o:?}");
}

#[test]
fn the_gap_knob_leaves_the_base_at_zero_and_needs_a_cost_per_message() {
    let base = generic();
    let x = x_of(&[(Knob::NetGap, 0.0)]);
    assert_eq!(apply(&base, &x), base);
    // Down from a base without a gap: still none.
    let down = apply(&base, &x_of(&[(Knob::NetGap, -1.0)]));
    assert_eq!(down.inter.gap_us, 0.0);
    let mut free = base.clone();
    free.inter.overhead_us = 0.0;
    assert!(!knobs::applies(&free, Knob::NetGap));
    assert!(knobs::applies(&base, Knob::NetGap));
}

#[test]
fn figures_fitted_to_noise_are_held_out_and_go_back_toward_the_start() {
    let base = generic();
    // The base's own times, each off by a factor from a fixed pseudo-random
    // sequence (within x/ 1.6): nothing to fit, but 20 points let the
    // stages pin figures to the noise.
    let clean = measured_on(&base, points(&[2, 8, 16]));
    let mut seed: u64 = 7;
    let noisy: Vec<Obs> = clean
        .iter()
        .step_by(2)
        .map(|o| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (seed >> 11) as f64 / (1u64 << 53) as f64;
            Obs {
                time_us: o.time_us * 1.6f64.powf(2.0 * u - 1.0),
                ..o.clone()
            }
        })
        .collect();
    let unguarded = stages(&base, &layout(), &noisy).unwrap();
    assert!(
        unguarded.pinned.iter().any(|&p| p),
        "nothing to guard against"
    );
    let f = fit_held_out(&base, &layout(), &noisy).unwrap();
    let h = f.held.as_ref().unwrap();
    assert!(h.shrink < 1.0 || !h.dropped.is_empty(), "{h:?}");
    assert!(h.at_kept < h.at_full, "{h:?}");
    // Nearer the truth (the base) on every point than the unguarded fit.
    let off = |m: &Model| {
        let p = simulate_all(m, &layout(), &clean).unwrap();
        objective(&p, &clean)
    };
    let (guarded, raw) = (off(&f.model), off(&apply(&base, &unguarded.x)));
    assert!(guarded < raw, "guarded {guarded}, unguarded {raw}: {h:?}");
    // Deterministic.
    assert_eq!(
        fit_held_out(&base, &layout(), &noisy).unwrap().model,
        f.model
    );
}

/// A shape the data was simulated with is kept, one it was not is not:
/// large broadcasts over many nodes, one rank a node, simulated with the
/// node ports shared; the fit starts from the base with them queued.
#[test]
fn keeps_the_shape_its_data_was_simulated_with() {
    let lay = Layout::parse("node:16,core:1").unwrap();
    let base = generic();
    let mut truth = base.clone();
    truth.shared_ports = true;
    let obs = grid(
        &[1, 5, 6],
        &[4, 8, 16],
        &[8, 65536, 1 << 20, 1 << 22],
        Mapping::Node,
    );
    let obs = timed(&truth, &lay, obs);
    let f = fit(&base, &lay, &obs).unwrap();
    let ports = f.shapes.iter().find(|s| s.name == "shared-ports").unwrap();
    assert!(ports.kept && ports.with < 0.5 * ports.without, "{ports:?}");
    assert!(f.model.shared_ports, "{:?}", f.shapes);
    let reads = f.shapes.iter().find(|s| s.name == "shared-reads").unwrap();
    assert!(
        !reads.kept && !f.model.shared_reads,
        "one rank a node: {reads:?}"
    );
    assert!(f.error_median < 0.01, "{f:?}");
    // Simulated with them queued, the fit does not switch them on.
    let queued = measured_on(&base, points(&[2, 4, 8, 12, 16]));
    let g = fit(&base, &layout(), &queued).unwrap();
    assert!(g.shapes.iter().all(|s| !s.kept), "{:?}", g.shapes);
}

#[test]
fn contention_between_groups_is_fitted_from_a_base_without_it() {
    use crate::model::sim::GroupLevel;
    // Eight nodes of one rank in groups of four, as the layout says (the
    // base says 16: the fit takes the layout's).
    let mut base = generic();
    base.group = Some(GroupLevel {
        nodes: 16,
        link: base.inter.clone(),
        global_gbs: None,
    });
    let layout = Layout::parse("group:2,node:4,core:1").unwrap();
    // At x = 0 the base keeps no limit; below, a group's links together
    // start at its four nodes' ports at once (4 x 12 GB/s).
    let four = |m: &Model| {
        let mut m = m.clone();
        m.group.as_mut().unwrap().nodes = 4;
        m
    };
    assert_eq!(
        apply(&four(&base), &x_of(&[(Knob::TopBandwidth, 0.0)])),
        four(&base)
    );
    let truth = apply(&four(&base), &x_of(&[(Knob::TopBandwidth, -2.0)]));
    assert_eq!(truth.group.as_ref().unwrap().global_gbs, Some(12.0));
    let grid = grid(
        &[1, 2, 5, 6, 8, 9],
        &[8],
        &[8, 65536, 1 << 20, 4 << 20],
        Mapping::Core,
    );
    let obs = timed(&truth, &layout, grid.clone());
    let free = timed(&four(&base), &layout, grid);
    assert!(
        obs.iter()
            .zip(&free)
            .any(|(a, b)| a.time_us > b.time_us * 1.2),
        "contention shows"
    );
    let f = fit(&base, &layout, &obs).unwrap();
    let k = knob(&f, "top-bandwidth");
    assert!(k.pinned && (k.factor / 0.25 - 1.0).abs() < 0.2, "{k:?}");
    assert!(k.figure.contains("a group's links"), "{k:?}");
    assert_eq!(
        f.model.group.as_ref().unwrap().nodes,
        4,
        "the layout's groups"
    );
    assert!(f.error_median < 0.02, "{f:?}");
}

#[test]
fn a_set_of_one_rank_a_node_leaves_the_links_inside_a_node_alone() {
    // Sixteen nodes, one rank on each: what node-bandwidth moves here is
    // the local copy of an eager message between nodes.
    let base = generic();
    let layout = Layout::parse("node:16,core:2").unwrap();
    let truth = apply(&base, &x_of(&[(Knob::NodeBandwidth, -1.0)]));
    let obs = grid(
        &[1, 2, 5, 6],
        &[4, 8, 16],
        &[8, 16384, 65536],
        Mapping::Node,
    );
    let obs = timed(&truth, &layout, obs);
    assert!(!sees_inside_a_node(&layout, &obs));
    let f = fit(&base, &layout, &obs).unwrap();
    let k = knob(&f, "node-bandwidth");
    assert!(k.pinned && (k.factor / 0.5 - 1.0).abs() < 0.2, "{k:?}");
    assert!(k.basis.contains("the local copy alone"), "{k:?}");
    assert!(
        (f.model.copy_gbs / (0.5 * base.copy_gbs) - 1.0).abs() < 0.2,
        "{}",
        f.model.copy_gbs
    );
    assert_eq!(f.model.intra.bandwidth_gbs, base.intra.bandwidth_gbs);
    // By core, two ranks share a node: the links are in the data.
    let by_core: Vec<Obs> = obs
        .iter()
        .map(|o| Obs {
            mapping: Mapping::Core,
            ..o.clone()
        })
        .collect();
    assert!(sees_inside_a_node(&layout, &by_core));
}
