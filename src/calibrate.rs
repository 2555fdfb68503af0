//! Fitting a link of the network model to ping-pong measurements (MPI-free;
//! `colltune calibrate` measures, this fits).
//!
//! The simulator prices a ping-pong's one-way time as
//! `2o + L + nG` up to the eager limit and `2o + 2L + nG` above it (the
//! rendezvous costs one more latency). The overhead `o` is measured directly
//! (the time inside the send and receive calls), so ping-pong alone cannot
//! tell `o` from `L`; the fit finds `L`, `G` and the eager limit: for each
//! candidate limit (between two measured sizes, or none) argmin's
//! Nelder-Mead minimises the squared relative error over `L >= 0, G >= 0`,
//! and the limit with the smallest error wins.

use argmin::core::{CostFunction, Error, Executor, State};
use argmin::solver::neldermead::NelderMead;

use crate::sim::Link;

/// One measured size: median one-way time over runs, and the runs' spread
/// (slowest / fastest run).
#[derive(Clone, Debug, PartialEq)]
pub struct PingPoint {
    pub bytes: u64,
    pub one_way_us: f64,
    pub spread: f64,
}

/// A fitted link and how well it fits.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkFit {
    pub link: Link,
    /// Largest |model - measured| / measured over the points.
    pub max_rel_error: f64,
    /// Median of the same.
    pub median_rel_error: f64,
    /// (bytes, measured, model) per point.
    pub points: Vec<(u64, f64, f64)>,
}

/// The one-way ping-pong time the simulator gives a link.
pub fn one_way(l: &Link, bytes: u64) -> f64 {
    let rendezvous = if bytes > l.eager_limit {
        l.latency_us
    } else {
        0.0
    };
    2.0 * l.overhead_us + l.latency_us + rendezvous + bytes as f64 * l.per_byte()
}

struct Cost<'a> {
    /// Sizes scaled to [0, 1].
    x: &'a [f64],
    t: &'a [f64],
    /// 1 where the point is above the candidate eager limit.
    rdv: &'a [f64],
    two_o: f64,
}

impl CostFunction for Cost<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Vec<f64>) -> Result<f64, Error> {
        let (lat, slope) = (p[0].abs(), p[1].abs());
        Ok(self
            .x
            .iter()
            .zip(self.t)
            .zip(self.rdv)
            .map(|((&x, &t), &r)| ((self.two_o + lat * (1.0 + r) + slope * x - t) / t).powi(2))
            .sum())
    }
}

/// Fits `L`, `G` and the eager limit to the points, with the measured
/// overhead `o` and gap `g`. Needs two sizes with positive times.
pub fn fit_link(points: &[PingPoint], overhead_us: f64, gap_us: f64) -> Result<LinkFit, String> {
    let mut pts: Vec<&PingPoint> = points
        .iter()
        .filter(|p| p.one_way_us.is_finite() && p.one_way_us > 0.0)
        .collect();
    pts.sort_by_key(|p| p.bytes);
    pts.dedup_by_key(|p| p.bytes);
    if pts.len() < 2 {
        return Err(format!(
            "need ping-pong times at two sizes or more, have {}",
            pts.len()
        ));
    }
    let tmin = pts
        .iter()
        .map(|p| p.one_way_us)
        .fold(f64::INFINITY, f64::min);
    // The overhead cannot exceed what the smallest message costs in all.
    let o = overhead_us.clamp(0.0, tmin / 2.0);
    let nmax = pts.last().map(|p| p.bytes as f64).unwrap_or(1.0).max(1.0);
    let x: Vec<f64> = pts.iter().map(|p| p.bytes as f64 / nmax).collect();
    let t: Vec<f64> = pts.iter().map(|p| p.one_way_us).collect();
    // Candidate limits: every measured size but the largest (above it:
    // rendezvous), and the largest (everything eager).
    let mut best: Option<(f64, u64, f64, f64)> = None;
    for (k, lim) in pts.iter().map(|p| p.bytes).enumerate() {
        let rdv: Vec<f64> = pts
            .iter()
            .map(|p| if p.bytes > lim { 1.0 } else { 0.0 })
            .collect();
        let cost = Cost {
            x: &x,
            t: &t,
            rdv: &rdv,
            two_o: 2.0 * o,
        };
        let lat0 = (tmin - 2.0 * o).max(tmin * 0.1);
        let slope0 = (t[t.len() - 1] - tmin).max(tmin * 0.01);
        let simplex = vec![
            vec![lat0, slope0],
            vec![lat0 * 1.5 + 1e-3, slope0],
            vec![lat0, slope0 * 1.5 + 1e-3],
        ];
        let p = NelderMead::new(simplex)
            .with_sd_tolerance(1e-12)
            .ok()
            .and_then(|solver| {
                Executor::new(cost, solver)
                    .configure(|s| s.max_iters(4000))
                    .run()
                    .ok()
            })
            .and_then(|r| r.state().get_best_param().cloned())
            .unwrap_or(vec![lat0, slope0]);
        let c = Cost {
            x: &x,
            t: &t,
            rdv: &rdv,
            two_o: 2.0 * o,
        }
        .cost(&p)
        .unwrap_or(f64::INFINITY);
        // A rendezvous step must earn its keep: prefer "all eager" (the
        // last candidate) unless a step cuts the error by a tenth.
        let better = match best {
            None => true,
            Some((bc, ..)) if k + 1 == pts.len() => c < bc / 0.9,
            Some((bc, ..)) => c < bc,
        };
        if better {
            best = Some((c, lim, p[0].abs(), p[1].abs()));
        }
    }
    let (_, lim, lat, slope) = best.expect("at least two candidates");
    let per_byte = slope / nmax;
    let link = Link {
        latency_us: lat,
        overhead_us: o,
        gap_us: gap_us.max(0.0),
        bandwidth_gbs: if per_byte > 0.0 {
            1e-3 / per_byte
        } else {
            // Time does not grow with size at the measured sizes: report
            // a bandwidth far above any real link rather than infinity.
            1e6
        },
        eager_limit: lim,
    };
    let points: Vec<(u64, f64, f64)> = pts
        .iter()
        .map(|p| (p.bytes, p.one_way_us, one_way(&link, p.bytes)))
        .collect();
    let mut errs: Vec<f64> = points
        .iter()
        .map(|&(_, m, f)| ((f - m) / m).abs())
        .collect();
    errs.sort_by(f64::total_cmp);
    Ok(LinkFit {
        link,
        max_rel_error: errs.last().copied().unwrap_or(0.0),
        median_rel_error: crate::stats::median_sorted(&errs),
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synth(l: &Link, sizes: &[u64], noise: f64) -> Vec<PingPoint> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &b)| PingPoint {
                bytes: b,
                // Deterministic +-noise alternating.
                one_way_us: one_way(l, b) * (1.0 + if i % 2 == 0 { noise } else { -noise }),
                spread: 1.0,
            })
            .collect()
    }

    fn sizes() -> Vec<u64> {
        (0..23).map(|k| 1u64 << k).collect()
    }

    #[test]
    fn recovers_a_link_with_a_rendezvous_step() {
        let truth = Link {
            latency_us: 20.0,
            overhead_us: 3.0,
            gap_us: 4.0,
            bandwidth_gbs: 0.125,
            eager_limit: 65536,
        };
        let f = fit_link(&synth(&truth, &sizes(), 0.0), 3.0, 4.0).unwrap();
        assert_eq!(f.link.eager_limit, 65536);
        assert!((f.link.latency_us - 20.0).abs() < 0.2, "{f:?}");
        assert!((f.link.bandwidth_gbs / 0.125 - 1.0).abs() < 0.01, "{f:?}");
        assert!(f.max_rel_error < 0.01, "{f:?}");
    }

    #[test]
    fn noise_does_not_invent_a_step() {
        let truth = Link {
            latency_us: 0.4,
            overhead_us: 0.2,
            gap_us: 0.1,
            bandwidth_gbs: 5.0,
            eager_limit: u64::MAX,
        };
        let f = fit_link(&synth(&truth, &sizes(), 0.03), 0.2, 0.1).unwrap();
        assert_eq!(f.link.eager_limit, 1 << 22, "{f:?}");
        assert!((f.link.bandwidth_gbs / 5.0 - 1.0).abs() < 0.1, "{f:?}");
        assert!(f.max_rel_error < 0.1, "{f:?}");
    }

    #[test]
    fn an_overhead_larger_than_the_smallest_message_is_clamped() {
        let pts = vec![
            PingPoint {
                bytes: 1,
                one_way_us: 2.0,
                spread: 1.0,
            },
            PingPoint {
                bytes: 1 << 20,
                one_way_us: 1000.0,
                spread: 1.0,
            },
        ];
        let f = fit_link(&pts, 5.0, 0.0).unwrap();
        assert!(f.link.overhead_us <= 1.0);
        assert!(fit_link(&pts[..1], 0.1, 0.0).is_err());
    }
}
