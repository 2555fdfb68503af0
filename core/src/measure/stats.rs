//! Statistics over timing samples: order statistics, median absolute
//! deviation outliers, run-to-run spread. MPI-free.

/// Summary of one point's samples (all repetitions of all runs), in the
/// samples' unit (microseconds throughout colltune).
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub max: f64,
    /// Median absolute deviation.
    pub mad: f64,
    pub outliers: usize,
    /// Medians of each run, in run order.
    pub run_medians: Vec<f64>,
}

impl Summary {
    /// Largest run median over smallest (1.0 = runs agree exactly).
    pub fn run_spread(&self) -> f64 {
        let (lo, hi) = self.run_range();
        if lo > 0.0 && lo.is_finite() {
            hi / lo
        } else {
            1.0
        }
    }
    /// The interval the run medians span.
    pub fn run_range(&self) -> (f64, f64) {
        let lo = self
            .run_medians
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let hi = self.run_medians.iter().copied().fold(0.0, f64::max);
        (lo, hi)
    }
}

/// Median of a sorted slice (mean of the two middle values when even).
pub fn median_sorted(v: &[f64]) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    median_sorted(&s)
}

/// Median absolute deviation from the median.
pub fn mad(v: &[f64], med: f64) -> f64 {
    let d: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
    median(&d)
}

/// Whether `x` is an outlier by the modified z-score (Iglewicz and Hoaglin:
/// 0.6745 |x - median| / MAD > 3.5). Timings only have a long right tail, so
/// only slow samples are flagged.
pub fn is_outlier(x: f64, med: f64, mad: f64) -> bool {
    if mad <= 0.0 {
        return x > med * 1.5 && x - med > 1.0;
    }
    0.6745 * (x - med) / mad > 3.5
}

/// Outlier flags for one group of samples.
pub fn outlier_flags(v: &[f64]) -> Vec<bool> {
    let med = median(v);
    let m = mad(v, med);
    v.iter().map(|&x| is_outlier(x, med, m)).collect()
}

/// Summarises samples given per run.
pub fn summarize(runs: &[Vec<f64>]) -> Summary {
    let mut all: Vec<f64> = runs.iter().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    let med = median_sorted(&all);
    let m = mad(&all, med);
    let count = all.len();
    Summary {
        count,
        min: all.first().copied().unwrap_or(f64::NAN),
        median: med,
        mean: if count > 0 {
            all.iter().sum::<f64>() / count as f64
        } else {
            f64::NAN
        },
        max: all.last().copied().unwrap_or(f64::NAN),
        mad: m,
        outliers: all.iter().filter(|&&x| is_outlier(x, med, m)).count(),
        run_medians: runs
            .iter()
            .filter(|r| !r.is_empty())
            .map(|r| median(r))
            .collect(),
    }
}

/// Geometric mean of positive ratios.
pub fn geomean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Whether two summaries can be told apart: their run-median ranges do not
/// overlap. When they overlap, a winner by median is a coin toss.
pub fn distinguishable(a: &Summary, b: &Summary) -> bool {
    let (alo, ahi) = a.run_range();
    let (blo, bhi) = b.run_range();
    ahi < blo || bhi < alo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics() {
        let s = summarize(&[vec![3.0, 1.0, 2.0], vec![10.0, 4.0]]);
        assert_eq!(s.count, 5);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 10.0);
        assert_eq!(s.median, 3.0);
        assert!((s.mean - 4.0).abs() < 1e-12);
        assert_eq!(s.run_medians, vec![2.0, 7.0]);
        assert!((s.run_spread() - 3.5).abs() < 1e-12);
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), 2.5);
    }

    #[test]
    fn outliers_are_the_slow_tail() {
        let mut v = vec![10.0, 10.5, 9.8, 10.2, 10.1, 9.9, 10.3];
        v.push(40.0);
        let flags = outlier_flags(&v);
        assert_eq!(flags.iter().filter(|&&f| f).count(), 1);
        assert!(flags[7]);
        // constant samples: nothing flagged but a gross outlier
        assert_eq!(outlier_flags(&[5.0; 6]), vec![false; 6]);
        let f = outlier_flags(&[5.0, 5.0, 5.0, 5.0, 50.0]);
        assert!(f[4]);
    }

    #[test]
    fn geometric_mean_and_overlap() {
        assert!((geomean(&[2.0, 8.0]) - 4.0).abs() < 1e-12);
        let a = summarize(&[vec![1.0], vec![1.1]]);
        let b = summarize(&[vec![1.05], vec![2.0]]);
        let c = summarize(&[vec![3.0], vec![3.1]]);
        assert!(!distinguishable(&a, &b));
        assert!(distinguishable(&a, &c));
    }
}
