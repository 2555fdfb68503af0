//! The axes: ticks along message size (powers of two) and time (1-2-5 per
//! decade), and how their labels read.

use colltune_core::units::human_bytes;

/// Size-axis ticks: powers of two, every 2^k so that at most ~9 show.
pub(super) fn size_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.max(1.0).log2().ceil() as i32, hi.log2().floor() as i32);
    let span = (b - a).max(0);
    let step = ((span as f64 / 8.0).ceil() as i32).max(1);
    // Prefer steps that land on 1 B, 1 KiB, 1 MiB (multiples of 10 or 5 or 2).
    let step = [1, 2, 5, 10, 20]
        .into_iter()
        .find(|&s| s >= step)
        .unwrap_or(step);
    (a..=b)
        .filter(|e| e.rem_euclid(step) == 0)
        .map(|e| 2f64.powi(e))
        .collect()
}

pub(super) fn fmt_bytes(x: f64) -> String {
    human_bytes(x.round() as u64)
}

pub(super) fn fmt_us(y: f64) -> String {
    if y >= 1e6 {
        format!("{:.0} s", y / 1e6)
    } else if y >= 1e3 {
        format!("{:.0} ms", y / 1e3)
    } else if y >= 1.0 {
        format!("{y:.0} us")
    } else {
        format!("{y:.1} us")
    }
}

/// Time ticks: 1-2-5 per decade, thinned to at most ~8.
pub(super) fn time_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut d = 10f64.powi(lo.log10().floor() as i32);
    while d <= hi {
        for m in [1.0, 2.0, 5.0] {
            let x = d * m;
            if x >= lo && x <= hi {
                v.push(x);
            }
        }
        d *= 10.0;
    }
    if v.len() > 8 {
        v.retain(|x| {
            let m = x / 10f64.powi(x.log10().floor() as i32);
            (m - 1.0).abs() < 1e-9
        });
    }
    if v.len() < 2 {
        v = vec![lo, hi];
    }
    v
}
