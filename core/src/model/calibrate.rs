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
//!
//! `G` is LogGP's gap per byte of a long stream. Where the sustained rate
//! of a stream of large messages was measured, `G` is that rate and the fit
//! finds `L` and the eager limit alone: a ping-pong leaves each direction
//! idle half the time, which a link with burst credit (a token bucket, a
//! NIC's or switch's buffers) rewards with more than its sustained rate,
//! while a collective's back-to-back messages get the sustained one.
//!
//! Between nodes the fit also tries a token bucket (`burst_bytes`, a shaped
//! link): each candidate size from 256 bytes, kept where it cuts the error
//! by a tenth. Where the MPI library's protocol limits are known
//! ([`Protocol`]: Open MPI's ob1) the eager limit is not fitted, and a
//! rendezvous carries its first fragment with the request.

use argmin::core::{CostFunction, Error, Executor, State};
use argmin::solver::neldermead::NelderMead;

use crate::model::sim::Link;

/// One measured size: median one-way time over runs, and the runs' spread
/// (slowest / fastest run).
#[derive(Clone, Debug, PartialEq)]
pub struct PingPoint {
    pub bytes: u64,
    pub one_way_us: f64,
    pub spread: f64,
}

/// What the MPI library says of its protocols on a link (Open MPI: the
/// transport's `btl_*_eager_limit`, less the headers): a message of up to
/// `eager_limit` bytes is eager; a larger one carries `first_bytes` with
/// its request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocol {
    pub eager_limit: u64,
    pub first_bytes: u64,
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
///
/// On a token bucket (`burst_bytes` B) each direction sends one message per
/// round trip, and its bucket refills meanwhile: a message up to B leaves
/// at once, but no faster than the bucket refills (a round trip of at
/// least nG, so half that one way); a larger one pays for its bytes past B.
pub fn one_way(l: &Link, bytes: u64) -> f64 {
    // A rendezvous adds the answer's latency, and the request's too where
    // it carries a first fragment (it is matched on arrival, not on post).
    let rendezvous = match (bytes > l.eager_limit, l.rendezvous_first_bytes) {
        (false, _) => 0.0,
        (true, None) => l.latency_us,
        (true, Some(_)) => 2.0 * l.latency_us,
    };
    let base = 2.0 * l.overhead_us + l.latency_us + rendezvous;
    let n = bytes as f64;
    match l.burst_bytes.map(|b| b as f64) {
        None => base + n * l.per_byte_for(bytes),
        Some(b) => (base + (n - b).max(0.0) * l.per_byte_for(bytes)).max(0.5 * n * l.per_byte()),
    }
}

struct Cost<'a> {
    /// Sizes scaled to [0, 1].
    x: &'a [f64],
    t: &'a [f64],
    /// 1 where the point is above the candidate eager limit.
    rdv: &'a [f64],
    two_o: f64,
    /// The rendezvous slope (per scaled byte) when it is held at a measured
    /// value.
    held: Option<f64>,
    /// Whether p[1] is the eager messages' own slope (held rate, a limit
    /// inside the sizes); otherwise p[1], if any, is every message's slope.
    eager_param: bool,
    /// A token bucket of this many (scaled) bytes, refilled at the
    /// rendezvous slope; see [`one_way`].
    burst: Option<f64>,
}

impl Cost<'_> {
    /// (eager slope, rendezvous slope) for parameters `p`. An eager slope
    /// is never below the held (stream) one: a stream of eager messages
    /// cannot beat the link's sustained rate, and a ping-pong that does is
    /// spending burst credit (a token bucket, buffers) no link model has.
    fn slopes(&self, p: &[f64]) -> (f64, f64) {
        let free = p.get(1).map_or(0.0, |x| x.abs());
        let rdv = self.held.unwrap_or(free);
        (if self.eager_param { free.max(rdv) } else { rdv }, rdv)
    }
}

impl CostFunction for Cost<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Vec<f64>) -> Result<f64, Error> {
        let lat = p[0].abs();
        let (se, sr) = self.slopes(p);
        Ok(self
            .x
            .iter()
            .zip(self.t)
            .zip(self.rdv)
            .map(|((&x, &t), &r)| {
                let slope = if r > 0.0 { sr } else { se };
                let base = self.two_o + lat * (1.0 + r);
                let model = match self.burst {
                    None => base + slope * x,
                    Some(b) => (base + slope * (x - b).max(0.0)).max(0.5 * sr * x),
                };
                ((model - t) / t).powi(2)
            })
            .sum())
    }
}

/// A bandwidth from microseconds per byte (a flat time: far above any link).
fn gbs(per_byte: f64) -> f64 {
    if per_byte > 0.0 {
        1e-3 / per_byte
    } else {
        1e6
    }
}

/// Fits `L`, `G` and the eager limit to the points, with the measured
/// overhead `o` and gap `g`. With `per_byte_us` (a measured sustained
/// rate) `G` is that, and a candidate limit inside the sizes gets its own
/// eager bandwidth, fitted (as LogGPS prices the two protocols apart).
/// With `bucket` and a measured rate, a token bucket (`burst_bytes`) is
/// tried too. With a `known` protocol (the MPI library's own eager limit)
/// no limit is fitted. Needs two sizes with positive times.
pub fn fit_link(
    points: &[PingPoint],
    overhead_us: f64,
    gap_us: f64,
    per_byte_us: Option<f64>,
    bucket: bool,
    known: Option<Protocol>,
) -> Result<LinkFit, String> {
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
    let held = per_byte_us
        .filter(|g| g.is_finite() && *g >= 0.0)
        .map(|g| g * nmax);
    // Candidate limits: every measured size but the largest (above it:
    // rendezvous), and the largest (everything eager).
    // (cost, limit, L, eager slope, rendezvous slope, eager has its own)
    let limits: Vec<(usize, u64)> = match known {
        // k: the last eager point's index (the largest size: none above)
        Some(pr) => vec![(
            pts.iter()
                .rposition(|p| p.bytes <= pr.eager_limit)
                .unwrap_or(0),
            pr.eager_limit,
        )],
        None => pts.iter().map(|p| p.bytes).enumerate().collect(),
    };
    // Per candidate limit, the latencies a rendezvous adds to each point:
    // one, two with a first fragment. Built once for every bucket tried.
    let extra = if known.is_some() { 2.0 } else { 1.0 };
    let candidates: Vec<(usize, u64, Vec<f64>)> = limits
        .into_iter()
        .map(|(k, lim)| {
            let rdv = pts
                .iter()
                .map(|p| if p.bytes > lim { extra } else { 0.0 })
                .collect();
            (k, lim, rdv)
        })
        .collect();
    let fit_with = |burst: Option<f64>| {
        let mut best: Option<(f64, u64, f64, f64, f64, bool)> = None;
        for (k, lim, rdv) in &candidates {
            let (k, lim) = (*k, *lim);
            let eager_param = held.is_some() && pts.iter().any(|p| p.bytes > lim);
            let cost = || Cost {
                x: &x,
                t: &t,
                rdv,
                two_o: 2.0 * o,
                held,
                eager_param,
                burst,
            };
            let lat0 = (tmin - 2.0 * o).max(tmin * 0.1);
            // The eager points' slope (or all points' when nothing is held).
            let last_eager = if eager_param { k } else { t.len() - 1 };
            let slope0 = ((t[last_eager] - tmin) / x[last_eager].max(1e-12)).max(tmin * 0.01);
            let simplex = if held.is_some() && !eager_param {
                vec![vec![lat0], vec![lat0 * 1.5 + 1e-3]]
            } else {
                vec![
                    vec![lat0, slope0],
                    vec![lat0 * 1.5 + 1e-3, slope0],
                    vec![lat0, slope0 * 1.5 + 1e-3],
                ]
            };
            let start = simplex[0].clone();
            let p = NelderMead::new(simplex)
                .with_sd_tolerance(1e-12)
                .ok()
                .and_then(|solver| {
                    Executor::new(cost(), solver)
                        .configure(|s| s.max_iters(4000))
                        .run()
                        .ok()
                })
                .and_then(|r| r.state().get_best_param().cloned())
                .unwrap_or(start);
            let c = cost().cost(&p).unwrap_or(f64::INFINITY);
            let (se, sr) = cost().slopes(&p);
            // A rendezvous step must earn its keep: prefer "all eager" (the
            // last candidate) unless a step cuts the error by a tenth.
            let better = match best {
                None => true,
                Some((bc, ..)) if k + 1 == pts.len() => c < bc / 0.9,
                Some((bc, ..)) => c < bc,
            };
            if better {
                best = Some((c, lim, p[0].abs(), se, sr, eager_param));
            }
        }
        best.expect("at least two candidates")
    };
    let mut best = fit_with(None);
    let mut burst = None;
    // A token bucket (only with a measured stream rate, which refills it)
    // must earn its keep too: a tenth less error than none. Candidates: the
    // measured sizes from 256 bytes to a quarter of the largest.
    if bucket && held.is_some() {
        let with = pts
            .iter()
            .map(|p| p.bytes)
            .filter(|&b| b >= 256 && b as f64 <= nmax / 4.0)
            .map(|b| (fit_with(Some(b as f64 / nmax)), b))
            .min_by(|x, y| x.0 .0.total_cmp(&y.0 .0));
        if let Some((f, b)) = with.filter(|(f, _)| f.0 < best.0 * 0.9) {
            best = f;
            burst = Some(b);
        }
    }
    let (_, lim, lat, se, sr, own) = best;
    let link = Link {
        latency_us: lat,
        overhead_us: o,
        gap_us: gap_us.max(0.0),
        bandwidth_gbs: gbs(sr / nmax),
        eager_limit: lim,
        eager_bandwidth_gbs: (own && se > sr * (1.0 + 1e-6)).then(|| gbs(se / nmax)),
        burst_bytes: burst,
        rendezvous_first_bytes: known.map(|p| p.first_bytes),
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
        median_rel_error: crate::measure::stats::median_sorted(&errs),
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
            eager_bandwidth_gbs: None,
            burst_bytes: None,
            rendezvous_first_bytes: None,
        };
        let f = fit_link(&synth(&truth, &sizes(), 0.0), 3.0, 4.0, None, false, None).unwrap();
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
            eager_bandwidth_gbs: None,
            burst_bytes: None,
            rendezvous_first_bytes: None,
        };
        let f = fit_link(&synth(&truth, &sizes(), 0.03), 0.2, 0.1, None, false, None).unwrap();
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
        let f = fit_link(&pts, 5.0, 0.0, None, false, None).unwrap();
        assert!(f.link.overhead_us <= 1.0);
        assert!(fit_link(&pts[..1], 0.1, 0.0, None, false, None).is_err());
    }

    #[test]
    fn slower_eager_messages_get_their_own_rate() {
        // Eager messages copied through bounce buffers at half the rate of
        // zero-copy rendezvous ones, limit 64 KiB.
        let truth = Link {
            latency_us: 2.0,
            overhead_us: 0.5,
            gap_us: 0.1,
            bandwidth_gbs: 10.0,
            eager_limit: 65536,
            eager_bandwidth_gbs: Some(5.0),
            burst_bytes: None,
            rendezvous_first_bytes: None,
        };
        let f = fit_link(
            &synth(&truth, &sizes(), 0.0),
            0.5,
            0.1,
            Some(truth.per_byte()),
            false,
            None,
        )
        .unwrap();
        assert_eq!(f.link.eager_limit, 65536, "{f:?}");
        let e = f.link.eager_bandwidth_gbs.expect("an eager rate");
        assert!((e / 5.0 - 1.0).abs() < 0.02, "{f:?}");
        assert!(f.max_rel_error < 0.02, "{f:?}");
    }

    #[test]
    fn a_measured_stream_rate_is_kept_and_the_latency_fitted() {
        // A token-bucket link: up to 64 KiB a message passes at twice the
        // sustained rate; the stream measured the sustained rate.
        let sustained = Link {
            latency_us: 12.0,
            overhead_us: 2.0,
            gap_us: 1.0,
            bandwidth_gbs: 0.125,
            eager_limit: u64::MAX,
            eager_bandwidth_gbs: None,
            burst_bytes: None,
            rendezvous_first_bytes: None,
        };
        let pts: Vec<PingPoint> = sizes()
            .into_iter()
            .map(|b| {
                let g = if b <= 65536 { 0.5 } else { 1.0 } * sustained.per_byte();
                PingPoint {
                    bytes: b,
                    one_way_us: 2.0 * 2.0 + 12.0 + b as f64 * g,
                    spread: 1.0,
                }
            })
            .collect();
        let free = fit_link(&pts, 2.0, 1.0, None, false, None).unwrap();
        let held = fit_link(&pts, 2.0, 1.0, Some(sustained.per_byte()), false, None).unwrap();
        assert!(
            (held.link.bandwidth_gbs / 0.125 - 1.0).abs() < 1e-9,
            "{held:?}"
        );
        // (the burst points pull L down somewhat: they are faster than any
        // L with the sustained rate explains)
        assert!((held.link.latency_us - 12.0).abs() < 3.0, "{held:?}");
        // ... and no eager rate above the sustained one: a stream of small
        // messages cannot beat the link (the ping-pong spent burst credit).
        assert!(
            held.link
                .eager_bandwidth_gbs
                .is_none_or(|e| e <= 0.125 * (1.0 + 1e-6)),
            "{held:?}"
        );
        // The largest message is priced right only with the stream's rate.
        let last = |f: &LinkFit| {
            let &(_, m, p) = f.points.last().unwrap();
            (p - m).abs() / m
        };
        assert!(last(&held) < 0.01, "{held:?}");
        assert!(last(&free) > last(&held), "{free:?}");
    }

    #[test]
    fn a_token_bucket_is_found_where_it_shapes_the_link() {
        // A 100 Mbit/s link shaped with a 2 KiB bucket: small ping-pongs
        // run at twice the rate (the bucket refills while the reply flies).
        let truth = Link {
            latency_us: 3.0,
            overhead_us: 2.0,
            gap_us: 5.0,
            bandwidth_gbs: 0.0125,
            eager_limit: 1 << 22,
            eager_bandwidth_gbs: None,
            burst_bytes: Some(2048),
            rendezvous_first_bytes: None,
        };
        let pts = synth(&truth, &sizes(), 0.0);
        assert!(
            pts[9].one_way_us < 0.6 * 1024.0 * truth.per_byte(),
            "{pts:?}"
        );
        let f = fit_link(&pts, 2.0, 5.0, Some(truth.per_byte()), true, None).unwrap();
        assert_eq!(f.link.burst_bytes, Some(2048), "{f:?}");
        assert!(f.max_rel_error < 0.02, "{f:?}");
        // Not where the link has none, nor where the caller forbids it.
        let plain = Link {
            burst_bytes: None,
            rendezvous_first_bytes: None,
            ..truth.clone()
        };
        let f = fit_link(
            &synth(&plain, &sizes(), 0.0),
            2.0,
            5.0,
            Some(plain.per_byte()),
            true,
            None,
        )
        .unwrap();
        assert_eq!(f.link.burst_bytes, None, "{f:?}");
        let f = fit_link(&pts, 2.0, 5.0, Some(truth.per_byte()), false, None).unwrap();
        assert_eq!(f.link.burst_bytes, None, "{f:?}");
    }
}
