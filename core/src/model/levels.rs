//! A network model from published point-to-point results
//! (`colltune calibrate --p2p`): one link per level of distance the data
//! measures (a shared cache, a NUMA domain, a socket, a node, the network),
//! each with its two protocol regimes, and the placement of ranks that
//! tells the simulator which level each pair of ranks talks over.
//!
//! What a ping-pong alone can tell: the one-way time `T(n)` at each size.
//! The simulator prices it `2o + L + nG_e` up to the eager limit and
//! `2o + 2L + nG_r` above ([`crate::model::calibrate::one_way`]). Published files
//! do not measure the overhead `o` apart, so it is set a priori from what
//! the transport is ([`overhead_share`]): between nodes a quarter of the
//! smallest message's time (`2o + L` is then half `o`, half `L`: what
//! colltune's own calibration measures on InfiniBand, within a factor of
//! two); inside a node half of it, `L` near 0 (shared memory has nothing in
//! flight between the two ends: the sender's process writes the message
//! into shared memory and the receiver's reads it, so a one-way time is
//! CPU time at both ends, and a root sending to many ranks pays it per
//! send). For each candidate limit (between two measured
//! sizes, or none), each latency on a grid, the two slopes are the
//! closed-form least squares of the relative error; the best fit wins, a
//! protocol step only where it cuts the error by a tenth (and all eager
//! misses by more than 1%). Inside a node the
//! step found is the shared-memory transport's change of mechanism
//! (128-256 KiB on both published sets), between nodes the network's
//! rendezvous.

use std::collections::BTreeMap;

use crate::measure::import::{P2pRow, P2pTest};
#[cfg(test)]
use crate::model::calibrate::one_way;
use crate::model::calibrate::LinkFit;
use crate::model::placement::{Layout, Level};
use crate::model::sim::{LevelLink, Link, Model};

/// The overhead `o` as a share of the smallest one-way time between nodes
/// (see the module's text).
pub const OVERHEAD_SHARE: f64 = 0.25;

/// The same inside a node: half (`L` near 0; see the module's text).
pub const OVERHEAD_SHARE_SHARED_MEMORY: f64 = 0.5;

/// The share of the smallest one-way time taken as `o` at `level`.
pub fn overhead_share(level: Level) -> f64 {
    if level.is_intra() {
        OVERHEAD_SHARE_SHARED_MEMORY
    } else {
        OVERHEAD_SHARE
    }
}

/// One level's points: the median of the (non-outlier) latency rows at each
/// size.
pub fn level_points(rows: &[P2pRow], level: Level) -> Vec<(u64, f64)> {
    let mut by: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in rows {
        if r.placement == level && r.test == P2pTest::Latency && !r.outlier {
            by.entry(r.bytes).or_default().push(r.time_us);
        }
    }
    by.into_iter()
        .map(|(b, mut v)| {
            v.sort_by(f64::total_cmp);
            (b, crate::measure::stats::median_sorted(&v))
        })
        .collect()
}

/// Closed-form slope of `c + g x` against `t` minimising the squared
/// relative error, held at 0 or above.
fn slope(pts: &[(u64, f64)], c: f64) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for &(b, t) in pts {
        let x = b as f64;
        num += x * (t - c) / (t * t);
        den += x * x / (t * t);
    }
    if den > 0.0 {
        (num / den).max(0.0)
    } else {
        0.0
    }
}

fn cost(pts: &[(u64, f64)], c: f64, g: f64) -> f64 {
    pts.iter()
        .map(|&(b, t)| ((c + g * b as f64 - t) / t).powi(2))
        .sum()
}

fn gbs(per_byte: f64) -> f64 {
    if per_byte > 0.0 {
        1e-3 / per_byte
    } else {
        1e6
    }
}

/// Fits one level's link to its ping-pong points (bytes, one-way us), its
/// overhead `o` the share `share` of the smallest time ([`overhead_share`]).
pub fn fit_level(points: &[(u64, f64)], share: f64) -> Result<LinkFit, String> {
    let mut pts: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.1.is_finite() && p.1 > 0.0)
        .collect();
    pts.sort_by_key(|p| p.0);
    pts.dedup_by_key(|p| p.0);
    if pts.len() < 2 {
        return Err(format!(
            "need ping-pong times at two sizes or more, have {}",
            pts.len()
        ));
    }
    let tmin = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let o = share * tmin;
    // (cost, split index: last eager point, L, eager slope, rendezvous slope)
    let mut best: Option<(f64, usize, f64, f64, f64)> = None;
    let mut all_eager: Option<f64> = None;
    for k in (0..pts.len()).rev() {
        let (eager, rdv) = pts.split_at(k + 1);
        if rdv.len() == 1 {
            continue; // a regime of one point fits anything
        }
        let mut local: Option<(f64, f64, f64, f64)> = None;
        for step in 0..=200 {
            let lat = 2.0 * tmin * step as f64 / 200.0;
            let (ce, cr) = (2.0 * o + lat, 2.0 * o + 2.0 * lat);
            let ge = slope(eager, ce);
            let gr = slope(rdv, cr);
            let c = cost(eager, ce, ge) + cost(rdv, cr, gr);
            if local.is_none_or(|l| c < l.0) {
                local = Some((c, lat, ge, gr));
            }
        }
        let (c, lat, ge, gr) = local.expect("a grid");
        if rdv.is_empty() {
            all_eager = Some(c);
        }
        // A step must cut the error by a tenth against all eager, and a
        // line that fits within 1% (root mean square) needs none.
        let n = pts.len() as f64;
        let earns =
            rdv.is_empty() || all_eager.is_none_or(|a| c < 0.9 * a && (a / n).sqrt() > 0.01);
        if earns && best.is_none_or(|b| c < b.0) {
            best = Some((c, k, lat, ge, gr));
        }
    }
    let (_, k, lat, ge, gr) = best.expect("all-eager is a candidate");
    let split = k + 1 < pts.len();
    let link = Link {
        latency_us: lat,
        overhead_us: o,
        // A ping-pong cannot see a port's gap between messages; NICs and
        // shared memory take a message every few nanoseconds.
        gap_us: 0.0,
        bandwidth_gbs: gbs(if split { gr } else { ge }),
        eager_limit: pts[k].0,
        eager_bandwidth_gbs: split.then(|| gbs(ge)),
        burst_bytes: None,
        rendezvous_first_bytes: None,
    };
    Ok(LinkFit::of(link, pts.into_iter()))
}

/// A model fitted level by level.
#[derive(Clone, Debug)]
pub struct LevelsFit {
    pub model: Model,
    /// Each measured level's fit.
    pub fits: Vec<(Level, LinkFit)>,
    /// Levels of the layout with no measured pair, and the measured level
    /// standing in for each.
    pub stand_ins: Vec<(Level, Level)>,
}

/// The measured level nearest to `missing`: inside a node the next coarser
/// one, else the next finer; the network, where not measured, the
/// coarsest measured.
fn stand_in(missing: Level, measured: &[Level]) -> Option<Level> {
    let coarser = measured.iter().copied().filter(|&l| l > missing).min();
    let finer = measured.iter().copied().filter(|&l| l < missing).max();
    if missing.is_intra() {
        coarser.filter(|l| l.is_intra()).or(finer).or(coarser)
    } else {
        finer
    }
}

/// What each rank of a node in a call beyond two adds to a message inside
/// it ([`Model::intra_load_per_rank`]), in a model fitted to published
/// ping-pong: 1/128, a message between two ranks of a node with 130 ranks
/// in the call costs twice what the two-rank ping-pong says. Chosen on the
/// shared sets' broadcasts and held out of sample on five other sets
/// (docs/measurements/2026-12-03-real-clusters/README.md): a two-rank ping-pong cannot measure it.
pub const INTRA_LOAD_PER_RANK: f64 = 1.0 / 128.0;

/// Fits every level `rows` measure and builds the model for `layout`: the
/// levels finer than a node in `levels`, two sockets of a node `intra`,
/// two nodes `inter`; a level of the layout with no measured pair takes a
/// measured level's link ([`LevelsFit::stand_ins`]). Levels measured that
/// the layout does not have are fitted and reported but left out.
///
/// `memory_copy_gbs`: what a socket's shared-memory copies move together;
/// by default the fastest single-pair copy (a ping-pong measures one copy
/// alone; both published sets' large broadcasts, with many copies at once,
/// move about that much per socket, far below the memory's STREAM figure:
/// single-copy transports pin pages and map them through the kernel).
pub fn fit_model(
    rows: &[P2pRow],
    layout: &Layout,
    name: &str,
    memory_copy_gbs: Option<f64>,
) -> Result<LevelsFit, String> {
    let mut fits = Vec::new();
    for level in Level::ALL {
        let pts = level_points(rows, level);
        if pts.is_empty() {
            continue;
        }
        let f =
            fit_level(&pts, overhead_share(level)).map_err(|e| format!("level {level}: {e}"))?;
        fits.push((level, f));
    }
    if fits.is_empty() {
        return Err("no point-to-point latency rows to fit".into());
    }
    let measured: Vec<Level> = fits.iter().map(|f| f.0).collect();
    let mut stand_ins = Vec::new();
    let mut link_of = |level: Level| -> Link {
        match fits.iter().find(|f| f.0 == level) {
            Some(f) => f.1.link.clone(),
            None => {
                let s = stand_in(level, &measured).expect("a measured level");
                stand_ins.push((level, s));
                fits.iter()
                    .find(|f| f.0 == s)
                    .expect("measured")
                    .1
                    .link
                    .clone()
            }
        }
    };
    let wanted = layout.levels();
    let mut levels = Vec::new();
    for l in [Level::Cache, Level::Numa, Level::Socket] {
        if wanted.contains(&l) {
            levels.push(LevelLink {
                shares: l.name().into(),
                link: link_of(l),
            });
        }
    }
    // A one-socket node: its `intra` is never used between two of its
    // ranks (they share the socket), but the model needs one.
    let intra = if wanted.contains(&Level::Node) {
        link_of(Level::Node)
    } else {
        levels
            .last()
            .map(|l| l.link.clone())
            .unwrap_or_else(|| link_of(Level::Node))
    };
    let inter = if wanted.contains(&Level::Network) {
        link_of(Level::Network)
    } else {
        intra.clone()
    };
    let copy_gbs = levels
        .iter()
        .map(|l| &l.link)
        .chain([&intra])
        .map(|l| {
            l.eager_bandwidth_gbs
                .unwrap_or(l.bandwidth_gbs)
                .max(l.bandwidth_gbs)
        })
        .fold(0.0, f64::max)
        .min(1e3);
    let memory_copy_gbs = memory_copy_gbs.unwrap_or_else(|| {
        levels
            .iter()
            .map(|l| l.link.bandwidth_gbs)
            .chain([intra.bandwidth_gbs])
            .fold(0.0, f64::max)
    });
    let source = format!(
        "calibrate --p2p: {} fitted to published ping-pong by placement ({}){}",
        layout,
        fits.iter()
            .map(|(l, f)| format!("{l}: median error {:.0}%", 100.0 * f.median_rel_error))
            .collect::<Vec<_>>()
            .join(", "),
        stand_ins
            .iter()
            .map(|(m, s)| format!("; {m} not measured, {s} stands in"))
            .collect::<String>()
    );
    let model = Model {
        name: name.into(),
        source,
        intra,
        inter,
        copy_gbs,
        levels,
        memory_copy_gbs: Some(memory_copy_gbs),
        intra_load_per_rank: Some(INTRA_LOAD_PER_RANK),
        shared_reads: false,
        shared_ports: false,
        group: None,
        fit_error: Some(ping_pong_error(&fits)),
    };
    model.check()?;
    Ok(LevelsFit {
        model,
        fits,
        stand_ins,
    })
}

/// The ping-pong's own residual, the error a model fitted to it carries
/// ([`Model::fit_error`]): the median over levels of each level's median
/// relative error.
pub fn ping_pong_error(fits: &[(Level, LinkFit)]) -> f64 {
    let errs: Vec<f64> = fits.iter().map(|f| f.1.median_rel_error).collect();
    crate::measure::stats::median(&errs)
}

/// Per level of `m`, each rank's group (the simulator's
/// [`crate::model::sim::Engine::place`]), for ranks on `cores` of `layout`.
pub fn groups(m: &Model, layout: &Layout, cores: &[usize]) -> Result<Vec<Vec<u32>>, String> {
    m.levels
        .iter()
        .map(|l| {
            let level = Level::parse(&l.shares).map_err(|e| format!("model level: {e}"))?;
            Ok(cores
                .iter()
                .map(|&c| layout.group_of(c, level) as u32)
                .collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(level: Level, bytes: u64, t: f64) -> P2pRow {
        P2pRow {
            placement: level,
            bytes,
            time_us: t,
            min_us: None,
            max_us: None,
            p50_us: None,
            test: P2pTest::Latency,
            outlier: false,
            line: 0,
        }
    }

    #[test]
    fn overhead_is_half_the_smallest_time_inside_a_node_a_quarter_between() {
        assert_eq!(overhead_share(Level::Socket), OVERHEAD_SHARE_SHARED_MEMORY);
        assert_eq!(overhead_share(Level::Cache), 0.5);
        assert_eq!(overhead_share(Level::Network), 0.25);
        let pts: Vec<(u64, f64)> = [(1, 0.4), (1024, 0.6), (65536, 8.0)].to_vec();
        let f = fit_level(&pts, overhead_share(Level::Node)).unwrap();
        assert!((f.link.overhead_us - 0.2).abs() < 1e-9);
        assert!(f.link.latency_us < 0.1, "{}", f.link.latency_us);
    }

    /// A link with a protocol step, sampled: the fit finds the step and the
    /// two slopes.
    #[test]
    fn a_level_fit_finds_the_protocol_step() {
        let truth = Link {
            latency_us: 0.2,
            overhead_us: 0.1,
            gap_us: 0.1,
            bandwidth_gbs: 20.0,
            eager_limit: 131072,
            eager_bandwidth_gbs: Some(5.0),
            burst_bytes: None,
            rendezvous_first_bytes: None,
        };
        let pts: Vec<(u64, f64)> = (0..23)
            .map(|k| (1u64 << k, one_way(&truth, 1 << k)))
            .collect();
        let f = fit_level(&pts, OVERHEAD_SHARE).unwrap();
        assert_eq!(f.link.eager_limit, 131072);
        assert!(f.median_rel_error < 0.05, "{f:?}");
        let e = f.link.eager_bandwidth_gbs.unwrap();
        assert!((e / 5.0 - 1.0).abs() < 0.1, "{e}");
        assert!(
            (f.link.bandwidth_gbs / 20.0 - 1.0).abs() < 0.1,
            "{}",
            f.link.bandwidth_gbs
        );
        // A straight line has no step.
        let line: Vec<(u64, f64)> = (0..20)
            .map(|k| (1u64 << k, 1.0 + (1u64 << k) as f64 * 1e-3))
            .collect();
        let f = fit_level(&line, OVERHEAD_SHARE).unwrap();
        assert_eq!(f.link.eager_bandwidth_gbs, None);
        assert!(f.max_rel_error < 0.02, "{f:?}");
        assert!(fit_level(&[(1, 1.0)], OVERHEAD_SHARE).is_err());
    }

    fn rows_for(levels: &[(Level, f64)]) -> Vec<P2pRow> {
        let mut out = Vec::new();
        for &(l, base) in levels {
            for k in 0..16 {
                out.push(row(l, 1 << k, base + (1u64 << k) as f64 * base * 1e-3));
            }
        }
        // An outlier receiver: left out of the medians.
        let mut o = row(Level::Network, 1, 50.0);
        o.outlier = true;
        out.push(o);
        out
    }

    #[test]
    fn a_model_has_every_level_of_the_layout() {
        let rows = rows_for(&[
            (Level::Cache, 0.15),
            (Level::Socket, 0.4),
            (Level::Node, 0.65),
            (Level::Network, 1.8),
        ]);
        let layout = Layout::parse("node:2,socket:2,cache:16,core:4").unwrap();
        let f = fit_model(&rows, &layout, "t", None).unwrap();
        assert!(f.stand_ins.is_empty());
        let names: Vec<&str> = f.model.levels.iter().map(|l| l.shares.as_str()).collect();
        assert_eq!(names, vec!["cache", "socket"]);
        let small = |l: &Link| one_way(l, 1);
        assert!((small(&f.model.levels[0].link) - 0.15).abs() < 0.02);
        assert!((small(&f.model.intra) - 0.65).abs() < 0.05);
        assert!(
            (small(&f.model.inter) - 1.8).abs() < 0.1,
            "{:?}",
            f.model.inter
        );
        // Groups: cores 0 and 3 share a cache, 0 and 4 a socket only.
        let g = groups(&f.model, &layout, &[0, 3, 4, 64]).unwrap();
        assert_eq!(g[0], vec![0, 0, 1, 16]);
        assert_eq!(g[1], vec![0, 0, 0, 1]);
        // YAML round trip, levels included.
        let back: Model = serde_yaml::from_str(&f.model.to_yaml()).unwrap();
        assert_eq!(back, f.model);
    }

    #[test]
    fn a_level_with_no_pair_takes_the_nearest_measured_one() {
        // No pair on two sockets of one node (as one published set).
        let rows = rows_for(&[(Level::Socket, 0.4), (Level::Network, 1.8)]);
        let layout = Layout::parse("node:2,socket:2,core:12").unwrap();
        let f = fit_model(&rows, &layout, "t", None).unwrap();
        assert_eq!(f.stand_ins, vec![(Level::Node, Level::Socket)]);
        assert_eq!(f.model.intra, f.model.levels[0].link);
        assert!(f
            .model
            .source
            .contains("node not measured, socket stands in"));
        assert_eq!(
            stand_in(Level::Network, &[Level::Cache, Level::Node]),
            Some(Level::Node)
        );
        assert_eq!(
            stand_in(Level::Cache, &[Level::Socket, Level::Network]),
            Some(Level::Socket)
        );
        assert!(fit_model(&[], &layout, "t", None).is_err());
    }
}
