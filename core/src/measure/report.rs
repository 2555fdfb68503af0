//! Turning samples into tables: IMB-style per-subject tables, the comparison
//! with the MPI library, and noise warnings. MPI-free: works on measured or
//! simulated CSVs alike.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::measure::record::Sample;
use crate::measure::stats::{self, geomean, Summary};

/// Identifies a series: one subject on one communicator under one method.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesKey {
    pub collective: String,
    pub ranks: u32,
    pub ppn: u32,
    pub nodes: u32,
    pub cache: String,
    /// Calls per repetition; 0 for back-to-back blocks (sized per point, so
    /// their length is no key).
    pub iterations: u32,
    pub overlap: String,
    pub spec: String,
    pub execution: String,
}

impl SeriesKey {
    pub fn of(s: &Sample) -> Self {
        SeriesKey {
            collective: s.collective.clone(),
            ranks: s.ranks,
            ppn: s.ppn,
            nodes: s.nodes,
            cache: s.cache.clone(),
            iterations: if s.pattern == crate::measure::method::Pattern::BackToBack.name() {
                0
            } else {
                s.iterations
            },
            overlap: fmt_num(s.overlap_us),
            spec: s.spec.clone(),
            execution: s.execution.clone(),
        }
    }
    pub fn label(&self) -> String {
        colltune_algorithms::label(&self.spec, &self.execution)
    }
    /// `1 call(s)/rep`, or `back-to-back calls`.
    pub fn calls(&self) -> String {
        match self.iterations {
            0 => "back-to-back calls".into(),
            n => format!("{n} call(s)/rep"),
        }
    }
    /// `1 call(s) per repetition`, or `back-to-back blocks of calls`.
    pub fn calls_long(&self) -> String {
        match self.iterations {
            0 => "back-to-back blocks of calls".into(),
            n => format!("{n} call(s) per repetition"),
        }
    }
    /// The key without the subject: which series are comparable.
    pub fn context(&self) -> SeriesKey {
        SeriesKey {
            spec: String::new(),
            execution: String::new(),
            ..self.clone()
        }
    }
    pub fn is_library(&self) -> bool {
        self.execution == "library"
    }
    /// The library's default call: the `mpi` baseline, or Open MPI's
    /// algorithm 0 (nothing forced) measured as a tune's candidate.
    pub fn is_native(&self) -> bool {
        self.spec == "mpi" || self.spec.starts_with("ompi_tuned:algorithm=0,")
    }
    /// One of Open MPI's algorithms forced (1-9).
    pub fn is_ompi_tuned(&self) -> bool {
        self.spec.starts_with("ompi_tuned") && !self.is_native()
    }
    /// One of the library's own algorithms, forced or chosen outside the
    /// process (Open MPI's `ompi_tuned` and `ompi_adapt`, MPICH's `mpich`, Intel MPI's
    /// `impi` labels): a library subject that is not its default call.
    pub fn is_forced(&self) -> bool {
        self.is_library() && !self.is_native() && !self.is_interposed()
    }
    /// `MPI_Bcast` through its `MPI_` symbol (`--baseline interposed`):
    /// under `LD_PRELOAD` of the drop-in, the drop-in.
    pub fn is_interposed(&self) -> bool {
        self.is_library() && self.spec == crate::measure::method::INTERPOSED
    }
    /// How the comparison names a forced algorithm: Open MPI's with its
    /// segment (coll/tuned's `binomial,segment=0`, coll/adapt's
    /// `adapt:binomial,segment=0`, coll/han's
    /// `han:intra,up=libnbc,low=tuned,segment=0` or `han:simple`), others
    /// by their short name.
    pub fn forced_name(&self) -> String {
        match self.spec.split_once("name=") {
            Some((_, rest)) if self.is_ompi_tuned() => rest.to_string(),
            Some((_, rest)) => match crate::libraries::ompi::component_of(&self.spec) {
                Some(component) => format!("{component}:{rest}"),
                None => crate::libraries::mpich::short_name(&self.spec).to_string(),
            },
            _ => crate::libraries::mpich::short_name(&self.spec).to_string(),
        }
    }
}

fn fmt_num(x: f64) -> String {
    if x == x.trunc() {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// bytes -> summary, per series.
pub type Series = BTreeMap<SeriesKey, BTreeMap<u64, Summary>>;

/// Groups samples into series and summarises each point over its runs.
pub fn series(samples: &[Sample]) -> Series {
    let mut raw: BTreeMap<SeriesKey, BTreeMap<u64, BTreeMap<u32, Vec<f64>>>> = BTreeMap::new();
    for s in samples {
        raw.entry(SeriesKey::of(s))
            .or_default()
            .entry(s.bytes)
            .or_default()
            .entry(s.run)
            .or_default()
            .push(s.time_us);
    }
    raw.into_iter()
        .map(|(k, by_bytes)| {
            let pts = by_bytes
                .into_iter()
                .map(|(b, runs)| {
                    let runs: Vec<Vec<f64>> = runs.into_values().collect();
                    (b, stats::summarize(&runs))
                })
                .collect();
            (k, pts)
        })
        .collect()
}

/// The contexts (a series' key less its subject: collective, communicator,
/// call pattern, cache) of the series `keep` selects, in the series' order,
/// each once.
pub fn contexts(all: &Series, keep: impl Fn(&SeriesKey) -> bool) -> Vec<SeriesKey> {
    let mut c: Vec<SeriesKey> = all
        .keys()
        .filter(|k| keep(k))
        .map(SeriesKey::context)
        .collect();
    c.dedup();
    c
}

/// The series `keep` selects.
pub fn kept(all: &Series, keep: impl Fn(&SeriesKey) -> bool) -> Series {
    all.iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// IMB-style tables, one per series.
pub fn imb_tables(all: &Series) -> String {
    let mut out = String::new();
    for (k, pts) in all {
        let _ = writeln!(out, "#{}", "-".repeat(94));
        let _ = writeln!(out, "# Benchmarking {} {}", k.collective, k.label());
        let _ = writeln!(
            out,
            "# #processes = {} ({} node(s), {} per node); cache {}; {}; overlap {} us",
            k.ranks,
            k.nodes,
            k.ppn,
            k.cache,
            k.calls_long(),
            k.overlap
        );
        let _ = writeln!(
            out,
            "# times: the slowest rank's per repetition, in usec; spread: largest/smallest run median"
        );
        let _ = writeln!(out, "#{}", "-".repeat(94));
        let _ = writeln!(
            out,
            "{:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8} {:>9}",
            "#bytes",
            "#repetitions",
            "t_min[usec]",
            "t_max[usec]",
            "t_avg[usec]",
            "t_med[usec]",
            "spread",
            "outliers"
        );
        for (b, s) in pts {
            let _ = writeln!(
                out,
                "{:>12} {:>12} {:>12.2} {:>12.2} {:>12.2} {:>12.2} {:>7.2}x {:>9}",
                b,
                s.count,
                s.min,
                s.max,
                s.mean,
                s.median,
                s.run_spread(),
                s.outliers
            );
        }
        out.push('\n');
    }
    out
}

/// The best series at each size among those `keep` accepts: (label, summary).
pub fn best_at<'a>(
    all: &'a Series,
    ctx: &SeriesKey,
    bytes: u64,
    keep: impl Fn(&SeriesKey) -> bool,
) -> Option<(&'a SeriesKey, &'a Summary)> {
    all.iter()
        .filter(|(k, _)| k.context() == *ctx && keep(k))
        .filter_map(|(k, pts)| pts.get(&bytes).map(|s| (k, s)))
        .min_by(|a, b| a.1.median.total_cmp(&b.1.median))
}

/// Runs whose medians spread more than this are flagged as too noisy.
pub const NOISY_SPREAD: f64 = 1.25;

/// For each comparable context: per size, the best of colltune's
/// algorithms against the MPI library's default and against the best of
/// its own algorithms forced (Open MPI's coll/tuned, MPICH's, Intel MPI's
/// labelled runs), with geometric means; then noise warnings.
pub fn comparison(all: &Series) -> String {
    let mut out = String::new();
    for ctx in contexts(all, |_| true) {
        let sizes: Vec<u64> = {
            let mut v: Vec<u64> = all
                .iter()
                .filter(|(k, _)| k.context() == ctx)
                .flat_map(|(_, p)| p.keys().copied())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let cols = Columns::of(all, &ctx);
        cols.header(&ctx, &mut out);
        let mut tally = Tally::default();
        for &b in &sizes {
            comparison_row(all, &ctx, &cols, b, &mut tally, &mut out);
        }
        tally.footer(&cols, &mut out);
        out.push('\n');
    }
    out
}

/// The columns of one context's comparison: which baselines it measured,
/// and the library its forced algorithms are of.
struct Columns<'a> {
    native: bool,
    tuned: bool,
    interposed: bool,
    /// One library, unless CSVs of several libraries were merged.
    forced_lib: &'a str,
}

impl<'a> Columns<'a> {
    fn of(all: &'a Series, ctx: &SeriesKey) -> Columns<'a> {
        let mut libs: Vec<&str> = all
            .keys()
            .filter(|k| k.context() == *ctx && k.is_forced())
            .map(|k| crate::libraries::mpich::library_of(&k.spec))
            .collect();
        libs.sort_unstable();
        libs.dedup();
        Columns {
            native: all.keys().any(|k| k.context() == *ctx && k.is_native()),
            tuned: all.keys().any(|k| k.context() == *ctx && k.is_forced()),
            interposed: all.keys().any(|k| k.context() == *ctx && k.is_interposed()),
            forced_lib: match libs.as_slice() {
                [one] => one,
                _ => "library",
            },
        }
    }

    fn header(&self, ctx: &SeriesKey, out: &mut String) {
        let ratio_head = match self.forced_lib {
            "Open MPI" => "ours/omp",
            "MPICH" => "ours/mch",
            "Intel MPI" => "ours/imp",
            _ => "ours/frc",
        };
        let _ = writeln!(
            out,
            "== {} on {} ranks ({} node(s) x {} per node), cache {}, {}, overlap {} us: medians in usec",
            ctx.collective, ctx.ranks, ctx.nodes, ctx.ppn, ctx.cache, ctx.calls(), ctx.overlap
        );
        let _ = write!(
            out,
            "{:>10}  {:<46} {:>10}",
            "bytes", "best of colltune", "t_med"
        );
        if self.native {
            let _ = write!(out, " {:>10} {:>8}", "mpi", "ours/mpi");
        }
        if self.tuned {
            let _ = write!(
                out,
                "  {:<28} {:>10} {:>8}",
                format!("best forced {}", self.forced_lib),
                "t_med",
                ratio_head
            );
        }
        if self.interposed {
            let _ = write!(
                out,
                "  {:>10} {:>8} {:>8}",
                "interposed", "in/mpi", "in/frc"
            );
        }
        out.push('\n');
    }
}

/// What one context's rows add up to: the ratios, the worst sizes, the
/// noisy points.
#[derive(Default)]
struct Tally {
    /// Best of colltune over the library's default, and over its best forced.
    r_native: Vec<f64>,
    r_tuned: Vec<f64>,
    /// The interposed call against the default and the best forced.
    i_native: Vec<f64>,
    i_tuned: Vec<f64>,
    i_worst: Option<(u64, f64)>,
    worst: Option<(u64, f64)>,
    noisy: Vec<String>,
}

/// A ratio column: `0.50x`, or `-` where a side is missing.
fn ratio_cell(r: Option<f64>) -> String {
    r.map_or(format!(" {:>8}", "-"), |r| format!(" {r:>7.2}x"))
}

/// One size's row of the comparison.
fn comparison_row(
    all: &Series,
    ctx: &SeriesKey,
    cols: &Columns,
    b: u64,
    t: &mut Tally,
    out: &mut String,
) {
    // The interposed call is a library subject, never "ours"; with
    // only baselines measured (the drop-in against the library's
    // algorithms), "ours" is empty and the interposed columns remain.
    let ours = best_at(all, ctx, b, |k| !k.is_library());
    if ours.is_none() && !cols.interposed {
        return;
    }
    match ours {
        Some((ok, os)) => {
            let _ = write!(out, "{:>10}  {:<46} {:>10.2}", b, ok.label(), os.median);
        }
        None => {
            let _ = write!(out, "{:>10}  {:<46} {:>10}", b, "-", "-");
        }
    }
    let os = ours.map(|o| o.1);
    let over = |t: f64, base: Option<&Summary>| base.map(|s| t / s.median);
    if cols.native {
        match best_at(all, ctx, b, SeriesKey::is_native) {
            Some((_, ns)) => {
                let r = os.map(|o| o.median / ns.median);
                if let Some(r) = r {
                    t.r_native.push(r);
                    if t.worst.is_none_or(|(_, w)| r > w) {
                        t.worst = Some((b, r));
                    }
                }
                let _ = write!(out, " {:>10.2}{}", ns.median, ratio_cell(r));
            }
            None => {
                let _ = write!(out, " {:>10} {:>8}", "-", "-");
            }
        }
    }
    if cols.tuned {
        match best_at(all, ctx, b, SeriesKey::is_forced) {
            Some((tk, ts)) => {
                let r = os.map(|o| o.median / ts.median);
                t.r_tuned.extend(r);
                let name = tk.forced_name();
                let _ = write!(out, "  {:<28} {:>10.2}{}", name, ts.median, ratio_cell(r));
            }
            None => {
                let _ = write!(out, "  {:<28} {:>10} {:>8}", "-", "-", "-");
            }
        }
    }
    if cols.interposed {
        match best_at(all, ctx, b, SeriesKey::is_interposed) {
            Some((_, is)) => {
                let native = best_at(all, ctx, b, SeriesKey::is_native).map(|x| x.1);
                let forced = best_at(all, ctx, b, SeriesKey::is_forced).map(|x| x.1);
                let (rn, rf) = (over(is.median, native), over(is.median, forced));
                t.i_native.extend(rn);
                t.i_tuned.extend(rf);
                if let Some(r) = rf {
                    if t.i_worst.is_none_or(|(_, w)| r > w) {
                        t.i_worst = Some((b, r));
                    }
                }
                let _ = write!(
                    out,
                    "  {:>10.2}{}{}",
                    is.median,
                    ratio_cell(rn),
                    ratio_cell(rf)
                );
            }
            None => {
                let _ = write!(out, "  {:>10} {:>8} {:>8}", "-", "-", "-");
            }
        }
    }
    out.push('\n');
    for (k, pts) in all.iter().filter(|(k, _)| k.context() == *ctx) {
        if let Some(s) = pts.get(&b) {
            if s.run_medians.len() > 1 && s.run_spread() > NOISY_SPREAD {
                t.noisy
                    .push(format!("{} at {b} B ({:.2}x)", k.label(), s.run_spread()));
            }
        }
    }
}

/// One line of [`Tally::footer`]: the geometric mean of `ratios` (`what`
/// they compare) and how many, then `tail`; nothing without ratios.
fn mean_line(out: &mut String, what: &str, ratios: &[f64], tail: String) {
    if !ratios.is_empty() {
        let _ = writeln!(
            out,
            "geometric mean, {what}: {:.3}x over {} sizes{tail}",
            geomean(ratios),
            ratios.len()
        );
    }
}

impl Tally {
    /// The geometric means and the noise warning under the rows.
    fn footer(&self, cols: &Columns, out: &mut String) {
        let forced_lib = cols.forced_lib;
        let noisy = &self.noisy;
        let worst = |w: Option<(u64, f64)>| {
            w.map(|(b, r)| format!("; worst size {b} B at {r:.2}x"))
                .unwrap_or_default()
        };
        let above = |rs: &[f64]| rs.iter().filter(|&&r| r > 1.15).count();
        mean_line(
            out,
            "best of colltune / MPI library default",
            &self.r_native,
            worst(self.worst),
        );
        let forced = format!("best forced {forced_lib} algorithm");
        mean_line(
            out,
            &format!("best of colltune / {forced}"),
            &self.r_tuned,
            String::new(),
        );
        mean_line(
            out,
            "interposed MPI_Bcast / MPI library default",
            &self.i_native,
            String::new(),
        );
        mean_line(
            out,
            &format!("interposed MPI_Bcast / {forced}"),
            &self.i_tuned,
            format!(
                "; {} above 1.15x{}",
                above(&self.i_tuned),
                worst(self.i_worst)
            ),
        );
        if !noisy.is_empty() {
            let _ = writeln!(
                out,
                "warning: {} point(s) whose run medians differ by more than {NOISY_SPREAD}x, too noisy to rank safely: {}{}.\n  \
                 advice: pin ranks (--bind-to core), keep other jobs off the machine, raise --runs or --budget-ms.",
                noisy.len(),
                noisy.iter().take(6).cloned().collect::<Vec<_>>().join(", "),
                if noisy.len() > 6 { ", ..." } else { "" }
            );
        }
    }
}

/// Run-to-run spread over every point: (median, max) of largest/smallest
/// run median.
pub fn spread_overall(all: &Series) -> Option<(f64, f64)> {
    let v: Vec<f64> = all
        .values()
        .flat_map(|p| p.values())
        .filter(|s| s.run_medians.len() > 1)
        .map(Summary::run_spread)
        .collect();
    if v.is_empty() {
        return None;
    }
    Some((stats::median(&v), v.iter().copied().fold(1.0, f64::max)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::sample;

    #[test]
    fn comparison_picks_best_and_ratios() {
        let mut s = Vec::new();
        for run in 1..=2 {
            s.push(sample("linear", "blocking", 8, run, 2.0));
            s.push(sample("binomial:segment=0", "nonblocking", 8, run, 4.0));
            s.push(sample("mpi", "library", 8, run, 8.0));
            s.push(sample(
                "ompi_tuned:algorithm=1,name=basic_linear,segment=0",
                "library",
                8,
                run,
                3.0,
            ));
            s.push(sample("linear", "blocking", 64, run, 10.0));
            s.push(sample("mpi", "library", 64, run, 5.0));
        }
        let all = series(&s);
        let text = comparison(&all);
        assert!(text.contains("linear [blocking]"), "{text}");
        assert!(text.contains("0.25x"), "{text}"); // 2 / 8
        assert!(text.contains("2.00x"), "{text}"); // 10 / 5
        assert!(text.contains("worst size 64 B at 2.00x"), "{text}");
        assert!(text.contains("basic_linear"), "{text}");
        // geomean of 0.25 and 2 = sqrt(0.5)
        assert!(text.contains("0.707x"), "{text}");
        let imb = imb_tables(&all);
        assert!(imb.contains("# Benchmarking bcast linear [blocking]"));
        assert!(imb.contains("#repetitions"));
    }

    #[test]
    fn comparison_names_mpich_and_intel_forced_algorithms() {
        let mut s = Vec::new();
        for run in 1..=2 {
            s.push(sample("linear", "blocking", 8, run, 2.0));
            s.push(sample("mpi", "library", 8, run, 8.0));
            s.push(sample("mpich:algorithm=binomial", "library", 8, run, 5.0));
            s.push(sample("mpich:algorithm=smp", "library", 8, run, 4.0));
        }
        let text = comparison(&series(&s));
        assert!(text.contains("best forced MPICH"), "{text}");
        assert!(text.contains("ours/mch"), "{text}");
        // the best forced one is smp at 4 us: 2 / 4
        assert!(text.contains(" smp "), "{text}");
        assert!(
            text.contains("best of colltune / best forced MPICH algorithm: 0.500x"),
            "{text}"
        );
        // the default stays the `mpi` column: 2 / 8
        assert!(text.contains("library default: 0.250x"), "{text}");

        let mut s = Vec::new();
        for run in 1..=2 {
            s.push(sample("linear", "blocking", 8, run, 2.0));
            s.push(sample("mpi", "library", 8, run, 8.0));
            s.push(sample(
                "impi:I_MPI_ADJUST_BCAST=3,name=ring",
                "library",
                8,
                run,
                1.0,
            ));
        }
        let text = comparison(&series(&s));
        assert!(text.contains("best forced Intel MPI"), "{text}");
        assert!(text.contains(" ring "), "{text}");
        assert!(text.contains("Intel MPI algorithm: 2.000x"), "{text}");
    }

    #[test]
    fn comparison_names_open_mpi_adapt_apart_from_tuned() {
        let mut s = Vec::new();
        for run in 1..=2 {
            s.push(sample("linear", "blocking", 8, run, 2.0));
            s.push(sample("mpi", "library", 8, run, 8.0));
            s.push(sample(
                "ompi_tuned:algorithm=6,name=binomial,segment=0",
                "library",
                8,
                run,
                5.0,
            ));
            s.push(sample(
                "ompi_adapt:algorithm=1,name=binomial,segment=0",
                "library",
                8,
                run,
                4.0,
            ));
        }
        let all = series(&s);
        let text = comparison(&all);
        // one library: both components are Open MPI's
        assert!(text.contains("best forced Open MPI"), "{text}");
        assert!(text.contains("ours/omp"), "{text}");
        // the best forced one is adapt's binomial, named apart from tuned's
        assert!(text.contains(" adapt:binomial,segment=0 "), "{text}");
        assert!(
            text.contains("best of colltune / best forced Open MPI algorithm: 0.500x"),
            "{text}"
        );
        let adapt = all
            .keys()
            .find(|k| k.spec.starts_with("ompi_adapt"))
            .unwrap();
        assert!(adapt.is_forced() && !adapt.is_native() && !adapt.is_ompi_tuned());
    }

    #[test]
    fn comparison_names_open_mpi_han_with_its_modules() {
        let mut s = Vec::new();
        for run in 1..=2 {
            s.push(sample("linear", "blocking", 8, run, 6.0));
            s.push(sample("mpi", "library", 8, run, 8.0));
            s.push(sample(
                "ompi_han:algorithm=1,name=intra,up=libnbc,low=tuned,segment=65536",
                "library",
                8,
                run,
                3.0,
            ));
            s.push(sample(
                "ompi_han:algorithm=2,name=simple",
                "library",
                8,
                run,
                4.0,
            ));
        }
        let all = series(&s);
        let text = comparison(&all);
        assert!(text.contains("best forced Open MPI"), "{text}");
        assert!(
            text.contains(" han:intra,up=libnbc,low=tuned,segment=65536 "),
            "{text}"
        );
        assert!(
            text.contains("best of colltune / best forced Open MPI algorithm: 2.000x"),
            "{text}"
        );
        let simple = all
            .keys()
            .find(|k| k.spec == "ompi_han:algorithm=2,name=simple")
            .unwrap();
        assert!(simple.is_forced() && !simple.is_native() && !simple.is_ompi_tuned());
        assert_eq!(simple.forced_name(), "han:simple");
    }

    /// The interposed call (the drop-in under LD_PRELOAD) is compared with
    /// the default and the best forced algorithm; it is never "ours" nor
    /// a forced algorithm, and with only baselines measured its columns
    /// still print.
    #[test]
    fn comparison_puts_the_interposed_call_beside_the_library() {
        let mut s = Vec::new();
        for run in 1..=2 {
            for (b, dropin) in [(8, 2.0), (1024, 6.0)] {
                s.push(sample("mpi", "library", b, run, 8.0));
                s.push(sample(
                    "ompi_tuned:algorithm=1,name=basic_linear,segment=0",
                    "library",
                    b,
                    run,
                    4.0,
                ));
                s.push(sample("interposed", "library", b, run, dropin));
            }
        }
        let all = series(&s);
        let text = comparison(&all);
        // 2/8, 6/8; 2/4, 6/4
        assert!(
            text.contains("interposed MPI_Bcast / MPI library default: 0.433x over 2 sizes"),
            "{text}"
        );
        assert!(
            text.contains(
                "interposed MPI_Bcast / best forced Open MPI algorithm: 0.866x over 2 sizes; 1 above 1.15x; worst size 1024 B at 1.50x"
            ),
            "{text}"
        );
        // the forced column is the forced algorithm, not the interposed call
        assert!(text.contains(" basic_linear,segment=0 "), "{text}");
        assert!(!text.contains("best of colltune /"), "{text}");
        let i = all.keys().find(|k| k.spec == "interposed").unwrap();
        assert!(i.is_interposed() && !i.is_forced() && !i.is_native());
        // and a table never chooses it
        assert!(!s
            .iter()
            .find(|x| x.spec == "interposed")
            .unwrap()
            .is_choice());
    }

    #[test]
    fn noisy_points_are_flagged() {
        let s = vec![
            sample("linear", "blocking", 8, 1, 2.0),
            sample("linear", "blocking", 8, 2, 4.0),
        ];
        let text = comparison(&series(&s));
        assert!(text.contains("too noisy"), "{text}");
        assert_eq!(spread_overall(&series(&s)), Some((2.0, 2.0)));
    }
}
