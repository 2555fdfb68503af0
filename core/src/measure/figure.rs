//! What the pictures show, shaped without drawing (MPI-free, tested here):
//! the lines of a time plot (one per algorithm family by default, its best
//! variant at each size), the relative panel (time / best at each size and
//! the run-spread band around 1.0), the measured winners and the table's
//! regimes along the size axis, the decision map of a whole table, the
//! "fastest at X% of sizes" summary, and a label placer that keeps labels
//! apart. `colltune plot` and `colltune report --html` draw these.

use std::collections::BTreeMap;

use colltune_algorithms::{registry, Collective};

use crate::measure::report::{Series, SeriesKey};
use crate::measure::stats::Summary;
use crate::tables::table::{CommKey, Rule, Table};

/// What a line stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LineKind {
    /// A colltune algorithm family (or, with `all`, one variant).
    Algorithm,
    /// The MPI library's own call (`MPI_Bcast`).
    Library,
    /// The best of the library's forced algorithms at each size.
    LibraryForced,
}

/// One point of a line: the winning variant's median and run range there.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub median: f64,
    /// Lowest and highest run median (both the median with one run).
    pub lo: f64,
    pub hi: f64,
    /// The variant that gave this point, `spec [execution]`.
    pub variant: String,
}

/// One plotted line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub name: String,
    pub kind: LineKind,
    /// The algorithm family (registry name; `mpi` / `ompi_tuned` for the
    /// library's lines): what fixes the colour and marker.
    pub family: String,
    pub points: BTreeMap<u64, Point>,
}

impl Line {
    /// Drawn dashed: the library's lines.
    pub fn dashed(&self) -> bool {
        self.kind != LineKind::Algorithm
    }

    /// The variant that won most of this line's sizes, and at how many.
    pub fn main_variant(&self) -> Option<(&str, usize)> {
        let mut n: BTreeMap<&str, usize> = BTreeMap::new();
        for p in self.points.values() {
            *n.entry(p.variant.as_str()).or_default() += 1;
        }
        n.into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
    }
}

/// The family of a spec: its algorithm's name (`pipeline:segment=8192` is
/// `pipeline`; `hierarchical:inter=...` is `hierarchical`).
pub fn family(spec: &str) -> &str {
    spec.split(':').next().unwrap_or(spec)
}

/// A stable index for a family's colour and marker: its place in the
/// registry among its collective's algorithms, so a family has the same
/// colour in every picture. Unknown names come after.
pub fn family_index(collective: Collective, name: &str) -> usize {
    registry::algorithms(collective)
        .position(|a| a.name == name)
        .unwrap_or_else(|| {
            registry::algorithms(collective).count()
                + (name
                    .bytes()
                    .fold(0usize, |h, b| h.wrapping_mul(31) + b as usize)
                    % 7)
        })
}

/// Which lines to draw.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// One line per variant (spec), as `plot --all`.
    pub all: bool,
    /// Keep only these families (empty: all). The library's lines stay.
    pub algorithms: Vec<String>,
}

/// The families in `ctx` (what `--algorithms` may name).
pub fn families(all: &Series, ctx: &SeriesKey) -> Vec<String> {
    let mut v: Vec<String> = all
        .keys()
        .filter(|k| k.context() == *ctx && !k.is_library())
        .map(|k| family(&k.spec).to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The lines of one context (collective, communicator, method): per
/// algorithm family its best variant at each size (or, with `sel.all`,
/// per spec its best execution), the library's own call, and the best of
/// its forced algorithms. An `--algorithms` name that is no family here is
/// an error naming those that are.
pub fn lines(all: &Series, ctx: &SeriesKey, sel: &Selection) -> Result<Vec<Line>, String> {
    let fams = families(all, ctx);
    for a in &sel.algorithms {
        if !fams.iter().any(|f| f == a) {
            return Err(format!(
                "--algorithms {a}: no such algorithm in these samples; they have {}",
                fams.join(", ")
            ));
        }
    }
    let mut by: BTreeMap<(LineKind, String), Line> = BTreeMap::new();
    for (k, pts) in all.iter().filter(|(k, _)| k.context() == *ctx) {
        let (kind, name, fam) = if k.is_native() {
            (LineKind::Library, "MPI library".to_string(), "mpi")
        } else if k.is_forced() {
            (
                LineKind::LibraryForced,
                "MPI library, best forced".to_string(),
                k.spec.split(':').next().unwrap_or("ompi_tuned"),
            )
        } else if k.is_library() {
            (LineKind::Library, k.spec.clone(), "mpi")
        } else {
            let fam = family(&k.spec);
            if !sel.algorithms.is_empty() && !sel.algorithms.iter().any(|a| a == fam) {
                continue;
            }
            let name = if sel.all {
                k.spec.clone()
            } else {
                fam.to_string()
            };
            (LineKind::Algorithm, name, fam)
        };
        let line = by.entry((kind, name.clone())).or_insert_with(|| Line {
            name,
            kind,
            family: fam.to_string(),
            points: BTreeMap::new(),
        });
        let variant = if k.is_forced() {
            crate::libraries::mpich::forced_label(&k.spec)
        } else {
            k.label()
        };
        for (&b, s) in pts {
            let better = line.points.get(&b).is_none_or(|p| s.median < p.median);
            if better {
                let (lo, hi) = band(s);
                line.points.insert(
                    b,
                    Point {
                        median: s.median,
                        lo,
                        hi,
                        variant: variant.clone(),
                    },
                );
            }
        }
    }
    Ok(by.into_values().collect())
}

fn band(s: &Summary) -> (f64, f64) {
    if s.run_medians.len() < 2 {
        (s.median, s.median)
    } else {
        s.run_range()
    }
}

/// Every size any line has, ascending.
pub fn sizes(lines: &[Line]) -> Vec<u64> {
    let mut v: Vec<u64> = lines
        .iter()
        .flat_map(|l| l.points.keys().copied())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The relative panel: each line's time over the best of all lines at
/// that size (1.0 = best), and around 1.0 the best point's run spread
/// (its lowest and highest run median over its median).
#[derive(Clone, Debug, PartialEq)]
pub struct Relative {
    /// Per line (same order as the input), bytes -> ratio.
    pub ratios: Vec<BTreeMap<u64, f64>>,
    /// bytes -> (low, high) of the noise band around 1.0.
    pub band: BTreeMap<u64, (f64, f64)>,
    /// Whether any band is wider than nothing (one run has no spread).
    pub has_spread: bool,
}

pub fn relative(lines: &[Line]) -> Relative {
    let mut best: BTreeMap<u64, &Point> = BTreeMap::new();
    for l in lines {
        for (&b, p) in &l.points {
            if p.median > 0.0 && best.get(&b).is_none_or(|q| p.median < q.median) {
                best.insert(b, p);
            }
        }
    }
    let ratios = lines
        .iter()
        .map(|l| {
            l.points
                .iter()
                .filter_map(|(b, p)| best.get(b).map(|q| (*b, p.median / q.median)))
                .collect()
        })
        .collect();
    let band: BTreeMap<u64, (f64, f64)> = best
        .iter()
        .map(|(&b, q)| (b, (q.lo / q.median, q.hi / q.median)))
        .collect();
    let has_spread = band.values().any(|(lo, hi)| hi - lo > 1e-9);
    Relative {
        ratios,
        band,
        has_spread,
    }
}

/// A stretch of the size axis with one answer: sizes `from..=to` (of
/// those measured, or a rule's range) and which line or rule holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stretch {
    pub from: u64,
    /// Inclusive; `None`: no upper bound (a table's last rule).
    pub to: Option<u64>,
    /// Family (colour), and the full label.
    pub family: String,
    pub label: String,
    /// Runner-up margin (a table's rule), when known.
    pub margin: Option<f64>,
    pub hierarchical: bool,
}

/// The measured winner along the size axis: runs of consecutive sizes
/// where the same line is fastest.
pub fn winners(lines: &[Line]) -> Vec<Stretch> {
    let mut out: Vec<Stretch> = Vec::new();
    for b in sizes(lines) {
        let w = lines
            .iter()
            .filter_map(|l| l.points.get(&b).map(|p| (l, p)))
            .min_by(|x, y| x.1.median.total_cmp(&y.1.median));
        let Some((l, _)) = w else { continue };
        match out.last_mut() {
            Some(s) if s.label == l.name => s.to = Some(b),
            _ => out.push(Stretch {
                from: b,
                to: Some(b),
                family: l.family.clone(),
                label: l.name.clone(),
                margin: None,
                hierarchical: l.family == "hierarchical",
            }),
        }
    }
    out
}

/// A rule as a stretch.
pub fn rule_stretch(r: &Rule) -> Stretch {
    Stretch {
        from: r.min_bytes,
        to: r.max_bytes,
        family: r.algorithm.clone(),
        label: r.label(),
        // With evidence (schema 2) the colour's strength is what the rule
        // is sure of: the lower end of its gain's interval over the
        // library (the library's own decision, kept, at full strength).
        margin: match &r.evidence {
            Some(e) if e.verdict == "clears" => Some(e.low),
            Some(_) => None,
            None => r.margin,
        },
        hierarchical: r.algorithm == "hierarchical",
    }
}

/// The table's regimes for one communicator shape (empty when the table
/// has no rules for it).
pub fn regimes(t: &Table, c: Collective, key: CommKey) -> Vec<Stretch> {
    t.rules(c)
        .iter()
        .find(|r| r.key() == key)
        .map(|cr| cr.rules.iter().map(rule_stretch).collect())
        .unwrap_or_default()
}

/// One row of a decision map: a collective on one communicator shape.
#[derive(Clone, Debug, PartialEq)]
pub struct MapRow {
    pub collective: Collective,
    pub key: CommKey,
    pub cells: Vec<Stretch>,
}

/// A whole table as a map: rows (collective, then ranks, nodes, ppn
/// ascending), the size axis it spans (smallest positive bound or
/// measured size to the largest), the families present, and whether any
/// rule has a margin (else the map is drawn at one saturation).
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionMap {
    pub rows: Vec<MapRow>,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub families: Vec<(Collective, String)>,
    pub has_margins: bool,
    /// Whether the rules carry evidence (schema 2): the shade is then the
    /// lower end of the gain's interval over the library.
    pub has_evidence: bool,
}

pub fn decision_map(t: &Table) -> DecisionMap {
    let mut rows = Vec::new();
    let mut families: Vec<(Collective, String)> = Vec::new();
    let (mut lo, mut hi) = (u64::MAX, 1u64);
    let mut note = |b: u64| {
        if b > 0 {
            lo = lo.min(b);
            hi = hi.max(b);
        }
    };
    for &s in &t.provenance.sweep.sizes {
        note(s);
    }
    let mut has_margins = false;
    let mut has_evidence = false;
    for c in Collective::ALL {
        let mut crs: Vec<_> = t.rules(c).iter().collect();
        crs.sort_by_key(|cr| (cr.ranks, cr.nodes, cr.ppn));
        for cr in crs {
            for r in &cr.rules {
                note(r.min_bytes);
                if let Some(m) = r.max_bytes {
                    note(m);
                }
                if let Some(a) = r.at_bytes {
                    note(a);
                }
                has_margins |= r.margin.is_some() || r.evidence.is_some();
                has_evidence |= r.evidence.is_some();
                if !families.iter().any(|(fc, f)| *fc == c && *f == r.algorithm) {
                    families.push((c, r.algorithm.clone()));
                }
            }
            rows.push(MapRow {
                collective: c,
                key: cr.key(),
                cells: cr.rules.iter().map(rule_stretch).collect(),
            });
        }
    }
    families.sort_by_key(|(c, f)| (*c as usize, family_index(*c, f), f.clone()));
    if lo == u64::MAX {
        (lo, hi) = (1, 1 << 22);
    }
    if hi <= lo {
        hi = lo * 4;
    }
    DecisionMap {
        rows,
        min_bytes: lo,
        max_bytes: hi,
        families,
        has_margins,
        has_evidence,
    }
}

/// How strongly a cell is coloured for its margin: 1.0 at or above
/// `full` (a clear winner), down to 0.25 for a tie; 1.0 when unknown.
pub fn saturation(margin: Option<f64>, full: f64) -> f64 {
    match margin {
        None => 1.0,
        Some(m) if m.is_finite() && m > 0.0 => 0.25 + 0.75 * (m / full).min(1.0),
        Some(_) => 0.25,
    }
}

/// Per context, the share of measured sizes at which each line is fastest
/// (lines as `lines` makes them), most wins first.
#[derive(Clone, Debug, PartialEq)]
pub struct Wins {
    pub ctx: SeriesKey,
    pub sizes: usize,
    /// (line name, most frequent winning variant, sizes won).
    pub rows: Vec<(String, String, usize)>,
}

pub fn wins(lines: &[Line], ctx: &SeriesKey) -> Wins {
    let sz = sizes(lines);
    let mut n: BTreeMap<usize, (usize, BTreeMap<String, usize>)> = BTreeMap::new();
    let mut total = 0;
    for &b in &sz {
        let w = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.points.get(&b).map(|p| (i, p)))
            .min_by(|x, y| x.1.median.total_cmp(&y.1.median));
        if let Some((i, p)) = w {
            total += 1;
            let e = n.entry(i).or_default();
            e.0 += 1;
            *e.1.entry(p.variant.clone()).or_default() += 1;
        }
    }
    let mut rows: Vec<(String, String, usize)> = n
        .into_iter()
        .map(|(i, (c, vs))| {
            let v = vs
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|x| x.0)
                .unwrap_or_default();
            (lines[i].name.clone(), v, c)
        })
        .collect();
    rows.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    Wins {
        ctx: ctx.clone(),
        sizes: total,
        rows,
    }
}

/// colltune's best against one of the library's lines, over the sizes
/// both have.
#[derive(Clone, Debug, PartialEq)]
pub struct Versus {
    pub sizes: usize,
    /// Sizes where colltune's best is faster.
    pub faster: usize,
    /// Geometric mean of colltune's best / the library's time.
    pub geomean: f64,
}

pub fn versus(lines: &[Line], kind: LineKind) -> Option<Versus> {
    let lib = lines.iter().find(|l| l.kind == kind)?;
    let mut ratios = Vec::new();
    for (b, p) in &lib.points {
        let ours = lines
            .iter()
            .filter(|l| l.kind == LineKind::Algorithm)
            .filter_map(|l| l.points.get(b).map(|q| q.median))
            .fold(f64::INFINITY, f64::min);
        if ours.is_finite() && p.median > 0.0 {
            ratios.push(ours / p.median);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    Some(Versus {
        sizes: ratios.len(),
        faster: ratios.iter().filter(|&&r| r < 1.0).count(),
        geomean: crate::measure::stats::geomean(&ratios),
    })
}

/// Places labels along one axis so none overlap: each wants to sit at
/// `want[i]`, needs `gap` of room, and must stay inside `lo..=hi`. Returns
/// positions in the input order, each as close to its wish as the others
/// allow (labels keep their order). With more labels than fit, they are
/// spaced evenly over the range (still `gap` apart only if room allows).
pub fn place_labels(want: &[f64], gap: f64, lo: f64, hi: f64) -> Vec<f64> {
    let n = want.len();
    if n == 0 {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| want[a].total_cmp(&want[b]).then(a.cmp(&b)));
    let room = hi - lo;
    let gap = if gap * (n as f64 - 1.0) > room {
        room / (n as f64 - 1.0).max(1.0)
    } else {
        gap
    };
    // Clusters: merge labels that would overlap and centre each cluster on
    // the mean of its wishes, until nothing overlaps (the classic
    // "pool adjacent violators" placement).
    let mut clusters: Vec<(f64, usize, f64)> = Vec::new(); // (start, count, sum of wishes - offsets)
    for &i in &order {
        let w = want[i].clamp(lo, hi);
        clusters.push((w, 1, w));
        loop {
            let k = clusters.len();
            if k < 2 {
                break;
            }
            let (s1, c1, _) = clusters[k - 2];
            let (s2, _, _) = clusters[k - 1];
            if s1 + gap * c1 as f64 <= s2 + 1e-12 {
                break;
            }
            let (_, c2, w2) = clusters.pop().expect("two");
            let last = clusters.last_mut().expect("two");
            // Sum of (wish - offset inside the cluster) over members.
            let w2_shifted = w2 - gap * (c1 as f64) * c2 as f64;
            let c = c1 + c2;
            let sum = last.2 + w2_shifted;
            last.1 = c;
            last.2 = sum;
            last.0 = (sum / c as f64).clamp(lo, (hi - gap * (c as f64 - 1.0)).max(lo));
        }
    }
    // A cluster clamped at the top can push into the one below: one final
    // pass from the top down keeps every pair apart.
    let mut pos = vec![0.0; n];
    let mut k = 0;
    for (s, c, _) in &clusters {
        for j in 0..*c {
            pos[order[k]] = s + gap * j as f64;
            k += 1;
        }
    }
    for w in (1..n).rev() {
        let (a, b) = (order[w - 1], order[w]);
        if pos[b] - pos[a] < gap - 1e-9 {
            pos[a] = pos[b] - gap;
        }
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::sample;
    use crate::measure::report::series;

    fn data() -> Series {
        let mut s = Vec::new();
        for run in 1..=2 {
            let f = 1.0 + 0.1 * run as f64;
            for (b, lin, p8, p64, lib) in [
                (1u64, 1.0, 3.0, 3.5, 2.0),
                (1024, 2.0, 4.0, 5.0, 3.0),
                (65536, 60.0, 30.0, 25.0, 40.0),
                (1 << 20, 900.0, 400.0, 350.0, 500.0),
            ] {
                s.push(sample("linear", "blocking", b, run, lin * f));
                s.push(sample("pipeline:segment=8192", "nonblocking", b, run, p8));
                s.push(sample("pipeline:segment=65536", "blocking", b, run, p64));
                s.push(sample("mpi", "library", b, run, lib));
                s.push(sample(
                    "ompi_tuned:algorithm=6,name=binomial,segment=0",
                    "library",
                    b,
                    run,
                    lib * 0.9,
                ));
                s.push(sample(
                    "ompi_tuned:algorithm=1,name=basic_linear,segment=0",
                    "library",
                    b,
                    run,
                    lin * 1.5,
                ));
            }
        }
        series(&s)
    }

    #[test]
    fn one_line_per_family_with_its_best_variant() {
        let all = data();
        let ctx = all.keys().next().unwrap().context();
        let ls = lines(&all, &ctx, &Selection::default()).unwrap();
        let names: Vec<&str> = ls.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "linear",
                "pipeline",
                "MPI library",
                "MPI library, best forced"
            ]
        );
        let pipe = &ls[1];
        assert_eq!(
            pipe.points[&1].variant,
            "pipeline:segment=8192 [nonblocking]"
        );
        assert_eq!(
            pipe.points[&65536].variant,
            "pipeline:segment=65536 [blocking]"
        );
        assert_eq!(pipe.main_variant().unwrap().1, 2);
        let forced = &ls[3];
        assert_eq!(forced.points[&1].variant, "basic_linear");
        assert_eq!(forced.points[&(1 << 20)].variant, "binomial");
        assert!(forced.dashed() && ls[2].dashed() && !ls[0].dashed());
        // Two runs: a band.
        assert!(ls[0].points[&1].lo < ls[0].points[&1].hi);
        // --all: a line per spec.
        let every = lines(
            &all,
            &ctx,
            &Selection {
                all: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(every.len(), 5);
        // --algorithms keeps the library lines and names what exists.
        let only = lines(
            &all,
            &ctx,
            &Selection {
                all: false,
                algorithms: vec!["linear".into()],
            },
        )
        .unwrap();
        assert_eq!(only.len(), 3);
        let err = lines(
            &all,
            &ctx,
            &Selection {
                all: false,
                algorithms: vec!["ring".into()],
            },
        )
        .unwrap_err();
        assert!(
            err.contains("ring") && err.contains("linear, pipeline"),
            "{err}"
        );
    }

    #[test]
    fn forced_open_mpi_components_are_one_line_named_apart() {
        let mut s = Vec::new();
        for run in 1..=2 {
            s.push(sample("linear", "blocking", 8, run, 2.0));
            s.push(sample("linear", "blocking", 64, run, 2.0));
            for (b, tuned, adapt) in [(8u64, 5.0, 4.0), (64, 3.0, 6.0)] {
                s.push(sample(
                    "ompi_tuned:algorithm=6,name=binomial,segment=0",
                    "library",
                    b,
                    run,
                    tuned,
                ));
                s.push(sample(
                    "ompi_adapt:algorithm=1,name=binomial,segment=0",
                    "library",
                    b,
                    run,
                    adapt,
                ));
            }
        }
        let all = series(&s);
        let ctx = all.keys().next().unwrap().context();
        let ls = lines(&all, &ctx, &Selection::default()).unwrap();
        let forced: Vec<&Line> = ls
            .iter()
            .filter(|l| l.kind == LineKind::LibraryForced)
            .collect();
        assert_eq!(forced.len(), 1);
        assert_eq!(forced[0].points[&8].variant, "adapt:binomial");
        assert_eq!(forced[0].points[&64].variant, "binomial");
    }

    #[test]
    fn relative_winners_and_wins() {
        let all = data();
        let ctx = all.keys().next().unwrap().context();
        let ls = lines(&all, &ctx, &Selection::default()).unwrap();
        let r = relative(&ls);
        for b in r.band.keys() {
            let min = r
                .ratios
                .iter()
                .filter_map(|m| m.get(b))
                .fold(f64::INFINITY, |a, &x| a.min(x));
            assert!((min - 1.0).abs() < 1e-12, "best is 1.0 at {b}");
        }
        // linear is best at 1 B with two runs 1.1 and 1.2: band around 1.
        let (lo, hi) = r.band[&1];
        assert!(lo < 1.0 && hi > 1.0 && r.has_spread, "{lo} {hi}");
        let w = winners(&ls);
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(
            (w[0].from, w[0].to, w[0].label.as_str()),
            (1, Some(1024), "linear")
        );
        assert_eq!(w[1].label, "pipeline");
        assert_eq!(w[1].to, Some(1 << 20));
        let v = versus(&ls, LineKind::Library).unwrap();
        assert_eq!((v.sizes, v.faster), (4, 4), "{v:?}");
        let v = versus(&ls, LineKind::LibraryForced).unwrap();
        assert_eq!(v.sizes, 4);
        // 1 B: linear 1.15 against the forced 1.725 (basic_linear); 1 MiB:
        // pipeline 350 against 450 (binomial).
        assert!(v.faster == 4 && v.geomean < 0.8 && v.geomean > 0.6, "{v:?}");
        let s = wins(&ls, &ctx);
        assert_eq!(s.sizes, 4);
        assert_eq!(s.rows[0].2, 2);
        assert_eq!(
            s.rows.iter().map(|r| r.2).sum::<usize>(),
            4,
            "every size has one winner"
        );
    }

    #[test]
    fn labels_never_overlap_and_stay_close() {
        let p = place_labels(&[10.0, 10.0, 10.5, 50.0], 4.0, 0.0, 100.0);
        let mut s = p.clone();
        s.sort_by(f64::total_cmp);
        for w in s.windows(2) {
            assert!(w[1] - w[0] >= 4.0 - 1e-9, "{p:?}");
        }
        assert_eq!(p[3], 50.0, "a free label stays where it wants");
        assert!((p[0] - 6.0).abs() < 1.0, "{p:?}");
        // Pressed against the top: still apart and inside.
        let p = place_labels(&[99.0, 99.0, 99.0], 10.0, 0.0, 100.0);
        assert!(p.iter().all(|&x| (0.0..=100.0).contains(&x)), "{p:?}");
        let mut s = p.clone();
        s.sort_by(f64::total_cmp);
        assert!(
            s[1] - s[0] >= 10.0 - 1e-9 && s[2] - s[1] >= 10.0 - 1e-9,
            "{p:?}"
        );
        // More than fit: evenly inside.
        let p = place_labels(&[5.0; 11], 20.0, 0.0, 100.0);
        let mut s = p.clone();
        s.sort_by(f64::total_cmp);
        assert!(s[0] >= -1e-9 && s[10] <= 100.0 + 1e-9, "{p:?}");
        for w in s.windows(2) {
            assert!(w[1] - w[0] >= 10.0 - 1e-9, "{p:?}");
        }
        // Many random wishes.
        let mut x = 12345u64;
        for _ in 0..200 {
            let n = (x % 12) as usize + 1;
            let want: Vec<f64> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 33) as f64 / (1u64 << 31) as f64 * 120.0 - 10.0
                })
                .collect();
            let p = place_labels(&want, 7.0, 0.0, 100.0);
            let mut s = p.clone();
            s.sort_by(f64::total_cmp);
            for w in s.windows(2) {
                assert!(w[1] - w[0] >= 7.0 - 1e-6, "{want:?} -> {p:?}");
            }
            assert!(
                s[0] >= -1e-6 && s[n - 1] <= 100.0 + 1e-6,
                "{want:?} -> {p:?}"
            );
        }
    }

    #[test]
    fn a_table_as_a_map() {
        let t = crate::tables::table::load_str(
            "schema: 1\nprovenance:\n  host: h\n  mpi: m\n  date: d\n  command: c\n  colltune: x\n  source: measured\n  sweep:\n    mode: built\n    sizes: [1, 1048576]\n\
             bcast:\n- ranks: 8\n  ppn: 4\n  nodes: 2\n  rules:\n  - {min_bytes: 0, max_bytes: 4095, algorithm: binomial, execution: blocking, margin: 0.5}\n  - {min_bytes: 4096, algorithm: hierarchical, execution: nonblocking, margin: 0.01}\n\
             - ranks: 4\n  ppn: 4\n  nodes: 1\n  rules:\n  - {min_bytes: 0, algorithm: linear, execution: blocking}\n",
        )
        .unwrap();
        let m = decision_map(&t);
        assert_eq!(m.rows.len(), 2);
        assert_eq!(m.rows[0].key.ranks, 4, "rows by ranks");
        assert_eq!((m.min_bytes, m.max_bytes), (1, 1 << 20));
        assert!(m.has_margins);
        assert!(m.rows[1].cells[1].hierarchical && !m.rows[1].cells[0].hierarchical);
        assert_eq!(
            m.families.iter().map(|f| f.1.as_str()).collect::<Vec<_>>(),
            ["linear", "binomial", "hierarchical"],
            "registry order"
        );
        assert!(saturation(Some(0.5), 0.2) > saturation(Some(0.01), 0.2));
        assert_eq!(saturation(None, 0.2), 1.0);
        let rg = regimes(&t, Collective::Bcast, CommKey::shape(8, 4, 2));
        assert_eq!(rg.len(), 2);
        assert_eq!(rg[1].to, None);
    }
}
