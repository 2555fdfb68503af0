//! `colltune predict --p2p P2P [--measured BCAST] --layout L --mapping M`:
//! Open MPI's broadcast algorithms simulated on a model fitted to
//! point-to-point results ([`colltune_core::model::predict`]); with measurements,
//! per point the measured and predicted winners, the regret and each
//! algorithm's time error, and the summary line.

pub mod read;
mod written;

use std::path::PathBuf;

use super::{Code, UsageError};
use colltune_core::model::placement::{Layout, Mapping};
use colltune_core::model::predict;
use colltune_core::model::sim::Model;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    p2p: super::p2p::P2pArgs,
    /// A model written by `calibrate --p2p` (instead of --p2p).
    #[arg(long, conflicts_with = "p2p")]
    model: Option<PathBuf>,
    /// Measured broadcasts of Open MPI's algorithms: colltune's raw CSV
    /// (`import` writes it), the plain broadcast CSV, or any table with
    /// --columns / --labels.
    #[arg(long, num_args = 1..)]
    measured: Vec<PathBuf>,
    /// Column map for the measured files (as import's --columns).
    #[arg(long)]
    columns: Option<String>,
    /// Label map for the measured files (as import's --labels).
    #[arg(long)]
    labels: Option<String>,
    /// The machine, coarsest first: node:2,socket:2,cache:16,core:4.
    #[arg(long)]
    layout: String,
    /// How ranks are placed (mpirun --map-by): core, socket or node.
    #[arg(long)]
    mapping: String,
    /// The job's allocation: pico's alloc.csv (each rank's node), a file
    /// holding a Slurm node list, or the node list itself
    /// (`lrdn[0001-0004]`); its nodes and groups replace --layout's
    /// (docs/model-tables.md).
    #[arg(long)]
    alloc: Option<String>,
    /// With --alloc: how a node's name says its group: nodes:N (N
    /// consecutive node numbers a group), field:K (the name's K-th number),
    /// topology:FILE (a group per SwitchName=... Nodes=LIST line), one;
    /// default: the model's grouping over the nodes in order.
    #[arg(long)]
    group_by: Option<String>,
    /// Without --measured: rank counts to predict.
    #[arg(long, default_value = "2,4,8,16,32,64")]
    ranks: String,
    /// Without --measured: message sizes to predict.
    #[arg(long, default_value = "1..1M")]
    sizes: String,
    /// Without --measured: coll/tuned algorithms to compare (0: the
    /// library's own decision).
    #[arg(long, default_value = "0,1,2,3,5,6,7")]
    algorithms: String,
    /// Write the predicted times as raw samples (source
    /// `simulated:<model>`): `table build` makes the model's table of Open
    /// MPI's algorithms from them, `diff --measured` scores it.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Print the summary alone, not every point.
    #[arg(long, short)]
    quiet: bool,
    /// Keep every measured time: no glitch rule (by default a time more
    /// than 3x the same algorithm's at as many ranks or more and as many
    /// bytes or more is left out, with a count).
    #[arg(long)]
    keep_glitches: bool,
    /// Keep an algorithm measured alike with the library's default where
    /// the two run different code (by default it is left out, with a
    /// warning: its runs most likely did not force it).
    #[arg(long)]
    keep_unforced: bool,
}

pub(crate) fn usage<E: std::fmt::Display>(e: E) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let layout = super::args::placed_layout(&a.layout, a.alloc.as_deref(), a.group_by.as_deref())?;
    let mapping = Mapping::parse(&a.mapping).map_err(usage)?;
    let model = model_of(&a, &layout)?;
    if a.measured.is_empty() {
        return written::predict_only(&a, &model, &layout, mapping);
    }
    let samples = read::collectives(
        &a.measured,
        a.columns.as_deref(),
        a.labels.as_deref(),
        mapping,
    )?;
    let kind = predict::TimeKind::of_samples(&samples);
    let mut all = predict::measured(&samples, mapping);
    let (mut meas, glitches) = if a.keep_glitches {
        (all.clone(), Vec::new())
    } else {
        predict::screen(&all)
    };
    let (mut points, mut s) =
        predict::check(&model, &layout, mapping, &meas, kind).map_err(usage)?;
    let mut dropped = Vec::new();
    for al in predict::alike(&points) {
        match al.suspect().filter(|_| !a.keep_unforced) {
            Some(x) => {
                eprintln!("colltune: warning: {al}: algorithm {x}'s runs most likely did not force it (coll_tuned_use_dynamic_rules true is needed; on Open MPI 5 coll/han takes the call first across nodes); left out of the check (--keep-unforced keeps it)");
                dropped.push(x);
            }
            None if al.a == 0 => eprintln!(
                "colltune: warning: {al}: algorithm {}'s runs most likely did not force it; kept (--keep-unforced)",
                al.b
            ),
            None => eprintln!("colltune: warning: {al}: the runs of one of them most likely did not force it; check how each was run"),
        }
    }
    if !dropped.is_empty() {
        for &x in &dropped {
            meas = predict::without(&meas, x);
            all = predict::without(&all, x);
        }
        (points, s) = predict::check(&model, &layout, mapping, &meas, kind).map_err(usage)?;
    }
    if let Some(path) = &a.csv {
        written::write_predicted(path, &points, &model, &layout, mapping)?;
    }
    if !a.quiet {
        written::print_points(&points);
    }
    let errs: Vec<String> = s
        .time_error_by_algorithm
        .iter()
        .map(|(&a, e)| format!("{}: {:.0}%", predict::own::label(a), 100.0 * e))
        .collect();
    outln!("time error median per algorithm: {}", errs.join(", "));
    if !s.default_ratio.is_empty() {
        let within = s
            .default_ratio
            .values()
            .filter(|(m, p)| (p / m - 1.0).abs() <= 0.25)
            .count();
        if !a.quiet {
            for (r, (m, p)) in &s.default_ratio {
                outln!("default / best at {r} ranks: measured {m:.2}, predicted {p:.2}");
            }
        }
        outln!(
            "default / best ratio within 25% of the measured one at {within} of {} rank counts",
            s.default_ratio.len()
        );
    }
    if let Some((n, g)) = s.default_self {
        outln!(
            "the default where it runs a forced algorithm as forced (the same code; {n} points): measured {g:.2}x that algorithm's time (1.00 where the runs were alike)"
        );
    }
    if !a.keep_glitches {
        let times: usize = all.values().map(|x| x.len()).sum();
        if !a.quiet {
            for g in &glitches {
                outln!("glitch left out: {g}");
            }
        }
        let every = if glitches.is_empty() {
            None
        } else {
            Some(
                predict::check(&model, &layout, mapping, &all, kind)
                    .map_err(usage)?
                    .1,
            )
        };
        outln!(
            "glitch rule: {} of {times} measured times left out (each more than {}x the same algorithm's at as many ranks or more and as many bytes or more; --keep-glitches keeps them); {} of {} points remain",
            glitches.len(),
            predict::GLITCH_FACTOR,
            s.points,
            every.as_ref().map_or(s.points, |e| e.points),
        );
        if let Some(every) = every {
            outln!("every time as measured: {}", every.line());
        }
    }
    if let Some(n) = predict::neighbours::score(&meas) {
        outln!("{}", n.line());
    }
    if let Some(e) = model.fit_error {
        outln!("{}", s.uncertain_line(e));
    }
    outln!("{}", s.line());
    Ok(Code::Ok)
}

/// The model to predict with: `--model`, or fitted to `--p2p` results.
fn model_of(a: &Args, layout: &Layout) -> anyhow::Result<Model> {
    Ok(match (&a.model, a.p2p.p2p.is_empty()) {
        (Some(p), _) => Model::load(p).map_err(usage)?,
        (None, false) => {
            super::p2p::fit(&super::p2p::read(&a.p2p)?, layout, "from-p2p", &a.p2p)?.model
        }
        (None, true) => {
            return Err(usage(
                "give --p2p FILE... (point-to-point results) or --model MODEL.yaml",
            ))
        }
    })
}
