//! A noise model of a machine's measurements, fitted from its raw samples
//! (`colltune noise fit CSV...`), and laid over the simulator's noise-free
//! times to test the tuner (`colltune noise bench`, [`crate::tune::noise_bench`]).
//! MPI-free.
//!
//! A simulated sample of subject `s` at one size, in launch `l`, run `r`:
//!
//! ```text
//! t = truth(s) * L_l * S_ls * T_ls * R_lrs * e * O
//! ```
//! - `L_l = exp(N(0, launch_sigma))`: the launch's state, common to every
//!   subject (the machine 1.5x slower in one `mpirun` than the next);
//! - `S_ls = exp(N(0, subject_launch_sigma))`: the launch's effect on this
//!   subject alone (placement, what the neighbours do);
//! - `T_ls`: a two-state launch: with probability `two_state_rate` the
//!   subject runs `two_state_factor` times slower for the whole launch;
//! - `R_lrs = exp(N(0, run_sigma))`: run to run within the launch;
//! - `e = exp(N(0, sample_sigma))`: sample to sample within the run;
//! - `O`: with probability `outlier_rate`, `outlier_factor` (a slow call).
//!
//! The profile file is `key: value` lines (`#` comments), every key below
//! required; a line that does not parse gets an error naming the file and
//! line and what to write.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crate::measure::record::Sample;
use crate::measure::stats;

/// A machine's noise, as fitted.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseProfile {
    pub name: String,
    /// What it was fitted from.
    pub source: String,
    pub sample_sigma: f64,
    pub outlier_rate: f64,
    pub outlier_factor: f64,
    pub run_sigma: f64,
    pub launch_sigma: f64,
    pub subject_launch_sigma: f64,
    pub two_state_rate: f64,
    pub two_state_factor: f64,
}

/// The keys of a profile file, in order, with what each takes.
const KEYS: [(&str, &str); 11] = [
    ("name", "a word"),
    ("source", "text"),
    (
        "sample_sigma",
        "a log-scale standard deviation >= 0 (0.05 = 5%)",
    ),
    ("outlier_rate", "a probability, 0 to 1"),
    ("outlier_factor", "a slowdown >= 1"),
    ("run_sigma", "a log-scale standard deviation >= 0"),
    ("launch_sigma", "a log-scale standard deviation >= 0"),
    (
        "subject_launch_sigma",
        "a log-scale standard deviation >= 0",
    ),
    ("two_state_rate", "a probability, 0 to 1"),
    ("two_state_factor", "a slowdown >= 1"),
    ("launches_seen", "informational: launches the fit saw"),
];

impl NoiseProfile {
    /// No noise at all.
    pub fn none() -> NoiseProfile {
        NoiseProfile {
            name: "none".into(),
            source: "no noise".into(),
            sample_sigma: 0.0,
            outlier_rate: 0.0,
            outlier_factor: 1.0,
            run_sigma: 0.0,
            launch_sigma: 0.0,
            subject_launch_sigma: 0.0,
            two_state_rate: 0.0,
            two_state_factor: 1.0,
        }
    }

    pub fn is_none(&self) -> bool {
        self.sample_sigma == 0.0
            && self.outlier_rate == 0.0
            && self.run_sigma == 0.0
            && self.launch_sigma == 0.0
            && self.subject_launch_sigma == 0.0
            && self.two_state_rate == 0.0
    }

    /// The profile file's text.
    pub fn to_text(&self, launches_seen: u32) -> String {
        format!(
            "# colltune noise profile (colltune noise fit; see docs/notes-issue-30.md)\n\
             name: {}\nsource: {}\nsample_sigma: {:.4}\noutlier_rate: {:.4}\noutlier_factor: {:.3}\n\
             run_sigma: {:.4}\nlaunch_sigma: {:.4}\nsubject_launch_sigma: {:.4}\n\
             two_state_rate: {:.4}\ntwo_state_factor: {:.3}\nlaunches_seen: {launches_seen}\n",
            self.name,
            self.source.replace('\n', " "),
            self.sample_sigma,
            self.outlier_rate,
            self.outlier_factor,
            self.run_sigma,
            self.launch_sigma,
            self.subject_launch_sigma,
            self.two_state_rate,
            self.two_state_factor
        )
    }

    /// Reads a profile file; errors name the file and line.
    pub fn load(path: &Path) -> Result<NoiseProfile, NoiseError> {
        let text = std::fs::read_to_string(path).map_err(|e| NoiseError {
            path: path.display().to_string(),
            line: None,
            what: format!("cannot read: {e}"),
            fix: "give the path of a profile `colltune noise fit` wrote".into(),
        })?;
        parse(&text, &path.display().to_string())
    }
}

/// A profile file that does not parse.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct NoiseError {
    pub path: String,
    pub line: Option<usize>,
    pub what: String,
    pub fix: String,
}

impl fmt::Display for NoiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}; {}", self.path, self.what, self.fix),
            None => write!(f, "{}: {}; {}", self.path, self.what, self.fix),
        }
    }
}

/// Parses a profile's text (`path` names it in errors).
pub fn parse(text: &str, path: &str) -> Result<NoiseProfile, NoiseError> {
    let err = |line: Option<usize>, what: String, fix: String| NoiseError {
        path: path.into(),
        line,
        what,
        fix,
    };
    let mut seen: BTreeMap<&str, (usize, String)> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err(err(
                Some(i + 1),
                format!("`{line}` is not `key: value`"),
                "write one `key: value` per line".into(),
            ));
        };
        let k = k.trim();
        let Some(&(key, _)) = KEYS.iter().find(|(n, _)| *n == k) else {
            let known: Vec<&str> = KEYS.iter().map(|(n, _)| *n).collect();
            return Err(err(
                Some(i + 1),
                format!("unknown key `{k}`"),
                format!("the keys are {}", known.join(", ")),
            ));
        };
        if let Some((first, _)) = seen.get(key) {
            return Err(err(
                Some(i + 1),
                format!("`{key}` given twice (first on line {first})"),
                "keep one".into(),
            ));
        }
        seen.insert(key, (i + 1, v.trim().to_string()));
    }
    let mut num = |key: &str, lo: f64, hi: f64| -> Result<f64, NoiseError> {
        let what = KEYS
            .iter()
            .find(|(n, _)| *n == key)
            .map(|k| k.1)
            .unwrap_or("");
        let Some((line, v)) = seen.remove(key) else {
            return Err(err(
                None,
                format!("`{key}` is missing"),
                format!("add `{key}: ...` ({what})"),
            ));
        };
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && (lo..=hi).contains(&x) => Ok(x),
            _ => Err(err(
                Some(line),
                format!("`{key}: {v}`: not {what}"),
                format!("write {what}"),
            )),
        }
    };
    let p = NoiseProfile {
        name: String::new(),
        source: String::new(),
        sample_sigma: num("sample_sigma", 0.0, 5.0)?,
        outlier_rate: num("outlier_rate", 0.0, 1.0)?,
        outlier_factor: num("outlier_factor", 1.0, 1e6)?,
        run_sigma: num("run_sigma", 0.0, 5.0)?,
        launch_sigma: num("launch_sigma", 0.0, 5.0)?,
        subject_launch_sigma: num("subject_launch_sigma", 0.0, 5.0)?,
        two_state_rate: num("two_state_rate", 0.0, 1.0)?,
        two_state_factor: num("two_state_factor", 1.0, 1e6)?,
    };
    let text_of = |seen: &mut BTreeMap<&str, (usize, String)>, k: &str| {
        seen.remove(k).map(|x| x.1).unwrap_or_default()
    };
    Ok(NoiseProfile {
        name: match text_of(&mut seen, "name") {
            n if n.is_empty() => "unnamed".into(),
            n => n,
        },
        source: text_of(&mut seen, "source"),
        ..p
    })
}

/// A small deterministic generator (xorshift64*), with normal deviates.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    pub fn lognormal(&mut self, sigma: f64) -> f64 {
        if sigma > 0.0 {
            (sigma * self.normal()).exp()
        } else {
            1.0
        }
    }
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }
}

/// What the fit saw and how it estimated each term.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitReport {
    pub launches: u32,
    pub points: usize,
    pub samples: usize,
    pub notes: Vec<String>,
}

fn robust_sigma(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = stats::median(v);
    1.4826 * stats::mad(v, m)
}

/// Fits a profile from launches of raw samples (one slice per launch: a
/// CSV, or a file of per-call times). Each term from what can show it:
/// - sample_sigma: the median over (launch, run, point, subject) of the
///   robust spread (1.4826 MAD) of the log samples;
/// - outliers: samples above the run's median by more than 3.5 robust
///   spreads (and 10%): their share, and their median factor;
/// - run_sigma: the median over (launch, point, subject) of the spread of
///   the log run medians (runs of one launch);
/// - launch terms, with two launches or more measuring the same points:
///   each launch's log median against the points' median over launches;
///   a launch's common factor is the median of those over its points and
///   subjects (launch_sigma: their spread); what is left per subject is
///   its own launch effect: subject_launch_sigma is the robust spread of
///   the residuals, two_state the share beyond 3 of those spreads (and
///   10%), and its factor their median. With one launch they cannot be
///   measured: 0, and a note says so.
pub fn fit(name: &str, source: &str, launches: &[&[Sample]]) -> (NoiseProfile, FitReport) {
    type Key = (String, u32, u32, u64, String, String);
    let mut rep = FitReport {
        launches: launches.len() as u32,
        ..FitReport::default()
    };
    // (launch, point & subject) -> run -> log samples
    let mut cells: BTreeMap<(usize, Key), BTreeMap<u32, Vec<f64>>> = BTreeMap::new();
    for (l, samples) in launches.iter().enumerate() {
        for s in samples.iter().filter(|s| s.time_us > 0.0) {
            rep.samples += 1;
            let k: Key = (
                s.collective.clone(),
                s.ranks,
                s.nodes,
                s.bytes,
                s.spec.clone(),
                s.execution.clone(),
            );
            cells
                .entry((l, k))
                .or_default()
                .entry(s.run)
                .or_default()
                .push(s.time_us.ln());
        }
    }
    let mut spreads = Vec::new();
    let (mut n_out, mut n_all, mut out_f) = (0usize, 0usize, Vec::new());
    let mut run_spreads = Vec::new();
    // point & subject -> launch -> log median
    let mut by_launch: BTreeMap<Key, BTreeMap<usize, f64>> = BTreeMap::new();
    for ((l, k), runs) in &cells {
        let mut medians = Vec::new();
        for v in runs.values() {
            let m = stats::median(v);
            let s = robust_sigma(v);
            if v.len() >= 5 {
                spreads.push(s);
                let cut = (3.5 * s).max(0.1_f64.ln_1p());
                for &x in v {
                    n_all += 1;
                    if x - m > cut {
                        n_out += 1;
                        out_f.push(x - m);
                    }
                }
            }
            medians.push(m);
        }
        if medians.len() >= 2 {
            let (mean, sd) = {
                let n = medians.len() as f64;
                let m = medians.iter().sum::<f64>() / n;
                let v = medians.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
                (m, v.sqrt())
            };
            let _ = mean;
            run_spreads.push(sd);
        }
        let all: Vec<f64> = runs.values().flatten().copied().collect();
        by_launch
            .entry(k.clone())
            .or_default()
            .insert(*l, stats::median(&all));
    }
    rep.points = by_launch.len();
    let med = |v: &[f64]| if v.is_empty() { 0.0 } else { stats::median(v) };
    let sample_sigma = med(&spreads);
    let outlier_rate = if n_all > 0 {
        n_out as f64 / n_all as f64
    } else {
        0.0
    };
    let outlier_factor = if out_f.is_empty() {
        1.0
    } else {
        med(&out_f).exp()
    };
    if spreads.is_empty() {
        rep.notes
            .push("no run had 5 samples or more: sample_sigma and outliers set to 0".into());
    }
    let run_sigma = med(&run_spreads);
    if run_spreads.is_empty() {
        rep.notes
            .push("no point was measured in 2 runs or more: run_sigma set to 0".into());
    }
    // Launch terms.
    let mut devs: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut per_cell: Vec<(usize, f64)> = Vec::new();
    for ls in by_launch.values().filter(|m| m.len() >= 2) {
        let centre = med(&ls.values().copied().collect::<Vec<_>>());
        for (&l, &m) in ls {
            devs.entry(l).or_default().push(m - centre);
            per_cell.push((l, m - centre));
        }
    }
    let (mut launch_sigma, mut subject_launch_sigma, mut two_rate, mut two_factor) =
        (0.0, 0.0, 0.0, 1.0);
    if devs.len() >= 2 {
        let common: BTreeMap<usize, f64> = devs.iter().map(|(&l, v)| (l, med(v))).collect();
        let c: Vec<f64> = common.values().copied().collect();
        launch_sigma = {
            let n = c.len() as f64;
            let m = c.iter().sum::<f64>() / n;
            (c.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt()
        };
        let resid: Vec<f64> = per_cell.iter().map(|(l, d)| d - common[l]).collect();
        subject_launch_sigma = robust_sigma(&resid);
        let cut = (3.0 * subject_launch_sigma).max(0.1_f64.ln_1p());
        let big: Vec<f64> = resid
            .iter()
            .filter(|r| r.abs() > cut)
            .map(|r| r.abs())
            .collect();
        two_rate = (big.len() as f64 / resid.len().max(1) as f64).min(1.0);
        // a slow state's launch deviates from the launches' median (most
        // launches in the usual state) by the state's whole factor
        two_factor = if big.is_empty() { 1.0 } else { med(&big).exp() };
    } else {
        rep.notes.push(
            "one launch (or no point measured by two): launch_sigma, subject_launch_sigma and two-state launches cannot be measured and are set to 0; fit from several launches' CSVs of the same points".into(),
        );
    }
    (
        NoiseProfile {
            name: name.into(),
            source: source.into(),
            sample_sigma,
            outlier_rate,
            outlier_factor,
            run_sigma,
            launch_sigma,
            subject_launch_sigma,
            two_state_rate: two_rate,
            two_state_factor: two_factor,
        },
        rep,
    )
}

/// Reads per-call files as published by HLC-Lab/pico (Leonardo): a header
/// line `highest`, then one time per call in nanoseconds, the first a
/// warm-up; the file name `<count>_<algorithm>_<library>_<type>.csv`
/// gives the subject and size (count x 4 bytes for int32). One file is
/// one run of one launch. Errors name the file and line.
pub fn read_per_call(path: &Path, ranks: u32) -> Result<Vec<Sample>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let parts: Vec<&str> = stem.split('_').collect();
    let count: u64 = parts.first().and_then(|c| c.parse().ok()).ok_or_else(|| {
        format!(
            "{}: the name does not start with `<count>_` (a per-call file is <count>_<algorithm>_<library>_int32.csv)",
            path.display()
        )
    })?;
    let width = match parts.last().copied() {
        Some("int32") | Some("float") => 4,
        Some("int64") | Some("double") => 8,
        Some("int8") | Some("char") => 1,
        _ => 4,
    };
    let subject = parts[1..parts.len().saturating_sub(1)].join("_");
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if i == 0 {
            if t != "highest" {
                return Err(format!(
                    "{}:1: the header is `{t}`, not `highest` (a per-call file of nanoseconds)",
                    path.display()
                ));
            }
            continue;
        }
        if t.is_empty() || i == 1 {
            continue; // the warm-up call
        }
        let ns: f64 = t.parse().map_err(|_| {
            format!(
                "{}:{}: `{t}` is not a time in nanoseconds",
                path.display(),
                i + 1
            )
        })?;
        let mut s =
            crate::measure::record::sample(&subject, "library", count * width, 1, ns / 1000.0);
        s.rep = i as u32;
        s.ranks = ranks;
        s.host = "per-call".into();
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_round_trip_and_bad_lines_are_named() {
        let p = NoiseProfile {
            name: "x".into(),
            source: "test".into(),
            sample_sigma: 0.05,
            outlier_rate: 0.01,
            outlier_factor: 3.0,
            run_sigma: 0.02,
            launch_sigma: 0.1,
            subject_launch_sigma: 0.03,
            two_state_rate: 0.1,
            two_state_factor: 1.5,
        };
        assert_eq!(parse(&p.to_text(2), "p").unwrap(), p);
        let bad = p.to_text(2).replace("run_sigma: 0.0200", "run_sigma: lots");
        let e = parse(&bad, "p.yaml").unwrap_err();
        assert_eq!(e.line, Some(7), "{e}");
        assert!(
            e.to_string().starts_with("p.yaml:7: `run_sigma: lots`"),
            "{e}"
        );
        let e = parse(&format!("{}\nfoo: 1\n", p.to_text(2)), "p").unwrap_err();
        assert!(e.what.contains("unknown key `foo`"), "{e}");
        let e = parse("sample_sigma 0.1\n", "p").unwrap_err();
        assert_eq!(e.line, Some(1));
        let e = parse(&p.to_text(2).replace("launch_sigma: 0.1000\n", ""), "p").unwrap_err();
        assert!(e.what.contains("`launch_sigma` is missing"), "{e}");
        let e = parse(
            &p.to_text(2)
                .replace("outlier_rate: 0.0100", "outlier_rate: 2"),
            "p",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(5));
    }

    /// Samples drawn from a known profile fit back to it, roughly.
    #[test]
    fn a_fit_recovers_the_profile_it_was_drawn_from() {
        let truth = NoiseProfile {
            name: "t".into(),
            source: "t".into(),
            sample_sigma: 0.04,
            outlier_rate: 0.02,
            outlier_factor: 3.0,
            run_sigma: 0.03,
            launch_sigma: 0.15,
            subject_launch_sigma: 0.02,
            two_state_rate: 0.0,
            two_state_factor: 1.0,
        };
        let mut g = Rng::new(3);
        let launches: Vec<Vec<Sample>> = (0..6)
            .map(|_| {
                let lf = g.lognormal(truth.launch_sigma);
                let mut v = Vec::new();
                for b in [1u64, 64, 4096, 65536] {
                    for spec in ["linear", "binomial:segment=0", "chain:segment=8192"] {
                        let sf = g.lognormal(truth.subject_launch_sigma);
                        for run in 1..=4 {
                            let rf = g.lognormal(truth.run_sigma);
                            for rep in 1..=30 {
                                let mut t = 10.0 * lf * sf * rf * g.lognormal(truth.sample_sigma);
                                if g.chance(truth.outlier_rate) {
                                    t *= truth.outlier_factor;
                                }
                                let mut s =
                                    crate::measure::record::sample(spec, "blocking", b, run, t);
                                s.rep = rep;
                                v.push(s);
                            }
                        }
                    }
                }
                v
            })
            .collect();
        let l: Vec<&[Sample]> = launches.iter().map(Vec::as_slice).collect();
        let (p, rep) = fit("t", "t", &l);
        assert_eq!(rep.launches, 6);
        let near = |got: f64, want: f64, tol: f64| (got - want).abs() <= tol;
        assert!(near(p.sample_sigma, 0.04, 0.01), "{p:?}");
        assert!(near(p.run_sigma, 0.03, 0.015), "{p:?}");
        assert!(near(p.launch_sigma, 0.15, 0.1), "{p:?}");
        assert!(near(p.subject_launch_sigma, 0.02, 0.02), "{p:?}");
        assert!(near(p.outlier_rate, 0.02, 0.01), "{p:?}");
        assert!(near(p.outlier_factor, 3.0, 0.5), "{p:?}");
    }
}
