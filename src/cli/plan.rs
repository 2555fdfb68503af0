//! `colltune plan --budget N --layout L --mapping M`: which N broadcast
//! points (algorithm, ranks, size, placement) to measure so that
//! `calibrate --collectives` pins the model best
//! ([`colltune_core::model::fit::plan`]: greedy D-optimal on the fit's
//! Jacobian), with the osu_bcast / IMB / colltune command lines that
//! measure them. With `--from SET` the candidates are the set's measured
//! points, and `-o` writes the chosen ones' samples (to fit on them and
//! predict the rest).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::predict::{read, usage};
use super::{parse_sizes, Code};
use colltune_core::measure::record;
use colltune_core::model::fit::{self, knobs, plan};
use colltune_core::model::placement::{Layout, Mapping};
use colltune_core::model::predict::{self, TimeKind};
use colltune_core::model::sim::Model;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// How many points to plan.
    #[arg(long)]
    budget: usize,
    /// The machine, coarsest first: node:2,socket:2,core:12.
    #[arg(long)]
    layout: String,
    /// How ranks are placed (mpirun --map-by): core, socket or node.
    #[arg(long)]
    mapping: String,
    /// The model to plan on (default: colltune's generic figures; a
    /// calibrated or ping-pong model plans better).
    #[arg(long)]
    model: Option<PathBuf>,
    /// coll/tuned algorithms to choose among (0: the library's decision).
    #[arg(long, default_value = "1,2,5,6,7")]
    algorithms: String,
    /// Rank counts to choose among (default: 2 and powers of two up to the
    /// layout's cores).
    #[arg(long)]
    ranks: Option<String>,
    /// Message sizes to choose among.
    #[arg(long, default_value = "1..1M")]
    sizes: String,
    /// Choose among a measured set's points instead (any form `predict
    /// --measured` reads).
    #[arg(long, num_args = 1..)]
    from: Vec<PathBuf>,
    /// Column and label maps for --from (as import's).
    #[arg(long)]
    columns: Option<String>,
    #[arg(long)]
    labels: Option<String>,
    /// With --from: write the chosen points' samples here (colltune's CSV).
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// With --from: write the other points' samples here (the set to
    /// predict: points the fit did not see).
    #[arg(long)]
    rest: Option<PathBuf>,
}

fn numbers(t: &str, what: &str) -> anyhow::Result<Vec<u64>> {
    t.split(',')
        .map(|x| {
            x.trim()
                .parse::<u64>()
                .map_err(|_| usage(format!("--{what}: `{x}` is not a whole number")))
        })
        .collect()
}

/// The candidates of a grid: every algorithm x ranks x size.
fn grid(a: &Args, layout: &Layout, mapping: Mapping) -> anyhow::Result<Vec<plan::Candidate>> {
    let algs = numbers(&a.algorithms, "algorithms")?;
    if let Some(bad) = algs.iter().find(|&&x| x > 9) {
        return Err(usage(format!(
            "--algorithms: coll/tuned has no broadcast algorithm {bad} (0-9)"
        )));
    }
    let ranks = match &a.ranks {
        Some(r) => numbers(r, "ranks")?,
        None => {
            let top = layout.cores() as u64;
            let mut v: Vec<u64> = (1..).map(|k| 1u64 << k).take_while(|&r| r < top).collect();
            v.push(top);
            v
        }
    };
    let sizes = parse_sizes(&a.sizes)?;
    let mut out = Vec::new();
    for &alg in &algs {
        for &r in &ranks {
            for &b in &sizes {
                out.push(plan::Candidate {
                    mapping,
                    algorithm: alg as u32,
                    ranks: r as usize,
                    bytes: b,
                });
            }
        }
    }
    Ok(out)
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let layout = Layout::parse(&a.layout).map_err(usage)?;
    let mapping = Mapping::parse(&a.mapping).map_err(usage)?;
    if a.budget == 0 {
        return Err(usage("--budget must be at least 1"));
    }
    if (a.out.is_some() || a.rest.is_some()) && a.from.is_empty() {
        return Err(usage(
            "-o and --rest write the points of a measured set: give --from SET",
        ));
    }
    let model = match &a.model {
        Some(p) => Model::load(p).map_err(usage)?,
        None => knobs::generic(),
    };
    let samples = read::collectives(&a.from, a.columns.as_deref(), a.labels.as_deref(), mapping)?;
    let (cands, kind) = if a.from.is_empty() {
        (grid(&a, &layout, mapping)?, TimeKind::MeanOverRanks)
    } else {
        let obs = fit::observations(&samples, mapping);
        if obs.is_empty() {
            return Err(usage(
                "--from: no broadcast of Open MPI's algorithms (coll/tuned 0-9) in the set",
            ));
        }
        let cands = obs
            .iter()
            .map(|o| plan::Candidate {
                mapping: o.mapping,
                algorithm: o.algorithm,
                ranks: o.ranks,
                bytes: o.bytes,
            })
            .collect::<Vec<_>>();
        (cands, TimeKind::of_samples(&samples))
    };
    let chosen = plan::plan(&model, &layout, &cands, kind, a.budget).map_err(usage)?;
    outln!(
        "# {} of {} candidates (greedy D-optimal on the fit's Jacobian, model {}): algorithm ranks bytes mapping gain",
        chosen.len(),
        cands.len(),
        model.name
    );
    for p in &chosen {
        let c = &p.candidate;
        outln!(
            "{:>2} {:>6} {:>10} {:<6} {:.3}",
            predict::own::label(c.algorithm),
            c.ranks,
            c.bytes,
            c.mapping,
            p.gain
        );
    }
    commands(&chosen);
    let keep = |s: &record::Sample| {
        chosen.iter().any(|p| {
            let c = &p.candidate;
            s.ranks as usize == c.ranks
                && s.bytes == c.bytes
                && predict::is_forced(s, c.algorithm)
                && predict::sample_mapping(s).unwrap_or(mapping) == c.mapping
        })
    };
    let (subset, rest): (Vec<record::Sample>, Vec<record::Sample>) =
        samples.into_iter().partition(keep);
    for (path, v, what) in [
        (&a.out, subset, "the chosen points"),
        (&a.rest, rest, "the other points"),
    ] {
        if let Some(path) = path {
            record::Writer::open(path, false)
                .and_then(|mut w| w.write(&v))
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            outln!("wrote {} samples of {what} to {}", v.len(), path.display());
        }
    }
    Ok(Code::Ok)
}

/// The command lines that measure the chosen points, one run per
/// (algorithm, ranks, mapping) over its sizes.
fn commands(chosen: &[plan::Planned]) {
    let mut runs: BTreeMap<(u32, usize, String), Vec<u64>> = BTreeMap::new();
    for p in chosen {
        let c = &p.candidate;
        runs.entry((c.algorithm, c.ranks, c.mapping.to_string()))
            .or_default()
            .push(c.bytes);
    }
    outln!("# to measure them (the mpirun line echoed as a # comment first: `import` and `calibrate` read ranks, mapping and algorithm from it):");
    for ((alg, ranks, map), sizes) in &runs {
        let f = format!("bcast-a{alg}-n{ranks}-{map}");
        let list: Vec<String> = sizes.iter().map(u64::to_string).collect();
        if let Some(o) = predict::own::of(*alg) {
            // colltune's own: its bench runs it (no library forces it).
            outln!(
                "mpirun -np {ranks} --map-by {map} colltune bench --collective bcast -a {} --pattern imb --root 0 --sizes {} --csv {f}.csv",
                o.spec,
                list.join(",")
            );
            continue;
        }
        let (lo, hi) = (
            sizes.iter().min().copied().unwrap_or(1),
            sizes.iter().max().copied().unwrap_or(1),
        );
        let mpirun = format!(
            "mpirun -np {ranks} --map-by {map} --mca coll_tuned_use_dynamic_rules true --mca coll_tuned_bcast_algorithm {alg}"
        );
        outln!("(echo '# {mpirun}'; {mpirun} osu_bcast -m {lo}:{hi} -i 1000 -f) > {f}.osu.txt");
        let log = |b: u64| 64 - b.max(1).leading_zeros() - 1;
        outln!(
            "(echo '# {mpirun}'; {mpirun} IMB-MPI1 Bcast -npmin {ranks} -msglog {}:{}) > {f}.imb.txt",
            log(lo),
            log(hi) + u32::from(!hi.is_power_of_two())
        );
        outln!(
            "mpirun -np {ranks} --map-by {map} colltune bench --baseline ompi-tuned --baselines-only --pattern imb --root 0 --sizes {} --csv {f}.csv",
            list.join(",")
        );
    }
}
