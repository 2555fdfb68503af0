//! Fitting T(n) = latency + n / bandwidth to measured medians (argmin's
//! Nelder-Mead, minimising squared relative error so small and large
//! messages weigh alike), the table the Origin2000 swap study printed (peak
//! bandwidth, estimated latency, the fit's maximum relative error), and
//! knees: sizes where bandwidth drops sharply as messages grow (the Cray T3D
//! newsletter's buffer knee). MPI-free.

use std::collections::BTreeMap;
use std::fmt::Write;

use argmin::core::{CostFunction, Error, Executor, State};
use argmin::solver::neldermead::NelderMead;

use crate::measure::report::{Series, SeriesKey};
use crate::measure::stats::Summary;
pub use crate::units::human_bytes;

/// The fit of one series.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// Fitted per-message latency, microseconds.
    pub latency_us: f64,
    /// Fitted asymptotic bandwidth, MB/s (10^6 bytes per second); infinite
    /// when time does not grow with size.
    pub bandwidth_mbs: f64,
    /// Largest measured bytes / median time, MB/s, and where.
    pub peak_mbs: f64,
    pub peak_at: u64,
    /// Largest |model - measured| / measured over the points.
    pub max_rel_error: f64,
    pub points: usize,
}

impl Fit {
    pub fn predict(&self, bytes: u64) -> f64 {
        self.latency_us + bytes as f64 / self.bandwidth_mbs
    }
}

/// A sharp bandwidth drop between two consecutive measured sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Knee {
    pub from: u64,
    pub to: u64,
    pub bw_from: f64,
    pub bw_to: f64,
}

impl Knee {
    pub fn drop(&self) -> f64 {
        1.0 - self.bw_to / self.bw_from
    }
}

/// Cost: sum of squared relative errors of `lat + slope * x` against `t`,
/// with `x` scaled to [0, 1] so both parameters have similar magnitude.
struct RelErr<'a> {
    x: &'a [f64],
    t: &'a [f64],
}

impl CostFunction for RelErr<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Vec<f64>) -> Result<f64, Error> {
        let (lat, slope) = (p[0].abs(), p[1].abs());
        Ok(self
            .x
            .iter()
            .zip(self.t)
            .map(|(&x, &t)| ((lat + slope * x - t) / t).powi(2))
            .sum())
    }
}

/// Fits a series' medians. Needs two sizes with positive times.
pub fn fit(points: &BTreeMap<u64, Summary>) -> Option<Fit> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(_, s)| s.median.is_finite() && s.median > 0.0)
        .map(|(&b, s)| (b as f64, s.median))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let nmax = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(1.0);
    let x: Vec<f64> = pts.iter().map(|p| p.0 / nmax).collect();
    let t: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let tmin = t.iter().copied().fold(f64::INFINITY, f64::min);
    let tlast = *t.last().expect("two points");
    let lat0 = tmin;
    let slope0 = (tlast - tmin).max(tmin * 0.01);
    let simplex = vec![
        vec![lat0, slope0],
        vec![lat0 * 1.5 + 1e-3, slope0],
        vec![lat0, slope0 * 1.5 + 1e-3],
    ];
    let best = NelderMead::new(simplex)
        .with_sd_tolerance(1e-12)
        .ok()
        .and_then(|solver| {
            Executor::new(RelErr { x: &x, t: &t }, solver)
                .configure(|s| s.max_iters(5000))
                .run()
                .ok()
        })
        .and_then(|r| r.state().get_best_param().cloned())
        .unwrap_or(vec![lat0, slope0]);
    let (lat, slope_scaled) = (best[0].abs(), best[1].abs());
    let per_byte = slope_scaled / nmax; // microseconds per byte
    let max_rel_error = x
        .iter()
        .zip(&t)
        .map(|(&xi, &ti)| ((lat + slope_scaled * xi - ti) / ti).abs())
        .fold(0.0, f64::max);
    let (peak_at, peak_mbs) = pts
        .iter()
        .map(|&(b, t)| (b as u64, b / t))
        .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    Some(Fit {
        latency_us: lat,
        bandwidth_mbs: if per_byte > 0.0 {
            1.0 / per_byte
        } else {
            f64::INFINITY
        },
        peak_mbs,
        peak_at,
        max_rel_error,
        points: pts.len(),
    })
}

/// Sizes where bandwidth (bytes / median time) falls by more than `drop`
/// (0.2 = 20%) from one measured size to the next larger one.
pub fn knees(points: &BTreeMap<u64, Summary>, drop: f64) -> Vec<Knee> {
    let bw: Vec<(u64, f64)> = points
        .iter()
        .filter(|(&b, s)| b > 0 && s.median > 0.0)
        .map(|(&b, s)| (b, b as f64 / s.median))
        .collect();
    bw.windows(2)
        .filter(|w| w[1].1 < w[0].1 * (1.0 - drop))
        .map(|w| Knee {
            from: w[0].0,
            to: w[1].0,
            bw_from: w[0].1,
            bw_to: w[1].1,
        })
        .collect()
}

/// The fit table and the knees, for every series that `keep` accepts.
pub fn fit_table(all: &Series, keep: impl Fn(&SeriesKey) -> bool, knee_drop: f64) -> String {
    let mut out = String::new();
    let mut last_ctx = None;
    for (k, pts) in all.iter().filter(|(k, _)| keep(k)) {
        let ctx = k.context();
        if last_ctx.as_ref() != Some(&ctx) {
            let _ = writeln!(
                out,
                "\n== {} on {} ranks ({} node(s)), cache {}, {}, overlap {} us: T(n) = latency + n / bandwidth",
                ctx.collective, ctx.ranks, ctx.nodes, ctx.cache, ctx.calls(), ctx.overlap
            );
            let _ = writeln!(
                out,
                "{:<48} {:>12} {:>10} {:>12} {:>12} {:>10}",
                "algorithm [execution]", "peak MB/s", "at", "latency us", "fit MB/s", "max error"
            );
            last_ctx = Some(ctx);
        }
        match fit(pts) {
            Some(f) => {
                let _ = writeln!(
                    out,
                    "{:<48} {:>12.1} {:>10} {:>12.2} {:>12.1} {:>9.1}%",
                    k.label(),
                    f.peak_mbs,
                    human_bytes(f.peak_at),
                    f.latency_us,
                    f.bandwidth_mbs,
                    100.0 * f.max_rel_error
                );
            }
            None => {
                let _ = writeln!(out, "{:<48} (fewer than two sizes: no fit)", k.label());
            }
        }
        for kn in knees(pts, knee_drop) {
            let _ = writeln!(
                out,
                "    knee: {} -> {}: bandwidth falls from {:.1} to {:.1} MB/s (-{:.0}%)",
                human_bytes(kn.from),
                human_bytes(kn.to),
                kn.bw_from,
                kn.bw_to,
                100.0 * kn.drop()
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::summarize;

    fn series_of(f: impl Fn(f64) -> f64) -> BTreeMap<u64, Summary> {
        (0..16)
            .map(|i| {
                let b = 1u64 << i;
                (b, summarize(&[vec![f(b as f64)]]))
            })
            .collect()
    }

    #[test]
    fn recovers_latency_and_bandwidth() {
        // 5 us + n / 2000 MB/s
        let f = fit(&series_of(|n| 5.0 + n / 2000.0)).unwrap();
        assert!((f.latency_us - 5.0).abs() < 0.05, "{f:?}");
        assert!((f.bandwidth_mbs / 2000.0 - 1.0).abs() < 0.01, "{f:?}");
        assert!(f.max_rel_error < 0.01, "{f:?}");
        assert_eq!(f.peak_at, 1 << 15);
    }

    #[test]
    fn model_error_is_reported() {
        // a step the linear model cannot follow
        let f = fit(&series_of(
            |n| if n < 1000.0 { 2.0 } else { 20.0 + n / 100.0 },
        ))
        .unwrap();
        assert!(f.max_rel_error > 0.3, "{f:?}");
    }

    #[test]
    fn knee_where_bandwidth_drops() {
        // bandwidth rises, then falls 4x past 16 KiB (buffer overflow)
        let pts = series_of(|n| {
            if n <= 16384.0 {
                1.0 + n / 1000.0
            } else {
                1.0 + n / 250.0
            }
        });
        let k = knees(&pts, 0.2);
        assert_eq!(k.len(), 1, "{k:?}");
        assert_eq!((k[0].from, k[0].to), (16384, 32768));
        assert!(k[0].drop() > 0.7);
        assert!(knees(&series_of(|n| 1.0 + n / 1000.0), 0.2).is_empty());
    }

    #[test]
    fn too_few_points() {
        assert!(fit(&series_of(|n| n).into_iter().take(1).collect()).is_none());
        assert_eq!(human_bytes(4 << 20), "4 MiB");
        assert_eq!(human_bytes(3000), "3000 B");
    }
}
