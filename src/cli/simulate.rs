//! `colltune simulate`: times per algorithm and size on a network model, in
//! the raw CSV format of `colltune bench`, so every inspection command
//! (fit, report, plot, table build) works on simulated data.

use std::path::PathBuf;

use colltune_algorithms::{AlgoSpec, Collective, Execution, NodeMap};

use super::bench::{parse_root, subjects_for, Selected, Selection};
use super::{Code, UsageError};
use colltune_core::report::{comparison, imb_tables, series};
use colltune_core::method::{RootPolicy, Subject};
use colltune_core::record::Writer;
use colltune_core::simulate::sample;
use colltune_core::sim::{rotation_roots, simulate_at, Model};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The network model (YAML; see tuning-tables/models/).
    #[arg(long)]
    pub model: PathBuf,
    /// Ranks of the simulated communicator.
    #[arg(long)]
    pub ranks: Option<usize>,
    /// Ranks per node (default: all on one node).
    #[arg(long)]
    pub ppn: Option<usize>,
    /// Or an explicit layout: `256x64`, `3+2`.
    #[arg(long)]
    pub layout: Option<String>,
    #[command(flatten)]
    sel: Selection,
    /// Root: `rotate` (as bench and tune measure: a repetition per root,
    /// on large communicators the roots that differ, see ARCHITECTURE.md)
    /// or a rank.
    #[arg(long, default_value = "rotate")]
    root: String,
    /// Raw samples (one simulated repetition per point).
    #[arg(long)]
    csv: Option<PathBuf>,
    #[arg(long)]
    summary_only: bool,
    /// Validate the model: simulate every point of this measured CSV (its
    /// layouts, algorithms and sizes; other selection flags are ignored)
    /// and report per size the measured and the predicted winner, and per
    /// point the prediction's error.
    #[arg(long, value_name = "MEASURED.csv")]
    compare: Option<PathBuf>,
    /// With --compare: a predicted time counts as right within this
    /// fraction of the measured one (both: each root's time averaged over
    /// the roots measured).
    #[arg(long, default_value_t = 0.3)]
    tolerance: f64,
    /// With --compare: a predicted winner counts as a near match when its
    /// measured median is within this fraction of the measured best.
    #[arg(long, default_value_t = 0.05)]
    near: f64,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let m = Model::load(&a.model).map_err(|e| UsageError(e.to_string()))?;
    if let Some(measured) = &a.compare {
        return compare(&a, &m, measured);
    }
    let nodes = colltune_core::simulate::layout(a.ranks, a.ppn, a.layout.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
    let Selected {
        sizes,
        per_coll,
        sweeps,
        execs,
    } = a.sel.resolve()?;
    let root = parse_root(&a.root)?;
    if let RootPolicy::Fixed(r) = root {
        if r >= nodes.size() {
            return Err(UsageError(format!(
                "--root `{r}`: write rotate or a rank below {}",
                nodes.size()
            ))
            .into());
        }
    }
    let mut writer = match &a.csv {
        Some(p) => Some(Writer::open(p, false)?),
        None => None,
    };
    let mut samples = Vec::new();
    let t0 = std::time::Instant::now();
    for (c, mine) in per_coll {
        for s in subjects_for(c, &mine, &sweeps, &execs, nodes.num_nodes() > 1)? {
            let Subject::Ours { spec, exec, .. } = &s else {
                continue;
            };
            let roots = match root {
                RootPolicy::Fixed(x) => vec![x],
                RootPolicy::Rotate => rotation_roots(c, &nodes),
            };
            'sizes: for &b in &sizes {
                for (i, &r) in roots.iter().enumerate() {
                    let t = match simulate_at(&m, c, spec, *exec, &nodes, b, r) {
                        Ok(t) => t,
                        Err(e @ colltune_core::sim::SimError::TooLarge { .. }) => {
                            println!("skipped {}: {e}", s.label());
                            break 'sizes;
                        }
                        Err(e) => return Err(e.into()),
                    };
                    let row = sample(&m, &nodes, &s, b, (1, i as u32 + 1), r, t);
                    if let Some(w) = writer.as_mut() {
                        w.write(std::slice::from_ref(&row))?;
                    }
                    samples.push(row);
                }
            }
        }
    }
    let all = series(&samples);
    if !a.summary_only {
        print!("{}", imb_tables(&all));
    }
    print!("{}", comparison(&all));
    println!(
        "simulated {} points on {} ranks ({}) with model {} in {:.2} s",
        samples.len(),
        nodes.size(),
        nodes,
        m.name,
        t0.elapsed().as_secs_f64()
    );
    if let Some(w) = &writer {
        println!("raw samples: {}", w.path().display());
    }
    Ok(Code::Ok)
}

/// One measured point and its prediction.
struct Versus {
    label: String,
    measured: f64,
    spread: f64,
    predicted: f64,
    /// The same measure from each run alone (run -> time): the
    /// measurement's agreement with itself, the most a model can show.
    per_run: std::collections::BTreeMap<u32, f64>,
}

/// The measurement against itself: each run's winner and times judged
/// against every other run, as the model's are against all runs.
#[derive(Default)]
struct SelfAgreement {
    /// (winner of run a within `near` of run b's best, pairs of runs).
    near: (usize, usize),
    /// (a point's time in run a within `tolerance` of run b's, pairs).
    within: (usize, usize),
}

impl SelfAgreement {
    fn add(&mut self, pts: &[Versus], near: f64, tolerance: f64) {
        let runs: std::collections::BTreeSet<u32> =
            pts.iter().flat_map(|v| v.per_run.keys().copied()).collect();
        for &a in &runs {
            for &b in &runs {
                if a == b {
                    continue;
                }
                let both: Vec<(f64, f64)> = pts
                    .iter()
                    .filter_map(|v| Some((*v.per_run.get(&a)?, *v.per_run.get(&b)?)))
                    .collect();
                let Some(&(_, at_b)) = both.iter().min_by(|x, y| x.0.total_cmp(&y.0)) else {
                    continue;
                };
                let best_b = both.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
                self.near.0 += usize::from(at_b <= best_b * (1.0 + near));
                self.near.1 += 1;
                self.within.0 += both
                    .iter()
                    .filter(|(ta, tb)| ((ta - tb) / tb).abs() <= tolerance)
                    .count();
                self.within.1 += both.len();
            }
        }
    }

    /// Adds another group's counts to these.
    fn absorb(&mut self, o: &SelfAgreement) {
        self.near.0 += o.near.0;
        self.near.1 += o.near.1;
        self.within.0 += o.within.0;
        self.within.1 += o.within.1;
    }

    fn line(&self, near: f64, tolerance: f64) -> String {
        let pct = |(k, n): (usize, usize)| 100.0 * k as f64 / n.max(1) as f64;
        format!(
            "the measurement against itself (each run against each other run): winner within {:.0}% \
             of the other run's best at {} of {} ({:.0}%); times within {:.0}% at {} of {} ({:.0}%)",
            100.0 * near,
            self.near.0,
            self.near.1,
            pct(self.near),
            100.0 * tolerance,
            self.within.0,
            self.within.1,
            pct(self.within)
        )
    }
}

/// `simulate --compare`: the model against a measured CSV.
fn compare(a: &Args, m: &Model, path: &std::path::Path) -> anyhow::Result<Code> {
    use std::collections::BTreeMap;
    let samples = colltune_core::record::read(path).map_err(|e| UsageError(e.to_string()))?;
    // (collective, layout) -> bytes -> points.
    type Key = (String, String);
    let mut groups: BTreeMap<Key, BTreeMap<u64, Vec<Versus>>> = BTreeMap::new();
    // (group, spec, execution, bytes) -> run -> root -> times.
    type Point = (Key, String, String, u64);
    let mut raw: BTreeMap<Point, BTreeMap<u32, BTreeMap<usize, Vec<f64>>>> = BTreeMap::new();
    let mut skipped = 0usize;
    for s in &samples {
        if s.is_library() || s.outlier != 0 {
            skipped += usize::from(s.is_library());
            continue;
        }
        let point = (
            (s.collective.clone(), s.layout.clone()),
            s.spec.clone(),
            s.execution.clone(),
            s.bytes,
        );
        raw.entry(point)
            .or_default()
            .entry(s.run)
            .or_default()
            .entry(s.root.max(0) as usize)
            .or_default()
            .push(s.time_us);
    }
    if raw.is_empty() {
        return Err(UsageError(format!(
            "{}: no measurements of colltune's algorithms to compare with",
            path.display()
        ))
        .into());
    }
    let mut simulated = Vec::new();
    let mut writer = match &a.csv {
        Some(p) => Some(Writer::open(p, false)?),
        None => None,
    };
    for (point, by_run) in raw {
        // The same times three ways: by root (all runs), by run (all roots),
        // and each run's mean over roots.
        let mut from: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for (&root, times) in by_run.values().flatten() {
            from.entry(root).or_default().extend(times);
        }
        let runs: Vec<Vec<f64>> = by_run
            .values()
            .map(|by_root| by_root.values().flatten().copied().collect())
            .collect();
        let per_run = by_run
            .iter()
            .map(|(&run, by_root)| (run, mean_of_root_medians(by_root.values())))
            .collect();
        let ((coll, layout), spec, exec, bytes) = point;
        let place = || format!("{}: {coll} {spec} [{exec}] on {layout}", path.display());
        let c: Collective = coll
            .parse()
            .map_err(|e| UsageError(format!("{}: {e}", place())))?;
        let sp = AlgoSpec::parse(&spec).map_err(|e| UsageError(format!("{}: {e}", place())))?;
        let ex: Execution = exec
            .parse()
            .map_err(|e| UsageError(format!("{}: {e}", place())))?;
        let nodes = NodeMap::parse(&layout).map_err(|e| UsageError(format!("{}: {e}", place())))?;
        let subject = Subject::Ours {
            collective: c,
            spec: sp.clone(),
            exec: ex,
        };
        // With a rotating root the times mix fast and slow roots (a tree
        // aligned with the nodes or not), and a median of the mixture flips
        // between them: both sides are compared as the mean over the
        // measured roots (weighted by their repetitions) of each root's
        // time, measured as that root's median.
        let mut predicted = 0.0;
        for (i, (&root, times)) in from.iter().enumerate() {
            if root >= nodes.size() {
                return Err(UsageError(format!(
                    "{}: root {root} outside the layout's {} ranks",
                    place(),
                    nodes.size()
                ))
                .into());
            }
            let t = simulate_at(m, c, &sp, ex, &nodes, bytes, root)
                .map_err(|e| anyhow::anyhow!("{}: {e}", place()))?;
            let row = sample(m, &nodes, &subject, bytes, (1, i as u32 + 1), root, t);
            if let Some(w) = writer.as_mut() {
                w.write(std::slice::from_ref(&row))?;
            }
            simulated.push(row);
            predicted += t * times.len() as f64;
        }
        let t = predicted / from.values().map(Vec::len).sum::<usize>().max(1) as f64;
        let measured = mean_of_root_medians(from.values());
        let sum = colltune_core::stats::summarize(&runs);
        groups
            .entry((coll, layout))
            .or_default()
            .entry(bytes)
            .or_default()
            .push(Versus {
                label: format!("{spec} [{exec}]"),
                measured,
                spread: sum.run_spread(),
                predicted: t,
                per_run,
            });
    }
    let (mut sizes, mut exact, mut tie, mut near, mut within, mut points) = (0, 0, 0, 0, 0, 0);
    let mut errs = Vec::new();
    let mut regrets = Vec::new();
    let mut itself = SelfAgreement::default();
    for ((coll, layout), by_size) in &groups {
        let mut here = SelfAgreement::default();
        println!(
            "\n{coll} on {layout}: measured ({}) against model {}",
            path.display(),
            m.name
        );
        println!(
            "{:>10}  {:<34} {:<34} {:>7} {:>9} {:>9}",
            "bytes", "measured winner", "predicted winner", "match", "regret", "|error|"
        );
        for (bytes, pts) in by_size {
            let best_m = pts
                .iter()
                .min_by(|x, y| x.measured.total_cmp(&y.measured))
                .expect("a point");
            let best_p = pts
                .iter()
                .min_by(|x, y| x.predicted.total_cmp(&y.predicted))
                .expect("a point");
            let regret = best_p.measured / best_m.measured;
            // The model may price several schedules the same (on 3 ranks
            // every tree is the root sending to both): it then cannot
            // choose between them, and a measured winner among them is a
            // tie called, counted apart. The table takes the first.
            let tied = |v: &Versus| v.predicted <= best_p.predicted * (1.0 + 1e-9);
            let is_exact = best_m.label == best_p.label;
            let is_tie = !is_exact && tied(best_m);
            let ties = pts.iter().filter(|v| tied(v)).count();
            let is_near = regret <= 1.0 + a.near;
            here.add(pts, a.near, a.tolerance);
            let mut e: Vec<f64> = pts
                .iter()
                .map(|v| ((v.predicted - v.measured) / v.measured).abs())
                .collect();
            within += e.iter().filter(|&&x| x <= a.tolerance).count();
            points += e.len();
            errs.extend(e.iter().copied());
            e.sort_by(f64::total_cmp);
            sizes += 1;
            exact += usize::from(is_exact);
            tie += usize::from(is_tie);
            near += usize::from(is_near);
            regrets.push(regret);
            println!(
                "{:>10}  {:<34} {:<34} {:>7} {:>8.3}x {:>8.1}%",
                bytes,
                trunc(&best_m.label, 34),
                if ties > 1 {
                    let also = format!(" +{} tied", ties - 1);
                    format!("{}{also}", trunc(&best_p.label, 34 - also.len()))
                } else {
                    trunc(&best_p.label, 34)
                },
                if is_exact {
                    "yes"
                } else if is_tie {
                    "tie"
                } else if is_near {
                    "near"
                } else {
                    "no"
                },
                regret,
                100.0 * colltune_core::stats::median_sorted(&e)
            );
        }
        println!("  {}", here.line(a.near, a.tolerance));
        itself.absorb(&here);
        if !a.summary_only {
            println!(
                "\n  per point (measured: each root's median, averaged over the roots; run spread; \
                 predicted, averaged alike; error):"
            );
            for (bytes, pts) in by_size {
                for v in pts {
                    println!(
                        "  {:>10} {:<40} {:>11.2} us {:>6.2}x {:>11.2} us {:>+7.1}%",
                        bytes,
                        trunc(&v.label, 40),
                        v.measured,
                        v.spread,
                        v.predicted,
                        100.0 * (v.predicted - v.measured) / v.measured
                    );
                }
            }
        }
    }
    errs.sort_by(f64::total_cmp);
    println!(
        "\nmodel {} against {}: predicted winner = measured winner at {exact} of {sizes} sizes \
         ({:.0}%), {} with ties called ({:.0}%); within {:.0}% of the measured best at {near} \
         ({:.0}%); geomean regret {:.3}x",
        m.name,
        path.display(),
        100.0 * exact as f64 / sizes.max(1) as f64,
        exact + tie,
        100.0 * (exact + tie) as f64 / sizes.max(1) as f64,
        100.0 * a.near,
        100.0 * near as f64 / sizes.max(1) as f64,
        colltune_core::stats::geomean(&regrets)
    );
    println!(
        "predicted times: {within} of {points} points ({:.0}%) within {:.0}% of the measured time; \
         median error {:.1}%, 90th percentile {:.1}%{}",
        100.0 * within as f64 / points.max(1) as f64,
        100.0 * a.tolerance,
        100.0 * colltune_core::stats::median_sorted(&errs),
        100.0 * errs[((errs.len() as f64 * 0.9) as usize).min(errs.len() - 1)],
        if skipped > 0 {
            format!(" ({skipped} samples of the MPI library's own collectives skipped)")
        } else {
            String::new()
        }
    );
    println!("{}", itself.line(a.near, a.tolerance));
    if let Some(w) = &writer {
        println!("simulated samples: {}", w.path().display());
    }
    Ok(Code::Ok)
}

/// The mean over roots of each root's median, weighted by its repetitions.
fn mean_of_root_medians<'v>(by_root: impl Iterator<Item = &'v Vec<f64>>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for times in by_root {
        sum += colltune_core::stats::median(times) * times.len() as f64;
        n += times.len();
    }
    sum / n.max(1) as f64
}

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}
